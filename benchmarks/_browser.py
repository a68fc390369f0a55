"""Waiting for a Streamlit page in a real browser (Playwright): until the script run an action
caused has finished, and what the page shows of errors.

Shared by the browser tests (``tests/support/browser.py`` re-exports it) and the benchmarks that
drive chromium. It lives in ``benchmarks/``: ``jaxplay`` has no Playwright, and benchmarks do not
import from ``tests/``.
"""

from __future__ import annotations

#: Counts the script runs the app's websocket reports finished (in every document of a context or
#: page it is added to, before the app opens its socket): ``window.__jaxplayFrames`` holds
#: ``finished`` (``ForwardMsg``s carrying ``script_finished``, field 6), the ``status`` of the
#: last (2 is ``FINISHED_EARLY_FOR_RERUN``: another run follows) and when a message last came.
#: The script-state attribute alone can miss a run: a browser short of CPU that gets a run's
#: messages in one batch renders them in one go, and the attribute never leaves ``notRunning``.
FRAMES_JS = """(() => {
    const Native = window.WebSocket;
    const frames = window.__jaxplayFrames = {finished: 0, status: null, last: performance.now()};
    // The top-level fields of a ForwardMsg: the value of field 6 (script_finished), or null.
    const finishedStatus = (buffer) => {
        const bytes = new Uint8Array(buffer);
        let i = 0;
        const varint = () => {
            let value = 0, shift = 0, byte;
            do {
                byte = bytes[i++];
                value += (byte & 127) * 2 ** shift;
                shift += 7;
            } while (byte & 128 && i < bytes.length);
            return value;
        };
        while (i < bytes.length) {
            const tag = varint(), field = Math.floor(tag / 8), wire = tag % 8;
            if (wire === 0) {
                const value = varint();
                if (field === 6) return value;
            } else if (wire === 2) {
                const length = varint();  // read first: `i += varint()` adds to the old i
                i += length;
            } else if (wire === 1) i += 8;
            else if (wire === 5) i += 4;
            else return null;
        }
        return null;
    };
    window.WebSocket = class extends Native {
        constructor(...args) {
            super(...args);
            this.addEventListener('message', (event) => {
                frames.last = performance.now();
                if (!(event.data instanceof ArrayBuffer)) return;
                const status = finishedStatus(event.data);
                if (status !== null) {
                    frames.finished++;
                    frames.status = status;
                }
            });
        }
    };
})();"""


def watch_runs(target) -> None:
    """Count the runs the app's websocket reports finished in ``target`` (a context or a page),
    so that :func:`wait_for_run` sees every run an action causes; call it before any ``goto``."""
    target.add_init_script(FRAMES_JS)


#: Installs (once per document) an observer of the app's script state and reports it:
#: ``{doc, done, state, connection, quiet, finished, status, framesQuiet}``: a random id of this
#: document, the script runs finished since the observer was installed, the state now, the
#: connection, and milliseconds since the state last changed; with :func:`watch_runs`, the runs
#: the websocket reported finished, the last one's status and milliseconds since the last message
#: (``null`` without it).
#: Streamlit marks the app element with ``data-test-script-state``: ``initial`` before the first
#: run, then ``running`` / ``rerunRequested`` / ``stopRequested`` and ``notRunning`` between runs.
_RUN_STATE_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app) return null;
    let runs = window.__jaxplayRuns;
    if (!runs || runs.app !== app) {
        runs = window.__jaxplayRuns = {
            app, doc: (runs && runs.doc) || Math.random().toString(36).slice(2),
            done: (runs && runs.done) || 0, changed: performance.now(),
        };
        new MutationObserver(() => {
            runs.changed = performance.now();
            if (app.getAttribute('data-test-script-state') === 'notRunning') runs.done++;
        }).observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
    }
    const frames = window.__jaxplayFrames;
    return {
        doc: runs.doc, done: runs.done,
        state: app.getAttribute('data-test-script-state'),
        connection: app.getAttribute('data-test-connection-state'),
        quiet: performance.now() - runs.changed,
        finished: frames ? frames.finished : null,
        status: frames ? frames.status : null,
        framesQuiet: frames ? performance.now() - frames.last : null,
    };
}"""

#: Whether the main area shows any text yet.
_DRAWN_JS = """() => {
    const main = document.querySelector('[data-testid="stMainBlockContainer"]');
    return !!main && main.innerText.trim().length > 0;
}"""

#: How long the script must have stayed stopped: a page that reruns itself (a query-parameter
#: fix-up, ``st.rerun``) starts its next run a moment after the last one ended.
QUIET_MS = 400


def runs_done(page) -> dict | None:
    """Where the page's script runs stand now; pass it to :func:`wait_for_run` as ``before``
    when the next action (a click, a key) will make the app run its script again."""
    page.wait_for_selector('[data-testid="stApp"]', state="attached", timeout=90_000)
    return page.evaluate(_RUN_STATE_JS)


def wait_for_run(page, timeout_ms: int = 90_000, before: dict | None = None) -> None:
    """Wait until the app is rendered and its script has finished running.

    ``before`` (from :func:`runs_done`, taken before an action) makes the wait also last until a
    run finished after that action: the rerun an action asks for starts only once the server
    has the message, so an app that looks idle right after a click may not have begun. Without
    it the wait lasts until the script has been stopped for :data:`QUIET_MS`, which suits a page
    just opened (``page.goto``) and is a best effort after an action.

    The script's end is not the page's: an element whose code the browser has not loaded yet
    (the first button of a new tab, say) is a skeleton until it arrives, so the wait lasts until
    none is left.

    The status widget is no signal: in Streamlit 1.67 it shows an icon and "Stop", never the
    word "Running", and only after a run has lasted a moment.
    """
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)
    idle = """([js, before, quietMs]) => {
        const now = (0, eval)(js)();
        if (!now || now.state !== 'notRunning' || now.quiet < quietMs) return false;
        if (now.connection && now.connection !== 'CONNECTED') return false;
        // An element whose code is still loading (a lazily loaded chunk) shows a skeleton.
        if (document.querySelector('[data-testid="stSkeleton"]')) return false;
        // A new document (the page navigated) that is idle has finished a run.
        if (!before || before.doc !== now.doc || now.done > before.done) return true;
        // The server said a run finished since the action (not one cut short for another),
        // and nothing came since: the run is over.
        return now.finished !== null && before.finished !== null
            && now.finished > before.finished && now.status !== 2 && now.framesQuiet >= quietMs;
    }"""
    args = {"timeout": timeout_ms, "polling": 100}
    try:
        page.wait_for_function(idle, arg=[_RUN_STATE_JS, before, QUIET_MS], **args)
    except Exception as error:
        raise AssertionError(f"{error}; before {before}; now {_where(page)}") from error
    # A run that drew nothing was a first run that hands over to another (a fresh server
    # leaving Streamlit's legacy pages/ mode reruns by the same address): wait for that one.
    if not page.evaluate(_DRAWN_JS):
        page.wait_for_function(_DRAWN_JS, **args)
        page.wait_for_function(idle, arg=[_RUN_STATE_JS, None, QUIET_MS], **args)


def _where(page) -> dict:
    """What the page shows now, for a wait that ran out."""
    state = page.evaluate(_RUN_STATE_JS)
    skeletons = page.locator('[data-testid="stSkeleton"]').count()
    text = page.evaluate(
        "() => (document.querySelector('[data-testid=\"stMainBlockContainer\"]') || {}).innerText"
    )
    return {"url": page.url, "state": state, "skeletons": skeletons, "text": (text or "")[:300]}


def act(page, action, timeout_ms: int = 90_000) -> None:
    """Do ``action()`` (a click, a key press) and wait until the run it caused has finished."""
    before = runs_done(page)
    action()
    wait_for_run(page, timeout_ms=timeout_ms, before=before)


#: The text of every exception box, read in one go.
_EXCEPTIONS_JS = """() => [...document.querySelectorAll('[data-testid="stException"]')]
    .map((box) => box.innerText)"""


def exception_texts(page) -> list[str]:
    """The text of every Streamlit exception box on the page, as it is at one instant: counted
    and read box by box, a box that went meanwhile (the page ran again) was waited for."""
    return page.evaluate(_EXCEPTIONS_JS)

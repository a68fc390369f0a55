"""Starting ``streamlit run`` on a free port (through :mod:`jaxplay.hosting.serve`) and checking a
page in a real chromium."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from jaxplay.hosting import serve
from jaxplay.hosting.chromium import CHROMIUM, chromium_available
from jaxplay.hosting.chromium import CHROMIUM_ARGS as CHROMIUM_ARGS
from jaxplay.hosting.chromium import free_port as free_port

ROOT = Path(__file__).resolve().parents[2]


def require_chromium() -> None:
    """Skip the calling test module without chromium, except in CI, where that is an error."""
    import pytest

    if chromium_available():
        return
    if os.environ.get("CI"):
        raise RuntimeError(f"CI needs chromium at {CHROMIUM} for the browser tests")
    pytest.skip(f"no chromium at {CHROMIUM}", allow_module_level=True)


def require_haproxy() -> None:
    """Skip the calling test module without HAProxy, except in CI, where that is an error."""
    import pytest

    if serve.haproxy_path() is not None:
        return
    if os.environ.get("CI"):
        raise RuntimeError(f"CI needs {serve.HAPROXY} for the room tests (apt-get install haproxy)")
    pytest.skip(f"no {serve.HAPROXY} on PATH (apt-get install haproxy)", allow_module_level=True)


@contextmanager
def streamlit_server(
    script: str = "app.py", env: dict[str, str] | None = None, startup_s: float = 90.0
) -> Iterator[str]:
    """Run ``streamlit run script`` on a free local port; yield its base URL; stop it after."""
    with serve.Room(1, script=script, env=env, startup_s=startup_s) as room:
        yield room.url


#: Installs (once per document) an observer of the app's script state and reports it:
#: ``{doc, done, state, quiet}``: a random id of this document, the script runs finished since the
#: observer was installed, the state now, and milliseconds since the state last changed.
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
    return {
        doc: runs.doc, done: runs.done,
        state: app.getAttribute('data-test-script-state'),
        connection: app.getAttribute('data-test-connection-state'),
        quiet: performance.now() - runs.changed,
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
        return !before || before.doc !== now.doc || now.done > before.done;
    }"""
    args = {"timeout": timeout_ms, "polling": 100}
    page.wait_for_function(idle, arg=[_RUN_STATE_JS, before, QUIET_MS], **args)
    # A run that drew nothing was a first run that hands over to another (a fresh server
    # leaving Streamlit's legacy pages/ mode reruns by the same address): wait for that one.
    if not page.evaluate(_DRAWN_JS):
        page.wait_for_function(_DRAWN_JS, **args)
        page.wait_for_function(idle, arg=[_RUN_STATE_JS, None, QUIET_MS], **args)


def act(page, action, timeout_ms: int = 90_000) -> None:
    """Do ``action()`` (a click, a key press) and wait until the run it caused has finished."""
    before = runs_done(page)
    action()
    wait_for_run(page, timeout_ms=timeout_ms, before=before)


def exception_texts(page) -> list[str]:
    """The text of every Streamlit exception or error-details box on the page."""
    boxes = page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]')
    texts = []
    for i in range(boxes.count()):
        box = boxes.nth(i)
        if box.get_attribute("data-testid") == "stException":
            texts.append(box.inner_text())
    return texts

"""Small rendering helpers shared by the pages (UI only; the logic lives in ``jaxplay``).

Every page imports this module first: importing it also does the server process's start-up once
(JAX's settings, and every run going through ``app.py``'s navigation: see :mod:`pages._startup`).
"""

from __future__ import annotations

import pages._startup  # noqa: F401  (first: the process's start-up, once)
from pages._protocol import most_chosen as most_chosen  # a choice's max_selections, for the guard

import functools
import inspect
import math
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any, NoReturn, TypeVar

import streamlit as st

from jaxplay import sandbox
from jaxplay.core import capture, figures, i18n, markdown, measure_lock
from jaxplay.core.errors import InputError
from jaxplay.core.i18n import _
from jaxplay.core.measure_lock import Turn as Turn  # pages' cached functions take a box's turn
from jaxplay.hosting import catalog, publicmode, results

T = TypeVar("T")
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])


def show_code(
    *objects: Callable[..., Any] | str,
    label: str | None = None,
    expanded: bool = False,
) -> None:
    """An expander with the exact source of the functions (or text) that produced a result."""
    label = label if label is not None else _("Show the code that ran")
    with st.expander(label, icon=":material/code:", expanded=expanded):
        for obj in objects:
            st.code(obj if isinstance(obj, str) else _source(obj), language="python")


@functools.lru_cache(maxsize=512)
def _source(function: Callable[..., Any]) -> str:
    """``inspect.getsource``, read once per function (jaxplay's functions are defined once per
    process; reading and tokenizing their files again was a few percent of every cached view)."""
    return inspect.getsource(function)


class Stopped(Exception):
    """Raised by :func:`stop`; ``app.py`` catches it and finishes the run (its link notes)."""


def stop() -> NoReturn:
    """End the page here, after a message that says why.

    Not ``st.stop()``: Streamlit keeps its stop request for the rest of the run, so every element
    drawn after it, ``app.py``'s note on the parts of a link it ignored included, is dropped.
    """
    raise Stopped


def input_error(
    err: InputError, heading: str, text: str | None = None, icon: str = ":material/error:"
) -> None:
    """The one way a page refuses typed text: ``heading`` in bold, the parser's message as text,
    and the offending line with a caret under the column at fault (``text`` is what the
    visitor typed, when the error did not keep it)."""
    st.error(f"**{heading}** {markdown.escape(err.message)}", icon=icon)
    pointer = err.pointer(text)
    if pointer:
        st.code(pointer, language=None)


def visitor_id() -> str:
    """Who this browser session is, for rate limits, the runner and the snippet store.

    The client's IP address (``st.context.ip_address``), or behind a trusted reverse proxy
    (``JAXPLAY_TRUSTED_PROXY=1``) the last address of ``X-Forwarded-For``; a random id kept in
    the session where no address is known (localhost) or ``JAXPLAY_VISITOR_KEY=session`` asks
    for it. See :func:`jaxplay.hosting.publicmode.visitor_from`.
    """
    session_id = st.session_state.setdefault("_jaxplay_session_id", uuid.uuid4().hex)
    try:
        forwarded = list(st.context.headers.get_all("X-Forwarded-For"))
        address = st.context.ip_address
    except Exception:
        forwarded, address = [], None
    return publicmode.visitor_from(
        address=address,
        forwarded_for=forwarded,
        session_id=session_id,
        config=publicmode.PublicConfig.from_env(),
    )


def scrub(text: object) -> str:
    """``str(text)`` without the server's paths (``<app>``, ``<venv>``, ``~``, ...).

    Use it for every exception text a page shows: JAX's messages name files (``...while tracing
    the function f at /srv/jaxplay/...``), which a public server must not reveal.
    """
    return publicmode.scrub_paths(str(text))


def show_error(err: BaseException | str, prefix: str = "", icon: str = ":material/error:") -> None:
    """``st.error`` of an exception (``prefix`Type: message```) or a text, paths scrubbed; a
    failed worker task (:class:`jaxplay.sandbox.TaskFailed`) as its function's own exception.

    An exception's text goes in a code span it cannot close (it may hold what a visitor typed);
    a text is the caller's Markdown, with any visitor text in it already escaped.
    """
    if isinstance(err, sandbox.TaskFailed):  # the worker's function raised, or the worker failed
        failed = err.error
        said = f"{failed.exc_type}: " if failed.kind == "exception" and failed.exc_type else ""
        st.error(scrub(prefix) + markdown.code(scrub(said + failed.message)), icon=icon)
        return
    if isinstance(err, BaseException):
        text = markdown.code(scrub(f"{type(err).__name__}: {err}"))
        st.error(scrub(prefix) + text, icon=icon)
        return
    st.error(scrub(f"{prefix}{err}"), icon=icon)


def error_code(text: object) -> None:
    """A message from JAX (an error, a log) as a plain code block, server paths scrubbed."""
    st.code(scrub(text), language=None)


def throttle_notice(wait_s: float) -> None:
    """Tell the visitor their measurement waits for the public server's per-visitor limit."""
    seconds = max(1, math.ceil(wait_s - 1e-6))
    st.toast(
        _(
            "You are measuring often: this measurement starts in {seconds} s, so that everyone "
            "on this shared server gets a turn."
        ).format(seconds=seconds),
        icon=":material/hourglass_top:",
    )


def queue_note(slot: Any, ahead: int) -> None:
    """Say in ``slot`` (an ``st.empty``) that another visitor's measurement runs first."""
    slot.info(
        _(
            "Another visitor is measuring on this machine; you are number {ahead} in the queue. "
            "Measurements take turns so that neither slows the other down."
        ).format(ahead=ahead),
        icon=":material/hourglass_top:",
    )


@contextmanager
def not_replayed() -> Iterator[None]:
    """Draw what no cached function's replay may record.

    A box's turn is taken inside the page's cached function that needs it (the box cannot know
    beforehand whether a result is cached), so the box's queue note and throttle notice are
    drawn while that function runs. Streamlit records every element a cached function draws
    and replays it for the next visitor, into blocks that visitor does not have
    (``CacheReplayClosureError``: their page crashed). What the box says to one visitor about
    their wait is not part of the result: drawn here, it is not recorded. (Streamlit's own
    flag; ``tests/pages/test_cached_functions.py`` checks a second visitor's replay.)
    """
    from streamlit.runtime.scriptrunner_utils.script_run_context import in_cached_function

    token = in_cached_function.set(False)
    try:
        yield
    finally:
        in_cached_function.reset(token)


class Waiting:
    """A measurement box as the measurement sees it: the page's
    :class:`jaxplay.core.measure_lock.Progress`, passed down the measurement path.

    It names the visitor (public mode throttles per visitor) and tells them, inside ``status``,
    why their measurement waits (another one runs first, or they measure often) and which stage
    runs. A stage may be told from another visitor's thread (one measurement shared by both), so
    it is said in the language this box was made in.
    """

    def __init__(self, title: str, status: Any) -> None:
        self.title = title
        self.status = status
        self.visitor = visitor_id()
        self.language = i18n.current()
        self.note = status.empty()
        self.queued_shown = False
        #: The box's measurement turn, for its computations (``sandbox.timed``'s ``turn``).
        self.turn = measure_lock.Turn(self, taken=self.unqueue)

    def update(self, **kwargs: Any) -> None:
        """``st.status.update``: the box's label, state, expansion."""
        self.status.update(**kwargs)

    def stage(self, stage: str, fraction: float | None) -> None:
        """Show the stage that starts now in the box's label."""
        self.unqueue()
        with i18n.speaking(self.language), not_replayed():
            self.status.update(label=f"{self.title}: {_(stage) if stage else stage}…")

    def queued(self, ahead: int) -> None:
        """Say that another visitor's measurement runs first, and where this one stands."""
        self.queued_shown = True
        with i18n.speaking(self.language), not_replayed():
            queue_note(self.note, ahead)

    def unqueue(self) -> None:
        """Remove the queue note (this measurement's turn came)."""
        if self.queued_shown:
            with not_replayed():
                self.note.empty()
            self.queued_shown = False

    def throttled(self, wait_s: float) -> None:
        """Say that this visitor's measurement waits for the public server's per-visitor limit."""
        with i18n.speaking(self.language), not_replayed():
            throttle_notice(wait_s)


@contextmanager
def measuring(label: str) -> Iterator[Waiting]:
    """A status box for a measurement: yields its :class:`Waiting`, whose ``turn`` each of the
    box's computations takes (``sandbox.timed(..., turn=box.turn)``, through a cached
    function's ``_turn`` argument).

    The first computation that needs the measurement lock takes it, not the box: a visitor whose
    results are all cached never waits behind another visitor's measurement, nor spends their
    throttle. From then on the box's computations measure back to back, as one measurement,
    until the box ends. While another visitor measures, a note inside the box says where this
    one stands in the queue (measurements take turns, so that neither slows the other down).
    """
    with st.status(label) as status:
        box = Waiting(label, status)
        try:
            yield box
        finally:
            box.turn.release()


def computed(label: str, done: str, function: Callable[..., R], *args: Any) -> R:
    """``function(*args, _turn=turn)`` in a :func:`measuring` box that reads ``label``, then
    ``done``. Where the compute worker failed (it ran out of time or memory) the box says so
    and the part of the page ends (:func:`stop`), as :func:`measure_points` does.

    The one way a page runs one computation of its own in the compute worker (a cached
    function that hands its jaxplay function to ``sandbox.timed`` with its ``_turn``): what JAX
    compiles for a visitor's new shape stays in the worker, which is recycled, not in the
    server, whose caches JAX keeps for the process.
    """
    with measuring(label) as box:
        try:
            value = function(*args, _turn=box.turn)
        except sandbox.TaskFailed as err:
            box.update(label=_("Failed"), state="error")
            show_error(err, _("**The run failed:** "))
            stop()
        box.update(label=done, state="complete")
    return value


def measure_points(
    running: str,
    done: str,
    steps: Sequence[T],
    point: Callable[[T, Turn], R],
    describe: Callable[[T], str],
) -> list[R]:
    """Measure ``point(step, turn)`` for each step in a :func:`measuring` box with a progress
    bar (``describe(step)`` says which step runs; ``turn`` is the box's, for the point's
    computation); the box then reads ``done``. The one way a page shows a measurement's
    progress (with :func:`staged` for one that names its stages).

    Why a loop here and not in one cached function: a cached function draws nothing (Streamlit
    replays its elements for the next visitor, which crashed pages), so each point is cached on
    its own and the progress is drawn between the calls.
    """
    points = []
    try:
        with measuring(running) as box:
            bar = st.progress(0.0)
            for i, value in enumerate(steps):
                of = _("{step} ({i} of {n})").format(step=describe(value), i=i + 1, n=len(steps))
                bar.progress(i / max(len(steps), 1), text=of)
                points.append(point(value, box.turn))
            bar.empty()
            box.update(label=done, state="complete", expanded=False)
    except sandbox.TaskFailed as err:  # the compute worker ran out of time or memory
        show_error(err, _("**The measurement failed:** "))
        stop()
    return points


class Stages(Waiting):
    """What :func:`staged` yields: a :class:`Waiting` box with a progress bar, for a measurement
    that reports its own stages."""

    def __init__(self, title: str, slot: Any, status: Any) -> None:
        self.slot = slot
        self.progress = status.progress(0.0, text=_("starting"))
        super().__init__(title, status)

    def stage(self, stage: str, fraction: float | None) -> None:
        """Show the stage that starts now (and how far the whole is, when the count is known)."""
        self.unqueue()
        with i18n.speaking(self.language):
            label = f"{self.title}: {_(stage) if stage else stage}…"
            self.status.update(label=label, expanded=True)
            if fraction is not None:
                share = min(max(fraction, 0.0), 1.0)
                done = _("{share} of the stages done").format(share=f"{share:.0%}")
                self.progress.progress(share, text=done)

    def done(self, label: str) -> None:
        """Close the box as finished, with ``label``."""
        self.progress.empty()
        self.status.update(label=label, state="complete", expanded=False)

    def clear(self) -> None:
        """Remove the box (the input was refused: no measurement to speak of)."""
        self.slot.empty()


@contextmanager
def staged(title: str) -> Iterator[Stages]:
    """A status box with a progress bar for a measurement that reports its own stages.

    Unlike :func:`measuring` it has no turn: the measurement takes the measurement lock itself
    (and may be one that another visitor started, whose stages this box then shows). Pass
    ``stages`` to it as its progress; call ``stages.done(...)`` when it returns, or
    ``stages.clear()`` when the input was refused.
    """
    slot = st.empty()
    with slot.container(), st.status(f"{title}…", expanded=True) as status:
        yield Stages(title, slot, status)


class SandboxRun:
    """What :func:`sandbox_run` yields: the box of a run in a sandboxed worker."""

    def __init__(self, status: Any) -> None:
        self.status = status

    def queued(self, ahead: int) -> None:
        """Say that every worker is busy and where this run stands (the pool's ``on_queue``)."""
        self.status.update(
            label=_("All workers are busy: you are number {n} in the queue…").format(n=ahead)
        )

    def finished(self, label: str, ok: bool = True) -> None:
        """Close the box with ``label``, as done or failed."""
        self.status.update(label=label, state="complete" if ok else "error")


@contextmanager
def sandbox_run(label: str) -> Iterator[SandboxRun]:
    """A status box for a run in a sandboxed worker (the Code Lab, a demo's own process):
    ``label`` while it runs, where it stands in the queue while every worker is busy.

    The one way a page shows a sandbox run, as :func:`measuring` is for a measurement. Pass
    ``box.queued`` as the run's ``on_queue`` and :func:`visitor_id` as its visitor (the pool's
    per-visitor rules count by it); close it with ``box.finished(...)``.
    """
    with st.status(label) as status:
        yield SandboxRun(status)


def measure_button(
    label: str, key: str, chosen: object, icon: str | None = ":material/timer:"
) -> bool:
    """A button that starts a measurement of ``chosen`` (sizes, a workload): True once it was
    pressed for exactly that choice, on this run and the following ones, until the choice changes.
    """
    if chosen and st.button(label, key=key, icon=icon):
        st.session_state[f"{key}_for"] = chosen
    return bool(chosen) and st.session_state.get(f"{key}_for") == chosen


#: Each cached function's return type, by its code, file and annotation (see :func:`_returns`).
_RETURNS: dict[Any, Any] = {}


def _returns(function: Callable[..., Any]) -> Any:
    """A page's cached function's return type, resolved once per code: a page defines its
    functions again on every rerun, from the same code object (Streamlit keeps the compiled
    file), and resolving the annotation each time cost about 0.5 ms of a page view. The names
    it resolves are jaxplay's types, the same objects in every rerun."""
    import typing

    code = function.__code__
    # Code objects compare by their bytecode, not their file or annotations: both go in the key.
    key = (code, code.co_filename, function.__annotations__.get("return"))
    if key in _RETURNS:
        return _RETURNS[key]
    if len(_RETURNS) >= 1024:  # a page edited while served compiles anew: stay bounded
        _RETURNS.clear()
    returns = _RETURNS[key] = typing.get_type_hints(function).get("return")
    return returns


#: Session key of the widget keys of this run's closed tabs (set by :func:`lazy_tabs`, read and
#: cleared by ``app.py``'s check of the link's parameters).
WAITING_KEYS = "_jaxplay_waiting_keys"


def lazy_tabs(
    views: Mapping[str, Callable[[], None]],
    *,
    key: str,
    keep: Mapping[str, tuple[str, ...]] | None = None,
) -> str | None:
    """A page's views as tabs, the one way pages switch views: a link names the open one
    (``key`` in the address) and only the open one runs (``views`` maps each label to the
    function that draws it). ``keep`` maps a label to the keys of its widgets, whose values are
    kept while their tab is closed (see :func:`keep_widgets`). Returns the open view's label
    (``None`` if Streamlit cannot tell).
    """
    tabs = st.tabs(list(views), key=key, bind="query-params", on_change="rerun")
    if keep:
        by_label = dict(zip(views, tabs, strict=True))
        keep_widgets({by_label[label]: keys for label, keys in keep.items()})
        # A link may set a widget of a closed tab: app.py leaves its parameter in the address,
        # for the tab to draw the widget with it when it opens.
        # Tabs within a tab add theirs; each key once (a part's own reruns add them again
        # without app.py's full run clearing the list first).
        closed = [k for label, keys in keep.items() if by_label[label].open is False for k in keys]
        waiting = [*st.session_state.get(WAITING_KEYS, []), *closed]
        st.session_state[WAITING_KEYS] = list(dict.fromkeys(waiting))
    opened = None
    for (label, draw), tab in zip(views.items(), tabs, strict=True):
        if tab.open is not False:
            opened = label if tab.open else opened
            with tab:
                part(draw)()
    return opened


def part(draw: Callable[[], None]) -> Callable[[], None]:
    """``draw`` as a part of the page that reruns alone (an ``st.fragment``): a widget inside it
    reruns ``draw``, not the page, ``app.py`` and the sidebar with it.

    A part's own rerun runs none of ``app.py``, so it settles what ``app.py`` settles for every
    run before it draws: the visitor's language (as the last full run settled it) and the
    visitor every sandboxed run counts against (:data:`jaxplay.sandbox.current_visitor`, so the
    per-visitor limits hold in a part's rerun too). A :func:`stop` ends the part, as it ends the
    page in a full run.
    """

    def run() -> None:
        i18n.use(spoken())
        sandbox.current_visitor.set(visitor_id())
        with suppress(Stopped):
            draw()

    # The part's identity (Streamlit's, with its place on the page): the drawing function's.
    run.__module__, run.__qualname__ = draw.__module__, f"part:{draw.__qualname__}"
    return st.fragment(run)


def keep_widgets(tabs: dict[Any, tuple[str, ...]]) -> None:
    """Keep the values of the widgets in closed tabs, for a page whose tabs run lazily.

    A tab bound to the URL (``st.tabs(..., key=..., bind="query-params")``) knows whether it is
    open, so a page can skip the work of the others; but Streamlit forgets the state of a widget
    it did not draw in a run, so switching back would reset it. ``tabs`` maps each tab to the
    keys of its widgets; those of tabs that are not open are kept in the session.
    """
    for tab, keys in tabs.items():
        if tab.open is False:
            for key in keys:
                if key in st.session_state:
                    st.session_state[key] = st.session_state[key]


def open_in_code_lab(source: str) -> None:
    """Load ``source`` into the Code Lab's editor and go there (its last result cleared)."""
    st.session_state["code_lab_source"] = source
    st.session_state.pop("code_lab_result", None)
    # An explicit (empty) mapping: a bare switch_page would try to clear bound query params.
    st.switch_page(catalog.find("code-lab").path, query_params={})


#: The longest value a one-line text box takes unless its page says otherwise: ample for a
#: formula (``expr`` accepts 500 characters and says so past that), a shape or a spec.
TEXT_BOX_CHARS = 1_000


def capped(text: str, limit: int, what: str, where: Any = None) -> str:
    """``text`` cut to ``limit`` characters, with a warning in ``where`` (the page by default)
    when it was longer; unchanged when it fits.

    The one server-side cap for visitor text from a widget: a browser's ``max_chars`` binds only
    the browser, and a client can send a session value (a component's, a link's) of any size.
    """
    if not isinstance(text, str):
        return ""
    if len(text) <= limit:
        return text
    (where if where is not None else st).warning(
        _("**{what}** is {length} characters long; only the first {limit} are used.").format(
            what=markdown.escape(what), length=f"{len(text):,}", limit=f"{limit:,}"
        ),
        icon=":material/content_cut:",
    )
    return text[:limit]


#: What a data editor's malformed edits raise in Streamlit's own code, decoding or applying them
#: (a row or column the table has not, a list where rows belong, text that is not JSON): a
#: browser never sends them, a scripted client can.
MALFORMED_EDITS = (ValueError, TypeError, KeyError, IndexError, AttributeError)


def table_editor(frame: Any, *, key: str, rows: int, cell_chars: int = 100, **kw: Any) -> Any:
    """``st.data_editor(frame, key=...)`` whose edits are bounded and whose malformed edits are
    dropped, with a message, instead of breaking the page. Every page's table editor goes
    through here.

    Streamlit applies a data editor's edits (added, edited and deleted rows, as JSON) one row at
    a time in the server's Python, before the page sees the table: 100,000 added rows in one
    8 MB message would hold the server for minutes. Edits over ``rows`` rows or ``cell_chars``
    characters a cell, and edits Streamlit cannot apply (it raised an error page), are left
    behind under the old key: a new editor starts from ``frame`` and the page says so.
    """
    generation = int(st.session_state.get(f"_{key}_generation", 0))
    current = key if generation == 0 else f"{key}_{generation}"
    try:
        over = _edits_over(st.session_state.get(current), rows, cell_chars)
        if not over:
            return st.data_editor(frame, key=current, **kw)
    except MALFORMED_EDITS:
        over = True
    st.session_state[f"_{key}_generation"] = generation + 1
    st.warning(
        _(
            "The table's edits were over what it takes ({rows} rows, {cells} characters a "
            "cell) or could not be read: they were dropped, and the table starts again from its "
            "rows."
        ).format(rows=rows, cells=cell_chars),
        icon=":material/block:",
    )
    return st.data_editor(frame, key=f"{key}_{generation + 1}", **kw)


def _edits_over(edits: Any, rows: int, cell_chars: int) -> bool:
    """Whether a data editor's ``edits`` (Streamlit's decoded state, or ``None``) are over the
    bounds; raises one of :data:`MALFORMED_EDITS` for a shape a browser never sends."""
    if edits is None:
        return False
    counts = [len(edits.get(part) or ()) for part in ("added_rows", "edited_rows", "deleted_rows")]
    cells = [
        *(edits.get("added_rows") or ())[: rows + 1],
        *(edits.get("edited_rows") or {}).values(),
    ]
    return max(counts) > rows or any(
        len(str(value)) > cell_chars for cell in cells for value in list(cell.values())[:16]
    )


def text_box(
    where: Any, label: str, value: str = "", *, key: str, max_chars: int = TEXT_BOX_CHARS, **kw: Any
) -> str:
    """``where.text_input`` with its value capped on the server (:func:`capped`) at
    ``max_chars``, which the browser enforces too. Every page's text box goes through here."""
    text = where.text_input(label, value, key=key, max_chars=max_chars, **kw)
    return capped(text, max_chars, label.strip("`"), where)


def box_height(text: str, box: int = 240, lines: int = 12, chars: int = 2000) -> int | str:
    """A code box's height: ``box`` pixels, scrolling, for text over ``lines`` lines or ``chars``
    characters; else as tall as the text ("content")."""
    return box if text.count("\n") > lines or len(text) > chars else "content"


# -- Present mode: the projector view --------------------------------------------------------
#: ``?present=1`` turns it on for the session (``?present=0`` off); the address keeps it while on,
#: so a link copied from a projected page opens in present mode too.
PRESENT_PARAM = "present"
PRESENT_KEY = "present_mode"  # the sidebar toggle's key, which is also the session's flag

#: Larger type everywhere (Streamlit sizes text and spacing in rem), wider use of the screen,
#: columns that wrap onto a new row rather than shrink below 11rem (so a select box shows its
#: choice whole), and the small print (captions) folded to one line, whole again under the
#: pointer or focus.
PRESENT_CSS = """
<style>
html { font-size: 20px; }
[data-testid="stMainBlockContainer"] { padding: 4rem 1rem 4rem; max-width: none; }
[data-testid="stMain"] [data-testid="stHorizontalBlock"] { flex-wrap: wrap; }
[data-testid="stMain"] [data-testid="stColumn"] { min-width: min(100%, 11rem); }
[data-testid="stMain"] [data-testid="stCaptionContainer"] {
    display: -webkit-box; -webkit-box-orient: vertical; -webkit-line-clamp: 1;
    overflow: hidden; cursor: help;
}
[data-testid="stMain"] [data-testid="stCaptionContainer"]:hover,
[data-testid="stMain"] [data-testid="stCaptionContainer"]:focus-within {
    -webkit-line-clamp: unset; overflow: visible;
}
</style>
"""


#: On every page, in every mode: labels that Streamlit cuts off with "…" in a narrow column (a
#: metric's label and value, a page link) wrap instead, so a projector at 150% zoom shows them
#: whole; a row of tabs wider than the page wraps onto a second row rather than scrolling (a
#: scrolled row hides its last tabs behind a small arrow that a room does not notice). Code
#: blocks and tables scroll; they keep Streamlit's own styles.
WRAP_CSS = """
<style>
[data-testid="stTabs"] [role="tablist"] { flex-wrap: wrap; overflow: visible; row-gap: 0.25rem; }
[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] *,
[data-testid="stMetricValue"], [data-testid="stMetricValue"] *,
[data-testid="stPageLink-NavLink"] span {
    white-space: normal; overflow: visible; text-overflow: clip; overflow-wrap: break-word;
}
</style>
"""


def wrap_styles() -> None:
    """The styles that make labels wrap rather than clip (see :data:`WRAP_CSS`); every run."""
    st.html(WRAP_CSS)


def present_mode() -> bool:
    """Whether this session shows the projector view; call once per run, before the page.

    A link's ``?present=`` sets it (``1`` on, anything else off); otherwise the session keeps
    what it had, across page switches (which drop the address's query string), and the address
    gets ``present=1`` back while it is on.
    """
    state = st.session_state
    asked = st.query_params.get(PRESENT_PARAM)
    if asked is not None:
        state[PRESENT_KEY] = asked == "1"
    on = bool(state.get(PRESENT_KEY, False))
    _show_in_address(on)
    return on


def _show_in_address(on: bool) -> None:
    if on:
        st.query_params[PRESENT_PARAM] = "1"
    elif PRESENT_PARAM in st.query_params:
        del st.query_params[PRESENT_PARAM]


def present_styles() -> None:
    """The projector view's styles, for this run (call when :func:`present_mode` is on)."""
    st.html(PRESENT_CSS)


def present_toggle() -> None:
    """A switch for present mode (for the sidebar); it keeps the address in step."""
    st.toggle(
        _("Present mode"),
        key=PRESENT_KEY,
        on_change=lambda: _show_in_address(bool(st.session_state[PRESENT_KEY])),
        help=_(
            "For a projector: larger type, the sidebar folded away, side notes folded to one "
            "line. The address carries `{param}=1`, so a copied link opens the same view."
        ).format(param=PRESENT_PARAM),
    )


LANG_PARAM = "lang"
LANG_KEY = "language"  # the sidebar switch's key: the language this visitor chose
_LANG_CHOSEN = "_jaxplay_language_chosen"  # a link or the switch chose it (not the browser)


def language() -> str:
    """This visitor's language; call once per run, before anything is drawn (``app.py``).

    A link's ``?lang=`` chooses it (``en`` or ``zh``; anything else is dropped), as does the
    sidebar switch; the session keeps the choice across page switches. A visitor who chose
    nothing reads the browser's language (``st.context.locale``, else ``Accept-Language``).
    The address carries ``lang=`` whenever the language is not English or was chosen, so a
    copied link opens in the same language.
    """
    state = st.session_state
    asked = st.query_params.get(LANG_PARAM)
    if asked in i18n.LANGUAGES:
        state[LANG_KEY], state[_LANG_CHOSEN] = asked, True
    elif asked is not None:
        del st.query_params[LANG_PARAM]
    if not state.get(_LANG_CHOSEN):
        state[LANG_KEY] = i18n.negotiate(_browser_locale(), _accept_language())
    chosen = state.get(LANG_KEY) if state.get(LANG_KEY) in i18n.LANGUAGES else i18n.DEFAULT
    _language_in_address(chosen, bool(state.get(_LANG_CHOSEN)))
    return chosen


def spoken() -> str:
    """The language :func:`language` settled in this session's last full run (for a fragment
    that reruns alone: it must not set the switch's value after the switch was drawn)."""
    chosen = st.session_state.get(LANG_KEY)
    return chosen if chosen in i18n.LANGUAGES else i18n.DEFAULT


def _browser_locale() -> str | None:
    try:
        return st.context.locale
    except Exception:  # outside a browser session (AppTest): no locale
        return None


def _accept_language() -> str | None:
    try:
        return st.context.headers.get("Accept-Language")
    except Exception:
        return None


def _language_in_address(language: str, chosen: bool) -> None:
    if chosen or language != i18n.DEFAULT:
        st.query_params[LANG_PARAM] = language
    elif LANG_PARAM in st.query_params:
        del st.query_params[LANG_PARAM]


def linked(params: Mapping[str, str] | None = None) -> dict[str, str]:
    """The query parameters of a link the app makes: ``params`` and the visitor's language when
    the address carries it, so the link opens in the same language in a new tab or browser."""
    own = st.query_params.get(LANG_PARAM)
    return {**(params or {}), **({LANG_PARAM: own} if own in i18n.LANGUAGES else {})}


def _switched() -> None:
    st.session_state[_LANG_CHOSEN] = True
    _language_in_address(spoken(), True)


def language_switch() -> None:
    """The sidebar's language switch (English | 中文); the choice holds for this visitor only."""
    st.segmented_control(
        _("Language"),
        list(i18n.LANGUAGES),
        format_func=i18n.LANGUAGES.__getitem__,
        required=True,
        key=LANG_KEY,
        on_change=_switched,
        label_visibility="collapsed",
    )


def code_lab_button(source: str, key: str, label: str | None = None) -> None:
    """A button that puts ``source`` into the Code Lab's editor and switches to the Code Lab."""
    if st.button(label or _("Open in Code Lab"), key=key, icon=":material/terminal:"):
        open_in_code_lab(source)


def show_outcome(result: capture.Outcome, what: str | None = None) -> None:
    """What a captured run did: ``what`` returns its value, or raises JAX's exception (a red
    box); then what it printed and warned. ``what`` is the app's own Markdown (a call in
    backticks); values and messages go in code blocks (nothing in them renders), paths scrubbed.
    """
    what = what if what is not None else _("It")
    if result.ok:
        st.markdown(":green[:material/check_circle:] " + _("{what} returns:").format(what=what))
        st.code(scrub(result.value), language=None, wrap_lines=True)
    else:
        raised = _("{what} raises **{error}** (caught here):").format(
            what=what, error=result.error_type
        )
        st.error(raised, icon=":material/error:")
        st.code(scrub(result.message), language=None, wrap_lines=True)
    if result.stdout:
        st.caption(_("Printed:"))
        st.code(scrub(result.stdout.rstrip()), language=None)
    for warning in result.warnings:  # JAX's (or Python's) own words: shown as code, untranslated
        st.warning(markdown.code(scrub(warning)), icon=":material/warning:")


def chart(figure: Any, *args: Any, key: str, **kwargs: Any) -> None:
    """Draw a Plotly figure, its lines in the one palette (colour and dash, see
    :func:`jaxplay.core.figures.distinguish`); every page draws its charts through this.

    ``figure`` is the jaxplay function that builds it, called with ``args``: built once for
    the room per arguments and language (:func:`jaxplay.core.figures.built`, why there), or a
    figure the page built itself. ``kwargs`` go to ``st.plotly_chart``.
    """
    if callable(figure):
        figure = figures.built(figure, args, i18n.current())
    else:
        figure = figures.distinguish(figure)
    st.plotly_chart(figure, key=key, **kwargs)


def cached(*, max_entries: int, show_spinner: bool | str = False) -> Callable[[F], F]:
    """``st.cache_data`` for a page's computation, and, on a server of several processes (a
    result store configured, see :mod:`jaxplay.hosting.results`), one result for all of them.

    The function's return annotation says what may be read back from the shared store (its
    dataclasses only); a function without one is cached per process only.
    """
    from pathlib import Path

    def wrap(function: F) -> F:
        returns = _returns(function)
        kind = f"{Path(function.__code__.co_filename).stem}.{function.__qualname__}"
        shared = results.stored(kind, returns)(function) if returns is not None else function
        cache = st.cache_data(max_entries=max_entries, show_spinner=show_spinner)
        return cache(shared)  # type: ignore[return-value]

    return wrap

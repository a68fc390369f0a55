"""The room's warm-up: every page's views opened once, before the room arrives.

Why: the first visit of a page with given settings costs seconds (measurements, compiles). With
the result store (:mod:`jaxplay.hosting.results`) that cost is paid once per deployment instead
of once per process; the warm-up pays it before a workshop instead of in front of the first
visitor. It opens, as a visitor would and through the server's own code paths (so what it
computes is exactly what a visitor's page would compute, keyed the same way):

- every page as the navigation opens it;
- every tab of a tab bar bound to the address (and the tabs a tab reveals), with the page's
  other settings at their defaults;
- every choice of a page's preset boxes: a select box bound to the address whose key ends in
  one of :data:`PRESET_SUFFIXES` (``jit_preset``, ``pytrees_example``), in the first view that
  shows it.

A preset's views are not crossed with every tab (a page of six presets and ten tabs would be
sixty views): the room's first clicks are the default's tabs and each preset's first view.
At most :data:`DEFAULT_MAX_VIEWS` views, breadth first; a view that fails is reported and the
tour goes on.

This module is the plan (which views, in which order) and when it runs; the visitor that opens
the views speaks Streamlit's websocket protocol, so it lives beside the pages
(``python -m pages._warm_up --url http://127.0.0.1:8501``; this package never imports
Streamlit). ``JAXPLAY_WARM_UP`` says which pages: ``auto`` (the default: every page in public
mode, none otherwise), ``on``, ``off``, or their addresses, comma-separated (``jit,vmap``). The
room's launcher (:mod:`jaxplay.hosting.serve`) starts it as soon as the room answers; a server
started on its own (``streamlit run app.py``) when its first visitor arrives (``app.py`` calls
:func:`start`). A room's processes share a measurement lock file; the warm-up takes a lock beside
it, so one warm-up runs at a time per host: one that finds another running skips, and one that
starts after another ended (the first visitor of a later process) finds every result stored and
takes seconds (results are kept per host: see :func:`jaxplay.hosting.results.fingerprint`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlencode

from jaxplay.hosting import catalog, environment, publicmode, settings

#: A select box bound to the address is a page's preset box when its key ends so.
PRESET_SUFFIXES = ("_preset", "_example")
#: The most views one warm-up opens.
DEFAULT_MAX_VIEWS = 300


@dataclass(frozen=True)
class View:
    """A page and the address parameters it is opened with (sorted, so equal views compare
    equal)."""

    page: str
    params: tuple[tuple[str, str], ...] = ()

    @property
    def query_string(self) -> str:
        return urlencode(self.params)

    def choosing(self, key: str, value: str) -> View:
        """This view with ``key`` set to ``value``."""
        return View(self.page, tuple(sorted({**dict(self.params), key: value}.items())))

    def __str__(self) -> str:
        return self.page + (f"?{self.query_string}" if self.params else "")


@dataclass(frozen=True)
class Choices:
    """A tab bar or a select box bound to the address: its default and every choice."""

    default: str
    options: tuple[str, ...]


@dataclass(frozen=True)
class Seen:
    """What opening a view showed: its tab bars and its select boxes bound to the address (by
    their parameter), the failures it reported, and how long it took."""

    tabs: Mapping[str, Choices] = field(default_factory=dict)
    boxes: Mapping[str, Choices] = field(default_factory=dict)
    errors: tuple[str, ...] = ()
    seconds: float = 0.0


@dataclass
class Report:
    """What a warm-up did."""

    opened: list[tuple[View, Seen]] = field(default_factory=list)
    #: Views not opened because the warm-up reached its bound.
    left: int = 0
    seconds: float = 0.0

    @property
    def failed(self) -> list[tuple[View, Seen]]:
        return [(view, seen) for view, seen in self.opened if seen.errors]

    def summary(self) -> str:
        """One line for the server's log."""
        slowest = max(self.opened, key=lambda pair: pair[1].seconds, default=None)
        parts = [
            f"warm-up: {len(self.opened)} views opened in {self.seconds:.1f} s",
            f"{len(self.failed)} failed",
        ]
        if self.left:
            parts.append(f"{self.left} left out (at most {len(self.opened)} views)")
        if slowest is not None:
            parts.append(f"slowest {slowest[0]} ({slowest[1].seconds:.1f} s)")
        return ", ".join(parts)


def next_views(
    view: View, seen: Seen, presets_done: Collection[str] = (), known: Collection[str] = ()
) -> list[View]:
    """The views to open after ``view``: each other tab of the bars it revealed (those not
    ``known`` from the view it came from: a bar beside the one chosen was spread there, and a
    bar within another tab is not crossed with its neighbours), and each other choice of a preset
    box not in ``presets_done``; nothing after a view that chose a preset (it stops at its
    first)."""
    chosen = dict(view.params)
    if any(key.endswith(PRESET_SUFFIXES) for key in chosen):
        return []
    presets = {
        key: choices
        for key, choices in seen.boxes.items()
        if key.endswith(PRESET_SUFFIXES) and key not in presets_done
    }
    found = []
    for bars in (seen.tabs, presets):
        for key, choices in bars.items():
            if key not in chosen and key not in known:
                found += [view.choosing(key, o) for o in choices.options if o != choices.default]
    return found


def tour(
    open_view: Callable[[View], Seen],
    pages: Sequence[str],
    max_views: int = DEFAULT_MAX_VIEWS,
    log: Callable[[str], None] = lambda line: None,
) -> Report:
    """Open ``pages`` and every view they lead to (:func:`next_views`), breadth first, each view
    once, at most ``max_views``; ``open_view`` opens one and says what it showed."""
    started = time.monotonic()
    report = Report()
    queue = deque(View(page) for page in pages)
    queued = set(queue)
    #: Page -> its preset boxes whose choices are queued (once per page, from the first view
    #: that shows them: a box above the tabs is on every tab).
    presets_done: dict[str, set[str]] = {}
    #: View -> the tab bars of the view it came from.
    known: dict[View, frozenset[str]] = {}
    while queue:
        if len(report.opened) >= max_views:
            report.left = len(queue)
            break
        view = queue.popleft()
        try:
            seen = open_view(view)
        except Exception as error:  # one view's failure is reported; the tour goes on
            seen = Seen(errors=(f"{type(error).__name__}: {error}"[:300],))
        report.opened.append((view, seen))
        failed = f" FAILED: {'; '.join(seen.errors)}" if seen.errors else ""
        log(f"warm-up: {view} {seen.seconds:.1f} s{failed}")
        done = presets_done.setdefault(view.page, set())
        for later in next_views(view, seen, done, known.pop(view, ())):
            if later not in queued:
                queued.add(later)
                queue.append(later)
                known[later] = frozenset(seen.tabs)
        done.update(key for key in seen.boxes if key.endswith(PRESET_SUFFIXES))
    report.seconds = time.monotonic() - started
    return report


def pages_to_warm(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The page addresses ``JAXPLAY_WARM_UP`` asks for (none: no warm-up)."""
    every = tuple(spec.url_path for spec in catalog.PAGES)
    value = settings.warm_up(environ)
    if value in ("auto", ""):
        return every if publicmode.PublicConfig.from_env(environ).public else ()
    if value in ("on", "1", "true", "yes"):
        return every
    if value in ("off", "0", "false", "no"):
        return ()
    asked = [name.strip() for name in value.split(",")]
    return tuple(page for page in every if page in asked)


@contextlib.contextmanager
def host_turn(lock_file: str | None) -> Iterator[bool]:
    """Whether this warm-up is the host's: ``True`` while it holds the lock beside the room's
    measurement lock (always, without one), ``False`` while another warm-up does.

    Raises:
        OSError: the lock file cannot be opened (its folder is missing or not writable).
    """
    if not lock_file:
        yield True
        return
    descriptor = os.open(lock_file, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(descriptor)


def lock_file(environ: Mapping[str, str] | None = None) -> str | None:
    """The lock one warm-up per host holds: beside the measurement lock a room's processes
    share (``None`` for a lone process: its one warm-up is its host's)."""
    shared = settings.measure_lock(environ)
    return f"{shared}.warm-up" if shared else None


def server_url(address: str, port: int, base_path: str = "") -> str:
    """Where a server's own warm-up reaches it: its address (loopback when it listens on every
    address), its port and its base path."""
    host = address if address not in ("", "0.0.0.0", "::") else "127.0.0.1"
    host = f"[{host}]" if ":" in host else host
    path = "/" + base_path.strip("/") if base_path.strip("/") else ""
    return f"http://{host}:{port}{path}"


def command(url: str, pages: Sequence[str], environ: Mapping[str, str] | None = None) -> list[str]:
    """The command that warms the server at ``url``."""
    found = [sys.executable, "-m", "pages._warm_up", "--url", url, "--pages", ",".join(pages)]
    lock = lock_file(environ)
    return [*found, "--lock", lock] if lock else found


def launch(
    url: str, pages: Sequence[str], environ: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start :func:`command` for the server at ``url`` (its log lines go to this process's
    output), with the allow-listed child environment (it needs no more: it is a visitor that
    speaks to the server); a thread reaps it when it ends, so it leaves no zombie behind."""
    process = subprocess.Popen(
        command(url, pages, environ),
        cwd=catalog.ROOT,
        stdin=subprocess.DEVNULL,
        env=environment.child_environment(),
    )
    threading.Thread(target=process.wait, name="jaxplay-warm-up", daemon=True).start()
    return process


_started: subprocess.Popen[bytes] | None = None
#: Set once a start failed: a page run must not try (and fail) again on every rerun.
_start_failed = False
_start_lock = threading.Lock()


def start(url: str, environ: Mapping[str, str] | None = None) -> subprocess.Popen[bytes] | None:
    """Warm the server at ``url`` in the background, as ``JAXPLAY_WARM_UP`` says: the first call
    in a process starts it (:func:`launch`), later calls return the same process; ``None`` when no
    warm-up is asked for. ``app.py`` calls it on every run, so a server started on its own
    (``streamlit run app.py``) warms when its first visitor arrives; the room's launcher
    (:mod:`jaxplay.hosting.serve`) starts it as soon as the room answers, before anyone comes.

    A warm-up that cannot start (no process can be made) is said once on the server's output and
    not tried again: the visitor whose run called this sees the page as usual."""
    global _started, _start_failed
    with _start_lock:
        if _started is not None or _start_failed:
            return _started
        pages = pages_to_warm(environ)
        if not pages:
            return None
        try:
            _started = launch(url, pages, environ)
        except OSError as error:
            _start_failed = True
            print(f"warm-up: could not start ({error}); the pages are not warmed", file=sys.stderr)
        return _started

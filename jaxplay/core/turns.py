"""Whose turn it is to measure, and who is measuring: the one lock every timing takes.

Why a module of its own: two visitors benchmarking at once on a shared machine would each slow the
other down and both would see wrong numbers, so one process-wide lock serialises measurements,
and with several server processes on one host (:func:`share_with_host`) a lock file makes them
take turns with each other too: no two timings ever share the machine's cores. The
lock is re-entrant, so a page may hold it around several measurements (and tell a queued visitor
so) while each measurement takes it again. In public mode a per-visitor throttle (see
:func:`set_throttle`) keeps one visitor from holding the lock in a loop: the visitor is whoever
:data:`current_visitor` names in the measuring thread's context, which ``app.py`` sets at the
start of every script run.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: Serialises every measurement in the process (see module docstring); re-entrant.
MEASURE_LOCK = threading.RLock()
_waiting = 0
_waiting_lock = threading.Lock()

#: Who the current thread measures for (``app.py`` sets it at the start of every script run;
#: Streamlit runs each rerun in a thread of its own, so a value never leaks to another visitor).
current_visitor: ContextVar[str | None] = ContextVar("jaxplay_visitor", default=None)
#: Told the seconds a throttled visitor waits, so the page can say so (``app.py`` sets it).
throttle_notice: ContextVar[Callable[[float], None] | None] = ContextVar(
    "jaxplay_throttle_notice", default=None
)
_throttle: Callable[[str], float] | None = None
_host_lock: str | None = None
_sleep: Callable[[float], None] = time.sleep
_depth = threading.local()


def waiting_count() -> int:
    """How many callers wait for :data:`MEASURE_LOCK` right now (for a "you are queued" note)."""
    return _waiting


def set_throttle(
    try_acquire: Callable[[str], float] | None,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Throttle measurements per visitor (public mode), or stop throttling with ``None``.

    Arguments:
        try_acquire: visitor id -> seconds to wait before they may measure (0 to go now), such
            as :meth:`jaxplay.hosting.ratelimit.RateLimiter.try_acquire`.
        sleep: how to wait (tests pass one that advances a fake clock).

    A throttled measurement waits rather than fails: a page then shows its result a little
    later instead of an error, and the lock stays free for other visitors meanwhile.
    """
    global _throttle, _sleep
    _throttle, _sleep = try_acquire, sleep


def share_with_host(path: str | None) -> None:
    """Take turns with every process on this host that names the same lock file ``path``
    (several server processes: ``JAXPLAY_MEASURE_LOCK``), or with this process only (``None``).
    """
    global _host_lock
    _host_lock = path or None


@contextmanager
def _host_turn(on_wait: Callable[[int], None] | None) -> Iterator[None]:
    """Hold the host-wide lock file (when one is shared), after this process's lock.

    ``flock`` on a file description of this acquisition's own: the kernel lets it go when the
    description is closed, also when the process dies, so a killed server never blocks the rest.
    """
    path = _host_lock
    if path is None:
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait(1)  # another server process measures: at least one ahead
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _wait_for_turn() -> None:
    """Wait until the current visitor may start another measurement (no-op unless throttled)."""
    throttle, visitor = _throttle, current_visitor.get()
    if throttle is None or visitor is None:
        return
    told = False
    for _ in range(1000):  # each pass waits for the limiter's own estimate; ends in one or two
        wait = throttle(visitor)
        if wait <= 0:
            return
        notice = throttle_notice.get()
        if notice is not None and not told:
            told = True
            notice(wait)
        _sleep(wait)


@contextmanager
def exclusive(on_wait: Callable[[int], None] | None = None) -> Iterator[None]:
    """Hold the measurement lock: this process's, and the host's when one is shared.

    Arguments:
        on_wait: called once, with the number of callers already waiting, if the lock is busy,
            so a page can tell its visitor that they are queued behind another measurement.

    In public mode a thread's outermost ``exclusive`` first waits for the visitor's throttle
    (see :func:`set_throttle`), before taking the lock: nested ones (a measurement inside a
    page's block) count as the same measurement.
    """
    depth = getattr(_depth, "value", 0)
    if depth == 0:
        _wait_for_turn()
    _depth.value = depth + 1
    try:
        with _locked(on_wait), _host_turn(on_wait) if depth == 0 else contextlib.nullcontext():
            yield
    finally:
        _depth.value = depth


@contextmanager
def _locked(on_wait: Callable[[int], None] | None) -> Iterator[None]:
    global _waiting
    if not MEASURE_LOCK.acquire(blocking=False):
        with _waiting_lock:
            _waiting += 1
            ahead = _waiting
        try:
            if on_wait is not None:
                on_wait(ahead)
            MEASURE_LOCK.acquire()
        finally:
            with _waiting_lock:
                _waiting -= 1
    try:
        yield
    finally:
        MEASURE_LOCK.release()

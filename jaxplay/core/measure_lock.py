"""The measurement lock: the one lock every timing takes, and who waits for it.

Why a module of its own: two visitors benchmarking at once on a shared machine would each slow the
other down and both would see wrong numbers, so one process-wide lock serialises measurements.
With several server processes on one host (:func:`share_with_host`) it is a host-wide scheduler:
a measurement also holds one lock file per core its process may run on (its CPU affinity, which
XLA's CPU thread pool follows) and one for the accelerator when JAX's backend is not the CPU. Two
processes whose cores overlap take turns; processes pinned to disjoint cores (the launcher pins
each of a room's processes to its own share of the cores, :mod:`jaxplay.hosting.serve`) measure
at once, each on cores no other timing uses; one accelerator measures one thing at a time. The
lock is re-entrant, so a page may hold it around several measurements (and tell a queued visitor
so) while each measurement takes it again.

Who measures, and how to tell them, travels down the measurement path as one explicit object, a
:class:`Progress` (the page's status box implements it): its ``visitor`` keys public mode's
per-visitor throttle (see :func:`set_throttle`), which keeps one visitor from holding the lock in
a loop; ``queued`` and ``throttled`` say why a measurement waits; ``stage`` says which part of it
runs. Only the outermost hold of a thread needs one: a nested hold counts as the same
measurement. A hold without one (:data:`UNWATCHED`: the server's start-up warm-up, a
benchmark) is nobody's, and is not throttled.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

#: Serialises every measurement in the process (see module docstring); re-entrant.
MEASURE_LOCK = threading.RLock()
_waiting = 0
_waiting_lock = threading.Lock()
_throttle: Callable[[str], float] | None = None
_host_lock: str | None = None
_sleep: Callable[[float], None] = time.sleep
_depth = threading.local()


class Progress(Protocol):
    """Whoever waits for a measurement, passed down its path: who they are and how to tell them.

    Every method is called in the measuring thread, between stopwatches, never inside one.
    """

    @property
    def visitor(self) -> str | None:
        """Who measures (public mode throttles per visitor); None: nobody's measurement."""
        ...

    def stage(self, stage: str, fraction: float | None) -> None:
        """The part that starts now (English, marked for translation with ``N_``) and how far
        the whole is (0–1), or None when the count is not known."""
        ...

    def queued(self, ahead: int) -> None:
        """Another measurement holds the lock; ``ahead`` callers wait before this one."""
        ...

    def throttled(self, wait_s: float) -> None:
        """This visitor measures often: the measurement starts in ``wait_s`` seconds."""
        ...


@dataclass(frozen=True)
class Unwatched:
    """A measurement nobody watches (a warm-up, a benchmark, a test): tells no one."""

    visitor: str | None = None

    def stage(self, stage: str, fraction: float | None) -> None:
        pass

    def queued(self, ahead: int) -> None:
        pass

    def throttled(self, wait_s: float) -> None:
        pass


#: The :class:`Progress` of a measurement that is nobody's.
UNWATCHED = Unwatched()


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
    """Take turns with every process on this host whose measurements could share a core or the
    accelerator with this one's, through lock files named from ``path``
    (``JAXPLAY_MEASURE_LOCK``: ``<path>.cpu<N>`` for each core, ``<path>.accelerator``), or with
    this process only (``None``).
    """
    global _host_lock
    _host_lock = path or None


def usable_cores() -> frozenset[int]:
    """The cores this process may run on: its CPU affinity where the system keeps one (Linux),
    else every core (macOS has none to read)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return frozenset(affinity(0)) if affinity else frozenset(range(os.cpu_count() or 1))


def host_resources(
    cores: Iterable[int] | None = None, accelerated: bool | None = None
) -> list[str]:
    """What a measurement of this process holds host-wide, in the one order every process takes
    them (so two never wait for each other): ``cpu<N>`` for each core it may run on, then
    ``accelerator`` when JAX runs on one.

    Arguments:
        cores: the cores (this process's CPU affinity unless given).
        accelerated: whether JAX's backend is not the CPU (asked of a JAX already imported
            unless given; a process that has not imported JAX measures nothing on a device).
    """
    mine = usable_cores() if cores is None else cores
    if accelerated is None:
        jax = sys.modules.get("jax")
        accelerated = jax is not None and jax.default_backend() != "cpu"
    return [f"cpu{n}" for n in sorted(mine)] + (["accelerator"] if accelerated else [])


@contextmanager
def _host_turn(progress: Progress) -> Iterator[None]:
    """Hold the host-wide lock files of :func:`host_resources` (when shared), after this
    process's lock.

    ``flock`` on file descriptions of this acquisition's own: the kernel lets them go when they
    are closed, also when the process dies, so a killed server never blocks the rest. Taken in
    one order by every process, so none holds a core another waits for while waiting for one
    that other holds.
    """
    path = _host_lock
    if path is None:
        yield
        return
    held: list[int] = []
    told = False
    try:
        for resource in host_resources():
            fd = os.open(f"{path}.{resource}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            held.append(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not told:  # another process measures on a core of ours: one ahead at least
                    told = True
                    progress.queued(1)
                fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        for fd in held:
            os.close(fd)


def _wait_for_turn(progress: Progress) -> None:
    """Wait until the visitor may start another measurement (no-op unless throttled)."""
    throttle, visitor = _throttle, progress.visitor
    if throttle is None or visitor is None:
        return
    told = False
    for _ in range(1000):  # each pass waits for the limiter's own estimate; ends in one or two
        wait = throttle(visitor)
        if wait <= 0:
            return
        if not told:
            told = True
            progress.throttled(wait)
        _sleep(wait)


@contextmanager
def exclusive(progress: Progress = UNWATCHED) -> Iterator[None]:
    """Hold the measurement lock: this process's, and its cores' (and accelerator's) on the
    host when shared.

    Arguments:
        progress: who measures, told once if the lock is busy (``queued``, with the number of
            callers already waiting) and if the visitor must wait for their throttle
            (``throttled``).

    In public mode a thread's outermost ``exclusive`` first waits for the visitor's throttle
    (see :func:`set_throttle`), before taking the lock: nested ones (a measurement inside a
    page's block) count as the same measurement.
    """
    depth = getattr(_depth, "value", 0)
    if depth == 0:
        _wait_for_turn(progress)
    _depth.value = depth + 1
    try:
        with _locked(progress), _host_turn(progress) if depth == 0 else contextlib.nullcontext():
            yield
    finally:
        _depth.value = depth


@contextmanager
def _locked(progress: Progress) -> Iterator[None]:
    global _waiting
    if not MEASURE_LOCK.acquire(blocking=False):
        with _waiting_lock:
            _waiting += 1
            ahead = _waiting
        try:
            progress.queued(ahead)
            MEASURE_LOCK.acquire()
        finally:
            with _waiting_lock:
                _waiting -= 1
    try:
        yield
    finally:
        MEASURE_LOCK.release()


class Turn:
    """A page's measurement turn, taken when its first computation needs it and kept until
    :meth:`release`.

    Why: a page's box wraps several cached computations (a memory page's variants, a sweep's
    points) that should count as one measurement, back to back, for the throttle and the queue.
    Holding the lock around the box from its start made a visitor whose results were all cached
    wait behind every other visitor's measurement (seconds, in a room) and spend their throttle.
    A turn is passed to each computation (``jaxplay.sandbox.timed``'s ``turn``), which enters it
    only when it computes: the first entry takes the lock with ``progress``, later ones find it
    held.

    Use it from one thread (the lock's nesting is per thread), and release it in that thread.
    """

    def __init__(self, progress: Progress = UNWATCHED, taken: Callable[[], None] | None = None):
        """``taken`` is called once the lock is held (the box removes its queue note)."""
        self.progress = progress
        self._taken = taken
        self._hold: contextlib.AbstractContextManager[None] | None = None

    @property
    def held(self) -> bool:
        """Whether a computation took the turn (and it has not been released)."""
        return self._hold is not None

    def __enter__(self) -> Turn:
        if self._hold is None:
            hold = exclusive(self.progress)
            hold.__enter__()
            self._hold = hold
            if self._taken is not None:
                self._taken()
        return self

    def __exit__(self, *exc: object) -> None:
        """Kept: the next computation of the box measures in the same turn."""

    def release(self) -> None:
        """Give the lock back, if a computation took it."""
        hold, self._hold = self._hold, None
        if hold is not None:
            hold.__exit__(None, None, None)

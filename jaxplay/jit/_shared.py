"""Measurements every visitor shares: one per setting, measured once, waited for by the others.

Why not ``st.cache_resource`` alone: the jit page's default view costs seconds of compute, and a
visitor waiting for it must see which stage it is in (tracing, compiling, timing …). A Streamlit
cache cannot show that: a cached function may draw nothing (Streamlit replays its elements for
the next visitor). Here the measuring function reports its stages to a callback of the caller,
in the caller's own thread, outside any cache; what is kept is data only.

- One measurement per key (single flight): a second caller with the same key while the first is
  measuring waits for that result, and is told the first one's stages as they happen, rather
  than starting a second measurement of the same thing.
- Bounded: at most ``max_entries`` results, least recently used dropped first; the keys in
  ``keep`` (the page's default view) are never dropped, so a room's many workloads cannot push
  the default out and make the next visitor pay for the whole first visit again.
- ``force=True`` measures anew and replaces the kept result, so "Measure again" refreshes what
  every later visitor sees instead of keeping a private copy per visitor.
- Failures are not kept (the next caller tries again), but callers waiting for a measurement
  that failed get its exception. A measurement stopped by its page (Streamlit stops a script
  run with an exception that is not an ``Exception``) hands over: a waiting caller measures.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from jaxplay.core.i18n import N_, _

V = TypeVar("V")

#: ``report(stage, fraction)``: a stage in words and how far the whole is (0–1), or None.
Report = Callable[[str, float | None], None]


def _ignore(stage: str, fraction: float | None) -> None:
    """A report that goes nowhere (a measurement nobody watches, such as a warm-up)."""


@dataclass
class _Job:
    """A measurement in progress, as the callers waiting for it see it."""

    owner: str
    visitor: str | None = None
    stage: str = N_("starting")
    fraction: float | None = 0.0
    done: threading.Event = field(default_factory=threading.Event)
    value: object = None
    error: BaseException | None = None
    handed_over: bool = False


@dataclass(frozen=True)
class SharedResult(Generic[V]):
    """A kept result and where it came from.

    Attributes:
        value: what the measurement returned.
        owner: who started it (``"a visitor"``, ``"the server at start-up"``).
        finished: ``time.time()`` when it finished.
        number: 1 for the first measurement of this key, 2 after one "Measure again", ...
        visitor: the id of the visitor who started it, if any (never shown; a page compares it
            with its own visitor's to say "measured for you").
    """

    value: V
    owner: str
    finished: float
    number: int
    visitor: str | None = None


class SharedResults(Generic[V]):
    """Results of expensive measurements, shared by every caller; see the module docstring."""

    def __init__(self, max_entries: int, keep: frozenset[Hashable] = frozenset()) -> None:
        self.max_entries = max_entries
        self.keep = keep
        self._results: OrderedDict[Hashable, SharedResult[V]] = OrderedDict()
        self._jobs: dict[Hashable, _Job] = {}
        self._numbers: dict[Hashable, int] = {}
        self._lock = threading.Lock()
        #: How many measurements ran (started, not answered from the store): for tests.
        self.measured = 0

    def get(self, key: Hashable) -> SharedResult[V] | None:
        """The kept result for ``key``, or None (never waits, never measures)."""
        with self._lock:
            result = self._results.get(key)
            if result is not None:
                self._results.move_to_end(key)
            return result

    def running(self, key: Hashable) -> bool:
        """Whether a measurement of ``key`` is in progress."""
        with self._lock:
            return key in self._jobs

    def clear(self) -> None:
        """Forget every kept result (measurements in progress finish and are kept)."""
        with self._lock:
            self._results.clear()

    def get_or_measure(
        self,
        key: Hashable,
        measure: Callable[[Report], V],
        report: Report = _ignore,
        *,
        force: bool = False,
        owner: str = "a visitor",
        visitor: str | None = None,
        poll_s: float = 0.1,
    ) -> SharedResult[V]:
        """The kept result for ``key``; else join the measurement in progress; else measure.

        Arguments:
            key: a plain, hashable value naming what is measured.
            measure: does the work, telling its stages to the report it is given.
            report: this caller's display of the stages (called in this thread only).
            force: measure anew even if a result is kept (joins one already in progress).
            owner: who this caller is, for the others' "waiting for …" notes.
            visitor: this caller's visitor id, kept with the result.
            poll_s: how often a waiting caller looks at the other measurement's stage.

        Raises:
            Whatever ``measure`` raised (also in callers that waited for it).
        """
        while True:
            with self._lock:
                result = None if force else self._results.get(key)
                if result is not None:
                    self._results.move_to_end(key)
                    return result
                job = self._jobs.get(key)
                mine = job is None
                if job is None:
                    job = _Job(owner, visitor)
                    self._jobs[key] = job
                    self.measured += 1
            if mine:
                return self._measure(key, job, measure, report)
            shown: tuple[str, float | None] | None = None
            while not job.done.wait(poll_s):
                now = (job.stage, job.fraction)
                if now != shown:
                    shown = now
                    # In this caller's language: the stage and owner are English, marked N_.
                    text = _("{stage} (measured for {owner}; its result is yours)").format(
                        stage=_(job.stage) if job.stage else "", owner=_(job.owner)
                    )
                    report(text, now[1])
            if job.handed_over:
                force = False  # the other caller stopped; measure unless a result appeared
                continue
            if job.error is not None:
                raise job.error
            result = self.get(key)
            if result is not None:
                return result
            return SharedResult(job.value, job.owner, time.time(), 0, job.visitor)  # type: ignore[arg-type]

    def _measure(
        self, key: Hashable, job: _Job, measure: Callable[[Report], V], report: Report
    ) -> SharedResult[V]:
        def tell(stage: str, fraction: float | None) -> None:
            job.stage, job.fraction = stage, fraction
            report(stage, fraction)

        try:
            value = measure(tell)
        except Exception as err:
            job.error = err
            raise
        except BaseException:
            job.handed_over = True  # stopped (a rerun, a closed tab): not a result, not an error
            raise
        else:
            with self._lock:
                number = self._numbers.get(key, 0) + 1
                self._numbers[key] = number
                result = SharedResult(value, job.owner, time.time(), number, job.visitor)
                self._results[key] = result
                self._results.move_to_end(key)
                evictable = [k for k in self._results if k not in self.keep]
                while len(self._results) > self.max_entries and evictable:
                    old = evictable.pop(0)  # least recently used first
                    del self._results[old]
                    self._numbers.pop(old, None)
            job.value = value
            return result
        finally:
            with self._lock:
                self._jobs.pop(key, None)
            job.done.set()

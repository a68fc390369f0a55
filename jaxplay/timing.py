"""Honest timing of JAX code: the one harness every page and the runner use.

JAX dispatches work asynchronously: a call returns as soon as the computation is *queued*. A
stopwatch around a call without ``block_until_ready`` measures dispatch, not compute; a stopwatch
around the first call of a jitted function measures tracing and compilation too. Every number this
module returns therefore (1) blocks on every leaf of the result, (2) warms up first so compilation
and caches are out of the steady state, (3) batches sub-millisecond calls like
``timeit.autorange`` so timer resolution does not dominate, and (4) keeps all samples so pages can
show the median with its spread rather than one lucky number.

One process-wide lock serialises measurements: two visitors benchmarking at once on a shared
machine would each slow the other down and both would see wrong numbers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Serialises every measurement in the process (see module docstring).
MEASURE_LOCK = threading.Lock()
_waiting = 0
_waiting_lock = threading.Lock()


def block(tree: Any) -> Any:
    """Wait until every array in the pytree ``tree`` is computed; return ``tree``.

    Leaves without ``block_until_ready`` (Python numbers, numpy arrays, None) are already done.
    """
    import jax

    for leaf in jax.tree_util.tree_leaves(tree):
        ready = getattr(leaf, "block_until_ready", None)
        if ready is not None:
            ready()
    return tree


def waiting_count() -> int:
    """How many callers are waiting for :data:`MEASURE_LOCK` right now (for a "you are queued" note)."""
    return _waiting


@contextmanager
def exclusive(on_wait: Callable[[int], None] | None = None) -> Iterator[None]:
    """Hold the process-wide measurement lock.

    Arguments:
        on_wait: called once, with the number of callers already waiting, if the lock is busy,
            so a page can tell its visitor that they are queued behind another measurement.
    """
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


@dataclass(frozen=True)
class Timing:
    """Per-call times (seconds) of a steady-state measurement.

    Attributes:
        samples: per-call time of each sample (a sample's total divided by ``number``).
        number: calls per sample (more than 1 for fast functions, as ``timeit.autorange`` does).
        warmup: calls made and discarded before sampling.
    """

    samples: tuple[float, ...]
    number: int
    warmup: int

    @property
    def median(self) -> float:
        return float(np.median(self.samples))

    @property
    def min(self) -> float:
        return float(np.min(self.samples))

    @property
    def max(self) -> float:
        return float(np.max(self.samples))

    @property
    def q1(self) -> float:
        return float(np.percentile(self.samples, 25))

    @property
    def q3(self) -> float:
        return float(np.percentile(self.samples, 75))

    @property
    def iqr(self) -> float:
        """Interquartile range: the spread of the middle half of the samples."""
        return self.q3 - self.q1

    @property
    def repeats(self) -> int:
        return len(self.samples)

    def describe(self) -> str:
        """``"1.23 ms ± 0.05 ms (median ± IQR/2, 25 samples × 10 calls)"``."""
        return (
            f"{format_seconds(self.median)} ± {format_seconds(self.iqr / 2)} "
            f"(median ± IQR/2, {self.repeats} samples × {self.number} calls)"
        )


def format_seconds(seconds: float) -> str:
    """A duration in the unit that keeps 3 significant digits readable (ns, µs, ms, s)."""
    if seconds != seconds:  # NaN
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _time_batch(call: Callable[[], Any], number: int) -> float:
    """Wall time of ``number`` blocked calls."""
    start = time.perf_counter()
    for _ in range(number):
        block(call())
    return time.perf_counter() - start


def autorange(call: Callable[[], Any], target_s: float = 0.02, max_number: int = 100_000) -> int:
    """Calls per sample so that one sample lasts at least ``target_s`` (1, 2, 5, 10, 20, ...)."""
    number = 1
    while number < max_number:
        for factor in (1, 2, 5):
            n = number * factor
            if _time_batch(call, n) >= target_s:
                return n
        number *= 10
    return max_number


def measure(
    fn: Callable[..., Any],
    *args: Any,
    budget_s: float = 1.0,
    warmup: int = 2,
    min_repeats: int = 5,
    max_repeats: int = 200,
    sample_target_s: float = 0.01,
    lock: bool = True,
    **kwargs: Any,
) -> Timing:
    """Steady-state per-call time of ``fn(*args, **kwargs)``.

    Arguments:
        fn: the function to time (jitted or not); its result may be any pytree.
        args, kwargs: its arguments.
        budget_s: rough total time to spend sampling (at least ``min_repeats`` samples are taken).
        warmup: calls made and thrown away first (the first call of a jitted function compiles).
        min_repeats, max_repeats: bounds on the number of samples.
        sample_target_s: a sample lasts at least this long; fast functions are called in batches.
        lock: hold :data:`MEASURE_LOCK` (set False when the caller already holds it).

    Returns:
        A :class:`Timing` with every per-call sample.
    """

    def call() -> Any:
        return fn(*args, **kwargs)

    def run() -> Timing:
        for _ in range(max(0, warmup)):
            block(call())
        number = autorange(call, sample_target_s)
        samples: list[float] = []
        deadline = time.perf_counter() + budget_s
        while len(samples) < max_repeats and (
            len(samples) < min_repeats or time.perf_counter() < deadline
        ):
            samples.append(_time_batch(call, number) / number)
        return Timing(tuple(samples), number, warmup)

    if not lock:
        return run()
    with exclusive():
        return run()

"""Honest timing of JAX code: the one harness every page and the sandbox use.

JAX dispatches work asynchronously: a call returns as soon as the computation is *queued*. A
stopwatch around a call without ``block_until_ready`` measures dispatch, not compute; a stopwatch
around the first call of a jitted function measures tracing and compilation too. Every number this
module returns therefore (1) blocks on every leaf of the result, (2) warms up first so compilation
and caches are out of the steady state, (3) batches sub-millisecond calls like ``timeit.autorange``
so timer resolution does not dominate, and (4) keeps all samples so pages can show the median with
its spread rather than one lucky number. Every measurement holds the measurement lock of
:mod:`jaxplay.core.measure_lock`, so two visitors never time at once.

A measurement may be given a :class:`Deadline`, a wall-clock budget shared by every harness call
that makes it up: past it no call starts (not even the samples ``min_repeats`` asks for), so the
measurement lock is never held longer than the budget plus the one call in flight, and what was
measured so far comes back marked ``cut``. A single call longer than the budget cannot be cut this
way: the caller refuses it first, from its predicted cost (:mod:`jaxplay.core.budget`).

- :func:`measure`: steady-state per-call time of one function;
- :func:`compare_jit`: eager against jitted, samples interleaved so drift hits both alike;
- :func:`profile_jit`: trace, lower, compile, first call and steady state as separate numbers, plus
  XLA's cost and memory estimates (via :func:`jaxplay.core.compilation.compile_aot`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jaxplay.core import codec, compilation
from jaxplay.core.compilation import Step
from jaxplay.core.measure_lock import exclusive

#: Multiplies every sampling budget (``budget_s``). The test suite sets it small, so a measurement
#: takes its minimum samples and stops: tests check what a measurement returns, not its speed.
BUDGET_SCALE = 1.0


class Deadline:
    """A wall-clock budget for one measurement, shared by the harness calls that make it up:
    ``seconds`` from when it is made, read on ``clock`` (tests pass a fake one). ``cut`` is set
    by a harness function that stopped early because the budget was spent, so the caller can
    say the measurement was cut."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.perf_counter) -> None:
        self.seconds = float(seconds)
        self._clock = clock
        self._end = clock() + self.seconds
        self.cut = False

    @property
    def expired(self) -> bool:
        return self._clock() >= self._end

    def remaining(self) -> float:
        """Seconds left (0 once expired)."""
        return max(0.0, self._end - self._clock())

    def allows(self, seconds: float) -> bool:
        """Whether work expected to take ``seconds`` fits in what is left (NaN never fits)."""
        return seconds <= self.remaining()


#: How far past its sampling budget a measurement given no deadline of its own may run (its
#: warm-up calls and the minimum samples of a slow function), before it is cut: every measurement
#: holds the one measurement lock, and none may hold it for minutes.
OVERRUN_S = 5.0


def bounded(deadline: Deadline | None, budget_s: float) -> Deadline:
    """``deadline``, or for a measurement without one its sampling budget plus
    :data:`OVERRUN_S` (made when the measurement starts, after any wait for the lock)."""
    if deadline is not None:
        return deadline
    return Deadline(budget_s * BUDGET_SCALE + OVERRUN_S)


def _due(deadline: Deadline | None) -> bool:
    """True (and the deadline marked cut) if ``deadline`` is spent."""
    if deadline is None or not deadline.expired:
        return False
    deadline.cut = True
    return True


def block(tree: Any) -> Any:
    """Wait until every array in the pytree ``tree`` is computed; return ``tree``.

    Leaves without ``block_until_ready`` (Python numbers, numpy arrays, None) are already done.
    """
    ready = getattr(tree, "block_until_ready", None)
    if ready is not None:  # one array: skip flattening, it costs a microsecond per call
        ready()
        return tree
    import jax

    for leaf in jax.tree_util.tree_leaves(tree):
        ready = getattr(leaf, "block_until_ready", None)
        if ready is not None:
            ready()
    return tree


#: The most samples a :class:`Timing` may hold when it comes back from a worker.
MAX_SAMPLES = 10_000


@dataclass(frozen=True)
class Timing:
    """Per-call times (seconds) of a steady-state measurement.

    Attributes:
        samples: per-call time of each sample (a sample's total divided by ``number``).
        number: calls per sample (more than 1 for fast functions, as ``timeit.autorange`` does).
        warmup: calls made and discarded before sampling.
        cut: the measurement's :class:`Deadline` stopped it early (fewer samples than asked
            for, perhaps none: then every statistic is NaN).
    """

    #: At most :data:`MAX_SAMPLES` when decoded (``codec.MAX_ITEMS_KEY``): a measurement takes
    #: 200 at most, and a forged result of a million cost the server seconds to decode and sum up.
    samples: tuple[float, ...] = field(metadata={codec.MAX_ITEMS_KEY: MAX_SAMPLES})
    number: int
    warmup: int
    cut: bool = False

    def __post_init__(self) -> None:
        # A blocked call takes time: a sample of 0 s (a forged worker result) divided every ratio.
        if not all(isinstance(s, float | int) and 0 < s < math.inf for s in self.samples):
            raise ValueError("a timing's samples are positive, finite times")
        if self.number < 1:
            raise ValueError("a timing's sample holds at least one call")

    def _stat(self, reduce: Callable[[Any], Any]) -> float:
        return float(reduce(self.samples)) if self.samples else float("nan")

    @property
    def median(self) -> float:
        return self._stat(np.median)

    @property
    def min(self) -> float:
        return self._stat(np.min)

    @property
    def max(self) -> float:
        return self._stat(np.max)

    @property
    def q1(self) -> float:
        return self._stat(lambda v: np.percentile(v, 25))

    @property
    def q3(self) -> float:
        return self._stat(lambda v: np.percentile(v, 75))

    def clearly_faster_than(self, other: Timing) -> bool:
        """Whether this was faster than ``other`` beyond both spreads: its third quartile below
        the other's first (their interquartile ranges do not overlap). A verdict of "faster"
        from medians alone flips between runs when the spreads overlap."""
        return self.q3 < other.q1

    @property
    def iqr(self) -> float:
        """Interquartile range: the spread of the middle half of the samples."""
        return self.q3 - self.q1

    @property
    def repeats(self) -> int:
        return len(self.samples)

    def describe(self) -> str:
        """``"1.23 ms ± 0.05 ms (median ± IQR/2, 25 samples × 10 calls)"``."""
        from jaxplay.core.i18n import _, ngettext

        if not self.samples:
            return _("no sample (cut: the measurement's time budget was spent first)")
        cut = _("; cut at the measurement's time budget") if self.cut else ""
        calls = ngettext("{n} call", "{n} calls", self.number).format(n=self.number)
        if self.repeats == 1:  # one sample has no spread to show
            return _("{median} (one sample × {calls}{cut})").format(
                median=format_seconds(self.median), calls=calls, cut=cut
            )
        return _("{median} ± {spread} (median ± IQR/2, {n} samples × {calls}{cut})").format(
            median=format_seconds(self.median),
            spread=format_seconds(self.iqr / 2),
            n=self.repeats,
            calls=calls,
            cut=cut,
        )


def format_seconds(seconds: float) -> str:
    """A duration in the unit that keeps 3 significant digits readable (ns, µs, ms, s)."""
    from jaxplay.core.words import in_units

    return in_units(seconds, (("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0)))


def _time_batch(call: Callable[[], Any], number: int) -> float:
    """Wall time of ``number`` blocked calls."""
    start = time.perf_counter()
    for _ in range(number):
        block(call())
    return time.perf_counter() - start


def autorange(
    call: Callable[[], Any],
    target_s: float = 0.02,
    max_number: int = 100_000,
    deadline: Deadline | None = None,
) -> int:
    """Calls per sample so that one sample lasts at least ``target_s`` (1, 2, 5, 10, 20, ...);
    the count reached so far once ``deadline`` is spent."""
    number = 1
    while number < max_number:
        for factor in (1, 2, 5):
            n = number * factor
            if _due(deadline):
                return n
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
    deadline: Deadline | None = None,
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
        deadline: the whole measurement's wall-clock budget: no call starts once it is spent
            (the result is then marked ``cut``). Without one, :func:`bounded` gives the sampling
            budget plus :data:`OVERRUN_S`.

    Returns:
        A :class:`Timing` with every per-call sample.
    """

    def call() -> Any:
        return fn(*args, **kwargs)

    def run() -> Timing:
        limit = bounded(deadline, budget_s)
        for _ in range(max(0, warmup)):
            if _due(limit):
                return Timing((), 1, warmup, cut=True)
            block(call())
        number = autorange(call, sample_target_s, deadline=limit)
        samples: list[float] = []
        end = time.perf_counter() + budget_s * BUDGET_SCALE
        cut = False
        while len(samples) < max_repeats and (
            len(samples) < min_repeats or time.perf_counter() < end
        ):
            if _due(limit):
                cut = True
                break
            samples.append(_time_batch(call, number) / number)
        return Timing(tuple(samples), number, warmup, cut)

    if not lock:
        return run()
    with exclusive():
        return run()


def _per_call(call: Callable[[], Any], number: int) -> float:
    return _time_batch(call, number) / number


def _tell(on_stage: Callable[[Step], None] | None, stage: Step) -> None:
    """Report a stage that is about to start (called between stopwatches, never inside one)."""
    if on_stage is not None:
        on_stage(stage)


# --- eager against jit --------------------------------------------------------------------------


@dataclass(frozen=True)
class JitComparison:
    """Eager and jitted timings of one function, sampled in alternation (A B A B ...).

    Attributes:
        eager: per-call times of the plain Python function (one dispatch per primitive).
        jitted: per-call times of ``jax.jit`` of it (compiled before sampling starts).
    """

    eager: Timing
    jitted: Timing

    @property
    def speedup(self) -> float:
        """Ratio of medians, eager / jitted (above 1: jit is faster)."""
        return self.eager.median / self.jitted.median

    @property
    def pair_ratios(self) -> tuple[float, ...]:
        """eager / jitted for each interleaved pair of samples."""
        return tuple(e / j for e, j in zip(self.eager.samples, self.jitted.samples, strict=False))

    @property
    def speedup_low(self) -> float:
        """A pessimistic speedup: eager's first quartile over jit's third."""
        return self.eager.q1 / self.jitted.q3

    @property
    def speedup_high(self) -> float:
        """An optimistic speedup: eager's third quartile over jit's first."""
        return self.eager.q3 / self.jitted.q1

    def describe(self) -> str:
        """``"4.2× (the pairs' speed-ups: quartile range 3.9×–4.5×, 12 interleaved pairs)"``:
        the quartiles of each pair's eager / jit, not of the two timings apart (their bounds,
        :attr:`speedup_low` to :attr:`speedup_high`, are wider)."""
        from jaxplay.core.i18n import _

        ratios, speedup = self.pair_ratios, f"{self.speedup:.3g}"
        if len(ratios) == 1:
            return _("{speedup}× (one interleaved pair: no spread to judge it by)").format(
                speedup=speedup
            )
        low, high = (float(np.percentile(ratios, q)) for q in (25, 75)) if ratios else (0.0, 0.0)
        return _(
            "{speedup}× (the pairs' speed-ups: quartile range {low}×–{high}×, {n} interleaved "
            "pairs)"
        ).format(speedup=speedup, low=f"{low:.3g}", high=f"{high:.3g}", n=len(ratios))


def compare_jit(
    fn: Callable[..., Any],
    *args: Any,
    budget_s: float = 1.0,
    warmup: int = 2,
    static_argnums: tuple[int, ...] = (),
    min_repeats: int = 5,
    max_repeats: int = 200,
    sample_target_s: float = 0.01,
    lock: bool = True,
    on_stage: Callable[[Step], None] | None = None,
    deadline: Deadline | None = None,
    **kwargs: Any,
) -> JitComparison:
    """Time ``fn`` eagerly and under ``jax.jit``, interleaving their samples.

    Timing one and then the other lets a change in the machine's load (another process, thermal
    throttling, a visitor's request) land on one side only and fake a speedup. Alternating eager
    and jitted samples makes drift hit both alike; each side keeps its own calls-per-sample
    (``timeit.autorange``-style) so a fast jitted call is batched while a slow eager one is not.

    Arguments:
        fn: a Python function of JAX arrays (not yet jitted).
        args, kwargs: its arguments; ``static_argnums`` marks compile-time constants for jit.
        budget_s: rough total sampling time for both sides together.
        warmup: calls of each side thrown away first (the jitted one compiles here).
        min_repeats, max_repeats: bounds on the number of sample pairs.
        sample_target_s: a sample lasts at least this long.
        lock: hold :data:`MEASURE_LOCK`.
        on_stage: told ``Step.WARMING_UP`` and then ``Step.SAMPLING`` as each starts (a page
            shows it).
        deadline: the whole measurement's wall-clock budget (see :func:`measure`).

    Returns:
        A :class:`JitComparison`; ``.speedup`` is eager median / jitted median.
    """
    import jax

    jitted_fn = jax.jit(fn, static_argnums=static_argnums)

    def eager() -> Any:
        return fn(*args, **kwargs)

    def jitted() -> Any:
        return jitted_fn(*args, **kwargs)

    def run() -> JitComparison:
        limit = bounded(deadline, budget_s)
        block((args, kwargs))
        _tell(on_stage, Step.WARMING_UP)
        for _ in range(max(1, warmup)):
            if _due(limit):
                return JitComparison(Timing((), 1, warmup, True), Timing((), 1, warmup, True))
            block(eager())
            if _due(limit):
                return JitComparison(Timing((), 1, warmup, True), Timing((), 1, warmup, True))
            block(jitted())
        n_eager = autorange(eager, sample_target_s, deadline=limit)
        n_jitted = autorange(jitted, sample_target_s, deadline=limit)
        _tell(on_stage, Step.SAMPLING)
        eager_samples: list[float] = []
        jitted_samples: list[float] = []
        end = time.perf_counter() + budget_s * BUDGET_SCALE
        cut = False
        while len(eager_samples) < max_repeats and (
            len(eager_samples) < min_repeats or time.perf_counter() < end
        ):
            if _due(limit):
                cut = True
                break
            eager_s = _per_call(eager, n_eager)
            if _due(limit):  # a pair or nothing: the samples stay interleaved
                cut = True
                break
            eager_samples.append(eager_s)
            jitted_samples.append(_per_call(jitted, n_jitted))
        return JitComparison(
            Timing(tuple(eager_samples), n_eager, warmup, cut),
            Timing(tuple(jitted_samples), n_jitted, warmup, cut),
        )

    if not lock:
        return run()
    with exclusive():
        return run()


# --- the stages of jit --------------------------------------------------------------------------

#: Stage names in the order JAX runs them, as :meth:`JitProfile.stages` reports them.
STAGES: tuple[str, ...] = ("trace", "lower", "compile", "first call", "steady call")


@dataclass(frozen=True, eq=False)
class JitProfile:
    """What one ``jax.jit`` costs, stage by stage, and what XLA estimates it does.

    Attributes:
        trace_s: Python runs once with tracers and records a jaxpr.
        lower_s: the jaxpr becomes a StableHLO module.
        compile_s: XLA optimizes (fuses) and compiles it for the device.
        first_call_s: the first call of the executable, blocked (its arguments were ready before).
        steady: blocked per-call times after warm-up: what a training loop pays per step.
        aot: the :class:`~jaxplay.core.compilation.AotCompilation` behind it (texts, executable).
    """

    trace_s: float
    lower_s: float
    compile_s: float
    first_call_s: float
    steady: Timing
    aot: compilation.AotCompilation

    @property
    def cost(self) -> dict[str, float] | None:
        """``flops``, ``transcendentals``, ``bytes accessed`` from ``cost_analysis()``, or None."""
        return self.aot.cost

    @property
    def memory(self) -> dict[str, int] | None:
        """argument/output/temp/alias/generated-code bytes from ``memory_analysis()``, or None."""
        return self.aot.memory

    @property
    def notes(self) -> tuple[str, ...]:
        """Why cost, memory or a text is missing on this backend (empty when all are there)."""
        return self.aot.notes

    @property
    def jaxpr_text(self) -> str:
        return self.aot.jaxpr_text

    @property
    def stablehlo_text(self) -> str:
        return self.aot.stablehlo_text

    @property
    def hlo_text(self) -> str:
        return self.aot.hlo_text

    @property
    def compile_total_s(self) -> float:
        """trace + lower + compile: the one-off price of the first call."""
        return self.trace_s + self.lower_s + self.compile_s

    def stages(self) -> tuple[tuple[str, float], ...]:
        """(stage, seconds) in :data:`STAGES` order; the steady call is its median."""
        return tuple(
            zip(
                STAGES,
                (self.trace_s, self.lower_s, self.compile_s, self.first_call_s, self.steady.median),
                strict=True,
            )
        )


def profile_jit(
    fn: Callable[..., Any],
    *args: Any,
    static_argnums: tuple[int, ...] = (),
    budget_s: float = 0.5,
    warmup: int = 1,
    lock: bool = True,
    on_stage: Callable[[Step], None] | None = None,
    deadline: Deadline | None = None,
) -> JitProfile:
    """Time each stage of ``jax.jit(fn)`` separately through the ahead-of-time API.

    ``jax.jit(f)(x)`` hides four costs in its first call; ``jit(f).trace(x).lower().compile()``
    exposes them one by one. A fresh wrapper of ``fn`` is compiled (see
    :func:`jaxplay.core.compilation.fresh_function`) so the stages are really run, not answered from
    a cache an earlier visitor filled.

    Arguments:
        fn: a Python function (not yet jitted).
        args: example arguments; those at ``static_argnums`` are plain Python values.
        budget_s: sampling time for the steady state.
        warmup: steady-state calls thrown away after the first call.
        lock: hold :data:`MEASURE_LOCK`.
        on_stage: told each :class:`~jaxplay.core.compilation.Step` from ``TRACING`` to
            ``STEADY_CALLS`` as it starts (a page shows it; its own time is not counted).
        deadline: the whole measurement's wall-clock budget (see :func:`measure`): spent before
            the first call, the first call is not made (NaN) and the steady state has no sample.

    The arguments are waited for before the first stopwatch starts: an input still being
    computed (JAX dispatches asynchronously) would otherwise be timed as part of the compile or
    the first call.

    Returns:
        A :class:`JitProfile`; cost, memory and texts are ``None``/empty with a note where the
        backend does not provide them.
    """

    def run() -> JitProfile:
        block(args)
        aot = compilation.compile_aot(fn, *args, static_argnums=static_argnums, on_stage=on_stage)
        _tell(on_stage, Step.FIRST_CALL)
        if _due(deadline):
            steady = Timing((), 1, warmup, cut=True)
            return JitProfile(aot.trace_s, aot.lower_s, aot.compile_s, float("nan"), steady, aot)
        start = time.perf_counter()
        block(aot.compiled(*aot.call_args))
        first_call_s = time.perf_counter() - start
        _tell(on_stage, Step.STEADY_CALLS)
        steady = measure(
            aot.compiled,
            *aot.call_args,
            budget_s=budget_s,
            warmup=warmup,
            lock=False,
            deadline=deadline,
        )
        return JitProfile(aot.trace_s, aot.lower_s, aot.compile_s, first_call_s, steady, aot)

    if not lock:
        return run()
    with exclusive():
        return run()


def traced_dispatches(fn: Callable[..., Any], *args: Any) -> dict[str, int]:
    """How often each compiled program ran during one call of ``fn(*args)``, from a profiler
    trace: the distinct ``run_id`` of each program's kernel events (``jit_exp``: 2).

    ``fn`` is called once first, so the trace holds runs, not compiles. The profiler is one per
    process: this raises if another trace is running.
    """
    import tempfile
    from collections import defaultdict
    from pathlib import Path

    import jax

    block(fn(*args))
    runs: dict[str, set[Any]] = defaultdict(set)
    with tempfile.TemporaryDirectory(prefix="jaxplay-dispatches-") as directory:
        with jax.profiler.trace(directory):
            block(fn(*args))
        data = jax.profiler.ProfileData.from_file(str(next(Path(directory).rglob("*.xplane.pb"))))
        for plane in data.planes:
            for line in plane.lines:
                for event in line.events:
                    stats = dict(event.stats)
                    if stats.get("hlo_module") and "run_id" in stats:
                        runs[str(stats["hlo_module"])].add(stats["run_id"])
    return {module: len(ids) for module, ids in runs.items()}

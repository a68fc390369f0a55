"""Honest timing of JAX code: the one harness every page and the runner use.

JAX dispatches work asynchronously: a call returns as soon as the computation is *queued*. A
stopwatch around a call without ``block_until_ready`` measures dispatch, not compute; a stopwatch
around the first call of a jitted function measures tracing and compilation too. Every number this
module returns therefore (1) blocks on every leaf of the result, (2) warms up first so compilation
and caches are out of the steady state, (3) batches sub-millisecond calls like
``timeit.autorange`` so timer resolution does not dominate, and (4) keeps all samples so pages can
show the median with its spread rather than one lucky number.

One process-wide lock serialises measurements: two visitors benchmarking at once on a shared
machine would each slow the other down and both would see wrong numbers. The lock is re-entrant,
so a page may hold it around several measurements (and tell a queued visitor so) while each
measurement takes it again. In public mode a per-visitor throttle (see :func:`set_throttle`)
keeps one visitor from holding the lock in a loop: the visitor is whoever
:data:`current_visitor` names in the measuring thread's context.

Beyond :func:`measure`, the module answers the questions the jit page asks:

- :func:`compare_jit`: eager against jitted, samples interleaved so drift hits both alike;
- :func:`profile_jit`: trace, lower, compile, first call and steady state as separate numbers, plus
  XLA's cost and memory estimates (via :func:`jaxplay.core.compilation.compile_aot`);
- :func:`article_timing`: the tutorial article's stopwatch, reproduced on purpose to show its error;
- :func:`machine_reference` and :func:`roofline_point`: this device's copy bandwidth and matmul
  rate, to place a result on a roofline.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxplay.core import compilation

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
_sleep: Callable[[float], None] = time.sleep
_depth = threading.local()


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
    """Hold the process-wide measurement lock.

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
        with _locked(on_wait):
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


def _per_call(call: Callable[[], Any], number: int) -> float:
    return _time_batch(call, number) / number


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
        """``"4.2× (quartile range 3.9×–4.5×, 12 interleaved pairs)"``."""
        return (
            f"{self.speedup:.3g}× (quartile range {self.speedup_low:.3g}×–"
            f"{self.speedup_high:.3g}×, {len(self.pair_ratios)} interleaved pairs)"
        )


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
        for _ in range(max(1, warmup)):
            block(eager())
            block(jitted())
        n_eager = autorange(eager, sample_target_s)
        n_jitted = autorange(jitted, sample_target_s)
        eager_samples: list[float] = []
        jitted_samples: list[float] = []
        deadline = time.perf_counter() + budget_s
        while len(eager_samples) < max_repeats and (
            len(eager_samples) < min_repeats or time.perf_counter() < deadline
        ):
            eager_samples.append(_per_call(eager, n_eager))
            jitted_samples.append(_per_call(jitted, n_jitted))
        return JitComparison(
            Timing(tuple(eager_samples), n_eager, warmup),
            Timing(tuple(jitted_samples), n_jitted, warmup),
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
        first_call_s: the first call of the executable (buffer setup, first dispatch), blocked.
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

    Returns:
        A :class:`JitProfile`; cost, memory and texts are ``None``/empty with a note where the
        backend does not provide them.
    """

    def run() -> JitProfile:
        aot = compilation.compile_aot(fn, *args, static_argnums=static_argnums)
        start = time.perf_counter()
        block(aot.compiled(*aot.call_args))
        first_call_s = time.perf_counter() - start
        steady = measure(aot.compiled, *aot.call_args, budget_s=budget_s, warmup=warmup, lock=False)
        return JitProfile(aot.trace_s, aot.lower_s, aot.compile_s, first_call_s, steady, aot)

    if not lock:
        return run()
    with exclusive():
        return run()


# --- the article's method -----------------------------------------------------------------------


@dataclass(frozen=True)
class ArticleTiming:
    """The tutorial article's measurement: ``time.time()`` around ``loops`` calls, no blocking.

    Attributes:
        naive_s: wall seconds of the eager loop (dispatch time plus whatever finished meanwhile).
        jitted_s: wall seconds of the jitted loop, *including* its first call's trace and compile.
        loops: calls in each loop.
    """

    naive_s: float
    jitted_s: float
    loops: int

    @property
    def speedup(self) -> float:
        """What the article would report: naive total / jitted total."""
        return self.naive_s / self.jitted_s


def article_timing(
    fn: Callable[..., Any], *args: Any, loops: int = 10, lock: bool = True
) -> ArticleTiming:
    """Reproduce the seed article's timing of ``fn`` on purpose, errors included.

    The article does, for each of ``naive_softmax`` and ``jit(naive_softmax)``::

        start = time.time()
        for _ in range(10):
            y = f(x)
        print(time.time() - start)

    Three things are wrong with it: nothing waits for the result (JAX dispatches asynchronously, so
    the stopwatch sees queueing, and the eager loop's unfinished work spills into the jit loop),
    the jitted loop's first call traces and compiles inside the stopwatch, and one run of 10 calls
    has no spread. The jitted function here is a fresh wrapper, so compilation is really included
    as it is in the article's fresh process. Only after both stopwatches stop do we block, so
    later measurements start clean.
    """
    import jax

    jitted = jax.jit(compilation.fresh_function(fn))

    def run() -> ArticleTiming:
        y = None
        start = time.time()
        for _ in range(loops):
            y = fn(*args)
        naive_s = time.time() - start
        start = time.time()
        for _ in range(loops):
            y = jitted(*args)
        jitted_s = time.time() - start
        block(y)
        return ArticleTiming(naive_s, jitted_s, loops)

    if not lock:
        return run()
    with exclusive():
        return run()


# --- machine reference and roofline -------------------------------------------------------------


@dataclass(frozen=True)
class MachineReference:
    """What this device can do at best, measured here, to judge a result against.

    Attributes:
        device: the device measured, e.g. ``"cpu (cpu)"`` or ``"gpu (NVIDIA H200)"``.
        platform: JAX's platform name.
        copy_bandwidth_gbps: GB/s of a jitted ``y = a * y`` on a large float32 vector, repeated
            in place, counting one read and one write of every element (STREAM's "scale").
        matmul_gflops: GFLOP/s of a jitted float32 ``x @ y`` (2·n³ flops per call).
        copy_elements, matmul_n: the sizes used.
        copy: the blocked timing of the copy kernel.
        matmul: the blocked timing of the matmul.
        method: one sentence on how the figures were measured, for captions.
    """

    device: str
    platform: str
    copy_bandwidth_gbps: float
    matmul_gflops: float
    copy_elements: int
    matmul_n: int
    copy: Timing
    matmul: Timing
    method: str

    @property
    def ridge_flops_per_byte(self) -> float:
        """Arithmetic intensity where the two roofs meet: below it, memory bandwidth limits."""
        return self.matmul_gflops / self.copy_bandwidth_gbps


def device_label() -> str:
    """Where measurements run, for chart titles: ``"cpu (cpu)"``, ``"gpu (NVIDIA H200)"``."""
    import jax

    device = jax.devices()[0]
    return f"{device.platform} ({getattr(device, 'device_kind', device.platform)})"


_REFERENCE: MachineReference | None = None
_REFERENCE_LOCK = threading.Lock()


def machine_reference(budget_s: float = 0.3) -> MachineReference:
    """This device's copy bandwidth and matmul rate, measured on first use and then cached.

    The process measures once (about a second) and every later call returns the same object, so
    every page compares against the same roofs. Each roof is the fastest sample, not the median:
    it stands for the best this device does, and load from other visitors only slows samples
    down. Sizes exceed CPU caches (32 MiB on CPU, 256 MiB on an accelerator) so the bandwidth is
    memory's, not cache's.
    """
    global _REFERENCE
    with _REFERENCE_LOCK:
        if _REFERENCE is None:
            _REFERENCE = _measure_reference(budget_s)
        return _REFERENCE


def _measure_reference(budget_s: float) -> MachineReference:
    import jax
    import jax.numpy as jnp

    device = jax.devices()[0]
    platform = str(device.platform)
    on_cpu = platform == "cpu"
    elements = 1 << 23 if on_cpu else 1 << 26
    rounds = 10
    n = 1024 if on_cpu else 4096

    # y = a * y, ten times in a loop: the loop carry is updated in place, so the figure is memory
    # bandwidth rather than the page faults of allocating a fresh 64 MiB output on every call.
    @jax.jit
    def scale(x: Any, a: Any) -> Any:
        return jax.lax.fori_loop(0, rounds, lambda _, y: y * a, x)

    matmul = jax.jit(lambda x, y: x @ y)
    with exclusive():
        vector = block(jnp.full((elements,), 1.5, jnp.float32))
        a = jnp.float32(1.0001)
        left = block(jnp.full((n, n), 0.5, jnp.float32))
        right = block(jnp.full((n, n), 0.25, jnp.float32))
        copy_timing = measure(scale, vector, a, budget_s=budget_s, lock=False)
        matmul_timing = measure(matmul, left, right, budget_s=budget_s, lock=False)
    del vector, left, right
    bytes_moved = rounds * 2 * elements * 4
    flops = 2 * n**3
    return MachineReference(
        device=device_label(),
        platform=platform,
        copy_bandwidth_gbps=bytes_moved / copy_timing.min / 1e9,
        matmul_gflops=flops / matmul_timing.min / 1e9,
        copy_elements=elements,
        matmul_n=n,
        copy=copy_timing,
        matmul=matmul_timing,
        method=(
            f"jitted y = a·y, {rounds} rounds in place on {elements:,} float32 "
            f"({elements * 4 / 2**20:.0f} MiB, read + written each round), and a {n}×{n} "
            "float32 matmul (2·n³ flops); fastest blocked sample of each, since a roof is the "
            "best the device does"
        ),
    )


def roofline_point(cost: dict[str, float] | None, seconds: float) -> tuple[float, float]:
    """Achieved (GB/s, GFLOP/s) of a call that took ``seconds``, from its ``cost_analysis``.

    XLA's ``bytes accessed`` and ``flops`` are its own estimates for the compiled program (its
    flops leave out transcendentals such as ``exp``). A figure that is missing is NaN.
    """
    if not cost or not seconds > 0:
        return float("nan"), float("nan")
    gbps = cost.get("bytes accessed", float("nan")) / seconds / 1e9
    gflops = cost.get("flops", float("nan")) / seconds / 1e9
    return float(gbps), float(gflops)

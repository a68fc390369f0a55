"""The timing harness: blocking, batching, interleaving and the stages of jit."""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxplay.core import timing


class _Pending:
    """An unfinished asynchronous result: it is only done once ``block_until_ready`` returns."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def block_until_ready(self) -> _Pending:
        time.sleep(self.seconds)
        return self


def test_measure_waits_for_unfinished_results_in_a_pytree() -> None:
    """A call that returns at once but finishes 20 ms later is timed at 20 ms, not at ~0."""
    t = timing.measure(lambda: {"fast": 1.0, "slow": [_Pending(0.02)]}, budget_s=0.05, warmup=0)
    assert t.min >= 0.02


def test_measure_blocks_on_real_jax_dispatch() -> None:
    """Timing the bare call must see the compute, not the ~20 µs it takes to dispatch it.

    Dispatch alone is hundreds of times faster than the work here, so a harness that forgot to
    block would report well under a tenth of the blocked time; machine noise cannot close that gap.
    """
    x = jnp.ones((300, 300))
    heavy = jax.jit(lambda x: jnp.linalg.matrix_power(x / 300.0, 16))
    unblocked = timing.measure(heavy, x, budget_s=0.1)
    blocked = timing.measure(lambda: heavy(x).block_until_ready(), budget_s=0.1)
    assert unblocked.min > 0.25 * blocked.min


def test_measure_batches_fast_calls_and_keeps_all_samples() -> None:
    t = timing.measure(lambda: 1, budget_s=0.05, min_repeats=3)
    assert t.number > 1
    assert t.repeats >= 3 and len(t.samples) == t.repeats
    assert t.min <= t.q1 <= t.median <= t.q3 <= t.max
    assert "samples" in t.describe()


def test_a_timing_is_described_in_the_words_its_counts_take() -> None:
    one = timing.Timing((0.0123,), 1, 0).describe()
    assert one == "12.3 ms (one sample × 1 call)"  # no spread of one sample, no "1 calls"
    two = timing.Timing((0.01, 0.02), 3, 0).describe()
    assert "2 samples × 3 calls" in two and "±" in two


def test_the_budget_scale_stretches_every_sampling_budget(monkeypatch) -> None:
    """The suite's small scale (tests/conftest.py) makes a measurement take its minimum samples;
    a scale of 1 gives the budget asked for."""
    slow = lambda: time.sleep(0.002)
    monkeypatch.setattr(timing, "BUDGET_SCALE", 0.0)
    assert timing.measure(slow, budget_s=10.0, min_repeats=3).repeats == 3
    comparison = timing.compare_jit(_softmax, jnp.ones(4), budget_s=10.0, min_repeats=3)
    assert len(comparison.pair_ratios) == 3
    monkeypatch.setattr(timing, "BUDGET_SCALE", 1.0)
    assert timing.measure(slow, budget_s=0.2, min_repeats=3).repeats > 3


def test_format_seconds_picks_a_readable_unit() -> None:
    assert timing.format_seconds(1.5) == "1.5 s"
    assert timing.format_seconds(2.5e-3) == "2.5 ms"
    assert timing.format_seconds(3e-6) == "3 µs"
    assert timing.format_seconds(4e-9) == "4 ns"
    assert timing.format_seconds(float("nan")) == "n/a"


def _softmax(x):
    return jnp.exp(x) / jnp.sum(jnp.exp(x), axis=-1, keepdims=True)


def test_compare_jit_pairs_samples_and_reports_the_ratio_of_medians() -> None:
    c = timing.compare_jit(_softmax, jnp.ones((50, 40)), budget_s=0.1)
    assert len(c.eager.samples) == len(c.jitted.samples) >= 5
    assert c.speedup == pytest.approx(c.eager.median / c.jitted.median)
    assert c.speedup_low <= c.speedup <= c.speedup_high
    assert len(c.pair_ratios) == len(c.eager.samples)
    assert "pairs" in c.describe()


def test_the_speedups_quartile_range_is_the_pairs_own() -> None:
    """The range said "quartile range" is the quartiles of each pair's eager / jit; it was eager's
    quartiles over jit's, a wider pessimistic-to-optimistic bound."""
    eager = timing.Timing(samples=(1.0, 2.0, 3.0, 4.0, 5.0), number=1, warmup=0)
    jitted = timing.Timing(samples=(1.0, 1.0, 1.0, 1.0, 1.0), number=1, warmup=0)
    c = timing.JitComparison(eager, jitted)
    said = c.describe()
    assert "quartile range 2×–4×" in said  # the ratios 1..5: quartiles 2 and 4
    assert c.speedup_low == 2.0 and c.speedup_high == 4.0
    wide = timing.JitComparison(eager, timing.Timing((0.5, 1.0, 1.0, 1.0, 2.0), 1, 0))
    low, high = np.percentile(wide.pair_ratios, [25, 75])
    assert f"quartile range {low:.3g}×–{high:.3g}×" in wide.describe()
    assert (wide.speedup_low, wide.speedup_high) != (low, high)


def test_profile_jit_stages_are_positive_and_add_up() -> None:
    x = jnp.ones((64, 64))
    start = time.perf_counter()
    p = timing.profile_jit(_softmax, x, budget_s=0.05)
    wall = time.perf_counter() - start
    names = [name for name, _ in p.stages()]
    assert names == list(timing.STAGES)
    assert all(seconds > 0 for _, seconds in p.stages())
    # Every stage was timed inside the call, so together they cannot exceed its wall time.
    assert p.compile_total_s + p.first_call_s < wall
    # For a small function the one-off compile dwarfs one steady call.
    assert p.compile_s > 10 * p.steady.median
    assert p.cost is not None and p.cost["flops"] > 0
    assert p.memory is not None and p.memory["output"] == x.nbytes
    assert "stablehlo" in p.stablehlo_text and "HloModule" in p.hlo_text


def test_profile_jit_with_a_static_argument() -> None:
    def branch(x, use_tanh):
        return jnp.tanh(x) if use_tanh else jnp.sin(x)

    p = timing.profile_jit(branch, jnp.ones(8), True, static_argnums=(1,), budget_s=0.02)
    assert "tanh" in p.jaxpr_text and "sin" not in p.jaxpr_text


def test_profile_jit_waits_for_its_arguments_and_reports_each_stage(monkeypatch) -> None:
    """An input still being computed must not be timed as part of the compile or first call."""
    events: list[str] = []
    original = timing.block

    def recording_block(tree):
        events.append("block")
        return original(tree)

    monkeypatch.setattr(timing, "block", recording_block)
    timing.profile_jit(_softmax, jnp.ones((4, 3)), budget_s=0.01, on_stage=events.append)
    assert events[0] == "block"  # the arguments, before any stopwatch
    stages = [e for e in events if e != "block"]
    assert stages == ["tracing", "lowering", "compiling", "first call", "steady calls"]


def test_compare_jit_reports_its_stages() -> None:
    stages: list[str] = []
    timing.compare_jit(_softmax, jnp.ones((4, 3)), budget_s=0.01, on_stage=stages.append)
    assert stages == ["warming up", "sampling"]


def test_a_measurement_without_a_deadline_is_cut_past_its_budget(monkeypatch) -> None:
    """Every measurement holds the one lock: one of a slow function (a sort of a million
    numbers took 12 s a call) was taking its minimum samples for minutes. Given no deadline,
    it stops :data:`timing.OVERRUN_S` past its sampling budget, and says it was cut."""
    monkeypatch.setattr(timing, "OVERRUN_S", 0.3)

    def slow(x):
        time.sleep(0.05)
        return x

    started = time.perf_counter()
    result = timing.measure(slow, 1.0, warmup=1, min_repeats=50, budget_s=0.1)
    assert result.cut and 1 <= result.repeats < 50
    compared = timing.compare_jit(lambda x: jnp.sin(x) + slow(x), jnp.ones(3), min_repeats=50)
    assert compared.eager.cut and compared.eager.repeats < 50
    assert time.perf_counter() - started < 10  # uncut: 50 × 0.05 s each, and 100 × 0.05 s

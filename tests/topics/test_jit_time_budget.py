"""The jit page's time budget: sorts priced by what they cost, measurements cut at the budget.

The hostile links of the hardening issue: ``jnp.sort(x)`` on 2×1,000,000 held the measurement
lock 43.7 s, 16×1,000,000 was charged 0.32 of 40 GFLOP for a 12 s call, and ``check()`` let 30
nested sorts through.
"""

from __future__ import annotations

import math
import threading
import time

import pytest

from jaxplay import jit
from jaxplay.core import measure_lock, timing
from jaxplay.jit import _measurement, _workloads


def sorts(n: int) -> str:
    return "jnp.sort(" * n + "x" + ")" * n


def lock_is_free() -> bool:
    """Whether another thread can take the measurement lock right now."""
    got: list[bool] = []

    def take() -> None:
        ok = measure_lock.MEASURE_LOCK.acquire(timeout=1.0)
        got.append(ok)
        if ok:
            measure_lock.MEASURE_LOCK.release()

    thread = threading.Thread(target=take)
    thread.start()
    thread.join()
    return got == [True]


def test_a_16_by_1_000_000_sort_is_refused_before_it_runs() -> None:
    workload = jit.Workload("formula", 16, 1_000_000, formula="jnp.sort(x)")
    started = time.perf_counter()
    with pytest.raises(jit.SizeError, match="would take about"):
        _workloads.check(workload)
    assert time.perf_counter() - started < 5.0  # traced on shapes only: nothing sorted
    # Its flops alone were well inside the limit: the refusal comes from the priced time.
    fp, _ = jit._workloads.footprint("formula", 16, 1_000_000, "float32", "jnp.sort(x)")
    assert fp.flops < jit._workloads.BUDGET.max_flops
    assert fp.seconds > jit._workloads.MAX_CALL_S


def test_thirty_nested_sorts_are_refused_where_one_is_allowed() -> None:
    one = jit.Workload("formula", 2, 200_000, formula=sorts(1))
    _workloads.check(one)
    with pytest.raises(jit.SizeError, match="would take about"):
        _workloads.check(jit.Workload("formula", 2, 200_000, formula=sorts(30)))
    fp1, _ = jit._workloads.footprint("formula", 2, 200_000, "float32", sorts(1))
    fp30, _ = jit._workloads.footprint("formula", 2, 200_000, "float32", sorts(30))
    assert fp30.seconds == pytest.approx(30 * fp1.seconds, rel=0.1)


def test_a_measurement_stops_repeating_at_its_deadline_and_says_so() -> None:
    def slow() -> None:
        time.sleep(0.05)

    deadline = timing.Deadline(0.3)
    started = time.perf_counter()
    result = timing.measure(slow, warmup=1, min_repeats=50, budget_s=5.0, deadline=deadline)
    took = time.perf_counter() - started
    assert result.cut and deadline.cut
    assert 1 <= result.repeats < 50
    assert took < 0.3 + 0.05 + 0.5  # the budget, one call in flight, and slack for load
    assert "cut" in result.describe()


def test_a_spent_deadline_starts_no_call() -> None:
    calls: list[int] = []
    deadline = timing.Deadline(0.0)
    result = timing.compare_jit(lambda x: x + 1.0, 1.0, deadline=deadline, on_stage=None)
    assert result.eager.repeats == 0 and result.eager.cut
    assert timing.measure(lambda: calls.append(1), deadline=deadline).repeats == 0
    assert calls == []
    assert timing.Timing((), 1, 0, cut=True).median != timing.Timing((), 1, 0).median  # NaN


def test_the_sort_link_is_cut_at_its_budget_and_frees_the_lock() -> None:
    """The issue's link, measured under a 2 s budget: cut, shown, the lock free again."""
    workload = jit.Workload("formula", 2, 1_000_000, formula="jnp.sort(x)")
    _workloads.check(workload)  # one call is under MAX_CALL_S here: it is measured, and cut
    budget_s = 4.0
    m = _measurement.measure(workload, budget_s=budget_s)
    assert m.cut
    assert m.cut_note().startswith("Cut at the measurement's time budget")
    one_call = m.profile.first_call_s
    assert math.isfinite(one_call)  # what it got is reported: at least the first call
    # Without the deadline this runs some 40 calls (about 40 s on a loaded 2-core machine).
    assert m.locked_s < budget_s + 2 * one_call + 1.0
    assert lock_is_free()

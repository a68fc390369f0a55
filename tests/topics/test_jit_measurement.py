"""The jit page's two measurements per workload (its stages; eager against jit and the article's
stopwatch): their stages, what they keep, and sharing them."""

from __future__ import annotations

import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxplay import jit
from jaxplay.core import timing
from jaxplay.jit import _measurement, _workloads
from tests.support.progress import Told

SMALL = jit.Workload("softmax", 12, 7)


@pytest.fixture(scope="module")
def measured() -> tuple[jit.Measurement, list[tuple[str, float | None]]]:
    seen: list[tuple[str, float | None]] = []

    class Seen(Told):
        def stage(self, stage: str, fraction: float | None) -> None:
            seen.append((stage, fraction))

    m = _measurement.measure(SMALL, Seen())
    return m, seen


def test_every_stage_is_reported_in_order_with_its_share_of_the_whole(measured) -> None:
    _, seen = measured
    stages = [stage for stage, _ in seen]
    assert stages == list(_measurement.STAGES)  # each once, in the order the progress bar counts
    fractions = [f for _, f in seen]
    assert fractions == sorted(fractions) and fractions[0] == 0 and fractions[-1] < 1


@pytest.fixture(scope="module")
def raced(measured) -> tuple[jit.Race, list[tuple[str, float | None]]]:
    seen: list[tuple[str, float | None]] = []

    class Seen(Told):
        def stage(self, stage: str, fraction: float | None) -> None:
            seen.append((stage, fraction))

    m, _ = measured
    return _measurement.race(SMALL, Seen(), compile_s=m.profile.compile_total_s), seen


def test_the_race_reports_its_own_stages_in_order(raced) -> None:
    r, seen = raced
    assert [stage for stage, _ in seen] == list(_measurement.RACE_STAGES)
    fractions = [f for _, f in seen]
    assert fractions == sorted(fractions) and fractions[0] == 0 and fractions[-1] < 1
    assert not set(_measurement.RACE_STAGES[2:]) & set(_measurement.STAGES)  # told apart
    assert r.workload == SMALL and r.comparison.speedup > 0 and r.article.loops == 10
    assert not r.cut and r.cut_note() == ""


def test_the_race_skips_the_stopwatch_that_does_not_fit_and_says_so() -> None:
    """The article's jit loop compiles inside its stopwatch: a compile longer than what is left
    of the budget leaves the stopwatch out, and the note names it."""
    r = _measurement.race(SMALL, Told(), budget_s=5.0, compile_s=60.0)
    assert r.comparison is not None and r.article is None and r.cut
    assert "not measured: the article's stopwatch." in r.cut_note()


def test_a_measurement_holds_every_part_and_not_the_inputs(measured) -> None:
    m, _ = measured
    assert m.workload == SMALL and m.profile.aot.call_args == () and m.profile.aot.compiled is None
    assert not hasattr(m, "comparison")  # eager against jit is the race's: measured on demand
    assert len(m.first_call.first) == jit._measurement.FIRST_CALL_EXECUTABLES
    assert m.program.function == "naive_softmax" and m.program.signature == "float32[12,7]"
    assert m.reference.copy_bandwidth_gbps > 0


def test_a_refused_workload_reports_only_the_check() -> None:
    progress = Told()
    with pytest.raises(jit.SizeError):
        _measurement.measure(jit.Workload("softmax", 100_000, 1_000), progress)
    assert progress.of("stage") == [_measurement.STAGES[0]]


def test_the_formula_counts_in_the_key_only_for_the_formula_preset() -> None:
    a = jit.Workload("softmax", 3, 4, "float32", "jnp.sin(x)")
    b = jit.Workload("softmax", 3, 4, "float32", "jnp.cos(x)")
    assert jit.key_of(a) == jit.key_of(b)
    assert jit.key_of(jit.Workload("formula", 3, 4, formula="jnp.sin(x)")) != jit.key_of(
        jit.Workload("formula", 3, 4, formula="jnp.cos(x)")
    )


def test_visitors_share_one_measurement_and_warm_up_fills_it_before_they_come() -> None:
    workload = jit.Workload("chain", 9, 5)
    before = _measurement.MEASUREMENTS.measured
    jit._measurement._warm_up_thread = None  # a fresh server
    try:
        jit.warm_up(workload).join(300)
    finally:
        jit._measurement._warm_up_thread = None
    assert _measurement.MEASUREMENTS.measured == before + 1
    kept = jit.shared_measurement(workload)
    assert kept is not None and "at the server's start-up" in kept.owner
    race = jit.shared_race(workload)  # the page's default view's other tabs: warmed too
    assert race is not None and "at the server's start-up" in race.owner
    for visitor in ("alice", "bob"):
        assert jit.measure_shared(workload, owner=visitor) is kept
        assert jit.race_shared(kept.value, owner=visitor) is race
    assert _measurement.MEASUREMENTS.measured == before + 1


def test_the_provenance_sentence_says_who_when_and_which_measurement(measured) -> None:
    m, _ = measured
    kept = jit.SharedResult(m, "a visitor", finished=1000.0, number=1, visitor="alice")
    for_alice = jit.provenance(kept, "alice", now=1030.0)
    assert "30 s ago for you" in for_alice and f"in {m.seconds:.1f} s" in for_alice
    assert "for another visitor" in jit.provenance(kept, "bob", now=1030.0)
    again = jit.SharedResult(m, "a visitor", finished=1000.0, number=3, visitor="alice")
    later = jit.provenance(again, "bob", now=1000.0 + 600)
    assert "10 min ago" in later and "measurement 3 of these settings" in later


def test_the_code_shown_is_the_code_run(monkeypatch) -> None:
    monkeypatch.setattr(timing, "BUDGET_SCALE", 1.0)
    code = jit.timing_code(jit.Workload("layer", 7, 3), executables=1)
    assert "(7, 3)" in code and "timing.block([x, W, b])" in code
    assert f"profile_jit(tanh_layer, x, W, b, budget_s={jit._measurement.PROFILE_BUDGET_S})" in code
    assert "first_call_anatomy(tanh_layer, x, W, b, executables=1)" in code
    assert "compare_jit" not in code and "article_timing" not in code  # the race's
    race = jit.race_code(jit.Workload("layer", 7, 3))
    assert race.split("\ncomparison")[0] == code.split("\nprofile")[0]  # the same inputs
    assert f"compare_jit(tanh_layer, x, W, b, budget_s={jit._measurement.COMPARE_BUDGET_S})" in race
    assert f"article_timing(tanh_layer, x, W, b, loops={jit._measurement.ARTICLE_LOOPS})" in race


def test_the_code_shown_names_the_executables_the_anatomy_timed() -> None:
    """A steady call of 50 ms or more gets one fresh executable, not three, and the code shown
    said 3; none timed (the budget cut) leaves the line out."""
    workload = jit.Workload("softmax", 7, 3)
    assert "executables=1)" in jit.timing_code(workload, 1)
    assert "first_call_anatomy" not in jit.timing_code(workload, 0)


def test_the_code_shown_names_the_budgets_a_scaled_server_spent(monkeypatch) -> None:
    """JAXPLAY_MEASURE_SCALE multiplies the budgets inside ``timing``: the code shown is the call
    that measures the same in a Python where nothing scales them."""
    monkeypatch.setattr(timing, "BUDGET_SCALE", 0.05)
    code = jit.timing_code(jit.Workload("softmax", 7, 3))
    assert "profile_jit(naive_softmax, x, budget_s=0.015)" in code
    assert "compare_jit(naive_softmax, x, budget_s=0.025)" in jit.race_code(
        jit.Workload("softmax", 7, 3)
    )


def test_the_inputs_are_computed_before_anything_times_them(monkeypatch) -> None:
    """A draw still running when a stopwatch starts was timed as the first call (563 ms)."""
    blocked: list[object] = []
    original = timing.block
    monkeypatch.setattr(
        jit._workloads.timing, "block", lambda tree: blocked.append(tree) or original(tree)
    )
    args = jit.inputs(jit.Workload("softmax", 4, 3))
    assert blocked and blocked[-1] is args


def test_the_machine_roofs_measured_first_count_as_the_visitors_measurement(monkeypatch) -> None:
    """On a fresh process the roofs are measured inside the visitor's measurement: every wait
    for a turn (the throttle's) names that visitor, and the throttle is asked once."""
    from jaxplay.core import measure_lock, roofline

    asked: list[str | None] = []
    monkeypatch.setattr(roofline, "_REFERENCE", None)  # as in a process that never measured
    monkeypatch.setattr(measure_lock, "_wait_for_turn", lambda p: asked.append(p.visitor))
    m = _measurement.measure(SMALL, Told("visitor-1"))
    assert m.reference.copy_bandwidth_gbps > 0
    assert asked == ["visitor-1"]


@pytest.fixture(scope="module")
def in_worker() -> tuple[jit.Measurement, list[tuple[str, float | None]], list[bool]]:
    """SMALL measured in a compute worker, with the stages the server was told and, at each,
    whether another thread of the server could take the measurement lock."""
    import threading

    from jaxplay.core import measure_lock

    seen: list[tuple[str, float | None]] = []
    free: list[bool] = []

    class Seen(Told):
        def stage(self, stage: str, fraction: float | None) -> None:
            seen.append((stage, fraction))
            took: list[bool] = []

            def other() -> None:
                took.append(measure_lock.MEASURE_LOCK.acquire(blocking=False))
                if took[0]:
                    measure_lock.MEASURE_LOCK.release()

            thread = threading.Thread(target=other)
            thread.start()
            thread.join()
            free.append(took[0])

    m = _measurement.measure_in_worker(SMALL, Seen())
    return m, seen, free


def test_a_compute_worker_measures_while_the_server_holds_the_lock(in_worker) -> None:
    """The server checks the workload, then holds the lock (its cores) while the worker times
    it: every stage the worker reached came back, in order, told while no other thread of the
    server could start a measurement."""
    from jaxplay.core import measure_lock

    m, seen, free = in_worker
    stages = [stage for stage, _ in seen]
    first, *rest = stages
    assert first == _measurement.Stage.CHECKING.value and free[0]  # checked before the lock
    shown = [s for s in rest if s != _measurement.Stage.ROOFS.value]
    assert shown == [s for s in _measurement.STAGES if s != _measurement.Stage.ROOFS.value]
    assert not any(free[1:])
    assert m.in_worker and m.workload == SMALL and m.first_call is not None
    assert m.cores == tuple(sorted(measure_lock.usable_cores()))
    assert "in a compute worker on" in m.where() and m.reference.copy_bandwidth_gbps > 0


def test_a_compute_worker_times_in_its_own_process(monkeypatch) -> None:
    """Nothing is timed in the server: with the server's stopwatches broken, the worker's
    measurement still comes back, and the server's roofs are the worker's, kept."""
    from jaxplay import sandbox

    def broken(*args: object, **kwargs: object) -> None:
        raise AssertionError("timed in the server process")

    roofs = sandbox.machine_reference()  # measured in a worker, once per process
    monkeypatch.setattr(timing, "profile_jit", broken)
    monkeypatch.setattr(timing, "compare_jit", broken)
    monkeypatch.setattr(jit._measurement.roofline, "machine_reference", broken)
    m = _measurement.measure_in_worker(jit.Workload("chain", 5, 3), Told())
    assert m.in_worker and m.profile.steady.median > 0
    assert m.reference == roofs
    r = _measurement.race_in_worker(jit.Workload("chain", 5, 3), Told(), compile_s=0.01)
    assert r.in_worker and r.comparison is not None and r.article is not None
    assert "in a compute worker on" in r.where()


def test_a_refusal_is_the_servers_and_a_worker_past_its_deadline_says_so(monkeypatch) -> None:
    from jaxplay import sandbox
    from jaxplay.core import measure_lock

    progress = Told()
    with pytest.raises(jit.SizeError):  # checked here: no worker, no lock
        _measurement.measure_in_worker(jit.Workload("softmax", 100_000, 1_000), progress)
    assert progress.of("stage") == [_measurement.STAGES[0]]
    sandbox.machine_reference()  # kept already: only the measurement runs late
    monkeypatch.setattr(sandbox, "TIMED_TIMEOUT_S", 0.2)
    with pytest.raises(sandbox.TaskFailed) as failed:
        _measurement.measure_in_worker(jit.Workload("softmax", 301, 203), Told())
    assert failed.value.error.kind == "timeout"
    assert "Measuring this function" in failed.value.explain("Measuring this function")
    assert measure_lock.MEASURE_LOCK.acquire(blocking=False)  # let go
    measure_lock.MEASURE_LOCK.release()


def test_where_a_measurement_ran_is_told_per_mode(monkeypatch) -> None:
    from jaxplay.hosting import settings

    assert settings.measure_in({}) == "worker"
    assert settings.measure_in({"JAXPLAY_MEASURE_IN": "server"}) == "server"
    assert _measurement.MEASURERS["worker"] is _measurement.measure_in_worker
    assert _measurement.RACERS["worker"] is _measurement.race_in_worker
    here = _measurement.measure(SMALL, Told())
    assert not here.in_worker and "in the server process on" in here.where()


def test_where_no_worker_can_start_both_measure_in_the_server(monkeypatch) -> None:
    """A refused worker is not a failure: the measurement and the race run in this thread, and
    say so."""
    from jaxplay import sandbox

    sandbox.machine_reference()  # kept already: only the measurements ask for a worker
    ran: list[str] = []

    def refused(function: object, /, **kwargs: object) -> None:
        ran.append(getattr(function, "__name__", "?"))
        raise sandbox.TaskFailed(sandbox.RunError(kind="refused", message="no worker"))

    monkeypatch.setattr(sandbox, "compute", refused)
    _workloads._traced.cache_clear()  # another test may have checked SMALL
    m = _measurement.measure_in_worker(SMALL, Told())
    r = _measurement.race_in_worker(SMALL, Told(), compile_s=m.profile.compile_total_s)
    assert ran == ["trace", "measure", "trace", "race"]  # each check asks for a worker again
    assert not m.in_worker and "in the server process on" in m.where()
    assert not r.in_worker and r.comparison is not None and r.workload == SMALL


@pytest.mark.parametrize("dtype", jit.DTYPES)
@pytest.mark.parametrize("preset", list(jit.PRESETS))
def test_the_inputs_shown_are_the_inputs_drawn(preset: str, dtype: str) -> None:
    """The code shown draws its inputs as written: run, its arrays are the measured ones."""
    workload = jit.Workload(preset, 7, 3, dtype)
    shown = jit.timing_code(workload).split("\ntiming.block")[0]
    runnable = re.sub(r"√(\d+)", r"math.sqrt(\1)", shown)  # the page writes √3 for math.sqrt(3)
    names: dict[str, object] = {"np": np, "jnp": jnp, "math": math}
    exec(runnable, names)
    drawn = jit.inputs(workload)
    for name, array in zip(("x", "W", "b"), drawn, strict=False):
        shown_array = names[name]
        assert isinstance(shown_array, jax.Array) and shown_array.dtype == array.dtype
        np.testing.assert_array_equal(np.asarray(shown_array), np.asarray(array))

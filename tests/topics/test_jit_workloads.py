"""The jit page's workloads, sweep arithmetic, cache lab, side effects and figures."""

from __future__ import annotations

import re
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxplay import jit, sandbox
from jaxplay.core import expr, i18n, roofline, timing
from jaxplay.jit import _stopwatch, _sweep, _workloads


def _workload(preset: str = "softmax", rows: int = 16, cols: int = 8, **kw) -> jit.Workload:
    return jit.Workload(preset, rows, cols, **kw)


def test_the_seed_softmax_is_a_softmax() -> None:
    x = jnp.linspace(-3, 3, 24).reshape(4, 6)
    np.testing.assert_allclose(jit.naive_softmax(x), jax.nn.softmax(x, axis=-1), rtol=1e-6)


@pytest.mark.parametrize("preset", list(jit.PRESETS))
def test_jit_computes_what_eager_computes(preset: str) -> None:
    """The page compares timings of the same computation: jit must not change the result."""
    w = _workload(preset)
    fn, args = jit.function_of(w), jit.inputs(w)
    np.testing.assert_allclose(jax.jit(fn)(*args), fn(*args), rtol=1e-5, atol=1e-6)


def test_inputs_follow_shape_and_dtype() -> None:
    (x,) = jit.inputs(_workload(rows=3, cols=5, dtype="bfloat16"))
    assert x.shape == (3, 5) and x.dtype == jnp.bfloat16
    x, w, b = jit.inputs(_workload("layer", rows=3, cols=5))
    assert (x.shape, w.shape, b.shape) == ((3, 5), (5, 5), (5,))
    assert float(x.min()) >= 0.5 and float(x.max()) <= 1.5


def test_refused_sizes_name_the_limit() -> None:
    with pytest.raises(jit.SizeError, match="16,000,000"):
        _workloads.check(_workload(rows=20_000, cols=1_000))
    with pytest.raises(jit.SizeError, match="GFLOP"):
        _workloads.check(_workload("layer", rows=10_000, cols=1_600))
    with pytest.raises(jit.SizeError, match="float32"):
        _workloads.check(_workload(dtype="float64"))
    _workloads.check(_workload(rows=10_000, cols=1_000))  # the article's size is allowed


def test_a_formula_that_grows_its_input_is_refused_before_it_runs() -> None:
    with pytest.raises(jit.SizeError, match="result would have 100,000,000 elements"):
        _workloads.check(_workload("formula", rows=10_000, cols=1_000, formula="x @ x.T"))
    with pytest.raises(jit.SizeError, match="GFLOP"):
        _workloads.check(_workload("formula", rows=2_000, cols=4_000, formula="(x @ x.T) @ x"))
    with pytest.raises(TypeError):
        _workloads.check(_workload("formula", rows=3, cols=4, formula="x @ x"))


def test_the_servers_check_traces_a_new_shape_in_the_compute_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """JAX keeps what a trace at a new shape makes in process-wide caches, and a workload
    refused after its trace costs nothing else: 6,000 new shapes of a failing formula grew the
    server by 557 MB. The server's check traces in the compute worker, the server's own job
    (never a visitor's Code Lab run), and what the trace raises comes back as it would have
    been raised here: JAX's exception, and the formula language's refusal in the visitor's
    language with its column. A preset at the page's own sizes is traced here."""
    computed: list[str] = []
    compute = sandbox.compute

    def spy(function, /, **kwargs):
        computed.append(function.__name__)
        return compute(function, **kwargs)

    def no_code_lab_run(*args, **kwargs):
        raise AssertionError("the check used a visitor's Code Lab run")

    monkeypatch.setattr(sandbox, "compute", spy)
    monkeypatch.setattr(sandbox, "call", no_code_lab_run)
    _workloads._traced.cache_clear()
    in_worker = _workloads.footprint_in_worker
    with pytest.raises(TypeError, match="dot_general requires contracting dimensions"):
        _workloads.check(_workload("formula", rows=3, cols=5, formula="x @ x"), in_worker)
    with pytest.raises(ValueError, match="axis 5 is out of bounds"):
        _workloads.check(_workload("formula", rows=3, cols=6, formula="jnp.sum(x, 5)"), in_worker)
    with pytest.raises(jit.SizeError, match="GFLOP"):
        _workloads.check(_workload("layer", rows=9_000, cols=1_700), in_worker)
    with i18n.speaking("zh"), pytest.raises(expr.ExprError) as refused:
        in_worker("formula", 3, 7, "float32", "x + jnp.reshape(x, (21,))")
    assert refused.value.col == 5 and "不在允许列表中" in refused.value.message
    with i18n.speaking("zh"), pytest.raises(expr.ExprError, match="decimals 必须是"):
        _workloads.check(
            _workload("formula", rows=3, cols=8, formula="jnp.round(x, 1.5)"), in_worker
        )
    assert computed == ["trace"] * 5
    with pytest.raises(TypeError, match="dot_general"):  # a page showing it runs again
        _workloads.check(_workload("formula", rows=3, cols=5, formula="x @ x"), in_worker)
    with pytest.raises(sandbox.TaskFailed) as jaxs_own:  # JAX's subclass, under its own name
        in_worker("formula", 3, 10, "float32", "jnp.where(x)")
    assert jaxs_own.value.error.exc_type == "ConcretizationTypeError"
    assert jaxs_own.value.error.kind == "exception"
    assert computed == ["trace"] * 6
    _workloads.check(jit.DEFAULT_WORKLOAD, in_worker)
    _workloads.check(_workload("chain", rows=10_000, cols=1_000), in_worker)
    assert len(computed) == 6  # the presets at the page's sizes: traced here
    here = _workloads.footprint("layer", 17, 9, "float32", "")
    assert in_worker("layer", 17, 9, "float32", "") == here
    assert len(computed) == 7


def test_a_refusal_waits_for_no_measurement_and_spends_no_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The check's trace times nothing: while another visitor's measurement holds the lock, a
    shape the trace refuses is refused at once, and the public throttle is not asked."""
    from jaxplay.core import measure_lock
    from jaxplay.jit import _measurement
    from tests.support.progress import Told

    asked: list[str] = []

    def throttle(visitor: str) -> float:
        asked.append(visitor)
        return 0.0

    monkeypatch.setattr(measure_lock, "_throttle", throttle)
    told = Told("visitor-1")
    refused: list[BaseException] = []

    def measuring() -> None:
        try:
            _measurement.measure_in_worker(_workload("formula", 3, 11, formula="x @ x"), told)
        except TypeError as err:
            refused.append(err)

    with measure_lock.exclusive():  # another measurement (nobody's: not throttled)
        thread = threading.Thread(target=measuring, daemon=True)
        thread.start()
        thread.join(60)
        assert not thread.is_alive(), "the refusal waited for the measurement lock"
    assert refused and "dot_general" in str(refused[0])
    assert asked == [] and ("queued", 1) not in told.told


def test_a_memory_error_in_the_trace_is_the_workers_failure_not_a_refusal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker out of memory is no answer about the shape: raised (the worker reports it as a
    failure, which is not kept), not returned as a refusal the server would keep."""

    def out_of_memory(*args: object) -> None:
        raise MemoryError

    monkeypatch.setattr(_workloads, "footprint", out_of_memory)
    with pytest.raises(MemoryError):
        _workloads.trace("layer", 5, 5, "float32", "", "en")


def test_without_a_compute_worker_the_check_traces_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no worker can start, the server checks as it would without one (and logs it),
    and the next check asks for a worker again."""
    asked: list[str] = []

    def refused(function, /, **kwargs):
        asked.append(function.__name__)
        raise sandbox.TaskFailed(sandbox.RunError(kind="refused", message="no sandbox"))

    monkeypatch.setattr(sandbox, "compute", refused)
    _workloads._traced.cache_clear()
    here = _workloads.footprint("layer", 19, 9, "float32", "")
    assert _workloads.footprint_in_worker("layer", 19, 9, "float32", "") == here
    assert _workloads.footprint_in_worker("layer", 19, 9, "float32", "") == here
    with pytest.raises(TypeError, match="dot_general"):
        _workloads.footprint_in_worker("formula", 3, 9, "float32", "x @ x")
    assert asked == ["trace"] * 3


def test_intermediates_count_not_only_the_result() -> None:
    """One number out, but a (256, 4096, 4096) product on the way: 17 GB run eagerly."""
    formula = "jnp.sum(x[:, :, None] * x[:, None, :])"
    expected = r"holds 16 GiB at once .*mul → float32\[256,4096,4096\]"
    with pytest.raises(jit.SizeError, match=expected):
        _workloads.check(_workload("formula", rows=256, cols=4_096, formula=formula))
    _workloads.check(_workload("formula", rows=16, cols=64, formula=formula))  # small is fine


def test_lapack_calls_are_costed_by_their_operation_counts() -> None:
    """XLA's cost analysis called inv of 4000×4000 0.08 GFLOP; LU plus two solves is ~170."""
    fp, _ = _workloads.footprint("formula", 4_000, 4_000, "float32", "jnp.linalg.inv(x)")
    assert 120e9 < fp.flops < 250e9
    with pytest.raises(jit.SizeError, match="GFLOP"):
        _workloads.check(_workload("formula", rows=4_000, cols=4_000, formula="jnp.linalg.inv(x)"))
    _workloads.check(_workload("formula", rows=500, cols=500, formula="jnp.linalg.inv(x)"))


def test_a_bad_formula_is_refused_with_its_column() -> None:
    with pytest.raises(expr.ExprError) as info:
        _workloads.check(_workload("formula", formula="jnp.sin(x) + os.system('ls')"))
    assert info.value.col == 14


def test_the_code_shown_is_the_code_run() -> None:
    assert "def naive_softmax(x):" in jit.function_source(_workload())
    assert "jnp.sin(x)" in jit.function_source(_workload("chain"))
    assert "'jnp.cos(x)'" in jit.function_source(_workload("formula", formula="jnp.cos(x)"))


def test_sweep_rows_span_the_range() -> None:
    rows = jit.sweep_rows(_workload(rows=10_000))
    assert rows[0] == 1 and rows[-1] == 10_000
    assert list(rows) == sorted(set(rows))


def _point(elements: int, eager: float, jitted: float, compile_s: float) -> jit.SweepPoint:
    comparison = timing.JitComparison(
        timing.Timing((eager,) * 3, 1, 1), timing.Timing((jitted,) * 3, 1, 1)
    )
    return jit.SweepPoint(elements, elements, comparison, compile_s)


def test_crossover_is_where_jit_with_its_compile_overtakes_eager() -> None:
    # eager costs 1 s per element-unit, jit 0.5: over 10 calls jit pays 1 s of compile, so
    # 10·n == 1 + 5·n at n = 0.2 units: elements 200 with unit 1000.
    points = [_point(n, n / 1000, n / 2000, 1.0) for n in (10, 100, 1_000, 10_000)]
    cross = jit.crossover(points, calls=10)
    assert cross is not None and 100 < cross < 1_000
    verdict = jit.sweep_verdict(points, 10)
    assert "overtakes eager" in verdict
    # jit's compile against a warm eager: the verdict says what it leaves out.
    assert "Eager is timed warm" in verdict and "a cost this comparison leaves out" in verdict
    # At 10 000 elements jit saves 5 s per call on a 1 s compile: paid after one call.
    assert "10,000 elements the compile pays for itself after about **1 call**" in verdict
    assert jit.crossover(points[2:], calls=10) is None
    assert "jit wins at every size" in jit.sweep_verdict(points[2:], 10)
    assert _sweep.break_even_calls(points[0]) == pytest.approx(1.0 / (0.01 - 0.005))
    assert _sweep.break_even_calls(_point(5, 1.0, 2.0, 1.0)) is None
    slower = jit.sweep_verdict([_point(5, 1.0, 2.0, 1.0)], 10)
    assert "At 5 elements jit is slower per call: its compile never pays for itself." in slower


def test_a_saving_within_the_noise_is_no_break_even() -> None:
    """Medians 1 % apart with overlapping quartiles: "pays for itself after about 1,000 calls"
    was said of noise."""
    tie = timing.JitComparison(
        timing.Timing((0.0090, 0.0101, 0.0110), 1, 1), timing.Timing((0.0089, 0.0100, 0.0111), 1, 1)
    )
    point = jit.SweepPoint(1_000, 1_000, tie, 0.01)
    assert _sweep.break_even_calls(point) is None
    verdict = jit.sweep_verdict([point], 10)
    assert "jit and eager are not clearly apart per call" in verdict and "pays" not in verdict


def _spread_point(elements: int, eager: float, jitted: float, compile_s: float) -> jit.SweepPoint:
    """A point whose samples spread 5 % (eager) and 1 % (jit) about their medians."""
    comparison = timing.JitComparison(
        timing.Timing((eager * 0.95, eager, eager * 1.05), 1, 1),
        timing.Timing((jitted * 0.99, jitted, jitted * 1.01), 1, 1),
    )
    return jit.SweepPoint(elements, elements, comparison, compile_s)


def test_no_crossing_or_winner_is_named_from_medians_within_the_spread() -> None:
    """Medians that cross between two sizes whose quartile ranges overlap: the verdict said "jit
    overtakes eager at about 46,062 elements ... above it jit wins", then that at the larger size
    nothing was sure."""
    level = [
        _spread_point(10_000, 1.0e-3, 0.92e-3, 1e-3),
        _spread_point(100_000, 2e-3, 1.88e-3, 1e-3),
    ]
    assert [_sweep.ahead(p, 10) for p in level] == [None, None]
    assert len(_sweep.crossings(level, 10)) == 1  # the medians do cross
    verdict = jit.sweep_verdict(level, 10)
    assert "overlap in their quartile ranges at every size" in verdict
    assert "overtakes" not in verdict and "wins" not in verdict and "46," not in verdict
    assert jit.crossover(level, calls=10) is None
    # One size clear, one not: counted, no crossing named.
    mixed = [_spread_point(10, 1e-3, 1e-3, 1.0), level[1]]
    verdict = jit.sweep_verdict(mixed, 10)
    assert "eager at 1 of the 2 sizes; at the other 1" in verdict
    assert "overtakes eager" not in verdict


def test_a_crossing_is_given_to_the_figures_it_deserves() -> None:
    points = [_point(n, n / 1000, n / 2000, 1.0) for n in (10, 100, 1_000, 10_000)]
    points[1] = _point(100, 0.1 / 1.0003, 0.05, 1.0)  # moves the crossing off a round number
    ((cross, _up),) = _sweep.crossings(points, 10)
    assert round(cross) != round(cross, -1)  # interpolated: a size like 200.4
    assert f"about **{_sweep.about_size(cross)} elements**" in jit.sweep_verdict(points, 10)
    assert _sweep.about_size(46_062.4) == "46,100" and _sweep.about_size(7.26) == "7"


def test_one_size_is_said_as_one() -> None:
    one = jit.sweep_verdict([_point(50, 1.0, 0.1, 0.1)], 10)
    assert one.startswith("Over 10 calls, jit with its compile wins at this size.")
    assert "curves" not in one and "every size" not in one


def test_sweep_point_measures_both_and_a_compile() -> None:
    p = jit.sweep_point(_workload(rows=4, cols=4), budget_s=0.01)
    assert p.elements == 16 and p.compile_s > 0
    assert p.amortized_jit_s(1) > p.amortized_jit_s(100) > p.comparison.jitted.median


def test_the_impure_counter_moves_once_per_trace() -> None:
    result = jit.impure_counter_demo(3)
    assert (result.eager_count, result.jit_count, result.jit_count_after_new_shape) == (3, 1, 2)


def test_debug_print_output_is_captured_per_call() -> None:
    printed = jit.debug_print_demo((0.0, 1.0), calls=2)
    first, second = printed.outputs
    assert "print (trace time)" in first and "Tracer" in first
    assert "print (trace time)" not in second
    for out in printed.outputs:
        assert re.search(r"jax\.debug\.print \(run time\) sees: \[0\.\s+0\.84147", out)


# --- figures --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def profile() -> timing.JitProfile:
    return timing.profile_jit(jit.naive_softmax, jnp.ones((8, 8)), budget_s=0.01)


def test_stage_figure_draws_every_stage_on_the_device(profile) -> None:
    fig = jit.stage_figure(profile, "cpu (test)")
    assert list(fig.data[0].y) == list(timing.STAGES)
    assert list(fig.data[0].x) == [s for _, s in profile.stages()]
    assert "cpu (test)" in fig.layout.title.text and fig.layout.xaxis.type == "log"


def test_distribution_and_article_figures_show_the_measurements() -> None:
    comparison = timing.JitComparison(
        timing.Timing((4.0, 5.0, 6.0), 1, 1), timing.Timing((1.0, 1.0, 2.0), 2, 1)
    )
    dist = jit.distribution_figure(comparison, "cpu (test)")
    assert [list(d.y) for d in dist.data] == [[4.0, 5.0, 6.0], [1.0, 1.0, 2.0]]
    art = jit.article_figure(_stopwatch.ArticleTiming(1.0, 4.0, 10), comparison)
    assert list(art.data[0].y) == [0.25, comparison.speedup]


def test_sweep_figure_marks_the_crossover() -> None:
    points = [_point(n, n / 1000, n / 2000, 1.0) for n in (10, 100, 1_000, 10_000)]
    fig = jit.sweep_figure(points, 10, "cpu (test)")
    assert len(fig.data) == 3
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert any("medians cross ≈ 277 elements" in a.text for a in fig.layout.annotations)
    assert not jit.sweep_figure(points[2:], 10, "cpu (test)").layout.annotations


def test_roofline_places_the_point_at_xlas_intensity(profile) -> None:
    reference = roofline.machine_reference()
    cost = {"flops": 2e9, "bytes accessed": 1e9, "transcendentals": 0.0}
    fig = jit.roofline_figure(reference, cost, 1.0, "f")
    roof, point = fig.data
    assert point.x[0] == pytest.approx(2.0) and point.y[0] == pytest.approx(2.0)
    assert max(roof.y) == pytest.approx(reference.matmul_gflops)
    assert reference.device in fig.layout.title.text
    assert len(jit.roofline_figure(reference, None, 1.0, "f").data) == 1


def test_a_sweep_that_crosses_the_other_way_or_twice_says_so() -> None:
    """The verdict follows the run's points: eager ahead again at large sizes is not "jit wins"."""
    # jit (compile 0.1 s over 10 calls: +0.01 s a call) ahead at 1,000 and 100,000 elements only.
    back = [
        _point(1_000, 0.1, 0.05, 0.1),
        _point(10_000, 0.1, 0.095, 0.1),
        _point(100_000, 0.3, 0.1, 0.1),
    ]
    found = jit.crossover(back, calls=10), _sweep.crossings(back, calls=10)
    assert found[0] is None and [up for _x, up in found[1]] == [False, True]
    assert "the curves cross 2 times" in jit.sweep_verdict(back, 10)
    other_way = back[:2]
    verdict = jit.sweep_verdict(other_way, 10)
    assert "eager overtakes jit with its compile" in verdict and "above it jit wins" not in verdict
    assert jit.sweep_verdict(back, 1).startswith("Over 1 call,")  # not "1 calls"


def test_a_forged_answer_of_the_trace_is_bounded_before_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker's answer is not trusted further than its type: a caret a billion columns in
    would have the page build a gigabyte of spaces, and a message of megabytes fill it."""
    answers = iter(
        [
            _workloads.Traced(exc_type="ExprError", message="m" * 10**6, line=7, col=10**9),
            _workloads.Traced(exc_type="E" * 10_000, message="n" * 10**6),
        ]
    )
    monkeypatch.setattr(sandbox, "compute", lambda function, /, **kwargs: next(answers))
    _workloads._traced.cache_clear()
    with pytest.raises(expr.ExprError) as refused:
        _workloads.footprint_in_worker("formula", 3, 12, "float32", "x + x")
    assert refused.value.col is None and refused.value.line == 1
    assert len(refused.value.message) == _workloads.MAX_MESSAGE_CHARS
    assert refused.value.pointer("x + x") == ""
    with pytest.raises(sandbox.TaskFailed) as failed:
        _workloads.footprint_in_worker("formula", 3, 13, "float32", "x + x")
    assert len(failed.value.error.message) == _workloads.MAX_MESSAGE_CHARS
    assert len(failed.value.error.exc_type or "") <= 80

"""The compose page's claims: stacks, per-sample gradients, jacfwd vs jacrev, HVPs, as written."""

from __future__ import annotations

import dataclasses
import re
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxplay import compose as cp
from jaxplay.compose import _hvp, _jacobians, _pipeline
from jaxplay.core import roofline, timing
from jaxplay.core.expr import ExprError
from jaxplay.core.inputs import normal_arrays

SIN2 = cp.FUNCTIONS["sum of sin² (vector → number)"]


def _preset(name: str) -> cp.PipelineResult:
    p = cp.STACK_PRESETS[name]
    return cp.compose(p.stack, cp.FUNCTIONS[p.function], cp.INPUT_SHAPES[p.shape])


def test_per_example_gradients_are_sin_2x() -> None:
    r = _preset("per-example gradients: jit(vmap(grad(f)))")
    x = _pipeline.example_input((4, 3))
    assert r.error is None and r.output_shape == (4, 3)
    np.testing.assert_allclose(r.values, np.sin(2 * x), rtol=1e-5, atol=1e-6)
    assert "sin" in r.jaxpr and "cos" in r.jaxpr
    assert r.code.endswith("result = jax.jit(jax.vmap(jax.grad(f)))(x)")


def test_jacfwd_of_jacrev_is_the_hessian() -> None:
    r = _preset("Hessian two ways: jacfwd(jacrev(f))")
    x = _pipeline.example_input((3,))
    expected = jax.jit(jax.hessian(jax.nn.logsumexp))(x)
    assert r.output_shape == (3, 3)
    np.testing.assert_allclose(r.values, expected, rtol=1e-5, atol=1e-6)


def test_jacobian_of_an_elementwise_map_is_diagonal_and_checkpoint_changes_nothing() -> None:
    r = _preset("Jacobian of an elementwise map: jit(jacrev(f))")
    x = _pipeline.example_input((3,))
    np.testing.assert_allclose(r.values, np.diag(1 - np.tanh(x) ** 2), rtol=1e-5, atol=1e-6)
    remat = _preset("rematerialised gradient: grad(checkpoint(f))")
    np.testing.assert_allclose(remat.values, np.sin(2 * x), rtol=1e-5, atol=1e-6)
    assert "checkpoint" in remat.jaxpr or "remat" in remat.jaxpr


def test_invalid_stacks_give_jaxs_reason_in_plain_words() -> None:
    grad_vec = _preset("invalid: grad of a vector output")
    assert grad_vec.values is None and grad_vec.error is not None
    assert "returns shape (3,)" in grad_vec.error.plain
    assert "scalar-output" in grad_vec.error.message
    # vmap already outside grad: the advice was "put vmap outside grad", which it is.
    per_row = cp.compose(("vmap", "grad"), "x**2", (4, 3)).error
    assert per_row is not None and "returns shape (3,)" in per_row.plain
    assert "put vmap outside" not in per_row.plain and "one number per example" in per_row.plain
    vmap_scalar = _preset("invalid: vmap with nothing left to map")
    assert "nothing is left to map" in vmap_scalar.error.plain
    assert "shape ()" in vmap_scalar.error.plain


def test_stacks_are_bounded_and_checked() -> None:
    assert cp.compose((), "jnp.sin(x)", ()).values == pytest.approx(
        np.sin(_pipeline.example_input(()))
    )
    with pytest.raises(ValueError, match=f"at most {cp.MAX_STACK}"):
        cp.compose(("jit",) * (cp.MAX_STACK + 1), SIN2, (3,))
    with pytest.raises(ValueError, match="unknown transform"):
        cp.compose(("pmap",), SIN2, (3,))
    with pytest.raises(ValueError, match=str(_pipeline.MAX_OUTPUT_ELEMENTS)):
        cp.compose(("hessian", "hessian"), "jnp.tanh(x)", (4, 3))
    with pytest.raises(ExprError):
        cp.compose(("grad",), "jnp.sin(x", (3,))


@pytest.mark.parametrize(
    ("batch", "features", "error"), [(8, 3, "ValueError"), (3, 3, "TypeError")]
)
def test_the_articles_per_sample_gradient_maps_params_too(
    batch: int, features: int, error: str
) -> None:
    ps = cp.per_sample(batch, features)
    assert ps.as_written.error_type == error
    expected_msg = "inconsistent sizes" if error == "ValueError" else "scalar-output"
    assert expected_msg in ps.as_written.message
    assert ps.tiled_shape == (batch, features) and ps.tiled_matches_loop


def test_as_many_samples_as_weights_fails_differently_and_2d_params_run_silently() -> None:
    """The article's text said B = D would run silently with one element per sample; it raises
    (the prediction becomes a vector). Only 2-D parameters run, each sample with its own row."""
    ps = cp.per_sample(8, 3)
    assert ps.square.error_type == "TypeError" and "scalar-output" in ps.square.message
    assert ps.rows_shape == (8, 3) and not ps.rows_match_model0
    assert cp.per_sample(1, 3).rows_match_model0  # one sample, one row: nothing to mix up


def test_the_fixed_per_sample_gradient_matches_the_loop_and_the_formula() -> None:
    ps = cp.per_sample(8, 3)
    assert ps.fixed.shape == (8, 3) and ps.fixed_matches_loop
    p, X, Y = normal_arrays(0, (3,), (8, 3), (8,))
    np.testing.assert_allclose(ps.fixed, 2 * (X @ p - Y)[:, None] * X, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match=str(cp.MAX_SAMPLES)):
        cp.per_sample(cp.MAX_SAMPLES + 1, 3)


def test_jacfwd_and_jacrev_agree() -> None:
    for n_in, n_out in ((7, 3), (2, 9)):
        shape, diff = cp.jacobians_agree(n_in, n_out)
        assert shape == (n_out, n_in) and diff < 1e-5


def test_jacobian_sweep_times_both_modes_on_both_sides() -> None:
    sweep = _jacobians.time_jacobians((3,), narrow=2, hidden=4, budget_s=0.01)
    assert sweep.max_abs_diff < 1e-5
    for key in [(s, m) for s in cp.SWEEPS for m in _jacobians.MODES]:
        assert len(sweep.timings[key]) == 1 and sweep.timings[key][0].median > 0
    won = sweep.faster("wide input", 0)
    assert won is None or (won[0] in _jacobians.MODES and won[1] >= 1)
    fig = cp.jacobian_figure(sweep)
    assert len(fig.data) == 4
    assert fig.layout.xaxis.title.text == "n_in (input width)"
    assert fig.layout.xaxis2.title.text == "n_out (output width)"
    assert f"measured on {roofline.device_label()}" in fig.layout.title.text
    with pytest.raises(ValueError, match=str(cp.MAX_WIDTH)):
        _jacobians.check_widths([4, cp.MAX_WIDTH + 1])


def test_the_articles_jit_of_hvp_fails_and_both_fixes_agree() -> None:
    jh = cp.jit_hvp()
    assert jh.as_written.error_type == "TypeError"
    assert "abstract array" in jh.as_written.message and "function" in jh.as_written.message
    assert jh.fixes_agree


def test_forward_over_reverse_is_the_same_hvp() -> None:
    x, v = _hvp.hvp_inputs(12)
    f = _hvp.hvp_test_function
    fwd_rev = jax.jit(lambda x, v: cp.forward_over_reverse_hvp(f, x, v))(x, v)
    rev_rev = jax.jit(lambda x, v: cp.hvp(f, x, v))(x, v)
    np.testing.assert_allclose(fwd_rev, rev_rev, rtol=1e-4, atol=1e-5)
    point = cp.hvp_point(cp.HVP_METHODS[0], 12, budget_s=0.01)
    assert point.rel_diff < 1e-5 and point.time.median > 0
    with pytest.raises(ValueError, match="unknown method"):
        cp.hvp_point("finite differences", 12)


def test_hvp_equals_hessian_times_v() -> None:
    x, v = _hvp.hvp_inputs(12)
    expected = jax.jit(jax.hessian(_hvp.hvp_test_function))(x) @ v
    got = jax.jit(lambda x, v: cp.hvp(_hvp.hvp_test_function, x, v))(x, v)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    assert cp.hvp_agreement(50) < 1e-5
    with pytest.raises(ValueError, match=str(cp.MAX_HVP_DIM)):
        _hvp.hvp_inputs(cp.MAX_HVP_DIM + 1)


def test_the_hvp_claim_checks_all_three_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    """The claim names three ways; it compared only the article's hvp with the full Hessian's,
    and held with forward over reverse returning zeros."""
    from jaxplay.compose import _claims

    assert _claims._hvp_agree(4).holds
    broken = dict(_hvp.HVP_FUNCTIONS)
    broken[_hvp.HVP_METHODS[0]] = lambda f, x, v: jnp.zeros_like(x)
    monkeypatch.setattr(_hvp, "HVP_FUNCTIONS", broken)
    assert not _claims._hvp_agree(4).holds


def test_the_full_hessian_needs_more_memory_than_an_hvp() -> None:
    x, v = _hvp.hvp_inputs(256)
    f = _hvp.hvp_test_function
    hvp_bytes = _hvp.compiled_bytes(jax.jit(lambda x, v: cp.hvp(f, x, v)), x, v)
    full_bytes = _hvp.compiled_bytes(jax.jit(lambda x, v: _hvp.hessian_times(f, x, v)), x, v)
    assert hvp_bytes is not None and full_bytes is not None
    assert full_bytes >= 256 * 256 * 4 > hvp_bytes


def test_hvp_sweep_times_and_measures_three_ways() -> None:
    sweep = _hvp.time_hvp((4, 16), budget_s=0.01)
    assert sweep.max_rel_diff < 1e-5
    assert len(cp.HVP_METHODS) == 3
    for name in cp.HVP_METHODS:
        assert len(sweep.timings[name]) == 2 and len(sweep.memory[name]) == 2
    best, factor, clear = sweep.fastest(1)
    assert best in cp.HVP_METHODS and factor >= 1 and isinstance(clear, bool)
    fig = cp.hvp_figure(sweep)
    assert len(fig.data) == 6
    assert fig.layout.xaxis.title.text == "dimension n"
    assert f"measured on {roofline.device_label()}" in fig.layout.title.text
    assert jnp.isfinite(fig.data[1].y[0])


# --- where pipelines run: presets here, everything else in a sandboxed worker --------------------

#: ``tanh`` nested as deep as the formula language allows inside a sum (45 deep is refused).
DEEP_TANH = "jnp.sum(" + "jnp.tanh(" * 38 + "x" + ")" * 38 + ")"


def test_vmap_traces_once_and_jit_is_compared_with_the_op_by_op_run() -> None:
    r = _preset("per-example gradients: jit(vmap(grad(f)))")
    assert r.traced_calls == 1  # for 4 rows: no call per row
    assert r.eager_max_abs_diff is not None and r.eager_max_abs_diff < 1e-5
    plain = cp.compose(("vmap", "grad"), SIN2, (4, 3))
    assert plain.eager_max_abs_diff is None  # no jit in the stack: nothing to compare


def test_presets_run_here_and_nothing_else_does(monkeypatch: pytest.MonkeyPatch) -> None:
    from jaxplay import sandbox

    def no_worker(*args: object, **kwargs: object) -> None:
        raise AssertionError("a preset went to a worker")

    monkeypatch.setattr(sandbox, "run_task", no_worker)
    for p in cp.STACK_PRESETS.values():
        shape = cp.INPUT_SHAPES[p.shape]
        assert cp.is_preset(p.stack, cp.FUNCTIONS[p.function], shape)
        here = cp.pipeline(p.stack, cp.FUNCTIONS[p.function], shape)
        direct = cp.compose(p.stack, cp.FUNCTIONS[p.function], shape)
        assert here.code == direct.code and here.jaxpr == direct.jaxpr
        np.testing.assert_array_equal(here.values, direct.values)
    assert not cp.is_preset(("hessian",) * 4, SIN2, (3,))  # a preset formula, any other stack
    with pytest.raises(AssertionError, match="went to a worker"):
        cp.pipeline(("grad",), SIN2, (3,))


def test_a_bad_formula_is_refused_here_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from jaxplay import sandbox

    monkeypatch.setattr(sandbox, "run_task", lambda *a, **k: pytest.fail("reached a worker"))
    with pytest.raises(ExprError) as caught:
        cp.pipeline(
            ("hessian", "hessian"), "jnp.sum(" + "jnp.tanh(" * 45 + "x" + ")" * 45 + ")", (3,)
        )
    assert "parts; the limit is" in caught.value.message
    with pytest.raises(ValueError, match=f"at most {cp.MAX_STACK}"):
        cp.pipeline(("jit",) * 5, SIN2, (3,))


def test_a_typed_formula_gives_the_same_result_here_and_in_a_worker() -> None:
    source = "jnp.sum(x * jnp.tanh(x)) + jnp.max(x)"
    here = cp.compose(("jit", "jacfwd", "grad"), source, (3,))
    isolated = cp.pipeline(("jit", "jacfwd", "grad"), source, (3,), timeout_s=120)
    np.testing.assert_array_equal(isolated.values, here.values)
    assert isolated.jaxpr == here.jaxpr and isolated.output_shape == here.output_shape
    assert isolated.traced_calls == here.traced_calls
    refused = cp.pipeline(("grad",), "jnp.tanh(x)", (3,), timeout_s=120)
    assert refused.error is not None and "returns shape (3,)" in refused.error.plain


def _ticking() -> tuple[list[float], threading.Event, threading.Thread]:
    ticks: list[float] = []
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    thread = threading.Thread(target=loop)
    thread.start()
    return ticks, stop, thread


def test_a_deep_formula_times_out_in_a_worker_while_the_server_keeps_running() -> None:
    """In the server this compiles for minutes holding the GIL; in a worker it ends at the
    deadline, and meanwhile another thread of this process keeps running (its longest pause is
    far below the second the hardening rule allows)."""
    from jaxplay import sandbox

    ticks, stop, thread = _ticking()
    try:
        with pytest.raises(sandbox.TaskFailed) as failed:
            cp.pipeline(("hessian", "hessian"), DEEP_TANH, (3,), timeout_s=3)
    finally:
        stop.set()
        thread.join()
    assert failed.value.error.kind == "timeout", failed.value.error
    assert "took longer than 3 s" in failed.value.explain("Applying 2 transforms")
    assert max(b - a for a, b in zip(ticks, ticks[1:], strict=False)) < 1.0


def test_a_preset_formula_under_four_hessians_is_isolated_too() -> None:
    """``sum(sin(x)**2)`` at a vector of 3 under four hessians grew a process to 4 GB and
    crashed it inside XLA: it ends in a worker (at its deadline or memory limit), not here."""
    from jaxplay import sandbox

    with pytest.raises(sandbox.TaskFailed) as failed:
        cp.pipeline(("hessian",) * 4, SIN2, (3,), timeout_s=5)
    assert failed.value.error.kind in ("timeout", "memory", "crashed"), failed.value.error


def test_the_articles_section_says_what_runs() -> None:
    """The walkthrough said the article's jacfwd/jacrev comments were swapped (they state the
    standard rule) and that B = D samples ran silently (it raises a TypeError)."""
    from jaxplay import article

    by_id = {e.id: e for e in article.EXAMPLES}
    jacobians = by_id["compose-jacobians"]
    assert "swap" not in jacobians.explanation
    assert "# Forward mode (efficient for wide outputs)" in jacobians.source
    assert "as the article's comments say" in jacobians.explanation
    ps = cp.per_sample(3, 3)
    said = by_id["compose-per-sample-as-written"].explanation
    assert f"`{ps.square.error_type}: Gradient only defined for scalar-output functions`" in said
    assert ps.square.message.startswith("Gradient only defined for scalar-output functions")
    assert "Only 2-D parameters with one row per sample run without an error" in said
    assert not cp.per_sample(4, 3).rows_match_model0


def _timed(*samples: float) -> timing.Timing:
    return timing.Timing(tuple(samples), 1, 1)


def test_a_jacobian_verdict_names_a_winner_only_beyond_both_spreads() -> None:
    """Medians alone called opposite winners for one square Jacobian, and a winner on a tie."""
    apart, overlapping = _timed(1.0, 1.1, 1.2), _timed(1.1, 1.15, 3.0)
    slow = _timed(3.0, 3.1, 3.2)
    sweep = _jacobians.JacobianSweep(
        widths=(4, 64),
        narrow=4,
        hidden=8,
        timings={
            ("wide input", "jacfwd"): (apart, apart),
            ("wide input", "jacrev"): (apart, slow),
            ("wide output", "jacfwd"): (apart, apart),
            ("wide output", "jacrev"): (apart, overlapping),
        },
        max_abs_diff=0.0,
        device="cpu",
    )
    wide_input, wide_output = _jacobians.jacobian_verdicts(sweep)
    assert "**jacfwd** is 2.8× faster" in wide_input
    assert "no clear winner" in wide_output
    square = dataclasses.replace(sweep, widths=(4,))
    (said,) = _jacobians.jacobian_verdicts(square)
    assert "4×4 in both sweeps" in said and "faster" not in said


def test_the_hvp_summary_calls_no_fastest_on_a_tie() -> None:
    tied = _hvp.HvpSweep(
        dims=(16,),
        timings={m: (_timed(1.0, 1.5, 2.0),) for m in cp.HVP_METHODS},
        memory={m: (None,) for m in cp.HVP_METHODS},
        max_rel_diff=0.0,
        device="cpu",
    )
    said = _hvp.hvp_summary(tied)
    assert "No clear fastest" in said and "Fastest:" not in said


def test_the_op_by_op_run_beside_jit_is_jaxs_own() -> None:
    """The stack without jit runs JAX's operations one by one (with a NumPy x the formula's
    operators ran in NumPy); the difference the page states is jit's against that run."""
    formula = "x ** 3 - 2 * x"
    result = cp.compose(("jit",), formula, (4, 3))
    x = jnp.asarray(_pipeline.example_input((4, 3)))
    with jax.disable_jit():
        op_by_op = np.asarray(x**3 - 2 * x)
    jitted = np.asarray(jax.jit(lambda x: x**3 - 2 * x)(x))
    assert result.eager_max_abs_diff == float(np.max(np.abs(jitted - op_by_op), initial=0.0))


def test_checkpoint_recomputes_only_under_a_differentiating_transform() -> None:
    """The checkpoint caption: grad above checkpoint recomputes f's intermediates in the
    backward pass (one more ``sin`` in the jaxpr); checkpoint above grad, or alone, changes
    nothing."""

    def sines(stack: tuple[str, ...]) -> int:
        result = cp.compose(stack, SIN2, (3,))
        assert result.jaxpr is not None, result.error
        return len(re.findall(r"\bsin\b", result.jaxpr))

    assert sines(("grad", "checkpoint")) > sines(("grad",))
    assert sines(("jacrev", "checkpoint")) > sines(("jacrev",))
    assert sines(("checkpoint", "grad")) == sines(("grad",))
    assert sines(("jit", "checkpoint")) == sines(("jit",))
    assert sines(("jacfwd", "checkpoint")) == sines(("jacfwd",))  # forward mode: no backward pass
    caption = _pipeline.TRANSFORMS["checkpoint"].does
    assert "reverse-mode differentiation" in caption and "under jacfwd" in caption
    # The jaxpr keeps the unused forward pass (outputs `_`); the program JAX lowers drops it, so
    # grad(checkpoint(f)) computes sin once, as grad(f) does; value_and_grad uses the value.
    import jax
    import jax.numpy as jnp

    def f(x):  # type: ignore[no-untyped-def]
        return jnp.sum(jnp.sin(x) ** 2)

    def lowered(fn):  # type: ignore[no-untyped-def]
        return jax.jit(fn).lower(jnp.ones(3)).as_text().count("stablehlo.sine")

    assert lowered(jax.grad(jax.checkpoint(f))) == lowered(jax.grad(f))
    assert lowered(jax.value_and_grad(jax.checkpoint(f))) > lowered(jax.value_and_grad(f))
    assert "JAX drops the forward pass, so nothing runs twice" in caption


def test_a_transform_under_vmap_gets_a_slice_of_x() -> None:
    """The captions speak of each transform's input: under vmap, jacfwd's input is one row, so
    vmap(jacfwd(tanh)) at (4, 3) is (4, 3, 3), not out.shape + x.shape."""
    assert cp.compose(("vmap", "jacfwd"), "jnp.tanh(x)", (4, 3)).output_shape == (4, 3, 3)
    assert "in.shape" in _pipeline.TRANSFORMS["jacfwd"].does


def test_grads_refusal_of_a_tuple_output_says_it_is_a_pytree() -> None:
    """JAX's message for a tuple, list or dict output names no shape; the plain words said "an
    array"."""
    for formula in ("(jnp.sum(x), jnp.sum(x))", "[jnp.sum(x)]"):
        result = cp.compose(("grad",), formula, (3,))
        assert result.error is not None and "a tuple, list or dict of values" in result.error.plain

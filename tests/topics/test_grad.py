"""The grad page's claims, checked: derivatives, kinks, checks, modes, rules, pytrees."""

from __future__ import annotations

import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxplay import grad as ad
from jaxplay.core.expr import ExprError
from jaxplay.grad import _curves, _custom_vjp, _linearize, _pytrees

WHERE = ad.PRESETS["where(x > 0, x², sin x)"]


@pytest.fixture(scope="module")
def where_curves() -> ad.DerivativeCurves:
    return ad.derivative_curves(WHERE, 2, -3.0, 3.0, 601)


@pytest.fixture(scope="module")
def diag() -> ad.HessianDiagonal:
    return ad.hessian_diagonal(ad.INITS[0])


def test_nested_grad_matches_the_analytic_derivatives() -> None:
    c = ad.derivative_curves("x**3 - 2*x", 4, -2.0, 2.0, 41)
    x = c.x
    expected = (x**3 - 2 * x, 3 * x**2 - 2, 6 * x, np.full_like(x, 6.0), np.zeros_like(x))
    for got, want in zip(c.values, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    assert c.kinks == ()


def test_the_articles_where_has_a_kink_in_f_prime_at_zero(
    where_curves: ad.DerivativeCurves,
) -> None:
    c = where_curves
    assert 0.0 in c.x, "a symmetric grid must hold x = 0 exactly"
    orders = {k.order for k in c.kinks}
    assert orders == {1, 2}, c.kinks
    first = next(k for k in c.kinks if k.order == 1)
    assert first.x_left == 0.0 and first.left == pytest.approx(1.0)  # cos(0): the sin branch
    assert first.right == pytest.approx(2 * first.x_right, abs=1e-5)  # 2x: the x² branch
    assert "changes from 1 to" in first.describe()


def test_smooth_presets_have_no_kinks_and_undefined_regions_are_found() -> None:
    for name in ("tanh", "Gaussian"):
        assert ad.derivative_curves(ad.PRESETS[name], 3, -3.0, 3.0, 301).kinks == ()
    c = ad.derivative_curves("jnp.sqrt(x)", 1, -1.0, 1.0, 21)
    undefined = [k for k in c.kinks if k.kind == "undefined" and k.order == 0]
    assert undefined and undefined[0].x_left == -1.0 and undefined[0].x_right < 0
    steps = ad.derivative_curves("jnp.floor(x)", 0, -3.0, 3.0, 601)
    assert steps.kinks_total == 6


@pytest.mark.parametrize(
    ("args", "limit"),
    [
        ((1, -3.0, 3.0, _curves.MAX_POINTS + 1), str(_curves.MAX_POINTS)),
        ((1, -300.0, 3.0, 11), "100"),
        ((ad.MAX_ORDER + 1, -3.0, 3.0, 11), str(ad.MAX_ORDER)),
        ((1, 3.0, -3.0, 11), "smaller to a larger"),
    ],
)
def test_sizes_outside_the_limits_are_refused_naming_the_limit(args: tuple, limit: str) -> None:
    with pytest.raises(ValueError, match=limit):
        ad.derivative_curves("jnp.sin(x)", *args)


def test_formulas_must_be_allowed_and_scalar() -> None:
    with pytest.raises(ExprError) as err:
        ad.scalar_function("jnp.ones(3) * x")
    assert err.value.col == 1
    with pytest.raises(ExprError, match="one number"):
        ad.scalar_function("jnp.ravel(x)")
    with pytest.raises(ExprError, match="syntax"):
        ad.scalar_function("jnp.sin(x")


def test_autodiff_agrees_with_finite_differences_where_smooth() -> None:
    g = ad.check_derivatives(ad.PRESETS["tanh"], 0.7, 3)
    assert [r.order for r in g.rows] == [1, 2, 3]
    t = np.tanh(0.7)
    exact = (1 - t**2, -2 * t * (1 - t**2), -2 * (1 - t**2) * (1 - 3 * t**2))
    for row, want in zip(g.rows, exact, strict=True):
        assert row.autodiff == pytest.approx(want, rel=1e-4)
        assert row.rel_error < 1e-3
    assert g.check_grads_passed and g.check_grads_order == _curves.MAX_CHECK_GRADS_ORDER
    fig = ad.check_figure(g)
    assert list(fig.data[0].x) == ["f′", "f″", "f‴"] and fig.layout.yaxis.type == "log"
    assert "x₀ = 0.7" in fig.layout.title.text


def test_the_check_chart_shows_small_errors_above_its_floor() -> None:
    """The bars started at the smallest error, so it looked like zero: points on a log axis
    reaching a decade below the smallest error, every tick labelled."""
    g = ad.check_derivatives(ad.PRESETS["x³ − 2x"], 0.7, 3)
    fig = ad.check_figure(g)
    errors = [r.abs_error for r in g.rows]
    low = min(e for e in errors if e > 0)
    axis_bottom = 10 ** fig.layout.yaxis.range[0]
    assert axis_bottom <= low / 10 * 1.01
    assert fig.data[0].mode == "markers+text" and len(fig.layout.yaxis.ticktext) >= 2
    assert list(fig.data[0].text) == [f"{e:.2g}" if e else "0" for e in errors]


def test_finite_differences_disagree_at_the_kink() -> None:
    g = ad.check_derivatives(WHERE, 0.0, 1)
    assert g.rows[0].autodiff == pytest.approx(1.0)
    assert g.rows[0].abs_error > 0.3  # the difference straddles the kink: (h² - sin(-h)) / 2h
    assert not g.check_grads_passed and "tolerance" in g.check_grads_message


def test_grad_value_and_grad_jvp_and_vjp_agree() -> None:
    m = ad.modes_at_point(ad.PRESETS["tanh"], 0.5)
    d = 1 - np.tanh(0.5) ** 2
    for value, derivative in (m.value_and_grad, m.jvp, m.vjp):
        assert value == pytest.approx(np.tanh(0.5), rel=1e-6)
        assert derivative == pytest.approx(d, rel=1e-6)
    assert m.grad == pytest.approx(d, rel=1e-6)
    assert [r["derivative"] for r in m.rows()][1:] == pytest.approx([d] * 4, rel=1e-6)


def test_jvp_is_j_v_and_vjp_is_u_j() -> None:
    m = ad.modes_on_vectors()
    assert m.jacobian.shape == (3, 4)
    np.testing.assert_allclose(m.jvp, m.jacobian @ m.v, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.vjp, m.u @ m.jacobian, rtol=1e-5, atol=1e-6)
    assert m.u_dot_jv == pytest.approx(m.ujt_dot_v, rel=1e-5)


def test_the_articles_custom_rule_equals_jaxs_derivative() -> None:
    x = jnp.array([-2.0, -0.5, 0.0, 0.5, 2.0])
    custom = jax.vmap(jax.grad(ad.my_special_op))(x)
    automatic = jax.vmap(jax.grad(_custom_vjp.special_op_forward))(x)
    np.testing.assert_allclose(custom, automatic, rtol=1e-6)
    assert ad.custom_vs_autodiff(2.0, "cos(x) (correct)").agree


def test_a_broken_custom_rule_disagrees_where_it_is_wrong() -> None:
    wrong_factor = ad.custom_vs_autodiff(3.0, "cos(x) (correct)", -4.0, 4.0, 81)
    assert not wrong_factor.agree
    assert wrong_factor.max_abs_diff == pytest.approx(4.0, rel=1e-5)  # (3 - 2) · x at x = 4
    negative = wrong_factor.x <= 0
    np.testing.assert_allclose(wrong_factor.custom_grad[negative], wrong_factor.jax_grad[negative])
    np.testing.assert_allclose(wrong_factor.forward, _custom_vjp.special_op_forward(wrong_factor.x))
    sign = ad.custom_vs_autodiff(2.0, "-cos(x) (sign error)", -4.0, 4.0, 81)
    assert sign.max_abs_diff == pytest.approx(2.0, rel=1e-5)  # |-cos 0 - cos 0|
    with pytest.raises(ValueError, match="100"):
        ad.custom_vs_autodiff(1e6, "cos(x) (correct)")


@pytest.mark.parametrize(
    ("label", "count"),
    [("argnums=0 (params)", 4), ("argnums=1 (x)", 1), ("argnums=(0, 1) (both)", 5)],
)
def test_gradient_tree_mirrors_the_arguments(label: str, count: int) -> None:
    tree = ad.gradient_tree(ad.INITS[0], ad.ARGNUMS[label])
    assert len(tree.leaves) == count
    params, x = _pytrees.init_complex_loss(ad.INITS[0])
    grads = jax.tree.leaves(jax.grad(ad.complex_loss, argnums=ad.ARGNUMS[label])(params, x))
    for leaf, g in zip(tree.leaves, grads, strict=True):
        assert leaf.shape == g.shape
        assert leaf.norm == pytest.approx(float(jnp.linalg.norm(g)), rel=1e-5)
    if count >= 4:
        assert tree.leaves[0].path == "params[0] (W1)" and tree.leaves[0].shape == (10, 20)
    assert tree.leaves[-1].path == ("x" if count != 4 else "params[3] (b2)")
    assert tree.loss == pytest.approx(float(ad.complex_loss(params, x)), rel=1e-5)


def test_has_aux_passes_intermediates_and_keeps_the_gradient() -> None:
    aux = ad.value_and_grad_with_aux(ad.INITS[0])
    assert aux.aux_shapes == {"hidden": (20,), "output": (1,)}
    assert aux.grads_equal_plain


def test_the_articles_hessian_diagonal_fails_and_two_fixes_agree(diag: ad.HessianDiagonal) -> None:
    assert diag.as_written.error_type == "TypeError"
    assert "Gradient only defined for scalar-output functions" in diag.as_written.message
    assert diag.via_hessian.shape == (241,)
    np.testing.assert_allclose(diag.via_hvp, diag.via_hessian, rtol=1e-4, atol=1e-6)
    assert np.max(np.abs(diag.via_hessian)) > 1e-3  # not trivially zero
    for name, start, stop in diag.blocks:
        if name in ("W2", "b2"):  # the loss is linear in the last layer: zero curvature
            assert np.all(diag.via_hessian[start:stop] == 0)
    assert [b[0] for b in diag.blocks] == ["W1", "b1", "W2", "b2"]


def test_figures_show_each_curve_and_the_kinks(
    where_curves: ad.DerivativeCurves, diag: ad.HessianDiagonal
) -> None:
    fig = ad.derivative_figure(where_curves)
    assert [t.name for t in fig.data] == ["f", "f′", "f″", "possible kink or jump"]
    assert fig.layout.xaxis.title.text == "x" and fig.layout.yaxis.title.text == "value"
    assert np.isnan(fig.data[1].y).sum() == 1 and np.isnan(fig.data[0].y).sum() == 0  # f′ breaks
    smooth = ad.derivative_figure(ad.derivative_curves("x**3 - 2*x", 1, -3.0, 3.0, 11))
    assert len(smooth.data) == 2
    cmp = ad.custom_vs_autodiff(3.0, "cos(x) (correct)", -1.0, 1.0, 21)
    assert len(ad.custom_vjp_figure(cmp).data) == 3
    assert "disagree" in ad.custom_vjp_figure(cmp).layout.title.text
    hess = ad.hessian_diagonal_figure(diag)
    assert len(hess.data) == 2 and "parameter index" in hess.layout.xaxis.title.text


# --- where derivatives are computed: presets here, typed formulas in a sandboxed worker ----------

#: ``tanh`` nested as deep as the formula language allows (45 deep has too many parts).
DEEP_TANH = "jnp.tanh(" * 39 + "x" + ")" * 39


def test_the_45_deep_formula_of_the_hostile_link_is_refused_when_parsed() -> None:
    from jaxplay.hosting.hostile_links import NESTED_TANH

    with pytest.raises(ExprError, match="parts; the limit is"):
        ad.curves(NESTED_TANH, 4, -3.0, 3.0, 801)
    ad.scalar_function(DEEP_TANH)  # the deepest one allowed


def test_presets_are_differentiated_here(monkeypatch: pytest.MonkeyPatch) -> None:
    from jaxplay import sandbox

    monkeypatch.setattr(sandbox, "run_task", lambda *a, **k: pytest.fail("reached a worker"))
    for source in ad.PRESETS.values():
        assert ad.is_preset(source)
        here = ad.curves(source, 2, -3.0, 3.0, 101)
        direct = ad.derivative_curves(source, 2, -3.0, 3.0, 101)
        for a, b in zip(here.values, direct.values, strict=True):
            np.testing.assert_array_equal(a, b)
        assert ad.checks(source, 0.7, 2).check.rows == ad.check_derivatives(source, 0.7, 2).rows
    assert not ad.is_preset("jnp.tanh(x) ")


def test_a_typed_formula_gives_the_same_numbers_here_and_in_a_worker() -> None:
    source = "jnp.abs(x) * jnp.cos(x)"
    here = ad.derivative_curves(source, 3, -3.0, 3.0, 801)
    isolated = ad.curves(source, 3, -3.0, 3.0, 801, timeout_s=120)
    assert len(isolated.values) == 4
    for a, b in zip(isolated.values, here.values, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(isolated.x, here.x)
    assert isolated.kinks == here.kinks and isolated.kinks_total == here.kinks_total
    checked = ad.checks(source, 0.7, 3, timeout_s=120)
    assert checked.check.rows == ad.check_derivatives(source, 0.7, 3).rows
    assert checked.modes == ad.modes_at_point(source, 0.7)


def test_a_bad_typed_formula_is_refused_here_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from jaxplay import sandbox

    monkeypatch.setattr(sandbox, "run_task", lambda *a, **k: pytest.fail("reached a worker"))
    with pytest.raises(ExprError) as err:
        ad.curves("jnp.sin(x", 2, -3.0, 3.0, 801)
    assert "syntax" in err.value.message and err.value.col is not None
    with pytest.raises(ValueError, match="smaller to a larger"):
        ad.curves("jnp.sin(x)", 2, 3.0, -3.0, 801)
    with pytest.raises(ValueError, match="x0 must be"):
        ad.checks("jnp.sin(x)", 1e9, 2)


def test_a_deep_formula_times_out_in_a_worker_while_the_server_keeps_running() -> None:
    """At order 4, ``tanh`` nested 15 deep compiled for 82 s holding the server's GIL (45 deep:
    over 300 s). In a worker it ends at the deadline; meanwhile another thread of this process
    keeps running: its longest pause stays far below the second the hardening rule allows."""
    from jaxplay import sandbox

    ticks: list[float] = []
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    thread = threading.Thread(target=loop)
    thread.start()
    try:
        with pytest.raises(sandbox.TaskFailed) as failed:
            ad.curves(DEEP_TANH, 4, -3.0, 3.0, 801, timeout_s=3)
    finally:
        stop.set()
        thread.join()
    assert failed.value.error.kind == "timeout", failed.value.error
    said = failed.value.explain("Differentiating this formula to order 4", "try a lower order")
    assert said == (
        "Differentiating this formula to order 4 took longer than 3 s and was stopped — "
        "try a lower order."
    )
    assert max(b - a for a, b in zip(ticks, ticks[1:], strict=False)) < 1.0


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (("memory", "The code used more memory than the limit."), "needed more memory"),
        (("timeout", "The code used more than 20 CPU seconds."), "stopped: it used more than 20"),
        (("refused", "This shared server runs at most 20 pieces"), "was refused: This shared"),
        (("exception", "f is bad", "ZeroDivisionError"), "failed: ZeroDivisionError: f is bad"),
    ],
)
def test_each_failure_kind_gets_its_own_sentence(error: tuple, said: str) -> None:
    from jaxplay import sandbox

    kind, message, *exc = error
    failed = sandbox.TaskFailed(sandbox.RunError(kind, message, *exc), timeout_s=10)
    assert said in failed.explain("Doing it", "try less")


def test_custom_jvp_serves_every_transform_and_custom_vjp_refuses_forward_mode() -> None:
    rules = ad.custom_rules(0.5)
    assert rules.jvp_refusals == ()
    assert set(rules.vjp_refusals) == {
        "jax.jvp(f, (x,), (1.0,))[1]",
        "jacfwd(f)(x)",
        "hessian(f)(x)",
        "jax.linearize(f, x)[1](1.0)",
    }
    for row in rules.rows:
        if not row.custom_vjp.ok:
            assert row.custom_vjp.error_type == "TypeError"
            assert (
                "can't apply forward-mode autodiff (jvp) to a custom_vjp" in row.custom_vjp.message
            )
    assert set(rules.agree) == {"grad(f)(x)", "jacrev(f)(x)", "grad(grad(f))(x)"}
    by_call = {r.call: r.custom_jvp.value for r in rules.rows}
    assert float(by_call["grad(f)(x)"]) == pytest.approx(1.0)  # 2x at 0.5
    assert float(by_call["hessian(f)(x)"]) == pytest.approx(2.0)
    negative = {r.call: r.custom_jvp.value for r in ad.custom_rules(-1.0).rows}
    assert float(negative["jacfwd(f)(x)"]) == pytest.approx(np.cos(-1.0), rel=1e-5)


def test_stop_gradient_changes_the_derivative_and_passes_it_straight_through() -> None:
    demo = ad.stop_gradient_demo(0.7)
    rows = {r.expression: r for r in demo.rows}
    assert rows["x * stop_gradient(x)"].grad == pytest.approx(0.7)
    assert rows["x * stop_gradient(x)"].grad_without_stop == pytest.approx(1.4)
    assert rows["stop_gradient(x ** 2) + x"].grad == pytest.approx(1.0)
    ste = rows["x + stop_gradient(round(x) - x)"]
    assert (ste.value, ste.grad, ste.grad_without_stop) == (1.0, 1.0, 0.0)
    assert np.all(demo.grad_round == 0) and np.all(demo.grad_straight_through == 1)
    np.testing.assert_array_equal(demo.rounded, np.round(demo.x.astype(np.float32)))
    assert len(ad.stop_gradient_figure(demo).data) == 3


def test_linearize_keeps_residuals_and_runs_only_linear_equations() -> None:
    lin = ad.linearize_vs_jvp(64)
    assert lin.max_abs_diff < 1e-5
    assert {"sin", "cos", "tanh"} <= set(lin.jvp_primitives)
    assert not ad.Linearized.nonlinear(lin.linear_primitives)
    assert set(lin.linear_primitives) <= {"mul", "add", "add_any", "sub", "neg"}
    assert lin.residuals >= 2 and lin.residual_bytes == lin.residuals * 64 * 4
    with pytest.raises(ValueError, match=str(_linearize.MAX_LINEARIZE_N)):
        ad.linearize_vs_jvp(_linearize.MAX_LINEARIZE_N + 1)


def test_the_articles_custom_vjp_text_names_the_real_exception() -> None:
    from jaxplay import article

    said = next(e for e in article.EXAMPLES if e.id == "grad-custom-vjp").explanation
    refused = next(r.custom_vjp for r in ad.custom_rules(0.5).rows if r.call == "hessian(f)(x)")
    assert f"`{refused.error_type}: {refused.message.rstrip('.')}`" in said


def test_a_nan_gradient_of_a_where_branch_not_taken_is_not_called_undefined() -> None:
    """``where(x > 0, sqrt(x), 0)`` is 0 below 0, so f′ exists there, yet autodiff gives NaN:
    the ``sqrt`` branch not taken gets a zero cotangent, and 0 × NaN is NaN. "f′ is undefined"
    was said; the sentence now names both causes."""
    formula = "jnp.where(x > 0, jnp.sqrt(x), 0.0)"
    f = ad.scalar_function(formula)
    assert float(f(-1.0)) == 0.0 and np.isnan(float(jax.grad(f)(-1.0)))
    c = ad.derivative_curves(formula, 1, -3.0, 3.0, 61)
    nan = [k for k in c.kinks if k.kind == "undefined" and k.order == 1]
    assert nan and nan[0].x_left == -3.0
    said = nan[0].describe()
    assert said.startswith("autodiff gives NaN/inf for f′") and "`jnp.where` branch" in said
    assert "is undefined" not in said
    # No where at all: sqrt(x⁴) is x², f′(0) = 0, yet sqrt′(0) = inf times 0 is NaN.
    g = ad.scalar_function("jnp.sqrt(x ** 4)")
    assert np.isnan(float(jax.grad(g)(0.0)))
    c = ad.derivative_curves("jnp.sqrt(x ** 4)", 1, -3.0, 3.0, 61)
    nan = [k for k in c.kinks if k.kind == "undefined" and k.order == 1]
    assert nan and "an intermediate step's derivative is infinite" in nan[0].describe()


def test_a_steep_smooth_function_is_a_possible_kink_not_a_certain_one() -> None:
    """``tanh(1000 (x - 0.00375))`` is smooth; between two grid points it turns faster than their
    slopes explain, and the page said it jumps and is "not differentiable here"."""
    c = ad.derivative_curves("jnp.tanh(1000 * (x - 0.00375))", 1, -3.0, 3.0, 801)
    steep = [k for k in c.kinks if k.kind != "undefined" and k.order == 0]
    assert steep, c.kinks
    said = steep[0].describe()
    assert "a feature narrower than the grid" in said and "jumps" not in said


def test_the_batched_hessian_diagonal_builds_the_whole_matrix() -> None:
    """The page's fix text: ``vmap`` over basis vectors of HVPs computes all of H at once (an
    equation of its jaxpr makes an n×n array), one at a time (``lax.map``) none does."""
    from jax.flatten_util import ravel_pytree

    from jaxplay.article import complex_loss, hvp
    from jaxplay.core import jaxprs
    from jaxplay.grad import _pytrees

    params, x = _pytrees.init_complex_loss(_pytrees.INITS[1])
    theta, unravel = ravel_pytree(params)
    n = theta.size

    def flat_loss(t):  # type: ignore[no-untyped-def]
        return complex_loss(unravel(t), x)

    def made_square(mapper) -> bool:  # type: ignore[no-untyped-def]
        closed = jax.make_jaxpr(mapper(lambda e: jnp.vdot(e, hvp(flat_loss, theta, e))))(jnp.eye(n))
        return any(
            tuple(v.aval.shape) == (n, n) for eqn in jaxprs.equations(closed) for v in eqn.outvars
        )

    assert made_square(jax.vmap)
    assert not made_square(lambda f: lambda es: jax.lax.map(f, es))

    # The page's "nothing n×n is ever held": over the index, each e_i made in the loop.
    def one_at_a_time(i):  # type: ignore[no-untyped-def]
        e = jax.nn.one_hot(i, n, dtype=theta.dtype)
        return jnp.vdot(e, hvp(flat_loss, theta, e))

    closed = jax.make_jaxpr(lambda idx: jax.lax.map(one_at_a_time, idx))(jnp.arange(n))
    held = [v.aval.shape for eqn in jaxprs.equations(closed) for v in (*eqn.invars, *eqn.outvars)]
    held += [v.aval.shape for v in closed.jaxpr.invars]
    assert (n, n) not in {tuple(shape) for shape in held}


def test_a_float32_overflow_is_named_beside_undefined() -> None:
    """``exp`` is defined everywhere, yet in float32 it is inf beyond x ≈ 88.7: the page said
    "f is undefined" there, and blamed f′ for not existing. In float64 both are finite."""
    assert np.isinf(float(jnp.exp(jnp.float32(89.0))))
    with jax.enable_x64(True):
        assert np.isfinite(float(jax.grad(jnp.exp)(jnp.float64(89.0))))
    c = ad.derivative_curves("jnp.exp(x)", 1, 80.0, 100.0, 81)
    bad = {k.order: k.describe() for k in c.kinks if k.kind == "undefined"}
    assert "too large for float32 (above 3.4e+38, e.g. `exp` beyond x ≈ 88.7)" in bad[0]
    assert "is undefined" not in bad[0]
    assert "too large for float32" in bad[1]


def test_check_grads_failing_in_float32_only_is_put_down_to_its_rounding() -> None:
    """At x₀ = 100 on x², autodiff is exact, yet ``check_grads`` fails at order 2 in float32:
    its eps = 1e-3 differences are rounding noise at f ≈ 1e4. The page said "fails up to order
    2"; it now says which order, and that float64 passes. At the kink (x₀ = 0) float64 fails too."""
    preset = "jnp.where(x > 0, x**2, jnp.sin(x))"
    far = ad.check_derivatives(preset, 100.0, 2)
    assert [r.abs_error for r in far.rows] == [0.0, 0.0]
    assert far.check_grads_failed_order == 2 and far.check_grads_float64_passed
    said = ad.check_grads_failure(far)
    assert "passes up to order 1 and fails at order 2" in said and "not a wrong derivative" in said
    kink = ad.check_derivatives(preset, 0.0, 2)
    assert kink.check_grads_failed_order == 1 and kink.check_grads_float64_passed is False
    said = ad.check_grads_failure(kink)
    assert said.startswith("`jax.test_util.check_grads` fails at order 1") and "float64" not in said
    assert not jax.config.jax_enable_x64


def test_check_grads_failing_where_float32_overflows_is_not_put_down_to_rounding() -> None:
    """exp at x₀ = 89: JAX's float32 derivative is inf (e⁸⁹ ≈ 4.5e38 is past float32's 3.4e38),
    and the page said the failure was "the rounding of its own finite differences … not a wrong
    derivative"."""
    check = ad.check_derivatives("jnp.exp(x)", 89.0, 1)
    assert check.rows[0].autodiff == float(jax.grad(jnp.exp)(jnp.float32(89.0))) == float("inf")
    assert check.check_grads_float64_passed
    said = ad.check_grads_failure(check)
    assert "derivative of order 1 is inf here (float32 holds numbers up to 3.4e+38)" in said
    assert "rounding" not in said


def test_two_grid_points_are_never_written_as_one() -> None:
    """99.5 and 99.50125, at 4 significant figures, read "between x = 99.5 and x = 99.5"."""
    from jaxplay.grad._curves import Kink

    jump = Kink(0, "jump", 99.5, 99.50125, 0.0, 1.0).describe()
    assert "between x = 99.5 and x = 99.501," in jump  # the digits that tell them apart
    nan = Kink(0, "undefined", 99.5, 99.50125, float("nan"), float("nan")).describe()
    assert "for x in [99.5, 99.501]" in nan
    assert "at x = 0.5:" in Kink(0, "undefined", 0.5, 0.5, 0.0, 0.0).describe()
    assert "between x = -1 and x = 1," in Kink(1, "jump", -1.0, 1.0, 0.0, 1.0).describe()

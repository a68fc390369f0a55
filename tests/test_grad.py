"""The grad page's claims, checked: derivatives, kinks, checks, modes, rules, pytrees."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxplay import grad as ad
from jaxplay.core.expr import ExprError

WHERE = ad.PRESETS["where(x > 0, x², sin x) — the article's my_special_op"]


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
    assert "jumps from 1 to" in first.describe()


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
        ((1, -3.0, 3.0, ad.MAX_POINTS + 1), str(ad.MAX_POINTS)),
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
    assert g.check_grads_passed and g.check_grads_order == ad.MAX_CHECK_GRADS_ORDER
    fig = ad.check_figure(g)
    assert list(fig.data[0].x) == ["f′", "f″", "f‴"] and fig.layout.yaxis.type == "log"
    assert "x₀ = 0.7" in fig.layout.title.text


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
    automatic = jax.vmap(jax.grad(ad.special_op_forward))(x)
    np.testing.assert_allclose(custom, automatic, rtol=1e-6)
    assert ad.custom_vs_autodiff(2.0, "cos(x) (correct)").agree


def test_a_broken_custom_rule_disagrees_where_it_is_wrong() -> None:
    wrong_factor = ad.custom_vs_autodiff(3.0, "cos(x) (correct)", -4.0, 4.0, 81)
    assert not wrong_factor.agree
    assert wrong_factor.max_abs_diff == pytest.approx(4.0, rel=1e-5)  # (3 - 2) · x at x = 4
    negative = wrong_factor.x <= 0
    np.testing.assert_allclose(wrong_factor.custom_grad[negative], wrong_factor.jax_grad[negative])
    np.testing.assert_allclose(wrong_factor.forward, ad.special_op_forward(wrong_factor.x))
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
    params, x = ad.init_complex_loss(ad.INITS[0])
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
    assert [t.name for t in fig.data] == ["f", "f′", "f″", "not differentiable here"]
    assert fig.layout.xaxis.title.text == "x" and fig.layout.yaxis.title.text == "value"
    assert np.isnan(fig.data[1].y).sum() == 1 and np.isnan(fig.data[0].y).sum() == 0  # f′ breaks
    smooth = ad.derivative_figure(ad.derivative_curves("x**3 - 2*x", 1, -3.0, 3.0, 11))
    assert len(smooth.data) == 2
    cmp = ad.custom_vs_autodiff(3.0, "cos(x) (correct)", -1.0, 1.0, 21)
    assert len(ad.custom_vjp_figure(cmp).data) == 3
    assert "disagree" in ad.custom_vjp_figure(cmp).layout.title.text
    hess = ad.hessian_diagonal_figure(diag)
    assert len(hess.data) == 2 and "parameter index" in hess.layout.xaxis.title.text

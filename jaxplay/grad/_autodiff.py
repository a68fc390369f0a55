"""Automatic differentiation you can look at: the logic behind the grad page.

The article's section on ``jax.grad`` makes claims that are easy to state and easy to get wrong:
nested ``grad`` gives higher derivatives, autodiff agrees with finite differences, ``jvp`` and
``vjp`` compute the same derivative from two directions, a ``custom_vjp`` rule replaces JAX's own
derivative (right or wrong), and ``grad(grad(loss))`` is a "Hessian diagonal". This module computes
each of them on real inputs, so the page can *show* the numbers instead of asserting them, and
runs the article's code as written where it fails on current JAX so the page can show the real
error next to the fix. Formulas typed by visitors go through :func:`jaxplay.core.expr.parse`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import plotly.graph_objects as go
from jax.flatten_util import ravel_pytree
from jax.test_util import check_grads

from jaxplay.core import capture
from jaxplay.core.capture import Outcome
from jaxplay.core.expr import ExprError, Expression, parse
from jaxplay.core.figures import log_axis
from jaxplay.core.inputs import normal_arrays

#: The grad page's functions of one variable (label -> formula in the safe expression language).
PRESETS: dict[str, str] = {
    "where(x > 0, x², sin x) — the article's my_special_op": "jnp.where(x > 0, x**2, jnp.sin(x))",
    "tanh": "jnp.tanh(x)",
    "Gaussian": "jnp.exp(-x**2 / 2)",
    "x³ − 2x": "x**3 - 2*x",
}
MAX_ORDER = 4
MAX_CHECK_GRADS_ORDER = 2
MAX_POINTS = 2001
MAX_ABS_X = 100.0
#: At most this many non-smooth points are listed (a staircase like ``jnp.floor`` has many).
MAX_KINKS = 20
ORDER_NAMES = ("f", "f′", "f″", "f‴", "f⁽⁴⁾", "f⁽⁵⁾")


# --- f, f', f'', ... on a grid -------------------------------------------------------------------


def scalar_function(source: str) -> Expression:
    """Parse ``source`` as f(x) and check that it maps a number to a number.

    Raises:
        ExprError: for a formula that is not allowed, or one that does not return one number
            for a number x (``grad`` needs a scalar output).
    """
    f = parse(source, ("x",))
    try:
        out = jax.eval_shape(f, jax.ShapeDtypeStruct((), jnp.float32))
    except ExprError:
        raise
    except Exception as err:  # noqa: BLE001 - any failure to evaluate is the formula's fault
        raise ExprError(
            f"f(x) cannot be evaluated at a number x: {type(err).__name__}: {err}"
        ) from None
    shape = getattr(out, "shape", None)
    if shape != ():
        raise ExprError(f"f(x) must return one number for a number x; it returns shape {shape}")
    if not jnp.issubdtype(out.dtype, jnp.inexact):
        raise ExprError(f"f(x) returns {out.dtype}; grad needs a floating-point output")
    return f


def nth_derivative(f: Callable[[Any], Any], order: int) -> Callable[[Any], Any]:
    """``grad(grad(...grad(f)))``: ``order`` nested ``jax.grad`` calls (``order=0`` is ``f``)."""
    for _ in range(order):
        f = jax.grad(f)
    return f


@dataclass(frozen=True)
class Kink:
    """Where a curve is not smooth: a jump between two neighbouring grid points, or undefined.

    Attributes:
        order: which derivative (0 is f itself).
        kind: ``"jump"`` (the value changes more than its own derivative explains) or
            ``"undefined"`` (NaN or infinite values).
        x_left, x_right: the grid interval (for ``"undefined"``, the run of bad points).
        left, right: the values on either side (NaN for ``"undefined"``).
    """

    order: int
    kind: str
    x_left: float
    x_right: float
    left: float
    right: float

    def describe(self) -> str:
        name = ORDER_NAMES[self.order]
        if self.kind == "undefined":
            if self.x_left == self.x_right:
                return f"{name} is undefined (NaN/inf) at x = {self.x_left:.4g}"
            return f"{name} is undefined (NaN/inf) for x in [{self.x_left:.4g}, {self.x_right:.4g}]"
        return (
            f"{name} jumps from {self.left:.4g} to {self.right:.4g} "
            f"between x = {self.x_left:.4g} and x = {self.x_right:.4g}"
        )


@dataclass(frozen=True)
class DerivativeCurves:
    """f and its derivatives on a grid, as computed by nested ``grad`` under ``vmap``.

    Attributes:
        source: the formula.
        x: the grid.
        values: ``values[k]`` is the k-th derivative on the grid, for k = 0..order.
        kinks: the non-smooth or undefined places found (at most :data:`MAX_KINKS`).
        kinks_total: how many were found in all.
    """

    source: str
    x: np.ndarray
    values: tuple[np.ndarray, ...]
    kinks: tuple[Kink, ...]
    kinks_total: int

    @property
    def order(self) -> int:
        return len(self.values) - 1


def check_grid(lo: float, hi: float, points: int) -> None:
    """Refuse a plotting grid outside the limits, naming the limit (a ``ValueError``)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
        raise ValueError(f"the range must go from a smaller to a larger number (got {lo} to {hi})")
    if max(abs(lo), abs(hi)) > MAX_ABS_X:
        raise ValueError(f"|x| is limited to {MAX_ABS_X:g} (got {lo:g} to {hi:g})")
    if not 2 <= points <= MAX_POINTS:
        raise ValueError(f"the grid needs 2 to {MAX_POINTS} points (got {points})")


def _check_order(order: int, low: int = 0) -> None:
    if not low <= order <= MAX_ORDER:
        raise ValueError(f"the derivative order must be {low} to {MAX_ORDER} (got {order})")


def find_kinks(x: np.ndarray, values: Sequence[np.ndarray], order: int) -> list[Kink]:
    """Non-smooth and undefined places of derivatives 0..``order``.

    ``values`` must hold one more derivative than is checked: the change of derivative k between
    two neighbouring points is compared with what derivative k+1 (its slope, also from autodiff)
    explains, ``max(|slope|) * h``. A change several times larger is a jump: the curve is not
    differentiable there, whatever value autodiff reports *at* that point.
    """
    kinks: list[Kink] = []
    h = np.diff(x)
    for k in range(order + 1):
        d, slope = values[k], values[k + 1]
        bad = ~np.isfinite(d)
        start = None
        for i, is_bad in enumerate([*bad, False]):
            if is_bad and start is None:
                start = i
            elif not is_bad and start is not None:
                kinks.append(
                    Kink(k, "undefined", float(x[start]), float(x[i - 1]), math.nan, math.nan)
                )
                start = None
        jump = np.abs(np.diff(d))
        explained = np.maximum(np.abs(slope[:-1]), np.abs(slope[1:])) * h
        scale = 1e-3 * (1.0 + np.nanmax(np.abs(np.where(np.isfinite(d), d, 0.0))))
        with np.errstate(invalid="ignore"):
            flagged = np.isfinite(jump) & np.isfinite(explained) & (jump > 4 * explained + scale)
        for i in np.flatnonzero(flagged):
            kinks.append(
                Kink(k, "jump", float(x[i]), float(x[i + 1]), float(d[i]), float(d[i + 1]))
            )
    return kinks


def derivative_curves(
    source: str, order: int, lo: float, hi: float, points: int
) -> DerivativeCurves:
    """f, f′, … up to ``order`` on ``points`` grid points in [lo, hi], with non-smooth places.

    Each derivative is ``vmap(grad(grad(...f)))`` over the grid: nested ``grad`` gives the
    derivative at one point, ``vmap`` evaluates it at every point in one batched call.

    Raises:
        ExprError: the formula is not allowed or not a scalar function.
        ValueError: order, range or number of points outside the limits (the message names them).
    """
    _check_order(order)
    check_grid(lo, hi, points)
    f = scalar_function(source)
    # The grid is laid out in float64 so that a symmetric range holds x = 0 exactly (float32
    # linspace lands at -3e-8), where kinks such as the article's where(x > 0, ...) sit.
    grid = jnp.asarray(np.linspace(lo, hi, points), dtype=jnp.float32)
    fns = [nth_derivative(f, k) for k in range(order + 2)]
    # One jitted program for every order: one compile instead of one per primitive and order.
    every_order = jax.jit(lambda g: tuple(jax.vmap(fn)(g) for fn in fns))
    values = tuple(np.asarray(v, dtype=np.float64) for v in every_order(grid))
    x = np.asarray(grid, dtype=np.float64)
    kinks = find_kinks(x, values, order)
    return DerivativeCurves(source, x, values[: order + 1], tuple(kinks[:MAX_KINKS]), len(kinks))


def derivative_figure(curves: DerivativeCurves) -> go.Figure:
    """One line per derivative, and the non-smooth places marked (both sides of each jump)."""
    fig = go.Figure()
    for k, y in enumerate(curves.values):
        # A gap (NaN) inside each jump of this curve, so the line does not bridge it.
        cuts = sorted(
            int(np.searchsorted(curves.x, kk.x_right))
            for kk in curves.kinks
            if kk.kind == "jump" and kk.order == k
        )
        x = np.insert(curves.x, cuts, np.nan)
        y = np.insert(y, cuts, np.nan)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=ORDER_NAMES[k]))
    jumps = [kk for kk in curves.kinks if kk.kind == "jump"]
    if jumps:
        fig.add_trace(
            go.Scatter(
                x=[v for kk in jumps for v in (kk.x_left, kk.x_right)],
                y=[v for kk in jumps for v in (kk.left, kk.right)],
                mode="markers",
                marker={
                    "symbol": "circle-open",
                    "size": 11,
                    "color": "crimson",
                    "line": {"width": 2},
                },
                name="not differentiable here",
                text=[kk.describe() for kk in jumps for _ in (0, 1)],
                hoverinfo="text",
            )
        )
    for kk in curves.kinks:
        if kk.kind == "undefined":
            fig.add_vrect(
                x0=kk.x_left, x1=kk.x_right, fillcolor="crimson", opacity=0.12, line_width=0
            )
    fig.update_layout(
        title=f"f(x) = {curves.source} and its derivatives (vmap of nested grad)",
        xaxis_title="x",
        yaxis_title="value",
        legend_title="curve",
        margin={"t": 50, "b": 40},
    )
    return fig


# --- autodiff against finite differences ---------------------------------------------------------


@dataclass(frozen=True)
class OrderCheck:
    """One derivative order at one point: autodiff, a central difference, and their gap."""

    order: int
    autodiff: float
    finite_difference: float
    step: float

    @property
    def abs_error(self) -> float:
        return abs(self.autodiff - self.finite_difference)

    @property
    def rel_error(self) -> float:
        return self.abs_error / max(1.0, abs(self.autodiff))


@dataclass(frozen=True)
class GradCheck:
    """Autodiff against finite differences at ``x0`` for every order up to the chosen one.

    Attributes:
        rows: one :class:`OrderCheck` per order 1..order.
        check_grads_order: the highest order ``check_grads`` checked (at most
            :data:`MAX_CHECK_GRADS_ORDER`: it checks every mix of forward and reverse mode, so
            its cost doubles with each order).
        check_grads_passed: whether ``jax.test_util.check_grads`` accepted all orders.
        check_grads_message: its assertion message when it did not ("" when it passed).
    """

    source: str
    x0: float
    rows: tuple[OrderCheck, ...]
    check_grads_order: int
    check_grads_passed: bool
    check_grads_message: str


def central_difference(g: Callable[[Any], Any], x0: float, step: float) -> float:
    """``(g(x0 + h) - g(x0 - h)) / 2h``: the numerical slope of ``g`` at ``x0``."""
    return float((g(jnp.float32(x0 + step)) - g(jnp.float32(x0 - step))) / (2 * step))


def check_derivatives(source: str, x0: float, order: int) -> GradCheck:
    """Compare the k-th autodiff derivative with a central difference of the (k−1)-th, k = 1..order.

    The step ``h = 1e-2 * max(1, |x0|)`` suits float32: rounding error grows like eps/h and the
    truncation error like h², so errors around 1e-4 are expected where f is smooth. Near a kink the
    difference straddles it and disagrees, as it should. ``jax.test_util.check_grads`` runs too
    (forward and reverse mode, random direction, up to order 2), with ``eps=1e-3`` for float32.
    """
    _check_order(order, low=1)
    if not math.isfinite(x0) or abs(x0) > MAX_ABS_X:
        raise ValueError(f"x0 must be a number with |x0| ≤ {MAX_ABS_X:g} (got {x0})")
    f = scalar_function(source)
    step = 1e-2 * max(1.0, abs(x0))
    fns = [nth_derivative(f, k) for k in range(order + 1)]
    every_order = jax.jit(lambda x: tuple(fn(x) for fn in fns))
    rows = []
    for k in range(1, order + 1):
        ad = float(every_order(jnp.float32(x0))[k])
        fd = central_difference(lambda x, k=k: every_order(x)[k - 1], x0, step)
        rows.append(OrderCheck(k, ad, fd, step))
    checked = min(order, MAX_CHECK_GRADS_ORDER)
    try:
        check_grads(f, (jnp.float32(x0),), order=checked, modes=("fwd", "rev"), eps=1e-3)
        passed, message = True, ""
    except AssertionError as err:
        passed, message = False, str(err).strip()
    return GradCheck(source, float(x0), tuple(rows), checked, passed, message)


def check_figure(check: GradCheck) -> go.Figure:
    """|autodiff − central difference| per order, on a log scale (one bar per order)."""
    fig = go.Figure(
        go.Bar(
            x=[ORDER_NAMES[r.order] for r in check.rows],
            y=[max(r.abs_error, 1e-12) for r in check.rows],
            text=[f"{r.abs_error:.2g}" for r in check.rows],
            name="|error|",
        )
    )
    fig.update_layout(
        title=f"autodiff vs central difference at x₀ = {check.x0:g} (step {check.rows[0].step:g})",
        xaxis_title="derivative",
        yaxis=log_axis("|autodiff − central difference|", fig.data[0].y),
        margin={"t": 50, "b": 40},
        height=320,
    )
    return fig


# --- value_and_grad, forward and reverse mode ----------------------------------------------------


@dataclass(frozen=True)
class ModesAtPoint:
    """f at x0 and its derivative four ways: grad, value_and_grad, jvp (forward), vjp (reverse)."""

    value: float
    grad: float
    value_and_grad: tuple[float, float]
    jvp: tuple[float, float]
    vjp: tuple[float, float]

    def rows(self) -> list[dict[str, str | float | None]]:
        """One row per call, as the page's table lists them."""
        return [
            {"call": "f(x₀)", "value": self.value, "derivative": None},
            {"call": "grad(f)(x₀)", "value": None, "derivative": self.grad},
            {
                "call": "value_and_grad(f)(x₀)",
                "value": self.value_and_grad[0],
                "derivative": self.value_and_grad[1],
            },
            {
                "call": "jvp(f, (x₀,), (1.0,))  forward",
                "value": self.jvp[0],
                "derivative": self.jvp[1],
            },
            {
                "call": "vjp(f, x₀)[1](1.0)  reverse",
                "value": self.vjp[0],
                "derivative": self.vjp[1],
            },
        ]


def modes_at_point(source: str, x0: float) -> ModesAtPoint:
    """The derivative of f at ``x0`` by ``grad``, ``value_and_grad``, ``jvp`` and ``vjp``.

    ``jvp(f, (x0,), (1.0,))`` pushes the tangent 1 forward: (f(x0), f′(x0)·1). ``vjp(f, x0)``
    returns f(x0) and a pullback; pulling the cotangent 1 back gives 1·f′(x0). For a function of
    one variable both are f′(x0).
    """
    f = scalar_function(source)

    def four_ways(x: Any) -> tuple[Any, ...]:
        value, grad = jax.value_and_grad(f)(x)
        primal, tangent = jax.jvp(f, (x,), (jnp.ones_like(x),))
        out, pullback = jax.vjp(f, x)
        (cotangent,) = pullback(jnp.ones_like(out))
        return f(x), jax.grad(f)(x), value, grad, primal, tangent, out, cotangent

    r = [float(v) for v in jax.jit(four_ways)(jnp.float32(x0))]
    return ModesAtPoint(r[0], r[1], (r[2], r[3]), (r[4], r[5]), (r[6], r[7]))


def small_network(params: tuple[Any, ...], x: Any) -> Any:
    """The article's two-layer network ``W2 @ tanh(W1 @ x + b1) + b2`` (R^n -> R^m)."""
    W1, b1, W2, b2 = params
    return W2 @ jnp.tanh(W1 @ x + b1) + b2


@dataclass(frozen=True)
class ModesOnVectors:
    """What jvp and vjp compute on a function R^n -> R^m with Jacobian J.

    ``jvp`` with tangent v gives J v (one forward pass per input direction); ``vjp`` with cotangent
    u gives uᵀ J (one backward pass per output direction). Both are products with the same J:
    ``u · (J v) == (uᵀ J) · v``.
    """

    jacobian: np.ndarray
    v: np.ndarray
    jvp: np.ndarray
    u: np.ndarray
    vjp: np.ndarray

    @property
    def u_dot_jv(self) -> float:
        return float(self.u @ self.jvp)

    @property
    def ujt_dot_v(self) -> float:
        return float(self.vjp @ self.v)


def modes_on_vectors(
    n_in: int = 4, hidden: int = 5, n_out: int = 3, seed: int = 0
) -> ModesOnVectors:
    """jvp and vjp of :func:`small_network` with respect to x, next to its full Jacobian."""
    w1, b1, w2, b2, x, v, u = normal_arrays(
        seed, (hidden, n_in), (hidden,), (n_out, hidden), (n_out,), (n_in,), (n_in,), (n_out,)
    )
    params = (w1 / math.sqrt(n_in), b1 * 0.1, w2 / math.sqrt(hidden), b2 * 0.1)

    def products(params: tuple[Any, ...], x: Any, v: Any, u: Any) -> tuple[Any, Any, Any]:
        net = lambda x: small_network(params, x)  # noqa: E731
        _, jv = jax.jvp(net, (x,), (v,))
        _, pullback = jax.vjp(net, x)
        (ujt,) = pullback(u)
        return jax.jacfwd(net)(x), jv, ujt

    jacobian, jv, ujt = jax.jit(products)(params, x, v, u)
    return ModesOnVectors(
        jacobian=np.asarray(jacobian),
        v=np.asarray(v),
        jvp=np.asarray(jv),
        u=np.asarray(u),
        vjp=np.asarray(ujt),
    )


# --- custom_vjp: the article's my_special_op -----------------------------------------------------


@jax.custom_vjp
def my_special_op(x):  # the article's code, as written
    """前向传播定义"""
    return jnp.where(x > 0, x**2, jnp.sin(x))


def my_special_op_fwd(x):
    """前向传播实现"""
    return my_special_op(x), (x,)


def my_special_op_bwd(res, g):
    """反向传播实现"""
    (x,) = res
    grad = jnp.where(x > 0, 2 * x, jnp.cos(x))
    return (grad * g,)


my_special_op.defvjp(my_special_op_fwd, my_special_op_bwd)


def special_op_forward(x: Any) -> Any:
    """The same forward as ``my_special_op``, with no custom rule: JAX derives its gradient."""
    return jnp.where(x > 0, x**2, jnp.sin(x))


#: Backward rules for the x ≤ 0 branch: the right one and two plausible mistakes.
NEGATIVE_BRANCH_RULES: dict[str, Callable[[Any], Any]] = {
    "cos(x) (correct)": jnp.cos,
    "-cos(x) (sign error)": lambda x: -jnp.cos(x),
    "sin(x) (forgot to differentiate)": jnp.sin,
}


def make_special_op(factor: float = 2.0, negative_rule: str = "cos(x) (correct)") -> Callable:
    """``my_special_op`` with a backward rule you can break.

    The backward pass returns ``where(x > 0, factor * x, rule(x)) * g``; the article's rule is
    ``factor = 2`` and ``rule = cos``. JAX trusts a custom rule blindly: the forward pass is
    unchanged, only gradients change.
    """
    rule = NEGATIVE_BRANCH_RULES[negative_rule]

    @jax.custom_vjp
    def op(x: Any) -> Any:
        return special_op_forward(x)

    def op_fwd(x: Any) -> tuple[Any, tuple[Any]]:
        return special_op_forward(x), (x,)

    def op_bwd(res: tuple[Any], g: Any) -> tuple[Any]:
        (x,) = res
        return (jnp.where(x > 0, factor * x, rule(x)) * g,)

    op.defvjp(op_fwd, op_bwd)
    return op


@dataclass(frozen=True)
class CustomVsAutodiff:
    """The custom rule's gradient and JAX's own gradient of the same forward, on a grid."""

    factor: float
    negative_rule: str
    x: np.ndarray
    forward: np.ndarray
    custom_grad: np.ndarray
    jax_grad: np.ndarray

    @property
    def max_abs_diff(self) -> float:
        return float(np.max(np.abs(self.custom_grad - self.jax_grad)))

    @property
    def agree(self) -> bool:
        return bool(np.allclose(self.custom_grad, self.jax_grad, rtol=1e-5, atol=1e-6))


MAX_FACTOR = 100.0


def custom_vs_autodiff(
    factor: float, negative_rule: str, lo: float = -4.0, hi: float = 4.0, points: int = 401
) -> CustomVsAutodiff:
    """``vmap(grad(op))`` with the (possibly broken) custom rule against ``vmap(grad(forward))``."""
    check_grid(lo, hi, points)
    if not math.isfinite(factor) or abs(factor) > MAX_FACTOR:
        raise ValueError(f"the factor is limited to |factor| ≤ {MAX_FACTOR:g} (got {factor})")
    if negative_rule not in NEGATIVE_BRANCH_RULES:
        raise ValueError(
            f"unknown rule {negative_rule!r}; choose one of {list(NEGATIVE_BRANCH_RULES)}"
        )
    op = make_special_op(factor, negative_rule)
    grid = np.linspace(lo, hi, points).astype(np.float32)
    both = jax.jit(
        lambda g: (
            jax.vmap(op)(g),
            jax.vmap(jax.grad(op))(g),
            jax.vmap(jax.grad(special_op_forward))(g),
        )
    )
    forward, custom_grad, jax_grad = (np.asarray(v) for v in both(grid))
    return CustomVsAutodiff(factor, negative_rule, grid, forward, custom_grad, jax_grad)


def custom_vjp_figure(cmp: CustomVsAutodiff) -> go.Figure:
    """The forward, JAX's derivative and the custom rule's derivative on one chart."""
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(x=cmp.x, y=cmp.forward, name="my_special_op(x)", line={"color": "gray"})
    )
    fig.add_trace(
        go.Scatter(x=cmp.x, y=cmp.jax_grad, name="grad by JAX (no custom rule)", line={"width": 4})
    )
    fig.add_trace(
        go.Scatter(
            x=cmp.x, y=cmp.custom_grad, name="grad by the custom_vjp rule", line={"dash": "dash"}
        )
    )
    verdict = "agree" if cmp.agree else f"disagree (max |difference| {cmp.max_abs_diff:.3g})"
    fig.update_layout(
        title=f"custom rule (factor {cmp.factor:g}, x ≤ 0: {cmp.negative_rule}) vs JAX: {verdict}",
        xaxis_title="x",
        yaxis_title="value",
        margin={"t": 50, "b": 40},
    )
    return fig


# --- the article's complex_loss: a gradient pytree, argnums, the Hessian diagonal ----------------


def complex_loss(params, x):  # the article's code, as written
    # 一个非平凡的函数
    W1, b1, W2, b2 = params
    h = jnp.tanh(jnp.dot(x, W1) + b1)
    return jnp.sum(jnp.dot(h, W2) + b2)


PARAM_NAMES = ("W1", "b1", "W2", "b2")
INITS = ("random (key 0, scaled 1/√fan-in)", "ones (as in the article)")


def init_complex_loss(init: str, n_in: int = 10, hidden: int = 20) -> tuple[tuple[Any, ...], Any]:
    """``(params, x)`` for :func:`complex_loss` with the article's shapes.

    The article uses ``jnp.ones`` everywhere; then ``x @ W1 + b1 = 11`` and ``tanh`` is saturated,
    so most gradients and the whole Hessian are ~0. The random choice keeps them visible.
    """
    if init == INITS[1]:
        shapes = ((n_in, hidden), (hidden,), (hidden, 1), (1,))
        return tuple(jnp.asarray(np.ones(s, np.float32)) for s in shapes), jnp.asarray(
            np.ones(n_in, np.float32)
        )
    if init != INITS[0]:
        raise ValueError(f"unknown initialisation {init!r}; choose one of {list(INITS)}")
    w1, b1, w2, b2, x = normal_arrays(0, (n_in, hidden), (hidden,), (hidden, 1), (1,), (n_in,))
    params = (w1 / math.sqrt(n_in), b1 * 0.1, w2 / math.sqrt(hidden), b2 * 0.1)
    return tuple(jnp.asarray(p, dtype=jnp.float32) for p in params), jnp.asarray(x)


#: ``argnums`` choices for ``grad(complex_loss, argnums=...)``.
ARGNUMS: dict[str, int | tuple[int, ...]] = {
    "argnums=0 (params)": 0,
    "argnums=1 (x)": 1,
    "argnums=(0, 1) (both)": (0, 1),
}
ARG_NAMES = ("params", "x")


@dataclass(frozen=True)
class LeafSummary:
    """One array of a gradient pytree, summarised (a gradient can be too big to print)."""

    path: str
    shape: tuple[int, ...]
    dtype: str
    mean: float
    min: float
    max: float
    norm: float


@dataclass(frozen=True)
class GradientTree:
    """``grad(complex_loss, argnums)`` as a structure: the treedef and a row per leaf."""

    argnums: int | tuple[int, ...]
    loss: float
    structure: str
    leaves: tuple[LeafSummary, ...]


def _leaf_name(path: tuple[Any, ...], argnums: int | tuple[int, ...]) -> str:
    """``params[0] (W1)`` rather than ``[0][0]``: the key path with the article's names."""
    indices = [getattr(p, "idx", getattr(p, "key", p)) for p in path]
    if isinstance(argnums, tuple):
        arg = argnums[indices[0]]
        indices = indices[1:]
    else:
        arg = argnums
    name = ARG_NAMES[arg] + "".join(f"[{i}]" for i in indices)
    if arg == 0 and indices:
        name += f" ({PARAM_NAMES[indices[0]]})"
    return name


def gradient_tree(init: str, argnums: int | tuple[int, ...]) -> GradientTree:
    """The gradient of the article's ``complex_loss`` for an ``argnums`` choice, leaf by leaf.

    ``grad`` returns a pytree shaped like the argument(s) it differentiates: a 4-tuple of arrays
    for ``params``, one array for ``x``, and a pair of both for ``(0, 1)``.
    """
    params, x = init_complex_loss(init)
    loss, grads = jax.jit(jax.value_and_grad(complex_loss, argnums=argnums))(params, x)
    flat, treedef = jax.tree_util.tree_flatten_with_path(grads)
    leaves = tuple(
        LeafSummary(
            path=_leaf_name(path, argnums),
            shape=tuple(leaf.shape),
            dtype=str(leaf.dtype),
            mean=float(np.mean(a)),
            min=float(np.min(a)),
            max=float(np.max(a)),
            norm=float(np.linalg.norm(a)),
        )
        for path, leaf in flat
        for a in (np.asarray(leaf),)
    )
    return GradientTree(argnums, float(loss), str(treedef), leaves)


def loss_with_aux(params, x):
    """complex_loss that also returns its intermediates: ``has_aux=True`` passes them through."""
    W1, b1, W2, b2 = params
    h = jnp.tanh(jnp.dot(x, W1) + b1)
    out = jnp.dot(h, W2) + b2
    return jnp.sum(out), {"hidden": h, "output": out}


@dataclass(frozen=True)
class AuxResult:
    """``value_and_grad(loss_with_aux, has_aux=True)``: the loss, the aux shapes, the grad check."""

    loss: float
    aux_shapes: dict[str, tuple[int, ...]]
    grads_equal_plain: bool


def value_and_grad_with_aux(init: str) -> AuxResult:
    """Run ``value_and_grad(..., has_aux=True)`` and check its gradient is the plain one."""
    params, x = init_complex_loss(init)
    (loss, aux), grads = jax.jit(jax.value_and_grad(loss_with_aux, has_aux=True))(params, x)
    plain = jax.jit(jax.grad(complex_loss))(params, x)
    same = all(
        bool(np.allclose(a, b))
        for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(plain), strict=True)
    )
    return AuxResult(float(loss), {k: tuple(v.shape) for k, v in aux.items()}, same)


def hvp(f, primals, tangents):  # the article's code, as written
    """计算 Hv 而不显式构造海森矩阵"""
    return jax.grad(lambda x: jnp.vdot(jax.grad(f)(x), tangents))(primals)


HESSIAN_DIAG_AS_WRITTEN = (
    "grad_loss = grad(complex_loss, argnums=0)\n"
    "hessian_diag = grad(grad(complex_loss, argnums=0), argnums=0)\n"
    "hessian_diag(params, x_sample)"
)


@dataclass(frozen=True)
class HessianDiagonal:
    """The article's "Hessian diagonal" as written, and two correct ways that agree.

    Attributes:
        as_written: what ``grad(grad(complex_loss))`` really does (it raises).
        via_hessian: ``diag(jax.hessian(loss)(θ))`` over the flattened parameters θ.
        via_hvp: ``(H e_i)_i`` for every basis vector e_i, with the article's ``hvp``, under vmap.
        blocks: ``(name, start, stop)`` of each parameter array in θ.
    """

    as_written: Outcome
    via_hessian: np.ndarray
    via_hvp: np.ndarray
    blocks: tuple[tuple[str, int, int], ...]

    @property
    def max_abs_diff(self) -> float:
        return float(np.max(np.abs(self.via_hessian - self.via_hvp)))


def hessian_diagonal(init: str) -> HessianDiagonal:
    """Run the article's ``grad(grad(...))`` and compute the real diagonal two ways.

    ``grad`` needs a scalar output, but ``grad(complex_loss)`` returns a tuple of arrays, so the
    outer ``grad`` raises. The diagonal of the Hessian with respect to all 241 parameters is
    ``diag(jax.hessian(...))``, or, without building the 241×241 matrix, ``e_iᵀ H e_i`` from one
    Hessian-vector product per basis vector.
    """
    params, x = init_complex_loss(init)
    as_written = capture.run(
        jax.grad(jax.grad(complex_loss, argnums=0), argnums=0),
        params,
        x,
        code=HESSIAN_DIAG_AS_WRITTEN,
    )
    theta, unravel = ravel_pytree(params)
    flat_loss = lambda t: complex_loss(unravel(t), x)  # noqa: E731
    via_hessian = jax.jit(lambda t: jnp.diag(jax.hessian(flat_loss)(t)))(theta)
    basis = np.eye(theta.size, dtype=np.float32)
    via_hvp = jax.jit(jax.vmap(lambda e: jnp.vdot(e, hvp(flat_loss, theta, e))))(basis)
    blocks, start = [], 0
    for name, p in zip(PARAM_NAMES, params, strict=True):
        blocks.append((name, start, start + p.size))
        start += p.size
    return HessianDiagonal(as_written, np.asarray(via_hessian), np.asarray(via_hvp), tuple(blocks))


def hessian_diagonal_figure(diag: HessianDiagonal) -> go.Figure:
    """The diagonal by parameter index, both ways, with the parameter arrays shaded."""
    index = np.arange(diag.via_hessian.size)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=index, y=diag.via_hessian, mode="lines", name="diag(jax.hessian)"))
    fig.add_trace(
        go.Scatter(x=index, y=diag.via_hvp, mode="markers", marker={"size": 5}, name="eᵢ·hvp(eᵢ)")
    )
    for i, (name, start, stop) in enumerate(diag.blocks):
        fig.add_vrect(
            x0=start - 0.5,
            x1=stop - 0.5,
            fillcolor="gray",
            opacity=0.08 if i % 2 else 0.0,
            line_width=0,
            annotation_text=name,
            annotation_position="top left",
        )
    fig.update_layout(
        title=f"Hessian diagonal of complex_loss (max |difference| {diag.max_abs_diff:.2g})",
        xaxis_title="parameter index (W1, b1, W2, b2 flattened)",
        yaxis_title="∂²loss/∂θᵢ²",
        margin={"t": 50, "b": 40},
    )
    return fig

"""Autodiff checked: against finite differences, by ``check_grads``, and four ways at a point.

Why: the article claims autodiff is exact; here it is compared with the numerical slope of the
previous derivative at a point, checked by ``jax.test_util.check_grads`` in both modes, and computed
by ``grad``, ``value_and_grad``, ``jvp`` (forward) and ``vjp`` (reverse), which agree; on a vector
function ``jvp`` and ``vjp`` are products with the same Jacobian from either side.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import plotly.graph_objects as go
from jax.test_util import check_grads

from jaxplay.core import claims
from jaxplay.core.figures import log_axis
from jaxplay.core.i18n import _
from jaxplay.core.inputs import normal_arrays
from jaxplay.grad._curves import (
    MAX_ABS_X,
    MAX_CHECK_GRADS_ORDER,
    ORDER_NAMES,
    check_order,
    nth_derivative,
    scalar_function,
)


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
        check_grads_failed_order: the first order it failed at (None when it passed).
        check_grads_float64_passed: whether the same check at that order passed in float64
            (None when it passed in float32): a float32 failure that float64 does not repeat is
            the rounding of the check's own finite differences, not a wrong derivative.
    """

    source: str
    x0: float
    rows: tuple[OrderCheck, ...]
    check_grads_order: int
    check_grads_passed: bool
    check_grads_message: str
    # No defaults: a result stored before these fields fails to decode and is computed anew.
    check_grads_failed_order: int | None
    check_grads_float64_passed: bool | None


def check_point(x0: float) -> None:
    """Refuse a point outside the page's range, naming the limit (a ``ValueError``)."""
    if not math.isfinite(x0) or abs(x0) > MAX_ABS_X:
        raise ValueError(f"x0 must be a number with |x0| ≤ {MAX_ABS_X:g} (got {x0})")


def central_difference(g: Callable[[Any], Any], x0: float, step: float) -> float:
    """``(g(x0 + h) - g(x0 - h)) / 2h``: the numerical slope of ``g`` at ``x0``."""
    return float((g(jnp.float32(x0 + step)) - g(jnp.float32(x0 - step))) / (2 * step))


def check_derivatives(source: str, x0: float, order: int) -> GradCheck:
    """Compare the k-th autodiff derivative with a central difference of the (k−1)-th, k = 1..order.

    The step ``h = 1e-2 * max(1, |x0|)`` grows with ``|x0|`` so that float32's rounding (about
    eps·|g|/h) stays small where values grow with x; the difference's own truncation error grows
    like h² times g‴, so where g bends within h (``sin`` at x0 = −100, where h = 1) the central
    difference is off, not autodiff. Near a kink the difference straddles it and disagrees, as it
    should. ``jax.test_util.check_grads`` runs too (forward and reverse mode, random direction,
    order by order up to 2, ``eps=1e-3``); where it fails in float32 it is run again at that order
    in float64 (``jax.enable_x64``, this thread only), to tell its own rounding from a wrong
    derivative.
    """
    check_order(order, low=1)
    check_point(x0)
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
    failed, message = _first_failure(f, x0, checked, jnp.float32)
    in_float64 = None
    if failed is not None:
        with jax.enable_x64(True):
            in_float64 = _first_failure(f, x0, failed, jnp.float64, start=failed)[0] is None
    return GradCheck(
        source, float(x0), tuple(rows), checked, failed is None, message, failed, in_float64
    )


@claims.states_nothing("what check_grads did in this run, in float32 and in float64")
def check_grads_failure(check: GradCheck) -> str:
    """Where ``check_grads`` failed and, from its float64 rerun, whether the derivative or the
    check's own float32 rounding is at fault (Markdown, in the visitor's language)."""
    failed = check.check_grads_failed_order or 1
    first = _("`jax.test_util.check_grads` fails at order 1:")
    later = _("`jax.test_util.check_grads` passes up to order {passed} and fails at order {order}:")
    said = (first if failed == 1 else later).format(passed=failed - 1, order=failed)
    # JAX's own float32 derivative, when past float32's range, is the failure, not the rounding.
    overflowed = next((r for r in check.rows[:failed] if not math.isfinite(r.autodiff)), None)
    if check.check_grads_float64_passed and overflowed is not None:
        said += " " + _(
            "in float32 JAX's own derivative of order {order} is {value} here (float32 holds "
            "numbers up to {most}); in float64 the same check passes, so float32's range is at "
            "fault, not the derivative's formula."
        ).format(
            order=overflowed.order,
            value=overflowed.autodiff,
            most=f"{float(jnp.finfo(jnp.float32).max):.2g}",
        )
    elif check.check_grads_float64_passed:
        said += " " + _(
            "in float64 the same check passes, so this is the rounding of its own finite "
            "differences in float32 (`eps=1e-3`), not a wrong derivative."
        )
    return said


def _first_failure(
    f: Callable[[Any], Any], x0: float, order: int, dtype: Any, start: int = 1
) -> tuple[int | None, str]:
    """The first order from ``start`` to ``order`` at which ``check_grads`` fails at ``x0`` in
    ``dtype``, with its message; ``(None, "")`` when none does."""
    for k in range(start, order + 1):
        try:
            check_grads(f, (dtype(x0),), order=k, modes=("fwd", "rev"), eps=1e-3)
        except AssertionError as err:
            return k, str(err).strip()
    return None, ""


def _power(value: float) -> str:
    """A tick on a log axis of errors: ``1e-6``, ``2e-5``, ``0.1``, ``1``."""
    if 1e-3 <= abs(value) < 1e4:
        return f"{value:g}"
    mantissa, exponent = f"{value:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def check_figure(check: GradCheck) -> go.Figure:
    """|autodiff − central difference| per order as points on a log scale, labelled.

    A log scale, because the errors that matter differ by decades (1e-6 where f is smooth, 1 at
    a kink); points rather than bars, because a bar's length on a log axis depends on where the
    axis starts. The axis reaches a decade below the smallest error, so none sits on its floor;
    an error of exactly 0 is drawn on that floor and labelled "0".
    """
    errors = [r.abs_error for r in check.rows]
    positive = [e for e in errors if e > 0 and math.isfinite(e)]
    floor = (min(positive) if positive else 1e-7) / 10
    y = [e if e > 0 and math.isfinite(e) else floor for e in errors]
    fig = go.Figure(
        go.Scatter(
            x=[ORDER_NAMES[r.order] for r in check.rows],
            y=y,
            mode="markers+text",
            marker={"size": 14},
            text=[f"{e:.2g}" if e else "0" for e in errors],
            textposition="top center",
            name="|error|",
        )
    )
    fig.update_layout(
        title=_("autodiff vs central difference at x₀ = {x0} (step {step})").format(
            x0=f"{check.x0:g}", step=f"{check.rows[0].step:g}"
        ),
        xaxis_title=_("derivative"),
        yaxis=log_axis(_("|autodiff − central difference| (log scale)"), [floor, *y], _power),
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
        call, value, derivative = _("call"), _("value"), _("derivative")
        return [
            {call: "f(x₀)", value: self.value, derivative: None},
            {call: "grad(f)(x₀)", value: None, derivative: self.grad},
            {
                call: "value_and_grad(f)(x₀)",
                value: self.value_and_grad[0],
                derivative: self.value_and_grad[1],
            },
            {
                call: _("jvp(f, (x₀,), (1.0,))  forward"),
                value: self.jvp[0],
                derivative: self.jvp[1],
            },
            {
                call: _("vjp(f, x₀)[1](1.0)  reverse"),
                value: self.vjp[0],
                derivative: self.vjp[1],
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
        net = lambda x: small_network(params, x)
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

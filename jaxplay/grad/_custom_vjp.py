"""The article's ``custom_vjp`` rule, next to JAX's own derivative of the same forward, breakable.

Why: a custom VJP replaces JAX's derivative blindly, right or wrong. The article's rule for
``my_special_op`` (in :mod:`jaxplay.article`) is correct; here a visitor can change its factor or
its negative branch and see the gradient JAX now reports drift away from the true one.
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

from jaxplay.core.i18n import N_, _
from jaxplay.grad._curves import check_grid


def special_op_forward(x: Any) -> Any:
    """The same forward as ``my_special_op``, with no custom rule: JAX derives its gradient."""
    return jnp.where(x > 0, x**2, jnp.sin(x))


#: Backward rules for the x ≤ 0 branch: the right one and two plausible mistakes.
NEGATIVE_BRANCH_RULES: dict[str, Callable[[Any], Any]] = {
    N_("cos(x) (correct)"): jnp.cos,
    N_("-cos(x) (sign error)"): lambda x: -jnp.cos(x),
    N_("sin(x) (forgot to differentiate)"): jnp.sin,
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
        go.Scatter(
            x=cmp.x, y=cmp.jax_grad, name=_("grad by JAX (no custom rule)"), line={"width": 4}
        )
    )
    fig.add_trace(
        go.Scatter(
            x=cmp.x, y=cmp.custom_grad, name=_("grad by the custom_vjp rule"), line={"dash": "dash"}
        )
    )
    if cmp.agree:
        title = _("custom rule (factor {factor}, x ≤ 0: {rule}) vs JAX: agree")
    else:
        title = _(
            "custom rule (factor {factor}, x ≤ 0: {rule}) vs JAX: disagree (max |difference| "
            "{diff})"
        )
    fig.update_layout(
        title=title.format(
            factor=f"{cmp.factor:g}", rule=_(cmp.negative_rule), diff=f"{cmp.max_abs_diff:.3g}"
        ),
        xaxis_title="x",
        yaxis_title=_("value"),
        margin={"t": 50, "b": 40},
    )
    return fig

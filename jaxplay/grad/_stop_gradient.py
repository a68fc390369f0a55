"""``jax.lax.stop_gradient``: a value that autodiff treats as a constant.

Why: the article differentiates everything it touches; real losses often need a part held fixed
(a target, a moving average) or a forward pass autodiff cannot differentiate usefully. Here
``stop_gradient`` is shown where it changes a derivative — ``x * stop_gradient(x)`` has
derivative x, not 2x — and in the straight-through estimator, which rounds on the way forward
and passes the gradient through as if rounding were the identity (``jnp.round`` alone has
derivative 0 everywhere). Every number is computed by JAX.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import plotly.graph_objects as go

from jaxplay.core.i18n import _
from jaxplay.grad._curves import MAX_ABS_X, check_grid


def round_straight_through(x: Any) -> Any:
    """``round(x)`` forward; backward, the gradient of ``x`` (the straight-through estimator)."""
    return x + jax.lax.stop_gradient(jnp.round(x) - x)


#: (expression as shown, with stop_gradient, the same without it).
STOP_EXAMPLES: tuple[tuple[str, Any, Any], ...] = (
    ("x * stop_gradient(x)", lambda x: x * jax.lax.stop_gradient(x), lambda x: x * x),
    ("stop_gradient(x ** 2) + x", lambda x: jax.lax.stop_gradient(x**2) + x, lambda x: x**2 + x),
    ("x + stop_gradient(round(x) - x)", round_straight_through, jnp.round),
)


@dataclass(frozen=True)
class StopRow:
    """One expression at x₀: its value, and its derivative with and without ``stop_gradient``."""

    expression: str
    value: float
    grad: float
    grad_without_stop: float


@dataclass(frozen=True)
class StopGradient:
    """The examples at ``x0``, and ``round`` vs the straight-through estimator on a grid."""

    x0: float
    rows: tuple[StopRow, ...]
    x: np.ndarray
    rounded: np.ndarray
    grad_round: np.ndarray
    grad_straight_through: np.ndarray

    def table(self) -> list[dict[str, object]]:
        """One row per example: its value at ``x0`` and its derivative with and without
        ``stop_gradient``."""
        return [
            {
                "f(x)": r.expression,
                f"f({self.x0:g})": r.value,
                "grad(f)": r.grad,
                _("grad without stop_gradient"): r.grad_without_stop,
            }
            for r in self.rows
        ]


def stop_gradient_demo(
    x0: float, lo: float = -3.0, hi: float = 3.0, points: int = 601
) -> StopGradient:
    """Evaluate :data:`STOP_EXAMPLES` at ``x0`` and both roundings' derivatives on a grid."""
    if not math.isfinite(x0) or abs(x0) > MAX_ABS_X:
        raise ValueError(f"x0 must be a number with |x0| ≤ {MAX_ABS_X:g} (got {x0})")
    check_grid(lo, hi, points)
    point = jnp.float32(x0)
    rows = tuple(
        StopRow(
            name,
            float(with_stop(point)),
            float(jax.grad(with_stop)(point)),
            float(jax.grad(without)(point)),
        )
        for name, with_stop, without in STOP_EXAMPLES
    )
    grid = jnp.asarray(np.linspace(lo, hi, points), dtype=jnp.float32)
    both = jax.jit(
        lambda g: (
            jax.vmap(round_straight_through)(g),
            jax.vmap(jax.grad(jnp.round))(g),
            jax.vmap(jax.grad(round_straight_through))(g),
        )
    )
    rounded, grad_round, grad_ste = (np.asarray(v, dtype=np.float64) for v in both(grid))
    return StopGradient(
        float(x0), rows, np.asarray(grid, np.float64), rounded, grad_round, grad_ste
    )


def stop_gradient_figure(demo: StopGradient) -> go.Figure:
    """round(x), and the derivative JAX reports for round and for the straight-through version."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=demo.x, y=demo.rounded, name=_("value: round(x) (both)")))
    fig.add_trace(
        go.Scatter(x=demo.x, y=demo.grad_round, name="grad(jnp.round)", line={"width": 4})
    )
    fig.add_trace(
        go.Scatter(
            x=demo.x,
            y=demo.grad_straight_through,
            name="grad(x + stop_gradient(round(x) − x))",
            line={"dash": "dash"},
        )
    )
    fig.update_layout(
        title=_("Rounding forward: the derivative JAX reports with and without stop_gradient"),
        xaxis_title="x",
        yaxis_title=_("value"),
        margin={"t": 50, "b": 40},
        height=400,
        legend={"orientation": "h", "yanchor": "top", "y": -0.2},
    )
    return fig

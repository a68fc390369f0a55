"""f, f′, f″, … of a formula on a grid, and where they are not smooth.

Why: the article says nested ``grad`` gives higher derivatives; this computes them for any formula
a visitor types (parsed by :func:`jaxplay.core.expr.parse`, never evaluated), as
``vmap(grad(grad(…f)))`` over a grid, and finds the kinks and undefined points autodiff glosses
over (it differentiates the branch it took). The function checks shared by the other grad modules
(a scalar f, the order and grid limits) live here too.
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

from jaxplay.core import claims
from jaxplay.core.expr import ExprError, Expression, parse, shape_of
from jaxplay.core.figures import plain
from jaxplay.core.i18n import N_, _

#: The grad page's functions of one variable (label -> formula in the safe expression language).
PRESETS: dict[str, str] = {
    "where(x > 0, x², sin x)": "jnp.where(x > 0, x**2, jnp.sin(x))",
    "tanh": "jnp.tanh(x)",
    N_("Gaussian"): "jnp.exp(-x**2 / 2)",
    "x³ − 2x": "x**3 - 2*x",
}
MAX_ORDER = 4
MAX_CHECK_GRADS_ORDER = 2
MAX_POINTS = 2001
MAX_ABS_X = 100.0
#: At most this many non-smooth points are listed (a staircase like ``jnp.floor`` has many).
MAX_KINKS = 20
ORDER_NAMES = ("f", "f′", "f″", "f‴", "f⁽⁴⁾", "f⁽⁵⁾")
#: float32's largest value, and the x beyond which ``exp(x)`` passes it (an infinity that is
#: float32's, not the function's), as JAX's ``finfo`` gives them.
FLOAT32_MAX = float(jnp.finfo(jnp.float32).max)
EXP_OVERFLOWS_AT = math.log(FLOAT32_MAX)


# --- f, f', f'', ... on a grid -------------------------------------------------------------------


def scalar_function(source: str) -> Expression:
    """Parse ``source`` as f(x) and check that it maps a number to a number.

    Raises:
        ExprError: for a formula that is not allowed, or one that does not return one number
            for a number x (``grad`` needs a scalar output).
    """
    f = parse(source, ("x",))
    try:
        out = shape_of(f, jax.ShapeDtypeStruct((), jnp.float32))
    except ExprError:
        raise
    except Exception as err:
        raise ExprError(
            _("f(x) cannot be evaluated at a number x: {error}").format(
                error=f"{type(err).__name__}: {err}"
            )
        ) from None
    shape = getattr(out, "shape", None)
    if shape != ():
        raise ExprError(
            _("f(x) must return one number for a number x; it returns shape {shape}").format(
                shape=shape
            )
        )
    if not jnp.issubdtype(out.dtype, jnp.inexact):
        raise ExprError(
            _("f(x) returns {dtype}; grad needs a floating-point output").format(dtype=out.dtype)
        )
    return f


def nth_derivative(f: Callable[[Any], Any], order: int) -> Callable[[Any], Any]:
    """``grad(grad(...grad(f)))``: ``order`` nested ``jax.grad`` calls (``order=0`` is ``f``)."""
    for _step in range(order):
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

    def _ends(self) -> tuple[str, str]:
        """``x_left`` and ``x_right`` with the digits that tell two grid points apart (at 4
        significant figures 99.5 and 99.50125 were "between x = 99.5 and x = 99.5")."""
        for digits in range(4, 17):
            lo, hi = f"{self.x_left:.{digits}g}", f"{self.x_right:.{digits}g}"
            if lo != hi or self.x_left == self.x_right:
                return lo, hi
        return lo, hi

    def describe(self) -> str:
        name = ORDER_NAMES[self.order]
        lo, hi = self._ends()
        if self.kind == "undefined":
            where = (
                _("at x = {x}").format(x=lo)
                if self.x_left == self.x_right
                else _("for x in [{lo}, {hi}]").format(lo=lo, hi=hi)
            )
            # In float32 an infinity may be the format's, not the function's: exp(89) is inf.
            overflow = dict(most=f"{FLOAT32_MAX:.2g}", exp_x=f"{EXP_OVERFLOWS_AT:.1f}")
            if self.order == 0:
                return _(
                    "{name} is NaN or infinite {where}: undefined there (a `log` of a negative "
                    "number, 1/0), or too large for float32 (above {most}, e.g. `exp` beyond x "
                    "≈ {exp_x})"
                ).format(name=name, where=where, **overflow)
            # jnp.where(x > 0, jnp.sqrt(x), 0.0) is 0 below 0, yet its gradient is NaN there:
            # the branch not taken gets a zero cotangent, and 0 × NaN is NaN.
            return _(
                "autodiff gives NaN/inf for {name} {where}: {name} does not exist there; or an "
                "intermediate step's derivative is infinite or NaN there (`sqrt` at 0, a "
                "`jnp.where` branch not taken) and the chain rule carries it; or a value there "
                "is too large for float32 (above {most}, e.g. `exp` beyond x ≈ {exp_x})"
            ).format(name=name, where=where, **overflow)
        return _(
            "{name} changes from {left} to {right} between x = {lo} and x = {hi}, more than its "
            "slope at those two points explains: a kink, a jump, or a feature narrower than the "
            "grid"
        ).format(
            name=name,
            left=f"{self.left:.4g}",
            right=f"{self.right:.4g}",
            lo=lo,
            hi=hi,
        )


@claims.states("grad.a_kink_gets_one_side_or_the_average")
def curves_caption(points: int) -> str:
    """What the curves are, and what autodiff gives at a kink (Markdown)."""
    return _(
        "Each curve is `vmap(grad(grad(…f)))` over {points} points. Autodiff differentiates "
        "the operations that ran, so at a kink it gives a value of its own: one side's "
        "derivative for `where`, `relu` and `abs`, the average of the two sides' for "
        "`maximum`, `minimum` and `clip` at a tie. A circle pair marks where a curve jumps by "
        "more than its own slope explains."
    ).format(points=points)


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
        raise ValueError(
            _("the range must go from a smaller to a larger number (got {lo} to {hi})").format(
                lo=lo, hi=hi
            )
        )
    if max(abs(lo), abs(hi)) > MAX_ABS_X:
        raise ValueError(
            _("|x| is limited to {limit} (got {lo} to {hi})").format(
                limit=f"{MAX_ABS_X:g}", lo=f"{lo:g}", hi=f"{hi:g}"
            )
        )
    if not 2 <= points <= MAX_POINTS:
        raise ValueError(
            _("the grid needs 2 to {limit} points (got {points})").format(
                limit=MAX_POINTS, points=points
            )
        )


def check_order(order: int, low: int = 0) -> None:
    if not low <= order <= MAX_ORDER:
        raise ValueError(f"the derivative order must be {low} to {MAX_ORDER} (got {order})")


def find_kinks(x: np.ndarray, values: Sequence[np.ndarray], order: int) -> list[Kink]:
    """Non-smooth and undefined places of derivatives 0..``order``.

    ``values`` must hold one more derivative than is checked: the change of derivative k between
    two neighbouring points is compared with what derivative k+1 (its slope, also from autodiff)
    explains, ``max(|slope|) * h``. A change several times larger is a possible kink or jump:
    the curve may not be differentiable there (whatever value autodiff reports *at* that point),
    or it turns faster than the grid sees (``tanh(1000 x)``).
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
        scale = 1e-3 * (1.0 + np.nanmax(np.abs(np.where(np.isfinite(d), d, 0.0))))
        # inf − inf (a float32 overflow on both sides) is NaN: not finite, so never flagged.
        with np.errstate(invalid="ignore"):
            jump = np.abs(np.diff(d))
            explained = np.maximum(np.abs(slope[:-1]), np.abs(slope[1:])) * h
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
    check_order(order)
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
                name=_("possible kink or jump"),
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
        title=_("f(x) = {formula} and its derivatives (vmap of nested grad)").format(
            formula=plain(curves.source)
        ),
        xaxis_title="x",
        yaxis_title=_("value"),
        legend_title=_("curve"),
        margin={"t": 50, "b": 40},
    )
    return fig

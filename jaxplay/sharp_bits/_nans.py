"""NaNs: gradients through ``jnp.where``, ``jax_debug_nans`` and ``checkify``.

``jnp.where(c, a, b)`` computes both branches and differentiates both: the untaken branch's
derivative is multiplied by a zero cotangent, and 0 × inf or 0 × nan is nan. The fix is a second
``where`` that feeds the dangerous branch a safe input. ``jax_debug_nans`` makes JAX stop at the
first operation that produces a NaN; here it is switched on with the ``jax.debug_nans(True)``
context manager, which holds for the calling thread only and is undone on exit, so the server's
global setting (off) never changes. ``checkify`` turns silent failures (a NaN, an out-of-bounds
index) into an error value a jitted function returns.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import plotly.graph_objects as go
from jax.experimental import checkify

from jaxplay.core import capture, claims, markdown
from jaxplay.core.i18n import N_, _, ngettext
from jaxplay.core.words import numbers
from jaxplay.sharp_bits._case import Case, Param, Variant

#: Points of the gradient curve drawn beside the where case (an even number: x = 0 is not one
#: of them, where sqrt's derivative is infinite and would stretch the axis).
CURVE_POINTS = 80


def sqrt_or_zero(x):
    return jnp.where(x > 0, jnp.sqrt(x), 0.0)


def sqrt_or_zero_safe(x):
    safe_x = jnp.where(x > 0, x, 1.0)  # the untaken branch never sees x <= 0
    return jnp.where(x > 0, jnp.sqrt(safe_x), 0.0)


def single_where(x):
    return sqrt_or_zero(x), jax.grad(sqrt_or_zero)(x)


def double_where(x):
    return sqrt_or_zero_safe(x), jax.grad(sqrt_or_zero_safe)(x)


_CURVES = {"single": sqrt_or_zero, "double": sqrt_or_zero_safe}


def gradient_curve(variant: str) -> tuple[np.ndarray, np.ndarray]:
    """``x`` on [-2, 2] and the variant's gradient there (``vmap(grad(f))``)."""
    xs = jnp.linspace(-2.0, 2.0, CURVE_POINTS)
    return np.asarray(xs), np.asarray(jax.vmap(jax.grad(_CURVES[variant]))(xs))


def gradient_figure(variant: str, params: Mapping[str, Any]) -> go.Figure:
    """The variant's gradient on [-2, 2]; NaN gradients marked in red on the x axis."""
    xs, grads = gradient_curve(variant)
    nan = np.isnan(grads)
    fig = go.Figure(
        go.Scatter(x=xs[~nan], y=grads[~nan], mode="markers", name="grad f(x)", marker={"size": 5})
    )
    fig.add_trace(
        go.Scatter(
            x=xs[nan],
            y=np.zeros(int(nan.sum())),
            mode="markers",
            name=_("NaN gradient ({n} of {total} points)").format(
                n=int(nan.sum()), total=CURVE_POINTS
            ),
            marker={"color": "#d32f2f", "symbol": "x", "size": 8},
        )
    )
    fig.add_vline(x=float(params["x"]), line_dash="dot", line_color="#757575")
    fig.update_layout(
        title=_("{function} on [-2, 2]").format(function=f"jax.grad({_CURVES[variant].__name__})"),
        xaxis_title="x",
        yaxis_title=_("gradient"),
        height=320,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


@claims.states("sharp_bits.where_nan_gradient")
def explain_where(
    variant: str, params: Mapping[str, Any], outcome: capture.Outcome, value: Any
) -> str:
    x = params["x"]
    if value is None:
        return _("It raised {error}.").format(error=outcome.error_type)
    val, grad = (float(np.asarray(v)) for v in value)
    xs, grads = gradient_curve(variant)
    nan = np.isnan(grads)
    sentence = _("At x = {x} the value is {value} and the gradient is {gradient}.").format(
        x=f"{x:g}", value=f"{val:g}", gradient=f"{grad:g}"
    )
    if math.isnan(grad):
        branch = float(jax.grad(jnp.sqrt)(jnp.float32(x)))
        sentence += _(
            " The value is fine, but `where` differentiates both branches: the untaken "
            "`sqrt` branch has derivative {derivative} at {x}, and 0 × {derivative} = nan."
        ).format(derivative=f"{branch:g}", x=f"{x:g}")
    if nan.any():
        sentence += _(
            " On the curve below, {n} of {total} points have a NaN gradient, every x from "
            "{low} to {high}."
        ).format(
            n=int(nan.sum()),
            total=CURVE_POINTS,
            low=f"{xs[nan].min():g}",
            high=f"{xs[nan].max():g}",
        )
    else:
        sentence += _(" On the curve below, none of the {total} points has a NaN gradient.").format(
            total=CURVE_POINTS
        )
    return sentence


def log_then_sqrt(v):
    return jnp.sqrt(jnp.log(v))


def without_check(x):
    return jax.jit(log_then_sqrt)(jnp.array([4.0, x]))


def with_debug_nans(x):
    with jax.debug_nans(True):  # this thread only
        return jax.jit(log_then_sqrt)(jnp.array([4.0, x]))


_PRIMITIVE = re.compile(r"invalid value \(nan\) encountered in (\w+)")
#: What JAX prints each time a jitted function found a NaN and calls its de-optimized version.
DEOPTIMIZED = "Calling the de-optimized version"


@claims.states("sharp_bits.debug_nans_reruns_once")
def explain_debug_nans(
    variant: str, params: Mapping[str, Any], outcome: capture.Outcome, value: Any
) -> str:
    x = params["x"]
    flag = bool(jax.config.values["jax_debug_nans"])
    after = (
        _(" This server's global `jax_debug_nans` is on after the run.")
        if flag
        else _(" This server's global `jax_debug_nans` is off after the run.")
    )
    if value is None:
        found = _PRIMITIVE.search(outcome.message)
        where = f"`{found.group(1)}`" if found else _("an operation")
        printed = outcome.stdout.count(DEOPTIMIZED)
        sentence = _(
            "`debug_nans` raised {error} at {where}, the first operation whose output held a "
            "NaN for x = {x}."
        ).format(error=outcome.error_type, where=where, x=f"{x:g}")
        if printed:
            inner = printed - 1
            if inner == 1:
                rest = _(
                    "; the other came from `jnp.{function}`, itself a jitted function, when the "
                    "re-run reached it."
                ).format(function=found.group(1) if found else "sqrt")
            elif inner:
                rest = _(
                    "; the other {n} came from jnp's own jitted functions as the re-run reached "
                    "them."
                ).format(n=inner)
            else:
                rest = _(".")
            sentence += claims.qualify(
                "sharp_bits.debug_nans_reruns_once",
                ngettext(
                    " JAX printed {n} line saying it was calling the de-optimized version (shown "
                    "below): the jitted `log_then_sqrt` found a NaN in its output and re-ran the "
                    "function once, op by op",
                    " JAX printed {n} lines saying it was calling the de-optimized version (shown "
                    "below): the jitted `log_then_sqrt` found a NaN in its output and re-ran the "
                    "function once, op by op",
                    printed,
                ).format(n=f"{printed:,}")
                + rest,
            )
        return sentence + after
    out = np.asarray(value)
    nans = int(np.isnan(out).sum())
    if nans:
        return (
            _(
                "`jit` returned {values} for x = {x}: {n} NaN, no error, nothing says where it "
                "came from."
            ).format(values=numbers(out), x=f"{x:g}", n=nans)
            + after
        )
    return (
        _("For x = {x} no NaN appears: {values}.").format(x=f"{x:g}", values=numbers(out)) + after
    )


def log_at(v, i):
    return jnp.log(v)[i]


def unchecked(x, index):
    return jax.jit(log_at)(jnp.array([1.0, 2.0, x]), index)


@functools.cache  # checkify makes a new function: jitted once per set of checks, not per call
def checked(errors):
    return jax.jit(checkify.checkify(log_at, errors=errors))


def index_checked(x, index):
    err, out = checked(checkify.index_checks)(jnp.array([1.0, 2.0, x]), index)
    return err.get(), out


def nan_checked(x, index):
    err, out = checked(checkify.nan_checks)(jnp.array([1.0, 2.0, x]), index)
    return err.get(), out


def both_checked_and_thrown(x, index):
    errors = checkify.index_checks | checkify.nan_checks
    err, out = checked(errors)(jnp.array([1.0, 2.0, x]), index)
    err.throw()  # raises if a check failed
    return out


@claims.states("sharp_bits.checkify_reports")
def explain_checkify(
    variant: str, params: Mapping[str, Any], outcome: capture.Outcome, value: Any
) -> str:
    x, index = params["x"], params["index"]
    setting = {"x": f"{x:g}", "i": index}
    if value is None:
        return _(
            "For v = [1, 2, {x}] and i = {i}, `err.throw()` raised {error} for {what}."
        ).format(**setting, error=outcome.error_type, what=_failed(outcome.message))
    if variant in ("unchecked", "thrown"):
        out = float(np.asarray(value))
        return _(
            "For v = [1, 2, {x}] and i = {i}, the jitted function returned {out} and raised "
            "nothing."
        ).format(**setting, out=f"{out:g}")
    error, out = value
    out_text = f"{float(np.asarray(out)):g}"
    if error is None:
        return _(
            "For v = [1, 2, {x}] and i = {i}, this check found nothing; the result is {out}."
        ).format(**setting, out=out_text)
    # JAX's message last and on its own: it ends in its own full stop (it read ".;" mid-sentence).
    return _(
        "For v = [1, 2, {x}] and i = {i}, checkify reported {what}, and the result is still "
        "{out}. Its message: {message}"
    ).format(**setting, what=_failed(error), out=out_text, message=markdown.code(error.strip()))


def _failed(message: str) -> str:
    """Which check a checkify message is about, in words."""
    if "nan generated" in message:
        return _("a NaN")
    if "out-of-bounds" in message:
        return _("an out-of-bounds index")
    return _("a failed check")


WHERE = Case(
    key="where",
    title=N_("NaN gradients"),
    intro=N_(
        "`jnp.where(x > 0, jnp.sqrt(x), 0.0)` is 0 for x ≤ 0, but its gradient there is NaN: "
        "`where` computes and differentiates **both** branches, then multiplies the untaken "
        "one's derivative by zero. The fix is a second `where` that keeps the untaken branch's "
        "input safe."
    ),
    params=(Param("x", "x", 0.0, -2.0, 2.0, 0.25),),
    variants=(
        Variant("single", N_("One where (as usually written)"), single_where, (sqrt_or_zero,)),
        Variant(
            "double",
            N_("Double where (the fix)"),
            double_where,
            (sqrt_or_zero_safe,),
            note=N_(
                "The inner `where` swaps x ≤ 0 for 1.0 before `sqrt`, so neither branch's "
                "derivative is infinite or NaN."
            ),
        ),
    ),
    explain=explain_where,
    figure=gradient_figure,
)

DEBUG_NANS = Case(
    key="debug_nans",
    title="jax_debug_nans",
    intro=N_(
        "A NaN deep inside a jitted function comes out silently. With `jax_debug_nans` on, JAX "
        "checks every output for NaNs and, when it finds one, re-runs the function once, op by "
        "op, to raise `FloatingPointError` at the first operation that made it. The function "
        "here is `sqrt(log(v))` on `v = [4, x]`."
    ),
    params=(Param("x", "x", 0.5, -2.0, 4.0, 0.25),),
    variants=(
        Variant("plain", N_("jit, no check"), without_check, (log_then_sqrt,)),
        Variant(
            "debug_nans",
            N_("with jax.debug_nans(True)"),
            with_debug_nans,
            (log_then_sqrt,),
            note=N_(
                "A context manager: the flag holds for this thread and is restored on exit, "
                "never left on for the server."
            ),
            raises="FloatingPointError",
            raises_when=lambda p: p["x"] < 1.0,
        ),
    ),
    explain=explain_debug_nans,
)

CHECKIFY = Case(
    key="checkify",
    title="checkify",
    intro=N_(
        "`checkify` adds checks to a function that `jit` can compile: it returns an error "
        "value beside the result, and `err.throw()` raises outside `jit`. The function is "
        "`jnp.log(v)[i]` on `v = [1, 2, x]`: a negative x makes a NaN, an index outside −3…2 "
        "reads out of bounds."
    ),
    params=(
        Param("x", "x", -1.0, -2.0, 2.0, 0.5),
        Param("index", N_("Index i"), 5, -6, 6),
    ),
    variants=(
        Variant("unchecked", N_("jit, no checks"), unchecked, (log_at,)),
        Variant("index", "index_checks", index_checked, (log_at, checked)),
        Variant("nan", "nan_checks", nan_checked, (log_at, checked)),
        Variant(
            "thrown",
            "index | nan checks, err.throw()",
            both_checked_and_thrown,
            (log_at, checked),
            note=N_("Only the first failed check is reported."),
            raises="JaxRuntimeError",
            raises_when=lambda p: p["x"] < 0 or not -3 <= p["index"] < 3,
        ),
    ),
    explain=explain_checkify,
    imports=(
        "import functools\n\nimport jax\nimport jax.numpy as jnp\nfrom jax.experimental import "
        "checkify\n"
    ),
)

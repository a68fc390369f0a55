"""``jacfwd`` against ``jacrev`` as a network's input and output widths change: agreement, timing
and the figure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from jaxplay.article import (
    jac_forward,
    jac_reverse,
)
from jaxplay.core import claims, roofline, timing, words
from jaxplay.core.figures import (
    bar_ends,
    format_count,
    log_axis,
    seconds_axis,
    timing_line,
    traces,
)
from jaxplay.core.i18n import N_, _, ngettext
from jaxplay.core.inputs import normal_arrays

# --- jacfwd vs jacrev ----------------------------------------------------------------------------


MAX_WIDTH = 2048
HIDDEN = 64
#: The other side of each sweep: the output width while the input widens, and vice versa.
NARROW = 4


def network(n_in: int, n_out: int, hidden: int = HIDDEN) -> tuple[tuple[Any, ...], Any]:
    """Parameters and an input for :func:`neural_network` (seed 0, scaled by 1/√fan-in)."""
    w1, b1, w2, b2, x = normal_arrays(
        0, (hidden, n_in), (hidden,), (n_out, hidden), (n_out,), (n_in,)
    )
    params = (w1 / math.sqrt(n_in), b1 * 0.1, w2 / math.sqrt(hidden), b2 * 0.1)
    return tuple(jnp.asarray(p) for p in params), jnp.asarray(x)


def jacobians_agree(n_in: int, n_out: int) -> tuple[tuple[int, ...], float]:
    """The Jacobian's shape and max |jacfwd − jacrev| for one network."""
    params, x = network(n_in, n_out)
    fwd, rev = jax.jit(jac_forward)(params, x), jax.jit(jac_reverse)(params, x)
    return tuple(fwd.shape), float(jnp.max(jnp.abs(fwd - rev)))


@dataclass(frozen=True)
class JacobianSweep:
    """jacfwd and jacrev timings as the input width grows (narrow output) and vice versa.

    ``timings[(sweep, mode)]`` holds one :class:`~jaxplay.core.timing.Timing` per width, where
    sweep is ``"wide input"`` (n_out = ``narrow``) or ``"wide output"`` (n_in = ``narrow``).
    """

    widths: tuple[int, ...]
    narrow: int
    hidden: int
    timings: dict[tuple[str, str], tuple[timing.Timing, ...]]
    max_abs_diff: float
    device: str

    def faster(self, sweep: str, i: int) -> tuple[str, float] | None:
        """Which mode was faster at the i-th width of a sweep beyond both spreads, and by what
        factor of medians; ``None`` where their interquartile ranges overlap."""
        fwd, rev = self.timings[(sweep, "jacfwd")][i], self.timings[(sweep, "jacrev")][i]
        if fwd.clearly_faster_than(rev):
            return "jacfwd", rev.median / fwd.median
        if rev.clearly_faster_than(fwd):
            return "jacrev", fwd.median / rev.median
        return None


SWEEPS = (N_("wide input"), N_("wide output"))
MODES = ("jacfwd", "jacrev")


def check_widths(widths: Sequence[int], limit: int = MAX_WIDTH) -> tuple[int, ...]:
    """Sorted distinct widths, refusing any outside 1..``limit`` (the message names the limit)."""
    sizes = tuple(sorted({int(w) for w in widths}))
    if not sizes:
        raise ValueError("choose at least one width")
    if sizes[0] < 1 or sizes[-1] > limit:
        raise ValueError(f"widths must be 1 to {limit} (got {sizes[-1]})")
    return sizes


@dataclass(frozen=True)
class JacobianPoint:
    """Both modes timed at one width of one sweep, and how far apart their Jacobians are."""

    sweep: str
    width: int
    jacfwd: timing.Timing
    jacrev: timing.Timing
    max_abs_diff: float


def jacobian_point(
    sweep: str, width: int, narrow: int = NARROW, hidden: int = HIDDEN, budget_s: float = 0.2
) -> JacobianPoint:
    """Time ``jit(jacfwd)`` and ``jit(jacrev)`` of the network w.r.t. x at one width.

    ``sweep`` is ``"wide input"`` (n_in = width, n_out = ``narrow``) or ``"wide output"``. One
    point per call, so a page can draw its progress between points (and cache each one).
    """
    if sweep not in SWEEPS:
        raise ValueError(f"unknown sweep {sweep!r}; choose one of {list(SWEEPS)}")
    (w,) = check_widths([width])
    n_in, n_out = (w, narrow) if sweep == SWEEPS[0] else (narrow, w)
    params, x = network(n_in, n_out, hidden)
    fwd, rev = jax.jit(jac_forward), jax.jit(jac_reverse)
    diff = float(jnp.max(jnp.abs(fwd(params, x) - rev(params, x))))
    return JacobianPoint(
        sweep,
        w,
        timing.measure(fwd, params, x, budget_s=budget_s, min_repeats=3),
        timing.measure(rev, params, x, budget_s=budget_s, min_repeats=3),
        diff,
    )


def jacobian_sweep(
    points: Sequence[JacobianPoint], narrow: int = NARROW, hidden: int = HIDDEN
) -> JacobianSweep:
    """The points of both sweeps (every width of one in the other too) as one sweep."""
    widths = tuple(sorted({p.width for p in points}))
    by = {(p.sweep, p.width): p for p in points}
    timings = {(s, m): tuple(getattr(by[(s, w)], m) for w in widths) for s in SWEEPS for m in MODES}
    worst = max((p.max_abs_diff for p in points), default=0.0)
    return JacobianSweep(widths, narrow, hidden, timings, worst, roofline.device_label())


def time_jacobians(
    widths: Sequence[int],
    narrow: int = NARROW,
    hidden: int = HIDDEN,
    budget_s: float = 0.2,
) -> JacobianSweep:
    """Time ``jit(jacfwd)`` and ``jit(jacrev)`` of the network w.r.t. x with ``timing.measure``.

    jacfwd pushes one tangent per *input* dimension, jacrev pulls one cotangent per *output*
    dimension, so a wide input favours jacrev and a wide output favours jacfwd.
    """
    sizes = check_widths(widths)
    points = [jacobian_point(sweep, w, narrow, hidden, budget_s) for sweep in SWEEPS for w in sizes]
    return jacobian_sweep(points, narrow, hidden)


def jacobian_figure(sweep: JacobianSweep) -> go.Figure:
    """Two panels (wide input, wide output), a line per mode: median time against width."""
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(
            _("wide input (n_out = {n})").format(n=sweep.narrow),
            _("wide output (n_in = {n})").format(n=sweep.narrow),
        ),
    )
    colors = {"jacfwd": "#1f77b4", "jacrev": "#d62728"}
    for col, name in enumerate(SWEEPS, start=1):
        for mode in MODES:
            ts = sweep.timings[(name, mode)]
            fig.add_trace(
                timing_line(
                    sweep.widths,
                    ts,
                    mode,
                    legendgroup=mode,
                    showlegend=col == 1,
                    line={"color": colors[mode]},
                ),
                1,
                col,
            )
    for col, title in ((1, _("n_in (input width)")), (2, _("n_out (output width)"))):
        fig.update_xaxes(log_axis(title, sweep.widths, format_count), row=1, col=col)
    fig.update_yaxes(
        seconds_axis(_("time per Jacobian (median, quartiles)"), bar_ends(*traces(fig)))
    )
    fig.update_layout(
        title=_(
            "jit(jacfwd) vs jit(jacrev) of the two-layer network (hidden {hidden}), measured on "
            "{device}"
        ).format(hidden=sweep.hidden, device=sweep.device),
        margin={"t": 80, "b": 40},
    )
    return fig


# --- what the page offers and says ---------------------------------------------------------------

#: The widths a visitor can pick, and those picked at first (narrow to wide: the cross-over).
WIDTH_CHOICES: tuple[int, ...] = (4, 16, 64, 256, 1024, MAX_WIDTH)
DEFAULT_WIDTHS: tuple[int, ...] = (4, 64, 1024)


@claims.states("compose.jacfwd_equals_jacrev")
def agreement_sentence(shape: tuple[int, ...], diff: float) -> str:
    """That both modes computed the same Jacobian, from :func:`jacobians_agree`'s result."""
    return _("jacfwd and jacrev agree: Jacobian {shape}, max |difference| {diff}.").format(
        shape=shape, diff=f"{diff:.2g}"
    )


@claims.states_nothing("says what the Measure button will time")
def jacobian_plan() -> str:
    """What Measure will time, said before it is pressed."""
    return _(
        "Times jit(jacfwd) and jit(jacrev) at each width, with a narrow side of {narrow}."
    ).format(narrow=NARROW)


def jacobian_steps(widths: Sequence[int]) -> list[tuple[str, int]]:
    """The points to time, one :func:`jacobian_point` each: every width of one sweep, then of
    the other (the order the progress bar shows)."""
    return [(s, w) for s in SWEEPS for w in widths]


def jacobian_step_label(step: tuple[str, int]) -> str:
    """The point being timed, for the progress bar."""
    return _("{sweep}, width {width}").format(sweep=_(step[0]), width=step[1])


@claims.states_nothing("a progress box's titles")
def jacobian_progress(n: int) -> tuple[str, str]:
    """The progress box's title while ``n`` widths are timed, and once they are."""
    running = ngettext(
        "Timing jit(jacfwd) and jit(jacrev) at {n} width",
        "Timing jit(jacfwd) and jit(jacrev) at {n} widths",
        n,
    ).format(n=f"{n:,}")
    done = ngettext("Timed both modes at {n} width", "Timed both modes at {n} widths", n).format(
        n=f"{n:,}"
    )
    return running, done


@claims.states_nothing("compares the times measured here, beyond their spreads")
def jacobian_verdicts(sweep: JacobianSweep) -> list[str]:
    """Which mode won each sweep at its widest width, and by how much (Markdown, one a sweep):
    a winner only beyond both spreads, and none where the Jacobian is square (both sweeps are
    then the same problem)."""
    wide = len(sweep.widths) - 1
    width = sweep.widths[wide]
    if width <= sweep.narrow:
        return [
            _(
                "At {width} the Jacobian is {width}×{width} in both sweeps (the narrow side is "
                "{narrow}): neither is wide. Pick a width above {narrow}."
            ).format(width=width, narrow=sweep.narrow)
        ]
    verdicts = []
    for name in SWEEPS:
        won = sweep.faster(name, wide)
        verdicts.append(
            _("{sweep} ({width}): **{winner}** is {factor}× faster.").format(
                sweep=_(name), width=width, winner=won[0], factor=words.factor(won[1])
            )
            if won
            else _(
                "{sweep} ({width}): no clear winner: the two times' quartile ranges overlap."
            ).format(sweep=_(name), width=width)
        )
    return verdicts

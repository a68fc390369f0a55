"""Plotly figures for the jit page, built here so tests can check what they draw.

Each function takes finished measurements (from :mod:`jaxplay.core.timing` and
:mod:`jaxplay.jit._workloads`) and returns a ``go.Figure`` whose title or caption says what was
measured and on which device: a chart of timings without its device is not a fact. Nothing here
measures anything.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from jaxplay.core import roofline, timing
from jaxplay.core.figures import bar_ends, format_count, log_axis, seconds_axis, timing_line, traces
from jaxplay.core.i18n import N_, _, ngettext
from jaxplay.jit._stopwatch import ArticleTiming
from jaxplay.jit._sweep import SweepPoint, about_size, crossings

EAGER = "#d62728"
JIT = "#1f77b4"
AMORTIZED = "#9467bd"
STAGE_COLOURS = ("#8c564b", "#e377c2", "#ff7f0e", "#bcbd22", JIT)
#: The stages of :data:`jaxplay.core.timing.STAGES` as the chart names them (translated where
#: drawn).
STAGE_LABELS: dict[str, str] = {
    "trace": N_("trace"),
    "lower": N_("lower"),
    "compile": N_("compile"),
    "first call": N_("first call"),
    "steady call": N_("steady call"),
}


def stage_figure(profile: timing.JitProfile, device: str) -> go.Figure:
    """One bar per stage of ``jax.jit`` (log scale: compile is often 10 000× a steady call)."""
    stages = profile.stages()
    names = [_(STAGE_LABELS.get(name, name)) for name, _s in stages]
    seconds = [s for _name, s in stages]
    fig = go.Figure(
        go.Bar(
            x=seconds,
            y=names,
            orientation="h",
            marker_color=list(STAGE_COLOURS),
            text=[timing.format_seconds(s) for s in seconds],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{y}: %{text}<extra></extra>",
        )
    )
    fig.update_layout(
        title=_("Stages of jax.jit, wall time on {device} (steady call: median)").format(
            device=device
        ),
        xaxis=seconds_axis(_("wall time (log scale)"), seconds),
        yaxis={"autorange": "reversed"},
        height=320,
        margin={"l": 10, "r": 60, "t": 50, "b": 40},
    )
    return fig


def distribution_figure(comparison: timing.JitComparison, device: str) -> go.Figure:
    """Every per-call sample of eager and jit, with their boxes (median and quartiles)."""
    fig = go.Figure()
    for name, t, colour in (
        (_("eager"), comparison.eager, EAGER),
        ("jit", comparison.jitted, JIT),
    ):
        fig.add_trace(
            go.Box(
                y=list(t.samples),
                name=_("{name} ({repeats}×{number} calls)").format(
                    name=name, repeats=t.repeats, number=t.number
                ),
                boxpoints="all",
                jitter=0.4,
                pointpos=0,
                marker_color=colour,
                hovertemplate="%{y:.3s}s " + _("per call") + "<extra></extra>",
            )
        )
    fig.update_layout(
        title=_("Per-call time of each sample, interleaved eager/jit, blocked, on {device}").format(
            device=device
        ),
        yaxis=seconds_axis(
            _("time per call (log scale)"), [*comparison.eager.samples, *comparison.jitted.samples]
        ),
        showlegend=False,
        height=360,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
    )
    return fig


def sweep_figure(points: Sequence[SweepPoint], calls: int, device: str) -> go.Figure:
    """Per-call time against size, log-log: eager, jit steady state, and jit with its compile.

    The third curve spreads one compile over ``calls`` calls; where it meets the eager curve is
    the size from which jit pays for itself in that many calls (marked when inside the sweep).
    """
    ordered = sorted(points, key=lambda p: p.elements)
    xs = [p.elements for p in ordered]
    fig = go.Figure()
    for name, colour, pick in (
        (_("eager"), EAGER, lambda p: p.comparison.eager),
        (_("jit, steady state"), JIT, lambda p: p.comparison.jitted),
    ):
        fig.add_trace(timing_line(xs, [pick(p) for p in ordered], name, line={"color": colour}))
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=[p.amortized_jit_s(calls) for p in ordered],
            mode="lines+markers",
            name=ngettext(
                "jit incl. compile, per call over {calls} call",
                "jit incl. compile, per call over {calls} calls",
                calls,
            ).format(calls=f"{calls:,}"),
            line={"color": AMORTIZED, "dash": "dash"},
        )
    )
    for cross, _jit_ahead in crossings(ordered, calls):
        fig.add_vline(
            x=cross,
            line={"color": "gray", "dash": "dot"},
            annotation_text=_("medians cross ≈ {elements} elements").format(
                elements=about_size(cross)
            ),
            annotation_position="top left",
        )
    fig.update_layout(
        title=_("Eager vs jit by size (medians, bars: quartiles), on {device}").format(
            device=device
        ),
        xaxis=log_axis(_("elements of x (log scale)"), xs, format_count),
        yaxis=seconds_axis(_("time per call (log scale)"), bar_ends(*traces(fig))),
        legend={"orientation": "h", "y": -0.25},
        height=440,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
    )
    return fig


def article_figure(article: ArticleTiming, comparison: timing.JitComparison) -> go.Figure:
    """The article's speedup (one stopwatch reading) beside the honest one (with its spread)."""
    honest = comparison.speedup
    fig = go.Figure(
        go.Bar(
            x=[_("article's method"), _("blocked, warmed, interleaved")],
            y=[article.speedup, honest],
            marker_color=["#7f7f7f", JIT],
            text=[f"{article.speedup:.2f}×", f"{honest:.2f}×"],
            textposition="outside",
            cliponaxis=False,
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [0.0, comparison.speedup_high - honest],
                "arrayminus": [0.0, honest - comparison.speedup_low],
            },
        )
    )
    fig.add_hline(y=1.0, line={"color": "gray", "dash": "dot"})
    fig.update_layout(
        title=_("Speedup of jit over eager, two ways (bar: from the quartiles of both timings)"),
        yaxis={"title": _("eager time / jit time")},
        height=340,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
    )
    return fig


def roofline_figure(
    reference: roofline.MachineReference, cost: dict[str, float] | None, seconds: float, label: str
) -> go.Figure:
    """This device's roofs (measured) and where the function lands on them.

    x is arithmetic intensity (XLA's flops per byte accessed), y the achieved GFLOP/s. The slanted
    roof is the measured copy bandwidth, the flat one the measured matmul rate: a point far below
    both is limited by neither (dispatch overhead, or transcendentals XLA does not count as flops).
    """
    bw, peak = reference.copy_bandwidth_gbps, reference.matmul_gflops
    ridge = reference.ridge_flops_per_byte
    lo, hi = ridge / 1e4, ridge * 1e3
    intensities = np.geomspace(lo, hi, 200)
    fig = go.Figure(
        go.Scatter(
            x=intensities,
            y=np.minimum(bw * intensities, peak),
            mode="lines",
            name=_("roof: {bandwidth} GB/s, {peak} GFLOP/s").format(
                bandwidth=f"{bw:.1f}", peak=f"{peak:.0f}"
            ),
            line={"color": "gray"},
        )
    )
    gbps, gflops = roofline.roofline_point(cost, seconds)
    if cost and cost.get("bytes accessed") and cost.get("flops") and not math.isnan(gflops):
        intensity = cost["flops"] / cost["bytes accessed"]
        fig.add_trace(
            go.Scatter(
                x=[intensity],
                y=[gflops],
                mode="markers+text",
                name=label,
                text=[label],
                textposition="top center",
                marker={"size": 14, "color": JIT},
                hovertemplate=(
                    f"{intensity:.3g} flop/byte<br>{gflops:.3g} GFLOP/s<br>{gbps:.3g} GB/s"
                    "<extra></extra>"
                ),
            )
        )
    fig.update_layout(
        title=_("Roofline of {device} (roofs measured here)").format(device=reference.device),
        xaxis=log_axis(_("arithmetic intensity (flops per byte, XLA's estimate)"), intensities),
        yaxis=log_axis(_("GFLOP/s (log scale)"), bar_ends(*traces(fig))),
        legend={"orientation": "h", "y": -0.25},
        height=400,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
    )
    return fig

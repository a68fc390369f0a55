"""Plotly figures for the PRNG page, built here so tests can check what they draw.

Each function takes the plain results of :mod:`jaxplay.prng` and returns a ``go.Figure``; none
computes anything random itself, so a figure always shows exactly the numbers the page reports.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from jaxplay.core import timing
from jaxplay.core.figures import log_axis, timing_bars, tree_edges, tree_layout
from jaxplay.core.i18n import _, ngettext
from jaxplay.prng._pitfalls import TrainingRun
from jaxplay.prng._seeds import key_hex
from jaxplay.prng._streams import ParallelStats
from jaxplay.prng._trees import KeyTree

_SELECTED = "#d62728"
_NODE = "#1f77b4"


def tree_positions(tree: KeyTree) -> dict[tuple[int, ...], tuple[float, float]]:
    """(x, y) of every key: depth to the right, the last generation a row apart, parents between
    their children (:func:`jaxplay.core.figures.tree_layout`)."""
    return tree_layout([node.path for node in tree.nodes])


def key_tree_figure(tree: KeyTree, selected: str | None = None) -> go.Figure:
    """The key tree as a graph: each node labelled with its short key data, hover for the path.

    Arguments:
        tree: from :func:`jaxplay.prng.key_tree`.
        selected: the :attr:`~jaxplay.prng.KeyNode.name` of a node to highlight.
    """
    pos = tree_positions(tree)
    edge_x, edge_y = tree_edges(pos)
    nodes = list(tree.nodes)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=edge_x,
            y=edge_y,
            mode="lines",
            line={"color": "#bbbbbb", "width": 1},
            hoverinfo="skip",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[pos[n.path][0] for n in nodes],
            y=[pos[n.path][1] for n in nodes],
            mode="markers+text",
            text=[key_hex(n.data, short=True) for n in nodes],
            textposition="top center",
            textfont={"family": "monospace", "size": 10},
            customdata=[n.name for n in nodes],
            hovertext=[f"{n.label}<br>{key_hex(n.data)}" for n in nodes],
            hoverinfo="text",
            marker={
                "size": [16 if n.name == selected else 9 for n in nodes],
                "color": [_SELECTED if n.name == selected else _NODE for n in nodes],
            },
        )
    )
    leaves = tree.branching**tree.depth
    fig.update_layout(
        showlegend=False,
        height=max(260, 34 * leaves + 80),
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        title=ngettext(
            "{n} key from seed {seed} by {method}",
            "{n} keys from seed {seed} by {method}",
            len(nodes),
        ).format(n=f"{len(nodes):,}", seed=tree.seed, method=tree.method),
        xaxis={
            "title": _("depth"),
            "tickmode": "array",
            "tickvals": list(range(tree.depth + 1)),
            "range": [-0.4, tree.depth + 0.6],
        },
        yaxis={"visible": False},
    )
    return fig


def timing_figure(rows: Sequence[tuple[str, timing.Timing]], title: str, device: str) -> go.Figure:
    """Median per-call time of each labelled measurement; error bars span the IQR."""
    fig = go.Figure(timing_bars([label for label, _t in rows], [t for _l, t in rows]))
    fig.update_layout(
        title=_("{title}: median per call on {device}, bars = interquartile range").format(
            title=title, device=device
        ),
        yaxis_title=_("ms per call"),
        height=360,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


def samples_heatmap(stats: ParallelStats) -> go.Figure:
    """The sample matrix's corner, one row per key (the first
    :data:`jaxplay.prng._streams.HEATMAP_ROWS` streams, the first ``HEATMAP_COLS`` samples)."""
    shown = stats.corner
    colorbar = {"title": _("value")}
    fig = go.Figure(go.Heatmap(z=shown, colorscale="RdBu", zmid=0.0, colorbar=colorbar))
    fig.update_layout(
        title=_("normal samples: {rows} of {keys} keys × {cols} of {per_key} samples").format(
            rows=shown.shape[0],
            keys=stats.shape[0],
            cols=shown.shape[1],
            per_key=stats.shape[1],
        ),
        xaxis_title=_("sample index within a stream"),
        yaxis_title=_("key (stream)"),
        height=380,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


def normal_pdf(x: np.ndarray) -> np.ndarray:
    """The standard normal density, the distribution ``jax.random.normal`` draws from."""
    return np.exp(-0.5 * x**2) / math.sqrt(2 * math.pi)


def histograms_figure(stats: ParallelStats) -> go.Figure:
    """Histograms (as densities) of all samples and of the first sample of every stream, each
    with the standard normal density overlaid."""
    n_keys, n_per_key = stats.shape
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(
            _("all {n} samples").format(n=f"{n_keys * n_per_key:,}"),
            _("first sample of each of {n} streams").format(n=f"{n_keys:,}"),
        ),
    )
    grid = np.linspace(-4, 4, 200)
    for col, density in ((1, stats.density), (2, stats.first_density)):
        fig.add_trace(
            go.Bar(
                x=stats.centres,
                y=density,
                marker_color=_NODE,
                opacity=0.7,
                name=_("samples"),
                showlegend=col == 1,
            ),
            row=1,
            col=col,
        )
        fig.add_trace(
            go.Scatter(
                x=grid,
                y=normal_pdf(grid),
                mode="lines",
                line={"color": _SELECTED},
                name=_("N(0, 1) density"),
                showlegend=col == 1,
            ),
            row=1,
            col=col,
        )
    fig.update_layout(height=340, margin={"l": 10, "r": 10, "t": 50, "b": 10}, bargap=0.02)
    return fig


def correlation_figure(corr: np.ndarray, band: float, title: str) -> go.Figure:
    """Correlation matrix of the first streams; cells outside ±``band`` are marked with a star.

    The matrix and its band, not the whole :class:`ParallelStats`: a page's chart is kept by a
    digest of its builder's arguments (:func:`jaxplay.core.figures.built`)."""
    marks = [
        [
            f"{corr[i, j]:.2f}" + ("*" if i != j and abs(corr[i, j]) > band else "")
            for j in range(corr.shape[1])
        ]
        for i in range(corr.shape[0])
    ]
    fig = go.Figure(
        go.Heatmap(
            z=corr,
            zmin=-1,
            zmax=1,
            colorscale="RdBu",
            text=marks,
            texttemplate="%{text}",
            colorbar={"title": "r"},
        )
    )
    fig.update_layout(
        title=title,
        xaxis_title=_("stream"),
        yaxis_title=_("stream"),
        yaxis_autorange="reversed",
        height=360,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


def training_figure(runs: Sequence[TrainingRun]) -> go.Figure:
    """Per run: the dropout loss each step optimised, and example 0's dropout mask per step."""
    fig = make_subplots(
        rows=1,
        cols=1 + len(runs),
        column_widths=[0.5] + [0.5 / len(runs)] * len(runs),
        subplot_titles=(
            _("dropout loss each step descended"),
            *(
                _("{run}:<br>example 0's mask ({n} distinct)").format(
                    run=_run_name(r), n=r.unique_example_masks
                )
                for r in runs
            ),
        ),
    )
    for i, run in enumerate(runs):
        fig.add_trace(
            go.Scatter(
                x=np.arange(1, len(run.losses) + 1),
                y=run.losses,
                mode="lines",
                name=_("{run} ({n} distinct subkeys)").format(
                    run=_run_name(run), n=run.unique_subkeys
                ),
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Heatmap(
                z=run.masks[:, 0, :].T.astype(int),
                x=np.arange(1, len(run.losses) + 1),
                colorscale=[[0, "#ffffff"], [1, _NODE]],
                showscale=False,
                hovertemplate=_("step %{x}, input %{y}: %{z} (1 = kept)") + "<extra></extra>",
            ),
            row=1,
            col=2 + i,
        )
        fig.update_xaxes(title_text=_("step"), row=1, col=2 + i)
        fig.update_yaxes(title_text=_("input"), row=1, col=2 + i)
    fig.update_xaxes(title_text=_("step"), row=1, col=1)
    losses = [float(v) for run in runs for v in run.losses]
    fig.update_yaxes(log_axis(_("mean squared error"), losses), row=1, col=1)
    fig.update_layout(
        height=380,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


def _run_name(run: TrainingRun) -> str:
    """A training run's name in the visitor's language."""
    names = {"key threaded": _("key threaded"), "key dropped": _("key dropped")}
    return names.get(run.name, run.name)

"""The state page's chart: the loss of each loop, step by step, on one log axis."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from jaxplay.core.figures import format_number, log_axis
from jaxplay.core.i18n import _


def loss_figure(curves: Sequence[tuple[str, Sequence[float]]]) -> go.Figure:
    """One line per ``(name, losses)``; the y axis is logarithmic, labelled at 1, 2 and 5."""
    fig = go.Figure()
    values: list[float] = []
    for name, losses in curves:
        steps = list(range(1, len(losses) + 1))
        fig.add_trace(go.Scatter(x=steps, y=list(losses), mode="lines", name=name))
        values += [v for v in losses if v > 0]
    fig.update_layout(
        title=_("Loss on all the data, before each step"),
        xaxis_title=_("step"),
        height=380,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        legend={"orientation": "h", "y": -0.2},
    )
    fig.update_yaxes(**log_axis(_("loss (mean squared error)"), values, format_number))
    return fig

"""The pytree page's one chart: a tree's nodes and leaves, drawn as JAX sees them.

Drawn as every tree here is (:func:`jaxplay.core.figures.tree_layout`): depth runs to the right
and each leaf (or node with no leaves) gets a row of its own, top to bottom in
``jax.tree.flatten``'s order, so the numbers on the leaves read downwards 0, 1, 2, …; a container
sits level with the middle of its children. Containers, nodes that hold no leaf (``None``
and empty containers) and leaves have a colour each.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from jaxplay.core.figures import plain, tree_edges, tree_layout
from jaxplay.core.i18n import N_, _
from jaxplay.pytrees._anatomy import Node

_COLOURS = {"container": "#5c6bc0", "empty": "#bdbdbd", "leaf": "#43a047"}
_NAMES = {
    "container": N_("container (a node with children)"),
    "empty": N_("no leaves below (None, empty containers)"),
    "leaf": N_("leaf (what transforms see)"),
}
#: Longest node label drawn; the rest is in the hover text.
MAX_LABEL = 44


def _label(node: Node) -> str:
    text = f"{node.key} {node.label}".strip() if node.key else node.label
    if node.leaf_index is not None:
        text = f"#{node.leaf_index}  {text}"
    return plain(text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…")


def tree_figure(nodes: Sequence[Node], title: str) -> go.Figure:
    """The tree of ``nodes`` (from :func:`~jaxplay.pytrees.describe`): one marker per node,
    labelled with its key and type or value; leaves carry their flatten position (#0, #1, …)."""
    pos = tree_layout([node.path for node in nodes])
    edge_x, edge_y = tree_edges(pos, elbow=0.5)
    fig = go.Figure(
        go.Scatter(
            x=edge_x,
            y=edge_y,
            mode="lines",
            line={"color": "#bbbbbb", "width": 1},
            hoverinfo="skip",
            showlegend=False,
        )
    )
    for kind in ("container", "empty", "leaf"):
        members = [n for n in nodes if n.kind == kind]
        if not members:
            continue
        fig.add_trace(
            go.Scatter(
                x=[pos[n.path][0] for n in members],
                y=[pos[n.path][1] for n in members],
                mode="markers+text",
                name=_(_NAMES[kind]),
                text=[_label(n) for n in members],
                textposition="middle right" if kind == "leaf" else "top center",
                textfont={"family": "monospace", "size": 12},
                hovertext=[plain(f"{n.key or 'root'}: {n.label}") for n in members],
                hoverinfo="text",
                marker={"size": 12, "color": _COLOURS[kind], "symbol": _symbol(kind)},
            )
        )
    rows = sum(1 for n in nodes if not any(m.path[:-1] == n.path for m in nodes if m.path))
    depth = max((n.depth for n in nodes), default=0)
    widest = max((len(_label(n)) for n in nodes if n.kind == "leaf"), default=0)
    fig.update_layout(
        title=title,
        height=max(220, 30 * rows + 110),
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        legend={"orientation": "h", "y": -0.02, "yanchor": "top"},
        xaxis={"visible": False, "range": [-0.4, depth + 0.3 + 0.09 * widest]},
        yaxis={"visible": False, "range": [-rows + 0.4, 0.9]},
    )
    return fig


def _symbol(kind: str) -> str:
    return {"container": "square", "empty": "square-open", "leaf": "circle"}[kind]

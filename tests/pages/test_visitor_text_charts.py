"""Visitor text in a chart is text: Plotly's own HTML renders nowhere (issue 20, item 7).

Plotly draws a subset of HTML in every string of a figure: a grad formula with the comment
``# <a href="https://evil.example/login">Session expired</a>`` put a clickable link in the chart's
title, and a Code Lab array's name did the same in its heatmap's. ``test_visitor_text``'s sweep
types such a formula into every text box of every page and searches every Plotly figure the page
then sends (``tests/chart_check.py``); here, the check itself, the one escaping rule, and each
figure builder that takes visitor text the page's own boxes cannot type (an array's name, a
pytree's keys, a mesh's axis names).
"""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from jaxplay import code_lab, devices, grad, pytrees
from jaxplay.core import figures
from jaxplay.hosting import catalog
from jaxplay.sandbox import ArraySummary
from tests.pages.test_visitor_text import rendered_chart_tags
from tests.support.apptest import open_page
from tests.support.chart_check import HOST, LINK, PAYLOAD, tags_in


def test_the_sweep_sees_a_live_tag_in_a_chart() -> None:
    """The check itself: a payload put into a figure as is, is found; escaped, it is not."""
    at = AppTest.from_string(
        "import plotly.graph_objects as go\n"
        "import streamlit as st\n"
        "from jaxplay.core.figures import plain\n"
        f"st.plotly_chart(go.Figure(layout={{'title': {LINK!r}}}), key='raw')\n"
        f"st.plotly_chart(go.Figure(layout={{'title': plain({LINK!r})}}), key='safe')\n"
    )
    at.run()
    found = rendered_chart_tags(at)
    assert len(found) == 1 and "raw" in found[0], found


def test_a_formula_typed_on_the_grad_page_is_text_in_its_chart() -> None:
    """The reproduced attack, end to end: the formula draws its chart, its comment as text."""
    at = open_page(catalog.find("grad"), grad_preset="type a formula", grad_formula=PAYLOAD)
    assert not at.exception
    specs = [json.loads(n.proto.spec) for n in at.get("plotly_chart")]
    assert any("Session expired" in json.dumps(s) for s in specs)  # the chart was drawn
    assert not rendered_chart_tags(at)


def test_plain_shows_tags_as_text() -> None:
    assert figures.plain(LINK) == (
        f'&lt;a href="http://{HOST}/login"&gt;Session expired&lt;/a&gt; &lt;b&gt;bold&lt;/b&gt;'
    )
    assert figures.plain("a & b") == "a &amp; b"
    assert not tags_in({"t": figures.plain(LINK)})


# --- the figure builders that take visitor text -------------------------------------------------


def test_a_formula_comment_is_text_in_the_derivative_chart() -> None:
    curves = grad.derivative_curves(f"jnp.sin(x)  # {LINK}", 1, -1.0, 1.0, 16)
    figure = grad.derivative_figure(curves).to_plotly_json()
    assert not tags_in(figure)
    assert "Session expired" in json.dumps(figure)


def test_an_array_name_is_text_in_the_code_lab_heatmap() -> None:
    summary = ArraySummary(
        name=LINK, shape=(2, 2), dtype=LINK, min=1.0, max=4.0, mean=2.5, preview=[[1, 2], [3, 4]]
    )
    figure = code_lab.preview_figure(summary)
    assert figure is not None
    assert not tags_in(figure.to_plotly_json())


def test_pytree_keys_and_leaves_are_text_in_the_tree_chart() -> None:
    """The page's literal box accepts only names as keys; the builder does not rely on it."""
    found = pytrees.describe({LINK: 1.0, "b": [LINK, None]}, lambda leaf: leaf)
    figure = pytrees.tree_figure(found.nodes, "tree").to_plotly_json()
    assert not tags_in(figure)
    assert "Session expired" in json.dumps(figure)


def test_mesh_axis_names_are_text_in_the_layout_chart() -> None:
    """The page accepts only identifiers as names; the builder does not rely on it."""
    name = f"<a href='http://{HOST}/'>x</a>"
    layout = devices.shard_layout((2, 4), (name, "y"), (8, 8), (name, None))
    assert not tags_in(devices.layout_figure(layout).to_plotly_json())

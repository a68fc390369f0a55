"""A chart is built once for the room (``pages/_ui.chart``, ``jaxplay.core.figures.built``): the
same builder, arguments and language draw the figure already built; anything else builds it
again."""

from __future__ import annotations

import json

import plotly.graph_objects as go
from streamlit.testing.v1 import AppTest

from jaxplay import pytrees
from jaxplay.core import figures, i18n
from jaxplay.hosting import catalog
from tests.support.apptest import open_page

#: What :func:`counted_chart` built, in order: (n, title, language).
BUILT: list[tuple[int, str, str]] = []


def counted_chart(n: int, title: str) -> go.Figure:
    """A builder of a module's own (a page's functions live in ``__main__``: never kept)."""
    BUILT.append((n, title, i18n.current()))
    return go.Figure(go.Scatter(y=list(range(n))), layout={"title": i18n._(title)})


SCRIPT = """
import plotly.graph_objects as go
import streamlit as st

from jaxplay.core import i18n
from pages import _ui
from tests.pages.test_charts import counted_chart


def page_chart(n):
    return go.Figure(go.Bar(y=[n, n]))


i18n.use(st.session_state.get("language", "en"))
n = st.number_input("n", 1, 10, 3, key="n")
_ui.chart(counted_chart, n, "Memory & fusion", key="counted")
_ui.chart(lambda: go.Figure(go.Bar(y=[n])), key="lambda")
_ui.chart(page_chart, n, key="page")
_ui.chart(counted_chart, n, "Memory & fusion", key="again")
"""


def script() -> AppTest:
    figures.forget_built()
    BUILT.clear()
    return AppTest.from_string(SCRIPT, default_timeout=60)


def specs(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def test_the_same_arguments_draw_the_figure_built_before() -> None:
    at = script()
    at.run()
    assert not at.exception
    # Built once for both charts of the run, and not again when the page reruns.
    assert BUILT == [(3, "Memory & fusion", "en")]
    first = specs(at)
    at.run()
    assert BUILT == [(3, "Memory & fusion", "en")]
    assert specs(at) == first
    assert first[0]["data"][0]["y"] == [0, 1, 2]


def test_new_arguments_or_another_language_build_it_again() -> None:
    at = script()
    at.run()
    at.number_input(key="n").set_value(5).run()
    assert BUILT[-1] == (5, "Memory & fusion", "en")
    assert specs(at)[0]["data"][0]["y"] == [0, 1, 2, 3, 4]
    at.number_input(key="n").set_value(3).run()  # chosen before: built already
    assert len(BUILT) == 2
    at.session_state["language"] = "zh"
    at.run()
    assert BUILT[-1] == (3, "Memory & fusion", "zh")
    assert specs(at)[0]["layout"]["title"]["text"] == "内存与融合"


def test_a_lambda_or_a_page_s_function_is_built_every_run() -> None:
    """A lambda's name is every lambda's, and every page's functions live in ``__main__``:
    neither could tell two charts apart, so both are built each time."""
    at = script()
    at.run()

    def bars(at: AppTest) -> list[list[int]]:
        return [s["data"][0]["y"] for s in specs(at) if s["data"][0]["type"] == "bar"]

    assert bars(at) == [[3], [3, 3]]
    at.number_input(key="n").set_value(4).run()
    assert bars(at) == [[4], [4, 4]]


def test_a_page_chart_is_the_builders_figure() -> None:
    """The pytrees page's tree, drawn from the shared figure, is what its builder draws."""
    import plotly.io

    at = open_page(catalog.find("pytrees"))
    assert not at.exception
    example = pytrees.EXAMPLES[0]
    found = pytrees.describe(example.build(), pytrees.MAP_FUNCTIONS["double"])
    built = figures.distinguish(
        pytrees.tree_figure(found.nodes, "The tree as jax.tree.structure sees it")
    )
    expected = json.loads(plotly.io.to_json(built.to_dict(), validate=False))
    assert specs(at)[0] == expected
    at.run()
    assert specs(at)[0] == expected

"""The protocol client sets every kind of widget the pages use as a browser does: each value,
sent over Streamlit's websocket protocol, is the value the server's widget returns."""

from __future__ import annotations

from pages._visitor import Visitor, Widget, _value

import pytest
from streamlit.proto.Slider_pb2 import Slider
from streamlit.proto.WidgetStates_pb2 import WidgetState

from tests.support.browser import streamlit_server

#: Widget key -> the value sent, and what the widget returns for it on the server.
CHANGES = {
    "slider": (7, 7),
    "float_slider": (0.25, 0.25),
    "range": ((30, 60), (30, 60)),
    "select_slider": ("L", "L"),
    "multiselect": (["b", "c"], ["b", "c"]),
    "pills": ("two", "two"),
    "segmented": ("off", "off"),
    "radio": ("right", "right"),
    "text_area": ("typed", "typed"),
    "number": (4, 4),
    "checkbox": (True, True),
    "selectbox": ("q", "q"),
}


@pytest.fixture(scope="module")
def url():
    with streamlit_server("tests/fixtures/widgets_app.py") as url:
        yield url


def test_every_widget_kind_gets_the_value_sent(url: str) -> None:
    visitor = Visitor(url)
    first = visitor.open("")
    assert not first.errors, first.errors
    assert set(CHANGES) <= set(visitor.widgets), set(CHANGES) - set(visitor.widgets)
    for key, (sent, shown) in CHANGES.items():
        run = visitor.change(key, sent)
        assert not run.errors, (key, run.errors)
        assert f"{key} = {shown!r}" in run.texts, (key, run.texts)


def test_a_date_slider_is_refused_rather_than_sent_wrong() -> None:
    """A kind the client cannot encode is a ValueError before anything is sent."""

    element = Slider(type=Slider.SLIDER, data_type=Slider.DATE)
    with pytest.raises(ValueError, match="date or time"):
        _value(WidgetState(), Widget("id", "slider", element), "2026-12-06")

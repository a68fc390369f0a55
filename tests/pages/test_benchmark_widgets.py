"""The capacity benchmark's widgets are on their pages: each page's visitor changes one widget
(``benchmarks/capacity.py``, ``WIDGETS``) that must be drawn when the page opens, as the kind
the benchmark moves. A page that moved or renamed it stopped the benchmark partway (the devices
page's refresh button, shown only where devices report memory)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1.element_tree import (
    Block,
    Button,
    ButtonGroup,
    NumberInput,
    Selectbox,
    TextInput,
)

from benchmarks.capacity import WIDGETS
from jaxplay.hosting import catalog
from tests.pages.test_share_links import _tab_key, _walk
from tests.support.apptest import assert_clean, open_page

#: How the benchmark moves a widget -> the element it must be.
KINDS = {
    "step": NumberInput,
    "select": Selectbox,
    "pills": ButtonGroup,
    "tab": Block,
    "button": Button,
    "text": TextInput,
}


def test_every_way_to_move_a_widget_has_its_element() -> None:
    assert {how for _, how in WIDGETS.values()} <= set(KINDS)


@pytest.mark.parametrize("address", sorted(WIDGETS))
def test_the_benchmarked_widget_is_drawn_when_its_page_opens(address: str) -> None:
    key, how = WIDGETS[address]
    at = open_page(catalog.find(address))
    assert_clean(at)
    found = [
        node
        for node in _walk(at._tree)
        if (_tab_key(node) if how == "tab" else getattr(node, "key", None)) == key
    ]
    assert found, f"{address}: no element {key!r} when the page opens"
    assert isinstance(found[0], KINDS[how]), (address, key, type(found[0]).__name__)

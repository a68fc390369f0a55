"""Shared links: every page's bound widgets round-trip through the URL, and bad links are noted.

The tests discover a page's bound widgets from what it renders (a widget bound to the URL carries
its ``query_param_key``), so a new page or a new widget is covered without listing it here. For
each page: open it with a link that sets every bound widget (and tab) it shows to another valid
value, in a fresh session, and check each widget shows that value; then open it with a tampered
link and check the defaults are shown, with the "ignored" note.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import (
    Block,
    ButtonGroup,
    Checkbox,
    Multiselect,
    NumberInput,
    Radio,
    Selectbox,
    SelectSlider,
    Slider,
    Tab,
    TextArea,
    TextInput,
    Toggle,
)

from jaxplay.hosting import catalog
from tests.support.apptest import APP_TIMEOUT_S, assert_clean, open_page
from tests.support.markdown_check import plain_text

IGNORED_NOTE = "Parts of this link were ignored"
UNKNOWN = "no_such_setting"


@dataclass(frozen=True)
class Change:
    """A non-default value for one bound widget: what goes into the URL, and what to expect."""

    key: str
    url: str | list[str]
    expected: Any


def _walk(node: Any) -> Iterator[Any]:
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def _tab_key(node: Any) -> str | None:
    """The query parameter of a bound ``st.tabs`` container, else ``None``."""
    if type(node) is not Block or node.proto.WhichOneof("type") != "tab_container":
        return None
    tabs = node.proto.tab_container
    return tabs.query_param_key if tabs.HasField("query_param_key") else None


def bound(at: AppTest) -> dict[str, Any]:
    """The rendered widgets and tab containers bound to the URL, by query parameter."""
    found: dict[str, Any] = {}
    for node in _walk(at._tree):
        name = _tab_key(node)
        if name is None and not isinstance(node, (Block, Tab)):
            proto = getattr(node, "proto", None)
            try:
                if proto is not None and proto.HasField("query_param_key"):
                    name = proto.query_param_key
            except ValueError:  # a proto without the field: not a bindable element
                name = None
        if name:
            found[name] = node
    return found


def _other_number(value: float, high: float | None, step: float) -> float:
    up = value + step
    return up if high is None or up <= high else value - step


def _other_text(value: str) -> str:
    """A changed text that stays in the widget's language: a digit bumped, else a space added."""
    digits = list(re.finditer(r"\d", value))
    if not digits:
        return value + " "
    last = digits[-1]
    bumped = "1" if last.group() == "0" else str(int(last.group()) - 1)
    return value[: last.start()] + bumped + value[last.end() :]


def change(name: str, node: Any) -> Change | None:
    """Another valid value for a bound widget, or ``None`` if it has no other value."""
    if isinstance(node, (Selectbox, Radio)):
        if len(node.options) < 2:
            return None
        other = (node.index + 1) % len(node.options)
        return Change(name, node.options[other], other)
    if isinstance(node, (Multiselect, ButtonGroup)) and not node.options:
        return None
    if isinstance(node, Multiselect):
        indices = list(node.indices)
        chosen = indices[:-1] if indices else [0]
        return Change(name, [node.options[i] for i in chosen], chosen)
    if isinstance(node, ButtonGroup) and _multi(node):
        indices = list(node.indices)
        labels = [node.options[i] for i in (indices[:-1] if indices else [0])]
        return Change(name, labels, labels)
    if isinstance(node, ButtonGroup):
        if len(node.options) < 2 or len(node.indices) != 1:
            return None
        other = (node.indices[0] + 1) % len(node.options)
        return Change(name, node.options[other], node.options[other])
    if isinstance(node, SelectSlider):
        options = node.options
        now = options.index(node.format_func(node.value))
        other = now - 1 if now > 0 else now + 1
        return Change(name, options[other], options[other])
    if isinstance(node, (Slider, NumberInput)):
        if isinstance(node.value, (tuple, list)):
            return None
        value = _other_number(node.value, node.max, node.step)
        if isinstance(node.value, int) and not isinstance(node.value, bool):
            value = int(value)
        return Change(name, str(value), value)
    if isinstance(node, (Toggle, Checkbox)):
        return Change(name, str(not node.value).lower(), not node.value)
    if isinstance(node, (TextInput, TextArea)):
        text = _other_text(node.value or "")
        return Change(name, text, text)
    return None


def _multi(node: ButtonGroup) -> bool:
    return node.proto.click_mode == node.proto.MULTI_SELECT


def shown(node: Any, at: AppTest, name: str) -> Any:
    """What a bound widget shows, in the form :func:`change` expects."""
    if _tab_key(node) is not None:
        return at.session_state[name]
    if isinstance(node, (Selectbox, Radio)):
        return node.index
    if isinstance(node, Multiselect):
        return list(node.indices)
    if isinstance(node, ButtonGroup) and _multi(node):
        return list(node.formatted_values)
    if isinstance(node, ButtonGroup):
        return node.formatted_values[0] if node.formatted_values else None
    if isinstance(node, SelectSlider):
        return node.format_func(node.value)
    return node.value


def open_link(spec: catalog.PageSpec, params: dict[str, str | list[str]]) -> AppTest:
    """A fresh session that opens ``spec``'s address with ``params`` in its query string."""
    at = AppTest.from_file(str(catalog.ROOT / "app.py"), default_timeout=APP_TIMEOUT_S)
    at.run()
    at.switch_page(spec.path)
    at.query_params.update(params)
    at.run()
    return at


def _noted(at: AppTest) -> str:
    return " ".join(plain_text(w.value) for w in at.warning if IGNORED_NOTE in w.value)


def _is_noted(key: str, notes: str) -> bool:
    return re.search(rf"(^|[:;] ){re.escape(key)}( is not|=)", notes) is not None


def check_round_trip(
    spec: catalog.PageSpec, base: list[Change], changes: list[Change]
) -> tuple[dict[str, Any], list[Change]]:
    """Open a link carrying ``base`` and ``changes``; every changed widget shows its value.

    ``base`` opens a view (a tab, a panel); ``changes`` are the widgets tried in it. One changed
    widget can hide another (another preset has other inputs) or change its options; the page
    then notes that part of the link as ignored, which is right. Those changes are checked again
    in a second link, with ``base`` but without the others.

    Returns the bound widgets the first link showed and the changes that took effect in it.
    """
    at = open_link(spec, {c.key: c.url for c in [*base, *changes]})
    assert_clean(at)
    widgets, notes = bound(at), _noted(at)
    later = [c for c in changes if c.key not in widgets or _is_noted(c.key, notes)]
    for c in [*base, *changes]:
        if c not in later:
            assert c.key in widgets, f"{c.key} not shown: {notes}"
            assert shown(widgets[c.key], at, c.key) == c.expected, (c, at.query_params)
    if later:
        assert later != changes, f"no part of the link took effect: {notes}"
        assert notes.count(" is not ") == len(later), notes
        check_round_trip(spec, base, later)
    else:
        assert not notes
    return widgets, [*base, *(c for c in changes if c not in later)]


def _tab_changes(name: str, node: Any) -> list[Change]:
    labels = [tab.label for tab in node.children.values()]
    return [Change(name, label, label) for label in labels[1:]]


#: At most this many views (links) are explored per page, to keep the test quick.
MAX_VIEWS = 16

#: Widgets the round trip leaves at their default because another value costs seconds (an
#: unrolled Python loop to compile, a longer training run); the tampered-link test still checks
#: that they are bound and fall back.
SLOW = frozenset({"memory_loop", "prng_steps"})


@pytest.mark.parametrize("spec", catalog.PAGES, ids=lambda s: s.url_path)
def test_link_reproduces_the_view(spec: catalog.PageSpec) -> None:
    """Every bound widget round-trips, in every tab and in every view a widget opens.

    Starting from the default view, each view's new bound widgets are all changed in one link;
    each other tab of a bound ``st.tabs``, and each view that link revealed (another panel,
    another preset's inputs), is explored in turn the same way.
    """
    views: list[list[Change]] = [[]]
    known: set[str] = set()
    explored = 0
    while views and explored < MAX_VIEWS:
        base = views.pop(0)
        explored += 1
        if base:
            widgets, base = check_round_trip(spec, base[:-1], base[-1:])
        else:
            widgets = bound(open_page(spec))
        fresh = {k: n for k, n in widgets.items() if k not in known}
        known |= fresh.keys()
        for name, node in fresh.items():
            if _tab_key(node) is not None:
                views.extend([*base, tab] for tab in _tab_changes(name, node))
        made = [change(k, n) for k, n in fresh.items() if _tab_key(n) is None and k not in SLOW]
        changes = [c for c in made if c is not None]
        if changes:
            shown_now, effective = check_round_trip(spec, base, changes)
            if set(shown_now) - known:
                views.append(effective)


#: A text no formula, shape or seed box accepts: the page must explain it, not crash.
GARBAGE_TEXT = "((]\x7f"


def _tampered(node: Any) -> str:
    """A value no widget of this kind accepts; for text boxes, a text the page must reject."""
    if isinstance(node, Slider):
        return str(node.max + 10**9)
    if isinstance(node, NumberInput):
        return "12abc"
    if isinstance(node, (Toggle, Checkbox)):
        return "maybe"
    if isinstance(node, (TextInput, TextArea)):
        return GARBAGE_TEXT
    if _tab_key(node) is not None:
        return "No such tab"
    return "no such option"


@pytest.mark.parametrize("spec", catalog.PAGES, ids=lambda s: s.url_path)
def test_tampered_link_falls_back_to_defaults(spec: catalog.PageSpec) -> None:
    """Every bound widget of the default view tampered with, and a name the page does not know.

    Streamlit drops the invalid values (the defaults are shown) and the page notes each part it
    ignored; text boxes take any text, so the page must handle the garbage without crashing.
    """
    default = open_page(spec)
    widgets = bound(default)
    params = {UNKNOWN: "1"} | {name: _tampered(node) for name, node in widgets.items()}
    at = open_link(spec, params)
    assert_clean(at)
    notes = _noted(at)
    assert f"{UNKNOWN} is not a setting" in notes
    assert UNKNOWN not in at.query_params
    now = bound(at)
    for name, node in widgets.items():
        if isinstance(node, (TextInput, TextArea)):
            continue
        assert _is_noted(name, notes), (name, notes)
        if name in now:
            assert shown(now[name], at, name) == shown(node, default, name), name


@pytest.mark.parametrize(
    "url_path,params,refusal",
    [
        ("grad", {"grad_preset": "type a formula", "grad_formula": "((]"}, "not allowed"),
        ("grad", {"grad_preset": "type a formula", "grad_lo": "2", "grad_hi": "1"}, "Not drawn"),
        ("state", {"state_seed": "1e30"}, "Not a seed"),
    ],
)
def test_a_page_that_ends_early_still_notes_the_links_ignored_parts(
    url_path: str, params: dict[str, str], refusal: str
) -> None:
    """A bad value in a link ends the page after its refusal; the note on the link's unknown
    parts still shows and they leave the address (``st.stop()`` dropped both)."""
    at = open_link(catalog.find(url_path), {UNKNOWN: "1", **params})
    assert_clean(at)
    assert any(refusal in e.value for e in at.error), [e.value for e in at.error]
    assert f"{UNKNOWN} is not a setting" in _noted(at)
    assert UNKNOWN not in at.query_params


def test_a_link_to_one_tab_keeps_its_settings_of_the_others() -> None:
    """Only the open tab runs: the link's value of a closed tab's widget stays in the address
    (no "ignored" note), for the tab to use when it opens."""
    at = open_link(catalog.find("vmap"), {"vmap_tab": "jaxpr", "vmap_layout": "X is (D, batch)"})
    assert_clean(at)
    assert not _noted(at)
    assert at.query_params["vmap_layout"] == "X is (D, batch)"

"""Visitor text is text, on every page: a Markdown payload typed into any box renders nowhere.

For every registered page (parametrized over the catalog, so a new page is swept without listing
it here): open it, find every text box it shows (discovered from the rendered tree, as
``test_share_links`` finds bound widgets), type the payload into all of them, and do the same in
every tab of every bound ``st.tabs`` (and the tabs those reveal). Then no element Streamlit renders
as Markdown — ``st.markdown``, captions, headings, alerts, toasts, status labels, widget labels
and help, metric labels, expander and tab labels — may turn the payload into a link or an image:
``tests/support/markdown_check.py`` renders each text as Streamlit does and looks for
``127.0.0.1:9``.
Text shown in code blocks (``st.code``) and plain ``st.text`` renders no Markdown and is skipped.

Charts too: in every view the boxes are then filled with a formula whose comment holds Plotly's
own HTML (``x  # <a href=...>``, see ``tests/chart_check.py``), and no Plotly figure on the page
may hold that link or tag unescaped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pytest
from google.protobuf.message import Message
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import ButtonGroup, Radio, Selectbox, TextArea, TextInput

from jaxplay.hosting import catalog
from tests.pages.test_share_links import _tab_key, _walk, bound
from tests.support import chart_check
from tests.support.apptest import APP_TIMEOUT_S, assert_clean, open_page
from tests.support.markdown_check import active_targets

PAYLOAD = "![px](http://127.0.0.1:9/p.png) [x](http://127.0.0.1:9/l)"
HOST = "127.0.0.1:9"

#: Proto messages whose strings render no Markdown (code, plain text, data).
NOT_MARKDOWN = frozenset({"Code", "Text", "Json", "Arrow", "DataFrame", "PlotlyChart", "Html"})
#: Fields that Streamlit renders as Markdown, in any message not in NOT_MARKDOWN.
MARKDOWN_FIELDS = frozenset({"body", "label", "help", "caption", "message", "text"})
#: ... except these, shown as plain text: a metric's value.
PLAIN_FIELDS = frozenset({("Metric", "body")})

#: Views (tabs, options) opened per page at most, and options tried per widget, to keep the
#: test bounded.
MAX_VIEWS = 24
MAX_OPTIONS = 8


def _strings(message: Message, path: str = "") -> Iterator[tuple[str, str]]:
    """Every Markdown-rendered string field of ``message`` and its sub-messages, with its path."""
    kind = message.DESCRIPTOR.name
    if kind in NOT_MARKDOWN:
        return
    for field, value in message.ListFields():
        where = f"{path}{kind}.{field.name}"
        if field.message_type is not None:
            items = value if field.is_repeated else [value]
            for item in items:
                if isinstance(item, Message):
                    yield from _strings(item, where + "/")
        elif field.name in MARKDOWN_FIELDS and (kind, field.name) not in PLAIN_FIELDS:
            for text in value if field.is_repeated else [value]:
                if isinstance(text, str):
                    yield where, text


def rendered_payloads(at: AppTest) -> list[str]:
    """Each Markdown text on the page that renders a link or an image to the payload's host."""
    found = []
    for node in _walk(at._tree):
        proto = getattr(node, "proto", None)
        if not isinstance(proto, Message):
            continue
        for where, text in _strings(proto):
            targets = [t for t in active_targets(text) if HOST in t]
            if targets:
                found.append(f"{where}: {text[:160]!r}")
    return sorted(set(found))


def rendered_chart_tags(at: AppTest) -> list[str]:
    """Each string of a Plotly chart on the page that renders the chart payload's tags."""
    return chart_check.chart_tags(_walk(at._tree))


#: What is typed into the boxes, and how the page is searched for it, in turn.
CHECKS: tuple[tuple[str, Callable[[AppTest], list[str]]], ...] = (
    (PAYLOAD, rendered_payloads),
    (chart_check.PAYLOAD, rendered_chart_tags),
)


def text_boxes(at: AppTest) -> list[TextInput | TextArea]:
    return [n for n in _walk(at._tree) if isinstance(n, (TextInput, TextArea)) and n.key]


def tab_containers(at: AppTest) -> dict[str, list[str]]:
    """Bound tab containers shown: query parameter -> tab labels."""
    found = {}
    for node in _walk(at._tree):
        name = _tab_key(node)
        if name:
            found[name] = [tab.label for tab in node.children.values()]
    return found


def _open(spec: catalog.PageSpec, tabs: dict[str, str]) -> AppTest:
    if not tabs:
        return open_page(spec)
    at = AppTest.from_file(str(catalog.ROOT / "app.py"), default_timeout=APP_TIMEOUT_S)
    at.run()
    at.switch_page(spec.path)
    at.query_params.update(tabs)
    at.run()
    return at


def choices(at: AppTest) -> list[dict[str, str]]:
    """One view per other option of each bound single-choice widget shown (a preset box, a
    radio): such a choice can reveal a text box (``jit_preset=formula`` shows ``jit_formula``)."""
    views = []
    for name, node in bound(at).items():
        if isinstance(node, (Selectbox, Radio)):
            options = list(node.options)
            current = options[node.index] if node.index is not None else None
        elif isinstance(node, ButtonGroup) and node.proto.click_mode != node.proto.MULTI_SELECT:
            options = list(node.options)
            current = node.formatted_values[0] if node.formatted_values else None
        else:
            continue
        views += [{name: o} for o in options[:MAX_OPTIONS] if o != current]
    return views


def sweep(
    spec: catalog.PageSpec,
    checks: Sequence[tuple[str, Callable[[AppTest], list[str]]]] = CHECKS,
) -> tuple[list[str], set[str], list[str]]:
    """Type each payload of ``checks`` in turn into every text box of every view of ``spec``,
    and search the page for it as markup with the check's function.

    Views are the default one, every tab of every bound ``st.tabs`` (and the tabs a tab
    reveals), then every option of the default view's single-choice widgets; a view is typed
    into when it shows a text box no earlier view did.

    Returns the payloads rendered (with the view and field), the keys of the boxes filled, and
    the uncaught exceptions seen.
    """
    views: list[dict[str, str]] = [{}]
    options: list[dict[str, str]] = []
    seen_tabs: set[str] = set()
    filled: set[str] = set()
    rendered: list[str] = []
    exceptions: list[str] = []
    explored = 0
    while (views or options) and explored < MAX_VIEWS:
        view = views.pop(0) if views else options.pop(0)
        explored += 1
        at = _open(spec, view)
        exceptions += [e.value for e in at.exception]
        if not view:
            options = choices(at)
        for name, labels in tab_containers(at).items():
            if name not in seen_tabs:
                seen_tabs.add(name)
                views.extend({**view, name: label} for label in labels[1:])
        where = view or "default view"
        for _, found in checks:
            rendered += [f"{where} before typing: {r}" for r in found(at)]
        boxes = text_boxes(at)
        if not {b.key for b in boxes} - filled:
            continue
        keys = ", ".join(b.key for b in boxes)
        for payload, found in checks:
            for box in text_boxes(at):
                box.input(payload)
            at.run()
            exceptions += [e.value for e in at.exception]
            rendered += [f"{where} [{keys}]: {r}" for r in found(at)]
        filled |= {b.key for b in boxes}
    return rendered, filled, exceptions


@pytest.mark.parametrize("spec", catalog.PAGES, ids=lambda s: s.url_path)
def test_typed_markdown_renders_as_text(spec: catalog.PageSpec) -> None:
    rendered, _, exceptions = sweep(spec)
    assert not exceptions, exceptions
    assert not rendered, "\n".join(rendered)


def test_the_sweep_sees_a_payload_that_renders() -> None:
    """The check itself: an unescaped payload in a caption, a label or help is found."""
    at = AppTest.from_string(
        "import streamlit as st\n"
        f"st.caption({PAYLOAD!r})\n"
        f"st.text_input('x', key='box', help={PAYLOAD!r})\n"
        f"st.code({PAYLOAD!r})\n"
        f"st.text({PAYLOAD!r})\n"
    )
    at.run()
    assert_clean(at)
    found = rendered_payloads(at)
    assert len(found) == 2, found
    assert any("help" in f for f in found) and any("Markdown.body" in f for f in found)


def test_the_sweep_finds_the_text_boxes_of_a_page() -> None:
    at = open_page(catalog.find("code-lab"))
    assert "code_lab_args" in [b.key for b in text_boxes(at)]

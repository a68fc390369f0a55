"""The app in the visitor's language: ``?lang=``, the sidebar switch, the browser's language;
per visitor, kept across page switches and in the links the app makes; no English prose left
on a translated page (code, identifiers and JAX's own messages excepted).

Every page is in :data:`TRANSLATED`, with the app's chrome (navigation, sidebar, link and claim
notes); a new page goes in :data:`NOT_YET` until it is translated (a test keeps the two lists a
partition of the catalog, so a page is listed on purpose).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator

import pytest
from google.protobuf.message import Message
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import ButtonGroup, Radio, Selectbox

from jaxplay.hosting import catalog
from tests.pages.test_share_links import _walk, bound
from tests.pages.test_visitor_text import MAX_OPTIONS, tab_containers
from tests.support.apptest import APP_TIMEOUT_S, assert_clean

TRANSLATED = (
    "home",
    "article",
    "grad",
    "compose",
    "devices",
    "prng",
    "state",
    "pytrees",
    "sharp-bits",
    "tracing",
    "vmap",
    "memory",
    "code-lab",
    "jit",
)
#: Pages not translated yet: a new page is listed here until its text is in the catalogs.
NOT_YET: tuple[str, ...] = ()

#: Messages whose strings are code, data or plain values, never prose of ours.
NOT_PROSE = frozenset({"Code", "Json", "Arrow", "DataFrame", "PlotlyChart", "Html", "Metric"})
TEXT_FIELDS = frozenset({"body", "label", "help", "caption", "message", "text", "placeholder"})
#: What is not prose in a text: code spans and blocks, links' targets, icons, colour markers.
NOT_WORDS = re.compile(
    r"```.*?```|`[^`]*`|\]\([^)]*\)|https?://\S+|:material/[a-z_]+:|:[a-z]+\[", re.S
)
#: Three English words in a row: a sentence left in English.
ENGLISH = re.compile(r"\b[A-Za-z][a-z]+(?:[ ,;:'’-]+[A-Za-z][a-z]+){2,}\b")


def _texts(message: Message) -> Iterator[str]:
    if message.DESCRIPTOR.name in NOT_PROSE:
        return
    for field, value in message.ListFields():
        if field.message_type is not None:
            for item in value if field.is_repeated else [value]:
                if isinstance(item, Message):
                    yield from _texts(item)
        elif field.name in TEXT_FIELDS:
            for text in value if field.is_repeated else [value]:
                if isinstance(text, str):
                    yield text


def english_prose(node: object) -> list[str]:
    """Each text under ``node`` with three English words in a row outside code and links."""
    found = []
    for each in _walk(node):
        proto = getattr(each, "proto", None)
        if isinstance(proto, Message):
            for text in _texts(proto):
                match = ENGLISH.search(NOT_WORDS.sub(" ", text))
                if match:
                    found.append(f"{match.group(0)!r} in {text[:100]!r}")
    return sorted(set(found))


def visit(spec: catalog.PageSpec, **params: str) -> AppTest:
    """A first visitor arriving by a link to ``spec`` with ``params`` in its address."""
    at = AppTest.from_file(str(catalog.ROOT / "app.py"), default_timeout=APP_TIMEOUT_S)
    at.query_params.update(params)
    at.run()
    if spec is not catalog.HOME:
        at.switch_page(spec.path)
        at.query_params.update(params)  # a page switch drops the address's query string
        at.run()
    return at


#: Views opened per page at most (each tab, and the tabs an open tab reveals).
MAX_VIEWS = 30
#: Pages whose story is told by a choice, not tabs (each section of the walkthrough, each case
#: of the sharp bits): every option of their bound choices is opened too.
BY_CHOICE = frozenset({"article", "sharp-bits"})


def prose_in_every_view(
    spec: catalog.PageSpec, language: str = "zh", options: bool = False
) -> list[str]:
    """English prose in every tab of ``spec`` (and every tab those reveal; with ``options``,
    every other choice of its bound select boxes and radios too), each view opened by a link as
    a visitor's would be: the page's default view first."""
    found: list[str] = []
    seen: set[tuple[tuple[str, str], ...]] = {()}
    todo: list[dict[str, str]] = [{}]
    for _visited in range(MAX_VIEWS):
        if not todo:
            break
        view = todo.pop(0)
        at = visit(spec, lang=language, **view)
        assert_clean(at)
        found += [f"{view}: {text}" for text in english_prose(at._tree)]
        tabs = [{name: label} for name, labels in tab_containers(at).items() for label in labels]
        for change in tabs + (every_choice(at) if options else []):
            opened = {**view, **change}
            if tuple(sorted(opened.items())) not in seen:
                seen.add(tuple(sorted(opened.items())))
                todo.append(opened)
    return found


def every_choice(at: AppTest) -> list[dict[str, str]]:
    """One view per option of each bound single-choice widget shown, as its label (which is
    what the address carries: a translated label included)."""
    views = []
    for name, node in bound(at).items():
        single = not isinstance(node, ButtonGroup) or (
            node.proto.click_mode != node.proto.MULTI_SELECT
        )
        if isinstance(node, (Selectbox, Radio, ButtonGroup)) and single:
            views += [{name: str(option)} for option in list(node.options)[:MAX_OPTIONS]]
    return views


def test_every_page_is_listed_as_translated_or_not_yet():
    assert sorted(TRANSLATED + NOT_YET) == sorted(p.url_path for p in catalog.PAGES)


def test_the_checker_finds_english_prose_and_passes_code_and_chinese():
    assert ENGLISH.search("Pick a topic and see")
    assert not ENGLISH.search(NOT_WORDS.sub(" ", "选一个主题 `jax.jit(f)(x) is fast` 看"))
    assert not ENGLISH.search("以任意顺序叠加 jit、vmap、grad、jacfwd")


@pytest.mark.parametrize("url_path", TRANSLATED)
def test_a_translated_page_in_chinese_has_no_english_prose(url_path):
    assert prose_in_every_view(catalog.find(url_path), options=url_path in BY_CHOICE) == []
    at = visit(catalog.find(url_path), lang="zh")
    assert at.query_params.get("lang") in ("zh", ["zh"])
    assert english_prose(visit(catalog.find(url_path))._tree), "the checker sees the English"


CHINESE = re.compile(r"[\u4e00-\u9fff]")


def chinese_text(node: object) -> list[str]:
    """Each text under ``node`` with a Chinese character outside code (in an English view)."""
    found = []
    for each in _walk(node):
        proto = getattr(each, "proto", None)
        if isinstance(proto, Message):
            found += [t[:100] for t in _texts(proto) if CHINESE.search(NOT_WORDS.sub(" ", t))]
    return sorted(set(found))


@pytest.mark.parametrize("url_path", TRANSLATED)
def test_caches_replay_each_visitor_their_own_language(url_path):
    """Two visitors in turn, same settings: what the first one's run cached (results, figures,
    tables) is replayed for the second, who must still read their own language."""
    spec = catalog.find(url_path)
    first_en = visit(spec, lang="en")
    assert chinese_text(first_en._tree) == []
    assert english_prose(visit(spec, lang="zh")._tree) == []
    assert chinese_text(visit(spec, lang="en")._tree) == []


@pytest.mark.parametrize("url_path", ["home", "sharp-bits"])
def test_the_sidebar_and_navigation_speak_chinese_on_every_page(url_path):
    at = visit(catalog.find(url_path), lang="zh")
    assert_clean(at)
    assert english_prose(at.sidebar) == []
    assert "演示模式" in [t.label for t in at.sidebar.toggle]


def test_the_language_survives_a_page_switch_and_the_switch_changes_it():
    at = visit(catalog.HOME, lang="zh")
    at.switch_page(catalog.find("sharp-bits").path)
    at.query_params.clear()  # a page switch drops the address's query string
    at.run()
    assert at.session_state["language"] == "zh"
    assert at.query_params.get("lang") in ("zh", ["zh"])
    switch = at.sidebar.button_group(key="language")
    switch.set_value("en").run()
    assert at.sidebar.toggle[0].label == "Present mode"
    assert at.query_params.get("lang") in ("en", ["en"])


def test_a_link_says_nothing_and_english_is_the_default():
    at = visit(catalog.HOME)
    assert_clean(at)
    assert at.sidebar.toggle[0].label == "Present mode"
    assert "lang" not in at.query_params


def test_a_bad_language_in_a_link_is_dropped_and_english_shown():
    at = visit(catalog.HOME, lang="<b>klingon</b>")
    assert_clean(at)
    assert "lang" not in at.query_params
    assert at.sidebar.toggle[0].label == "Present mode"
    notes = [w.value for w in at.warning]  # said, as every other part of a link that is refused
    assert any("is not a valid value" in n and "klingon" in n for n in notes), notes
    assert not any("<b>" in n for n in notes), "the link's text is escaped"


def test_the_home_pages_links_keep_the_language():
    at = visit(catalog.HOME, lang="zh")
    links = [e for e in _walk(at._tree) if type(e).__name__ == "PageLink"]
    assert links
    assert all("lang=zh" in e.proto.query_string for e in links), [
        e.proto.query_string for e in links
    ]


def test_two_visitors_in_two_languages_at_once():
    """Two sessions run their scripts at the same time in one process: each sees its own."""
    results: dict[str, AppTest] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def visitor(language: str) -> None:
        try:
            barrier.wait()
            results[language] = visit(catalog.HOME, lang=language)
        except BaseException as err:  # reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=visitor, args=(lang,)) for lang in ("en", "zh")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert results["zh"].sidebar.toggle[0].label == "演示模式"
    assert results["en"].sidebar.toggle[0].label == "Present mode"
    assert english_prose(results["zh"]._tree) == []
    assert results["en"].subheader[-1].value == "This server's JAX"


def test_every_link_a_page_makes_keeps_the_language():
    """Page links open a new tab on a middle click: each carries ``lang`` (``_ui.linked``)."""
    for url_path in ("sharp-bits", "tracing", "code-lab"):
        at = visit(catalog.find(url_path), lang="zh")
        links = [e for e in _walk(at._tree) if type(e).__name__ == "PageLink"]
        assert links, url_path
        for link in links:
            assert "lang=zh" in link.proto.query_string, (url_path, link.proto.query_string)


def test_every_page_link_in_the_code_goes_through_linked():
    """A static check over ``pages/``: every ``page_link`` passes ``query_params=_ui.linked(...)``
    (the home page's cards and steps, and each page's links to another page)."""
    import ast

    missing = []
    for file in sorted((catalog.ROOT / "pages").glob("*.py")):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "page_link":
                given = {k.arg: k.value for k in node.keywords}.get("query_params")
                linked = isinstance(given, ast.Call) and getattr(given.func, "attr", "") == "linked"
                if not linked:
                    missing.append(f"{file.name}:{node.lineno}")
    assert missing == []

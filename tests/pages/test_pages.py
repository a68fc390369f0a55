"""Every page the navigation lists runs without an exception (parametrized over the registry)."""

from __future__ import annotations

import ast

import pytest
from streamlit.source_util import page_icon_and_name

from jaxplay.hosting import catalog
from tests.support.apptest import assert_clean, open_page
from tests.support.page_texts import float_noise, markdown_texts


@pytest.mark.parametrize("spec", catalog.PAGES, ids=lambda s: s.url_path)
def test_page_runs_without_exception(spec: catalog.PageSpec) -> None:
    at = open_page(spec)
    assert_clean(at)
    assert at.title, f"{spec.path} shows no title"
    assert not float_noise(markdown_texts(at)), float_noise(markdown_texts(at))


def test_navigation_and_registry_agree() -> None:
    """Every registered page exists, paths and addresses are unique, sections are known."""
    assert len({p.path for p in catalog.PAGES}) == len(catalog.PAGES)
    assert len({p.url_path for p in catalog.PAGES}) == len(catalog.PAGES)
    for spec in catalog.PAGES:
        assert spec.file.is_file(), spec.path
        assert spec.path.startswith("pages/")
        assert spec.section in (None, *catalog.SECTIONS)
        assert spec.summary


def test_each_page_file_is_named_as_its_address() -> None:
    """In Streamlit's legacy pages/ mode (a fresh server's first run) a page's address is what
    Streamlit infers from its file name; it must be the registry's, or a first visitor's link
    gets "Page not found" (see pages/_legacy.py)."""
    for spec in catalog.PAGES:
        assert spec.path == f"pages/{spec.url_path}.py"
        assert page_icon_and_name(spec.file) == ("", spec.url_path)


def test_home_has_a_card_per_topic_and_the_environment() -> None:
    at = open_page(catalog.HOME)
    assert_clean(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Backend"] == "cpu"
    assert metrics["Simulated CPU devices"] == "8"
    assert len(at.dataframe[0].value) == 8


def test_every_page_imports_the_shared_ui_first() -> None:
    """pages/_ui (through pages/_legacy) leaves Streamlit's legacy pages/ mode; a page without it
    breaks deep links."""
    for spec in catalog.PAGES:
        tree = ast.parse(spec.file.read_text(encoding="utf-8"))
        imported = set()
        for node in tree.body:
            if isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.update(f"{node.module}.{a.name}" for a in node.names)
        assert "pages._ui" in imported, f"{spec.path} does not import pages._ui"

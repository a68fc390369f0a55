"""Every page the navigation lists runs without an exception (parametrized over the registry)."""

from __future__ import annotations

import ast
from pathlib import Path

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
    gets "Page not found" (see pages/_startup.py)."""
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


def _first_import(path: Path) -> str:
    """The first module ``path`` imports (``__future__`` aside), as ``package.module``."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            return node.names[0].name
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            return f"{node.module}.{node.names[0].name}"
    return ""


def test_every_page_and_the_app_start_with_the_process_start_up() -> None:
    """pages/_startup (imported by pages/_ui) is the process's start-up: JAX imported once, under
    its import lock, and Streamlit's legacy pages/ mode left. Any import before it could import
    JAX in two visitors' threads at once, or run a page outside app.py. A page helper imported
    first (``from pages import _code_lab, _ui``) must itself start with it."""
    for path in [catalog.ROOT / "app.py", *(spec.file for spec in catalog.PAGES)]:
        chain = [_first_import(path)]
        while chain[-1].startswith("pages.") and chain[-1] != "pages._startup":
            chain.append(_first_import(catalog.ROOT / (chain[-1].replace(".", "/") + ".py")))
        assert chain[-1] == "pages._startup", f"{path.name} imports first: {' -> '.join(chain)}"

"""The Code Lab's Share button stores the code and its link loads it in a new session."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from jaxplay.hosting import catalog, snippets
from tests.conftest import APP_TIMEOUT_S, assert_clean, open_page

LAB = catalog.find("code-lab")


@pytest.fixture
def snippet_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "snippets.sqlite3"
    monkeypatch.setenv("JAXPLAY_SNIPPET_DB", str(path))
    return path


def _open_link(params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(catalog.ROOT / "app.py"), default_timeout=APP_TIMEOUT_S)
    at.run()
    at.query_params.update(params)
    at.switch_page(LAB.path)
    at.run()
    return at


def test_share_then_open_the_link(snippet_db: Path) -> None:
    code = "import jax.numpy as jnp\nshared_value = jnp.arange(4).sum()\n"
    at = open_page(LAB, code_lab_source=code)
    at.button(key="code_lab_share").click().run()
    assert_clean(at)
    links = [c.value for c in at.code if "?snippet=" in c.value]
    assert links, [c.value for c in at.code]
    snippet_id = re.search(r"snippet=(\w+)", links[0]).group(1)
    assert snippets.is_valid_id(snippet_id)
    assert snippets.SnippetStore(snippet_db).load(snippet_id).code == code

    visitor = _open_link({"snippet": snippet_id})
    assert_clean(visitor)
    assert visitor.text_area(key="code_lab_editor").value == code


def test_a_bad_snippet_link_keeps_the_visitors_code(snippet_db: Path) -> None:
    at = _open_link({"snippet": "not-an-id"})
    assert_clean(at)
    assert any("not valid" in w.value for w in at.warning)
    assert at.text_area(key="code_lab_editor").value.strip()


def test_share_refuses_oversize_code(snippet_db: Path) -> None:
    at = open_page(LAB, code_lab_source="x = 1\n" + "# " + "y" * snippets.MAX_SNIPPET_BYTES)
    at.button(key="code_lab_share").click().run()
    assert_clean(at)
    assert any("limited to" in w.value for w in at.warning)


def test_share_link_shape() -> None:
    assert snippets.share_link("http://h:8501/code-lab?x=1", "A" * 12) == (
        "http://h:8501/code-lab?snippet=" + "A" * 12
    )
    assert snippets.share_link(None, "B" * 12) == "/code-lab?snippet=" + "B" * 12

"""The Code Lab's Share button stores the code and its link loads it in a new session, on a SQLite
file and on PostgreSQL; a snippet database that cannot be reached breaks nothing else."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from jaxplay.hosting import catalog, snippets
from jaxplay.hosting.chromium import free_port
from tests.support.apptest import APP_TIMEOUT_S, assert_clean, editor_text, open_page

LAB = catalog.find("code-lab")


@pytest.fixture(params=["sqlite", "postgresql"])
def snippet_db(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> str:
    if request.param == "sqlite":
        location = str(tmp_path / "snippets.sqlite3")
    else:
        location = request.getfixturevalue("postgres_url")
    monkeypatch.setenv("JAXPLAY_SNIPPET_DB", location)
    return location


@pytest.fixture
def dead_db(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A PostgreSQL URL where nothing listens (a database server that is down)."""
    url = f"postgresql://jaxplay@127.0.0.1:{free_port()}/jaxplay"
    monkeypatch.setenv("JAXPLAY_SNIPPET_DB", url)
    yield url


def _open_link(params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(catalog.ROOT / "app.py"), default_timeout=APP_TIMEOUT_S)
    at.run()
    at.query_params.update(params)
    at.switch_page(LAB.path)
    at.run()
    return at


def test_share_then_open_the_link(snippet_db: str) -> None:
    code = "import jax.numpy as jnp\nshared_value = jnp.arange(4).sum()\n"
    at = open_page(LAB, code_lab_source=code)
    at.button(key="code_lab_share").click().run()
    assert_clean(at)
    links = [c.value for c in at.code if "?snippet=" in c.value]
    assert links, [c.value for c in at.code]
    snippet_id = re.search(r"snippet=(\w+)", links[0]).group(1)
    assert snippets.is_valid_id(snippet_id)
    store = snippets.SnippetStore(snippet_db)
    assert store.load(snippet_id).code == code
    store.close()

    visitor = _open_link({"snippet": snippet_id})
    assert_clean(visitor)
    assert editor_text(visitor) == code


def test_a_bad_snippet_link_keeps_the_visitors_code(snippet_db: str) -> None:
    at = _open_link({"snippet": "not-an-id"})
    assert_clean(at)
    assert any("not valid" in w.value for w in at.warning)
    assert editor_text(at).strip()


def test_share_refuses_oversize_code(snippet_db: str) -> None:
    at = open_page(LAB, code_lab_source="x = 1\n" + "# " + "y" * snippets.MAX_SNIPPET_BYTES)
    at.button(key="code_lab_share").click().run()
    assert_clean(at)
    assert any("limited to" in w.value for w in at.warning)


def test_an_unreachable_store_says_why_sharing_fails(dead_db: str) -> None:
    code = "import jax.numpy as jnp\nkept = jnp.arange(3)\n"
    at = open_page(LAB, code_lab_source=code)
    at.button(key="code_lab_share").click().run()
    assert_clean(at)
    assert [w.value for w in at.warning if "Sharing is unavailable" in w.value], at.warning
    assert not [c.value for c in at.code if "?snippet=" in c.value]
    assert at.session_state["code_lab_source"] == code  # nothing else changed
    assert not at.button(key="code_lab_run").disabled


def test_a_link_to_an_unreachable_store_says_so(dead_db: str) -> None:
    at = _open_link({"snippet": "A" * snippets.ID_LENGTH})
    assert_clean(at)
    texts = [w.value for w in at.warning]
    assert any("cannot be reached" in t for t in texts), texts
    assert not any("No snippet" in t for t in texts), texts
    assert at.session_state["code_lab_source"].strip()  # the visitor's own code is shown


def test_share_link_shape() -> None:
    assert snippets.share_link("http://h:8501/code-lab?x=1", "A" * 12) == (
        "http://h:8501/code-lab?snippet=" + "A" * 12
    )
    assert snippets.share_link(None, "B" * 12) == "/code-lab?snippet=" + "B" * 12
    # The visitor's language travels with the link (pages/_ui.linked adds it).
    assert snippets.share_link(None, "C" * 12, {"lang": "zh"}) == (
        "/code-lab?snippet=" + "C" * 12 + "&lang=zh"
    )

"""AppTests of the article walkthrough: sections in order, real errors shown, open in Code Lab."""

from __future__ import annotations

from jaxplay import article
from jaxplay.hosting import catalog
from tests.support.apptest import assert_clean, editor_text, open_page

SPEC = catalog.find("article")


def test_first_section_lists_its_snippets() -> None:
    at = open_page(SPEC)
    assert_clean(at)
    assert at.header[0].value.startswith("1. jax.jit")
    sources = [c.value.strip() for c in at.code]
    for example in article.in_section(1):
        assert example.source.strip() in sources


def test_broken_snippet_shows_the_real_error() -> None:
    at = open_page(SPEC, walkthrough_section="tracing")
    assert_clean(at)
    assert at.header[0].value.startswith("6.")
    assert any(c.value.startswith("ImportError: cannot import name 'partial'") for c in at.code)


def test_open_in_code_lab_loads_the_snippet() -> None:
    at = open_page(SPEC, walkthrough_section="vmap")
    at.button(key="walkthrough_open_vmap-conv").click().run()
    assert_clean(at)
    assert at.session_state["code_lab_source"] == article.by_id("vmap-conv").source
    assert editor_text(at) == article.by_id("vmap-conv").source

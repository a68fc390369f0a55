"""Home's two paths: a learner's, in the article's order, and an instructor's, in present mode;
both built from the page registry, so a page registered later shows up in both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jaxplay import article
from jaxplay.hosting import catalog
from tests.support.apptest import assert_clean, open_page

LEARNER = "New to JAX?"
INSTRUCTOR = "Teaching a room?"


def links(at: Any, expander: str) -> list[tuple[str, str]]:
    """(address, query string) of each page link in the expander whose label starts so."""
    found = [e for e in at.expander if e.label.startswith(expander)]
    assert len(found) == 1, [e.label for e in at.expander]
    return [(p.proto.page, p.proto.query_string) for p in found[0].get("page_link")]


def test_the_learner_follows_the_article_then_the_lab() -> None:
    at = open_page(catalog.HOME)
    assert_clean(at)
    shown = links(at, LEARNER)
    walkthrough = catalog.find("article").url_path
    reads = [q for page, q in shown if page == walkthrough]
    # Each section's page is read in the walkthrough first, in the article's order
    # (PRNG keys, section 5, before tracing, section 6, unlike the navigation).
    assert reads == [f"walkthrough_section={s.slug}" for s in article.SECTIONS]
    topics = [page for page, _ in shown if page != walkthrough]
    assert topics[: len(article.SECTIONS)] == [s.slug for s in article.SECTIONS]
    assert topics[len(article.SECTIONS)] == "code-lab"


def test_the_instructor_projects_every_topic_in_present_mode() -> None:
    at = open_page(catalog.HOME)
    shown = links(at, INSTRUCTOR)
    assert shown and all("present=1" in q for _, q in shown), shown
    projected = {page for page, _ in shown}
    assert {spec.url_path for spec in catalog.TOPICS} <= projected


@pytest.fixture
def new_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> catalog.PageSpec:
    """A page registered under "Beyond the article", as a helper adding one would."""
    page = tmp_path / "beyond.py"
    page.write_text("import streamlit as st\nst.title('Beyond')\n")
    spec = catalog.PageSpec(
        path=str(page),
        title="Beyond",
        icon=":material/explore:",
        section="Beyond the article",
        summary="A page the article does not cover.",
        url_path="beyond",
    )
    monkeypatch.setattr(catalog, "SECTIONS", (*catalog.SECTIONS, "Beyond the article"))
    monkeypatch.setattr(catalog, "TOPICS", (*catalog.TOPICS, spec))
    monkeypatch.setattr(catalog, "PAGES", (*catalog.PAGES, spec))
    return spec


def test_a_page_registered_beyond_the_article_joins_both_paths(
    new_page: catalog.PageSpec,
) -> None:
    at = open_page(catalog.HOME)
    assert_clean(at)
    learner = [page for page, _ in links(at, LEARNER)]
    assert learner[-1] == new_page.url_path  # after the article and the Code Lab
    assert (new_page.url_path, "present=1") in links(at, INSTRUCTOR)
    assert any("A page the article does not cover." in m.value for m in at.markdown)


def test_the_navigation_lists_the_articles_topics_in_the_articles_order() -> None:
    """The sidebar and the learner's path agree (the sidebar listed Tracing before PRNG)."""
    registered = [spec.url_path for spec in catalog.TOPICS]
    in_article = [s.slug for s in article.SECTIONS if s.slug in registered]
    assert [slug for slug in registered if slug in in_article] == in_article

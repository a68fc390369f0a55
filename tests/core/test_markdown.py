"""The one escaping helper: visitor text through Markdown renders as text, never as markup."""

from __future__ import annotations

import pytest

from jaxplay.core import markdown
from tests.support.markdown_check import active_elements

PAYLOADS = (
    "![px](http://127.0.0.1:9/p.png)",
    "[sign in](http://127.0.0.1:9/login)",
    "<http://127.0.0.1:9/auto>",
    "visit www.example.com or http://127.0.0.1:9/x",
    "[ref]\n\n[ref]: http://127.0.0.1:9/r",
    "<img src=http://127.0.0.1:9/p.png>",
)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_payloads_render_as_links_or_images_unescaped_and_as_text_escaped(payload: str) -> None:
    assert active_elements(payload) or payload.startswith("<img")  # raw HTML is not rendered
    assert active_elements(markdown.escape(payload)) == []
    assert active_elements(f"**Not a seed:** {markdown.escape(payload)}") == []


@pytest.mark.parametrize("payload", PAYLOADS)
def test_code_spans_cannot_be_closed_from_inside(payload: str) -> None:
    breaking = "1` " + payload + " `"
    assert active_elements("seed " + markdown.code(breaking)) == []


def test_the_apps_own_numbers_keep_their_stars() -> None:
    """ "-2**63 to 2**63 - 1" rendered as "-263 to 263 - 1" (emphasis ate the stars)."""
    from markdown_it import MarkdownIt

    html = MarkdownIt("gfm-like").render(markdown.escape("-2**63 to 2**63 - 1"))
    assert "2**63 to 2**63 - 1" in html and "<em>" not in html and "<strong>" not in html

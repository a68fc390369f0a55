"""Render Markdown as Streamlit would (CommonMark + GitHub's autolinks) and find links and images.

Streamlit renders with react-markdown and remark-gfm in the browser; markdown-it-py's
``gfm-like`` preset (with linkify) is the closest Python renderer, close enough to tell whether a
text would become a link or an image. The browser tests check the real rendering for a sample.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

_RENDERER = MarkdownIt("gfm-like")
_ACTIVE = re.compile(r"<(a|img)\b", re.IGNORECASE)
_TAG = re.compile(r"<[^>]+>")


def active_elements(markdown: str) -> list[str]:
    """The ``<a>`` and ``<img>`` tags the Markdown would render to."""
    return _ACTIVE.findall(_RENDERER.render(markdown))


def plain_text(markdown: str) -> str:
    """The text a visitor reads when the Markdown is rendered (escapes undone, tags dropped)."""
    import html

    return html.unescape(_TAG.sub("", _RENDERER.render(markdown))).strip()


_TARGET = re.compile(r"""<(?:a|img)\b[^>]*?(?:href|src)="([^"]*)\"""", re.IGNORECASE)


def active_targets(markdown: str) -> list[str]:
    """The addresses the Markdown's links and images would point to (``href``, ``src``)."""
    return _TARGET.findall(_RENDERER.render(markdown))

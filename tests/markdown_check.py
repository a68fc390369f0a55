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


def active_elements(markdown: str) -> list[str]:
    """The ``<a>`` and ``<img>`` tags the Markdown would render to."""
    return _ACTIVE.findall(_RENDERER.render(markdown))

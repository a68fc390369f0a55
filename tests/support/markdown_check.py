"""Render Markdown as Streamlit would (CommonMark + GitHub's autolinks) and find links and images.

Streamlit renders with react-markdown and remark-gfm in the browser; markdown-it-py's
``gfm-like`` preset (with linkify) is the closest Python renderer, close enough to tell whether a
text would become a link or an image. One difference matters: remark-gfm finds bare URLs in the
text *after* backslash escapes are resolved (``http\\:\\/\\/x`` is a link in the browser, not in
markdown-it), so the rendered text outside code is searched with remark-gfm's own patterns too.
The browser tests check the real rendering for a sample.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

_RENDERER = MarkdownIt("gfm-like")
_ACTIVE = re.compile(r"<(a|img)\b", re.IGNORECASE)
_TAG = re.compile(r"<[^>]+>")


#: mdast-util-gfm-autolink-literal's patterns: a URL from ``http(s)://`` or ``www.``, an e-mail.
_GFM_LITERAL = re.compile(r"(?i)(?:https?://|www(?=\.))[-.\w]+|[-.\w+]+@[-\w]+(?:\.[-\w]+)+")
_CODE = re.compile(r"<code\b.*?</code>", re.IGNORECASE | re.DOTALL)


def active_elements(markdown: str) -> list[str]:
    """The ``<a>`` and ``<img>`` tags the Markdown would render to (``"autolink"`` for a bare URL
    in its text that remark-gfm would link)."""
    import html

    rendered = _RENDERER.render(markdown)
    text = html.unescape(_TAG.sub(" ", _CODE.sub(" ", rendered)))
    return _ACTIVE.findall(rendered) + ["autolink" for _ in _GFM_LITERAL.finditer(text)]


def plain_text(markdown: str) -> str:
    """The text a visitor reads when the Markdown is rendered (escapes undone, tags dropped)."""
    import html

    text = html.unescape(_TAG.sub("", _RENDERER.render(markdown)))
    return text.replace("\u200b", "").strip()  # zero-width spaces are not seen


_TARGET = re.compile(r"""<(?:a|img)\b[^>]*?(?:href|src)="([^"]*)\"""", re.IGNORECASE)


def active_targets(markdown: str) -> list[str]:
    """The addresses the Markdown's links and images would point to (``href``, ``src``)."""
    return _TARGET.findall(_RENDERER.render(markdown))

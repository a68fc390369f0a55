"""Everything an AppTest run shows through Markdown, and the hostile links or images in it.

Streamlit renders Markdown in markdown, captions, alerts, toasts, metric labels, widget labels and
help, expander and tab labels: :func:`markdown_texts` collects the text of every such field of
every element of a run, and :func:`hostile_links` renders each one with
:mod:`tests.support.markdown_check`'s renderer (CommonMark + GitHub's autolinks, as Streamlit's) and
returns those that would show a link or an image pointing at the payload's host.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tests.support.markdown_check import _RENDERER

#: Markdown a visitor types into a box: an image and a link on a host nothing listens on.
PAYLOAD = "![px](http://127.0.0.1:9/p.png) [x](http://127.0.0.1:9/l)"
_HOSTILE = re.compile(r"<(a|img)\b[^>]*127\.0\.0\.1:9", re.IGNORECASE)
#: Proto fields that Streamlit renders as Markdown (code, dataframes and raw text are not).
_MARKDOWN_FIELDS = frozenset({"body", "label", "help", "caption", "placeholder"})
#: Element types whose ``body`` is not Markdown.
_PLAIN = frozenset({"code", "text", "json", "html", "exception"})


def _strings(message: Any) -> list[str]:
    found: list[str] = []
    for field, value in message.ListFields():
        if field.name in _MARKDOWN_FIELDS and isinstance(value, str):
            found.append(value)
        elif field.message_type is not None and not isinstance(value, Sequence):
            found.extend(_strings(value))
    return found


def markdown_texts(at: Any) -> list[str]:
    """The Markdown source of every rendered text field of the run's main area and sidebar."""
    texts: list[str] = []
    for root in (at.main, at.sidebar):
        for node in root:
            proto = getattr(node, "proto", None)
            if proto is None or getattr(node, "type", "") in _PLAIN:
                continue
            texts.extend(_strings(proto))
    texts.extend(str(t.value) for t in at.toast)
    return texts


def hostile_links(at: Any) -> list[str]:
    """The texts that render a link or an image to the payload's host (should be none)."""
    return [t for t in markdown_texts(at) if _HOSTILE.search(_RENDERER.render(t))]


_TAG = re.compile(r"<[^>]+>")


def shown(markdown: str) -> str:
    """The text a reader sees for ``markdown`` (rendered, tags dropped, entities decoded)."""
    import html

    return html.unescape(_TAG.sub("", _RENDERER.render(markdown))).strip()


#: A number printed with float noise (``0.7659000158309937``): prose numbers go through
#: ``jaxplay.core.words.number``; nine or more decimals in a sentence are never meant.
_FLOAT_NOISE = re.compile(r"\b\d+\.\d{9,}\b")


def float_noise(texts: Sequence[str]) -> list[str]:
    """The numbers with float noise in ``texts`` (the Markdown of a run)."""
    return [m.group() for text in texts for m in _FLOAT_NOISE.finditer(text)]

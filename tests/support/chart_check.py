"""Find Plotly's own HTML, typed by a visitor, live in a chart (beside ``markdown_check``).

Plotly draws a subset of HTML in every string of a figure (titles, axis and legend names, hover
text, annotations): ``<a href>`` is a clickable link, ``<b>`` bold. A visitor's text in a figure
must reach it escaped (``jaxplay.core.figures.plain``), so that Plotly shows the tags as typed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

HOST = "127.0.0.1:9"
LINK = f'<a href="http://{HOST}/login">Session expired</a> <b>bold</b>'
#: A formula: a valid expression of x whose comment holds the link, so that a formula box accepts
#: it and draws its chart (a box that refuses it draws no chart; the builders that take other
#: visitor text are tested one by one in ``test_visitor_text_charts``).
PAYLOAD = f"x  # {LINK}"
_TAG = re.compile(r"<\s*/?\s*(a|b)\b", re.IGNORECASE)


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _texts(v)
    elif isinstance(value, list):
        for v in value:
            yield from _texts(v)


def tags_in(figure: dict[str, Any]) -> list[str]:
    """Each string of a Plotly figure (as JSON data) holding the payload with its tags live."""
    return [t for t in _texts(figure) if HOST in t and _TAG.search(t)]


def chart_tags(nodes: Iterator[Any]) -> list[str]:
    """Each string of each Plotly chart among an app's rendered ``nodes`` that would render the
    payload's tags, named by the chart's key."""
    found = []
    for node in nodes:
        proto = getattr(node, "proto", None)
        if getattr(getattr(proto, "DESCRIPTOR", None), "name", None) != "PlotlyChart":
            continue
        key = getattr(node, "key", None) or "?"
        found += [f"chart {key}: {t[:160]!r}" for t in tags_in(json.loads(proto.spec))]
    return sorted(set(found))

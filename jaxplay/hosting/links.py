"""Shareable links: which of a link's query parameters the app could not honour.

Pages bind the widgets that define a view to the URL (``bind="query-params"``), so copying the
address reproduces the view. Streamlit drops a bound parameter whose value is not valid for its
widget (an unknown option, a number out of range) and removes one that equals the default. A
visitor who opened a tampered or outdated link should be told which parts of it were ignored,
rather than silently seeing something else: :func:`ignored_params` works that out from the
parameters before and after the page ran and the values the widgets ended up with, and
:func:`notice` words it for a Markdown-rendering element. A link's names and values are whatever
its author typed (``/?![px](http://x/p.png)=1``), so the notice shows them as text, never as a
link or an image.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jaxplay.core import i18n, markdown
from jaxplay.core.i18n import _

#: Query parameters that are not widgets but are read by the app itself (``present``: the
#: projector view; ``lang``: the visitor's language; see ``pages/_ui.py``).
APP_PARAMS: frozenset[str] = frozenset({"snippet", "embed", "embed_options", "present", "lang"})

MAX_SHOWN_VALUE = 40


def _as_url_text(value: Any) -> list[str]:
    """The ways a widget value can be written in a URL."""
    if isinstance(value, bool):
        return [str(value).lower(), str(value)]
    if isinstance(value, (list, tuple)):
        return [",".join(str(v) for v in value)]
    if isinstance(value, float) and value.is_integer():
        return [str(value), str(int(value))]
    return [str(value)]


def _short(value: str) -> str:
    return value if len(value) <= MAX_SHOWN_VALUE else value[:MAX_SHOWN_VALUE] + "…"


def ignored_params(
    before: Mapping[str, str],
    after: Mapping[str, str],
    widget_values: Mapping[str, Any],
    widget_keys: Iterable[str],
    settled: Iterable[str] = (),
    waiting: Iterable[str] = (),
) -> list[str]:
    """Plain-words notes, one per link parameter that did not take effect.

    Arguments:
        before: the query parameters when the page started running.
        after: the query parameters after it ran (Streamlit has dropped invalid bound values).
        widget_values: the session-state values of the widgets, by key.
        widget_keys: the keys of the widgets that exist in this session.
        settled: the keys the session already held when the run started. Their parameters are
            the app's own writing from the last run, not a link's: a callback that changes such
            a widget (a preset filling in other widgets) leaves the old value in the address
            until the widget is drawn again, which is no part of a link that was ignored.
        waiting: the keys of widgets in tabs that are not open (only the open tab runs). Their
            parameters wait in the address for their tab, which draws them with the link's value.

    Returns:
        Notes such as ``"jit_dtype=float99 is not a valid value; the default is shown"``.
    """
    keys, known, later = set(widget_keys), set(settled), set(waiting)
    notes: list[str] = []
    for name, value in before.items():
        if name == "lang" and value not in i18n.LANGUAGES:  # the app's own, read in pages/_ui
            notes.append(_invalid(name, value))
            continue
        if name in APP_PARAMS or (name in known and name in keys) or name in later:
            continue
        if name not in keys:
            notes.append(
                _("{name} is not a setting of this page; it was ignored").format(name=_short(name))
            )
            continue
        if name in after:
            continue
        current = widget_values.get(name)
        if current is None or value not in _as_url_text(current):
            notes.append(_invalid(name, value))
    return notes


def _invalid(name: str, value: Any) -> str:
    return _("{name}={value} is not a valid value; the default is shown").format(
        name=_short(name), value=_short(value)
    )


def notice(notes: Iterable[str]) -> str:
    """The note a page shows for :func:`ignored_params`' ``notes``, as Markdown; ``""`` if none.

    Each note quotes the link, so each is escaped whole: a visitor sees the link's text as it
    was written, and no part of it becomes a link, an image or formatting.
    """
    escaped = [markdown.escape(note) for note in notes]
    if not escaped:
        return ""
    return _("Parts of this link were ignored: {notes}.").format(notes=_("; ").join(escaped))

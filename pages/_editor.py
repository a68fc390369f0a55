"""The code editor of the Code Lab: CodeMirror 6 as a Streamlit custom component (UI only).

:func:`code_editor` is the one way a page shows it. The component is CodeMirror 6 bundled into
one ES module, ``frontend/code_editor/dist/code_editor.js`` (committed; rebuilt with
``cd frontend/code_editor && npm ci && npm run build``), handed to Streamlit as inline
JavaScript, so it is served by the app itself and works offline. Without that file (a checkout
that lost it) the same call shows Streamlit's plain text area instead: the page never checks.

How the editor and Python talk:

* Python sends ``data = {doc, revision, error_line, height, label}``. The editor replaces its
  text with ``doc`` only when ``revision`` changes, which this module does when the page's
  value differs from the text the editor last had (a reset, a shared link, the walkthrough) or
  when the editor is new on the page. The visitor's own edits are not sent back, so the
  component's message (which carries the ~370 kB bundle) stays the same while they type, and
  Streamlit sends a short reference to the copy the browser already has instead. A new ``doc``
  or ``error_line`` sends the whole message again.
* The editor sends its text as the state ``value`` when it loses focus (clicking Run, Share or
  anything else blurs it first) and before a run, and the trigger ``run`` (carrying the text)
  on Ctrl/Cmd+Enter. ``on_change`` gets the new text in a callback, before the page's script
  runs, so the page's own copy is up to date when it reads it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import streamlit as st

from jaxplay.core.i18n import _
from jaxplay.sandbox import MAX_SOURCE_CHARS

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "frontend" / "code_editor" / "dist" / "code_editor.js"
COMPONENT_NAME = "jaxplay_code_editor"
# Inside the component's shadow root: the editor fills the width Streamlit gives it.
CSS = ".jaxplay-code-editor { width: 100%; box-sizing: border-box; }"


@functools.cache
def _component() -> Callable[..., Any] | None:
    """The registered component, or None when the bundle is missing."""
    try:
        js = BUNDLE.read_text(encoding="utf-8")
    except OSError:
        return None
    return st.components.v2.component(COMPONENT_NAME, js=js, css=CSS)


def _text_key(key: str) -> str:
    return f"_{key}_text"  # the text the editor has, as far as Python knows


def _pushed_key(key: str) -> str:
    return f"_{key}_pushed"  # (revision, doc): the text last sent to replace the editor's


def _cut_key(key: str) -> str:
    return f"_{key}_cut"  # the length of the last text the editor sent, when it was cut


def _reported(key: str, on_change: Callable[[str], None] | None, name: str) -> None:
    """Callback: the editor sent its text (state ``value``, or trigger ``run`` with the text).

    The text is cut to :data:`MAX_SOURCE_CHARS` here, where it enters, before the page parses
    it: a client can send a component value of any size (a 4 MB one cost 2 GB in ``ast.parse``
    on every rerun). The editor then says so (:func:`code_editor`).
    """
    reported = st.session_state[key].get(name)
    if not isinstance(reported, str):
        return
    if len(reported) > MAX_SOURCE_CHARS:
        st.session_state[_cut_key(key)] = len(reported)
        reported = reported[:MAX_SOURCE_CHARS]
    else:
        st.session_state.pop(_cut_key(key), None)
    st.session_state[_text_key(key)] = reported
    if on_change is not None:
        on_change(reported)


def code_editor(
    value: str,
    *,
    key: str,
    height: int = 380,
    error_line: int | None = None,
    on_change: Callable[[str], None] | None = None,
    label: str | None = None,
) -> str:
    """Show a Python code editor holding ``value``; return its text as far as Python knows it.

    ``value`` is the page's lasting copy of the code: when it differs from the editor's text
    (the page changed it), the editor is refilled with it. ``on_change(text)`` runs as a
    callback when the visitor's edits reach Python. ``error_line`` (1-based) marks that line
    (a tinted line and a gutter marker) until a later call passes another line or None.
    ``label`` names the editor for screen readers (default: "Code", in the visitor's language).
    """
    label = _("Code") if label is None else label
    component = _component()
    state = st.session_state
    cut = state.get(_cut_key(key))
    if isinstance(cut, int):
        st.warning(
            _(
                "The editor sent {cut} characters of code; the Code Lab keeps the first "
                "{limit} (the most a run takes), and the rest was dropped."
            ).format(cut=f"{cut:,}", limit=f"{MAX_SOURCE_CHARS:,}"),
            icon=":material/content_cut:",
        )
    if component is None:
        return _text_area(value, key=key, height=height, on_change=on_change, label=label)

    # A key absent from session_state means no editor was on the page in the last run: the
    # browser builds a new one from `doc`, which must then be the current value.
    fresh = key not in state
    revision, doc = state.get(_pushed_key(key), (0, value))
    if fresh or value != state.get(_text_key(key)):
        revision, doc = revision + 1, value
        state[_pushed_key(key)] = (revision, doc)
        state[_text_key(key)] = value
    component(
        key=key,
        data={
            "doc": doc,
            "revision": revision,
            "error_line": error_line,
            "height": height,
            "label": label,
        },
        height=height,
        on_value_change=functools.partial(_reported, key, on_change, "value"),
        on_run_change=functools.partial(_reported, key, on_change, "run"),
    )
    return state[_text_key(key)]


def run_requested(key: str) -> bool:
    """Whether the visitor pressed Ctrl/Cmd+Enter in the editor ``key`` for this script run.

    A page may ask before it shows the editor (the Code Lab runs the code first, then shows the
    editor with the line of that run's error marked).
    """
    current = st.session_state.get(key)
    return isinstance(current, Mapping) and current.get("run") is not None


def _text_area(
    value: str,
    *,
    key: str,
    height: int,
    on_change: Callable[[str], None] | None,
    label: str,
) -> str:
    """The fallback without the bundle: a plain text area (Tab leaves it; no Ctrl+Enter)."""
    st.session_state[key] = value

    def changed() -> None:
        if on_change is not None:
            on_change(st.session_state[key])

    st.text_area(label, key=key, height=height, on_change=changed, max_chars=MAX_SOURCE_CHARS)
    return value

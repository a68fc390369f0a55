"""Small rendering helpers shared by the pages (UI only; the logic lives in ``jaxplay``).

Every page imports this module first: importing it also makes sure the page runs inside
``app.py``'s navigation (see :func:`_enter_app_navigation`) with the app's JAX settings.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import streamlit as st

from jaxplay import environment
from jaxplay.expr import ExprError


def _enter_app_navigation() -> None:
    """Leave Streamlit's legacy ``pages/`` mode if this server started in it.

    Streamlit decides once per server, when the first visitor connects, whether the app uses
    the legacy multipage mode: it does if a ``pages/`` folder sits beside the main script, until
    some run calls ``st.navigation``. If the very first visitor opens a shared link such as
    ``/jit``, Streamlit then runs ``pages/jit.py`` on its own, without ``app.py``: no page
    config, no registry navigation, and JAX set up without the simulated devices. This runs
    when a page first imports this module: it switches the flag off and reruns, so the run goes
    through ``app.py`` and its ``st.navigation``, which resolves the same address.
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # a Streamlit without the legacy mode
        return
    if getattr(PagesManager, "uses_pages_directory", False):
        PagesManager.uses_pages_directory = False
        environment.configure()
        st.rerun()


_enter_app_navigation()


def show_code(*objects: Callable[..., Any] | str, label: str = "Show the code that ran") -> None:
    """An expander with the exact source of the functions (or text) that produced a result."""
    with st.expander(label, icon=":material/code:"):
        for obj in objects:
            source = obj if isinstance(obj, str) else inspect.getsource(obj)
            st.code(source, language="python")


def expr_error(err: ExprError, source: str) -> None:
    """A formula error with a caret under the offending column."""
    lines = source.strip().splitlines() or [""]
    pointer = ""
    if err.col is not None and 1 <= err.line <= len(lines):
        pointer = f"\n{lines[err.line - 1]}\n{' ' * (err.col - 1)}^"
    st.error(f"**This formula is not allowed:** {err.message}", icon=":material/error:")
    if pointer:
        st.code(pointer.strip("\n"), language=None)

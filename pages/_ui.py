"""Small rendering helpers shared by the pages (UI only; the logic lives in ``jaxplay``)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import streamlit as st

from jaxplay.expr import ExprError


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

"""Small rendering helpers shared by the pages (UI only; the logic lives in ``jaxplay``).

Every page imports this module first: importing it also makes sure the page runs inside
``app.py``'s navigation, with the app's JAX settings (see :mod:`pages._legacy`).
"""

from __future__ import annotations

import inspect
import math
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import streamlit as st

import pages._legacy  # noqa: F401  (first: leaves Streamlit's legacy pages/ mode)
from jaxplay.core import capture, markdown, turns
from jaxplay.core.expr import ExprError
from jaxplay.hosting import catalog, publicmode


def show_code(
    *objects: Callable[..., Any] | str,
    label: str = "Show the code that ran",
    expanded: bool = False,
) -> None:
    """An expander with the exact source of the functions (or text) that produced a result."""
    with st.expander(label, icon=":material/code:", expanded=expanded):
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


def visitor_id() -> str:
    """Who this browser session is, for rate limits, the runner and the snippet store.

    The client's IP address (``st.context.ip_address``), or behind a trusted reverse proxy
    (``JAXPLAY_TRUSTED_PROXY=1``) the last address of ``X-Forwarded-For``; a random id kept in
    the session where no address is known (localhost) or ``JAXPLAY_VISITOR_KEY=session`` asks
    for it. See :func:`jaxplay.hosting.publicmode.visitor_from`.
    """
    session_id = st.session_state.setdefault("_jaxplay_session_id", uuid.uuid4().hex)
    try:
        forwarded = list(st.context.headers.get_all("X-Forwarded-For"))
        address = st.context.ip_address
    except Exception:  # noqa: BLE001 - no request context (e.g. a bare script run)
        forwarded, address = [], None
    return publicmode.visitor_from(
        address=address,
        forwarded_for=forwarded,
        session_id=session_id,
        config=publicmode.PublicConfig.from_env(),
    )


def scrub(text: object) -> str:
    """``str(text)`` without the server's paths (``<app>``, ``<venv>``, ``~``, ...).

    Use it for every exception text a page shows: JAX's messages name files (``...while tracing
    the function f at /srv/jaxplay/...``), which a public server must not reveal.
    """
    return publicmode.scrub_paths(str(text))


def show_error(err: BaseException | str, prefix: str = "", icon: str = ":material/error:") -> None:
    """``st.error`` of an exception (``prefix`Type: message```) or a text, paths scrubbed."""
    text = f"`{type(err).__name__}: {err}`" if isinstance(err, BaseException) else err
    st.error(scrub(f"{prefix}{text}"), icon=icon)


def error_code(text: object) -> None:
    """A message from JAX (an error, a log) as a plain code block, server paths scrubbed."""
    st.code(scrub(text), language=None)


def throttle_notice(wait_s: float) -> None:
    """Tell the visitor their measurement waits for the public server's per-visitor limit."""
    seconds = max(1, math.ceil(wait_s - 1e-6))
    st.toast(
        f"You are measuring often: this measurement starts in {seconds} s, so that everyone on "
        "this shared server gets a turn.",
        icon=":material/hourglass_top:",
    )


@contextmanager
def measuring(label: str) -> Iterator[Any]:
    """A status box for a measurement, which holds the measurement lock while the block runs.

    If another visitor is measuring, a note inside the box says where this one stands in the
    queue until its turn comes (measurements take turns, so that neither slows the other down).
    Yields the ``st.status`` container, for the caller to update.
    """
    with st.status(label) as status:
        note = st.empty()

        def queued(ahead: int) -> None:
            note.info(
                f"Another visitor is measuring on this machine; you are number {ahead} in the "
                "queue. Measurements take turns so that neither slows the other down.",
                icon=":material/hourglass_top:",
            )

        with turns.exclusive(on_wait=queued):
            note.empty()
            yield status


def measure_button(
    label: str, key: str, chosen: object, icon: str | None = ":material/timer:"
) -> bool:
    """A button that starts a measurement of ``chosen`` (sizes, a workload): True once it was
    pressed for exactly that choice, on this run and the following ones, until the choice changes.
    """
    if chosen and st.button(label, key=key, icon=icon):
        st.session_state[f"{key}_for"] = chosen
    return bool(chosen) and st.session_state.get(f"{key}_for") == chosen


def box_height(text: str, box: int = 240, lines: int = 12, chars: int = 2000) -> int | str:
    """A code box's height: ``box`` pixels, scrolling, for text over ``lines`` lines or ``chars``
    characters; else as tall as the text ("content")."""
    return box if text.count("\n") > lines or len(text) > chars else "content"


def code_lab_button(source: str, key: str, label: str = "Open in Code Lab") -> None:
    """A button that puts ``source`` into the Code Lab's editor and switches to the Code Lab."""
    if st.button(label, key=key, icon=":material/terminal:"):
        st.session_state["code_lab_source"] = source
        st.session_state.pop("code_lab_result", None)
        # An explicit (empty) mapping: a bare switch_page would try to clear bound query params.
        st.switch_page(catalog.find("code-lab").path, query_params={})


def show_outcome(result: capture.Outcome, what: str = "It") -> None:
    """What a captured run did: ``what`` returns its value, or raises JAX's exception (a red
    box); then what it printed and warned. ``what`` is the app's own Markdown (a call in
    backticks); values and messages go in code blocks (nothing in them renders), paths scrubbed.
    """
    if result.ok:
        st.markdown(f":green[:material/check_circle:] {what} returns:")
        st.code(scrub(result.value), language=None, wrap_lines=True)
    else:
        st.error(f"{what} raises **{result.error_type}** (caught here):", icon=":material/error:")
        st.code(scrub(result.message), language=None, wrap_lines=True)
    if result.stdout:
        st.caption("Printed:")
        st.code(scrub(result.stdout.rstrip()), language=None)
    for warning in result.warnings:
        st.warning(markdown.escape(scrub(warning)), icon=":material/warning:")

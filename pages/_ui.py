"""Small rendering helpers shared by the pages (UI only; the logic lives in ``jaxplay``).

Every page imports this module first: importing it also makes sure the page runs inside
``app.py``'s navigation (see :func:`_enter_app_navigation`) with the app's JAX settings.
"""

from __future__ import annotations

import inspect
import math
import uuid
from collections.abc import Callable
from typing import Any

import streamlit as st

from jaxplay.core.expr import ExprError
from jaxplay.hosting import environment, publicmode


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
        _rerun_same_address()


def _rerun_same_address() -> None:
    """Rerun, asking for the page by the address the visitor opened.

    A plain ``st.rerun()`` would ask for the legacy page's script: for an address that has no
    file of the same name (``/code-lab`` is ``pages/code_lab.py``) ``st.navigation`` would not
    find it and show Home. Asking by name lets the registry's navigation resolve the address,
    with the link's query string kept. Falls back to ``st.rerun()`` if Streamlit's internals
    differ from 1.67's.
    """
    try:
        from streamlit.runtime.scriptrunner_utils.script_requests import RerunData
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

        ctx = get_script_run_ctx()
        if ctx is None:
            return
        ctx.script_requests.request_rerun(
            RerunData(
                query_string=ctx.query_string,
                page_name=ctx.pages_manager.intended_page_name or "",
                cached_message_hashes=ctx.cached_message_hashes,
                context_info=ctx.context_info,
            )
        )
    except (ImportError, AttributeError, TypeError):
        st.rerun()
    st.empty()  # a yield point: the script runner stops here and starts the requested rerun
    st.stop()


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

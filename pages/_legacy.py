"""Streamlit's legacy ``pages/`` mode, left on a fresh server's first run (``_ui`` imports it).

Streamlit decides once per server, when the first visitor connects, whether the app uses its legacy
multipage mode: it does when a ``pages/`` folder sits beside the main script, until some run calls
``st.navigation`` (see ``PagesManager.uses_pages_directory`` and ``_mpa_v1`` in Streamlit's script
runner). In that mode the first visitor's address is matched against the *file names* in
``pages/`` (``pages/code-lab.py`` is ``/code-lab``) and the page runs on its own, without
``app.py``: no page config, no registry navigation, JAX set up without the simulated devices. An
address that is no file name would get "Page not found" over a frozen page, which is why every
page file is named as its address (:data:`jaxplay.hosting.catalog.TOPICS` says so, and a test
checks it). Here the first run of a page switches the mode off and reruns by the same address, so
the run goes through ``app.py`` and its ``st.navigation``, with the link's query string kept.
"""

from __future__ import annotations

import streamlit as st

from jaxplay.hosting import environment


def leave_legacy_mode() -> None:
    """Leave Streamlit's legacy ``pages/`` mode if this server started in it (a no-op after)."""
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

    A plain ``st.rerun()`` would ask for the legacy page's script hash, which ``st.navigation``
    does not know; asking by name lets the registry's navigation resolve the address, with the
    link's query string kept. Falls back to ``st.rerun()`` if Streamlit's internals differ from
    1.67's.
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


leave_legacy_mode()

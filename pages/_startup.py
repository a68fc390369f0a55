"""A server process's start-up, done once, by whichever visitor's run imports it first.

Every page and ``app.py`` import this module first (through :mod:`pages._ui`, as their first
import: ruff's import order puts ``pages`` before everything else). Python holds a module's
import lock while it runs, so when a room opens a link on a fresh server at the same moment, one
run does the start-up and the others wait for it. Two things must happen once, before any page's
code:

1. **JAX's process settings, and JAX itself.** :func:`jaxplay.hosting.environment.configure`
   pins the process to its cores and sets the simulated devices before the backend starts, and
   imports JAX. JAX's modules import each other in cycles: two threads importing it at once can
   each find the other's half-initialised module (``ImportError: cannot import name 'iinfo' from
   partially initialized module 'jax._src.dtypes'``). Here only one thread imports it.
2. **Leaving Streamlit's legacy ``pages/`` mode.** Streamlit decides once per server, when the
   first visitor connects, whether the app uses its legacy multipage mode: it does when a
   ``pages/`` folder sits beside the main script, until some run calls ``st.navigation`` (see
   ``PagesManager.uses_pages_directory`` and ``_mpa_v1`` in Streamlit's script runner). In that
   mode a run started with the visitor's address matched against the *file names* in ``pages/``
   (``pages/code-lab.py`` is ``/code-lab``) and runs that page on its own, without ``app.py``:
   no page config, no registry navigation, no visitor language. (An address that is no file
   name would get "Page not found", which is why every page file is named as its address:
   :data:`jaxplay.hosting.catalog.TOPICS` says so, and a test checks it.) Here the mode is
   switched off, and every run in flight (each started in that mode: no run has reached
   ``app.py``'s navigation before this import ends) is asked to rerun by the same address, so it
   goes through ``app.py``, with the link's query string kept. Nothing is raised here: each run
   stops at its next element (a yield point of the script runner), outside any import, so the
   runs waiting for this import get the module and not an ``ImportError``.
"""

from __future__ import annotations

import threading

from jaxplay.hosting import environment


def start() -> None:
    """The start-up above; its second part a no-op where the server is not in legacy mode."""
    environment.configure()
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        rerun_runs_in_flight()


def rerun_runs_in_flight() -> int:
    """Ask every script run of this process to rerun by the address its visitor opened; returns
    how many sessions were asked.

    Asking by page name, not by script hash: the legacy page's hash is one ``st.navigation``
    does not know, while the name lets the registry's navigation resolve the address. A run's
    context (its session, address and query string) is attached to its script thread; a session
    is asked once.
    """
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData
    from streamlit.runtime.scriptrunner_utils.script_run_context import (
        SCRIPT_RUN_CONTEXT_ATTR_NAME,
    )

    asked: set[str] = set()
    for thread in threading.enumerate():
        ctx = getattr(thread, SCRIPT_RUN_CONTEXT_ATTR_NAME, None)
        if ctx is None or ctx.session_id in asked:
            continue
        asked.add(ctx.session_id)
        ctx.script_requests.request_rerun(
            RerunData(
                query_string=ctx.query_string,
                page_name=ctx.pages_manager.intended_page_name or "",
                cached_message_hashes=ctx.cached_message_hashes,
                context_info=ctx.context_info,
            )
        )
    return len(asked)


start()

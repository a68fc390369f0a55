"""The Code Lab's views that are not its story: a shared link's notices and a run's results.

``pages/code-lab.py`` reads as what a visitor does (edit, inspect, run, share); how a run's
output, error, values, arrays and inspections are laid out is here, drawn from the data
``jaxplay.code_lab`` shapes. UI only, like every ``pages/_*.py`` helper (Streamlit's page scan
skips names starting with an underscore).
"""

from __future__ import annotations

from pages import _ui

from collections.abc import Callable, MutableMapping
from typing import Any

import pandas as pd
import streamlit as st

from jaxplay import code_lab, sandbox
from jaxplay.core.i18n import _
from jaxplay.hosting import snippets


def tell(shared: snippets.Shared) -> None:
    """The notices of a share or of a shared link (not found, expired, refused, …)."""
    for notice in shared.notices:
        st.warning(notice.text, icon=notice.kind.value)


def open_shared(store: Any, shared_id: str, state: MutableMapping[str, Any]) -> None:
    """Load a shared link's code into the editor, once per link (later edits are kept)."""
    state["code_lab_loaded_snippet"] = shared_id
    opened = snippets.open_link(store, shared_id)
    if opened.snippet is not None:
        state["code_lab_source"] = state["code_lab_snippet_code"] = opened.snippet.code
        state.pop("code_lab_result", None)
        st.toast(_("Loaded the shared snippet."), icon=":material/share:")
    tell(opened)


def _draw_failed(failed: sandbox.InspectionFailed) -> None:
    st.warning(_("This inspection failed:"), icon=":material/warning:")
    st.code(failed.error, language=None)


def _draw_timing(timing: sandbox.JitTiming) -> None:
    summary = code_lab.timing_summary(timing, isolated=sandbox.get_pool().isolated)
    for column, (label, value) in zip(st.columns(3), summary.metrics, strict=True):
        column.metric(label, value)
    st.caption(summary.caption)


#: How each inspection's result is shown, by its type.
DRAW: dict[type, Callable[[Any], None]] = {
    sandbox.InspectionFailed: _draw_failed,
    sandbox.JaxprText: lambda jaxpr: st.code(jaxpr.text, language=None),
    sandbox.JitTiming: _draw_timing,
}


def _show_error(error: sandbox.RunError, ran: str) -> None:
    failed = code_lab.failure(error, ran)
    st.error(failed.title, icon=":material/error:")
    st.code(failed.message, language=None, height=_ui.box_height(failed.message))
    if failed.marked:
        st.code(failed.marked, language=None)
    if failed.traceback:
        with st.expander(_("Traceback (your code's frames only)")):
            st.code(failed.traceback, language=None)


def _show_arrays(arrays: tuple[sandbox.ArraySummary, ...]) -> None:
    st.markdown(_("**Arrays**"))
    st.dataframe(pd.DataFrame(code_lab.array_table(arrays)), hide_index=True, key="code_lab_arrays")
    note = code_lab.array_table_note(arrays)
    if note:
        st.caption(note)
    # Keyed by position: names are the worker's, and a forged result may repeat one.
    for i, (_name, fig) in enumerate(code_lab.heatmaps(arrays)):
        _ui.chart(fig, key=f"code_lab_heatmap_{i}")


def show_result(
    ran: str, result: sandbox.RunResult, *, source: str, request: sandbox.InspectRequest | None
) -> None:
    """A run's results: what it printed, its error, the last line's value, its arrays and the
    inspections asked for (``ran`` is the code that ran; ``source`` what the editor holds)."""
    if ran != source:
        st.info(
            _("These are the results of an earlier version of the code."),
            icon=":material/history:",
        )
    if result.stdout or result.stderr:
        st.markdown(_("**Printed output**"))
        printed = result.stdout + result.stderr
        st.code(printed, language=None, height=_ui.box_height(printed, 500))
    if result.error is not None:
        _show_error(result.error, ran)
    if result.value_repr is not None:
        st.markdown(_("**Value of the last line**"))
        st.code(result.value_repr, language=None)
    if result.arrays:
        _show_arrays(result.arrays)
    waiting = code_lab.waiting_note(request, result)
    if waiting:
        st.info(waiting, icon=":material/pending:")
    for name, data in result.inspections.items():
        st.markdown(f"**{code_lab.inspector_label(name)}**")
        DRAW[type(data)](data)

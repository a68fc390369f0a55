"""The benchmarks' count of finished script runs, read from the app's websocket messages."""

from __future__ import annotations

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.RootContainer_pb2 import RootContainer

from benchmarks.load import RunCounter

Status = ForwardMsg.ScriptFinishedStatus


def _finished(status: int) -> bytes:
    message = ForwardMsg()
    message.script_finished = status
    return message.SerializeToString()


def _delta(root: int) -> bytes:
    message = ForwardMsg()
    message.metadata.delta_path.extend([root, 0])
    message.delta.new_element.markdown.body = "drawn"
    return message.SerializeToString()


def test_full_runs_count_and_a_run_cut_short_does_not() -> None:
    counter = RunCounter()
    for status in (Status.FINISHED_SUCCESSFULLY, Status.FINISHED_WITH_COMPILE_ERROR):
        counter._frame(_finished(status))
    assert counter.done == 2
    counter._frame(_finished(Status.FINISHED_EARLY_FOR_RERUN))
    counter._frame(b"\xff not a message")
    counter._frame("a text frame")
    assert counter.done == 2


def test_a_parts_rerun_counts_and_the_sidebars_refresh_does_not() -> None:
    """A widget inside a part of the page (an ``st.fragment``) reruns that part alone: a
    benchmark waiting for the run its change caused must see it end (the memory page's
    checkpointing panel waited 120 s for a full run that never came). The sidebar's queue line
    reruns itself while anything is queued: that must not end a wait early."""
    counter = RunCounter()
    counter._frame(_delta(RootContainer.SIDEBAR))
    counter._frame(_finished(Status.FINISHED_FRAGMENT_RUN_SUCCESSFULLY))
    assert counter.done == 0
    counter._frame(_delta(RootContainer.MAIN))
    counter._frame(_finished(Status.FINISHED_FRAGMENT_RUN_SUCCESSFULLY))
    assert counter.done == 1
    counter._frame(_finished(Status.FINISHED_FRAGMENT_RUN_SUCCESSFULLY))  # drew nothing since
    assert counter.done == 1

"""The benchmarks' count of finished script runs, read from the app's websocket messages."""

from __future__ import annotations

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from benchmarks.load import RunCounter

Status = ForwardMsg.ScriptFinishedStatus


def _finished(status: int) -> bytes:
    message = ForwardMsg()
    message.script_finished = status
    return message.SerializeToString()


def test_a_parts_rerun_counts_and_a_run_cut_short_does_not() -> None:
    """A widget inside a part of the page (an ``st.fragment``) reruns that part alone: a
    benchmark waiting for the run its change caused must see it end (the memory page's
    checkpointing panel waited 120 s for a full run that never came)."""
    counter = RunCounter()
    for status in (
        Status.FINISHED_SUCCESSFULLY,
        Status.FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
        Status.FINISHED_WITH_COMPILE_ERROR,
    ):
        counter._frame(_finished(status))
    assert counter.done == 3
    counter._frame(_finished(Status.FINISHED_EARLY_FOR_RERUN))
    counter._frame(b"\xff not a message")
    counter._frame("a text frame")
    assert counter.done == 3

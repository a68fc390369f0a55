"""The protocol client (``pages/_visitor.py``) is bounded whatever its server sends: a run that
never ends, a message too large or not a ``ForwardMsg``, a server that cannot be reached; each is a
:class:`ProtocolError` (which the warm-up reports and the load benchmark counts), not a hang or a
crash. A fake socket stands in for the server."""

from __future__ import annotations

import pages._visitor as visitor_module
from pages._visitor import ProtocolError, Visitor

import socket
import time

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg


class FakeSocket:
    """Answers each ``recv`` with the next of ``payloads`` (the last one forever)."""

    def __init__(self, payloads: list[bytes], delay_s: float = 0.0) -> None:
        self.payloads, self.delay_s = payloads, delay_s
        self.sent: list[bytes] = []
        self.timeouts: list[float] = []
        self.closed = False

    def send_binary(self, data: bytes) -> None:
        self.sent.append(data)

    def settimeout(self, seconds: float) -> None:
        self.timeouts.append(seconds)

    def recv(self) -> bytes:
        time.sleep(self.delay_s)
        return self.payloads.pop(0) if len(self.payloads) > 1 else self.payloads[0]

    def close(self) -> None:
        self.closed = True


def _finished(status: int) -> bytes:
    message = ForwardMsg()
    message.script_finished = status
    return message.SerializeToString()


def _visitor(fake: FakeSocket, timeout_s: float = 5.0) -> Visitor:
    visitor = Visitor("http://127.0.0.1:9", timeout_s=timeout_s)
    visitor._socket = fake  # type: ignore[assignment]
    return visitor


def test_a_run_ends_at_its_script_finished() -> None:
    fake = FakeSocket([_finished(ForwardMsg.FINISHED_SUCCESSFULLY)])
    run = _visitor(fake).open("jit")
    assert run.status == "FINISHED_SUCCESSFULLY" and run.messages == 1 and len(fake.sent) == 1


def test_a_run_that_reruns_forever_is_cut_at_its_timeout() -> None:
    fake = FakeSocket([_finished(ForwardMsg.FINISHED_EARLY_FOR_RERUN)], delay_s=0.01)
    started = time.monotonic()
    with pytest.raises(ProtocolError, match="did not finish within 0.3 s"):
        _visitor(fake, timeout_s=0.3).open("jit")
    assert time.monotonic() - started < 5
    assert fake.closed
    # Each wait for a message is given only what is left of the run's time.
    assert max(fake.timeouts) <= 0.3 and min(fake.timeouts) < 0.3


def test_a_run_that_sends_too_many_messages_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(visitor_module, "MAX_MESSAGES", 50)
    fake = FakeSocket([_finished(ForwardMsg.FINISHED_EARLY_FOR_RERUN)])
    with pytest.raises(ProtocolError, match="more than 50 messages"):
        _visitor(fake).open("jit")


def test_a_message_too_large_is_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(visitor_module, "MAX_MESSAGE_BYTES", 1000)
    fake = FakeSocket([b"\x00" * 1001])
    with pytest.raises(ProtocolError, match="a message of 1001 bytes"):
        _visitor(fake).open("jit")
    assert fake.closed


def test_bytes_that_are_not_a_forward_msg_are_a_protocol_error() -> None:
    fake = FakeSocket([b"\xff\xff\xff\xff\xff"])
    with pytest.raises(ProtocolError, match="not a ForwardMsg"):
        _visitor(fake).open("jit")


def test_a_runs_lists_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(visitor_module, "MAX_ITEMS", 3)
    note = ForwardMsg()
    note.delta.new_element.markdown.body = "hello"
    exception = ForwardMsg()
    exception.delta.new_element.exception.type = "ValueError"
    fake = FakeSocket(
        [note.SerializeToString()] * 5
        + [exception.SerializeToString()] * 5
        + [_finished(ForwardMsg.FINISHED_SUCCESSFULLY)]
    )
    run = _visitor(fake).open("jit")
    assert run.messages == 11
    assert run.texts == ["hello"] * 3 and len(run.errors) == 3


def test_a_server_that_cannot_be_reached_is_a_protocol_error() -> None:
    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with pytest.raises(ProtocolError, match="could not load"):
        Visitor(f"http://127.0.0.1:{port}", timeout_s=5).open("jit")

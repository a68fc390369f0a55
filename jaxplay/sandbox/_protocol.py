"""Framing of the messages between the server and a worker, over a pipe of their own.

Why not the worker's stdout: user code owns fd 1 and 2. It may print binary junk, close them, or
write to them with ``os.write``; none of that may corrupt or lose the result. Messages are JSON
(never pickle: the worker runs untrusted code, so whatever it sends is untrusted data), each
framed as an 8-byte ASCII hex length and the UTF-8 body, with a hard size cap on the reading side.
"""

from __future__ import annotations

import json
import os
from typing import Any

#: Largest message the server accepts from a worker. A visitor's run is stopped at its own,
#: smaller ``Limits.result_bytes`` before this; the server's compute jobs may send this much (the
#: memory page's sampled gradients at its largest sizes came to about 6 MB).
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
_HEADER = 8


class ProtocolError(Exception):
    """A worker sent something that is not a well-formed message."""


def encode(message: dict[str, Any]) -> bytes:
    """One framed message: ``%08x`` length, then the JSON body."""
    body = json.dumps(message, separators=(",", ":"), default=str).encode("utf-8")
    if len(body) >= 16**_HEADER:
        raise ProtocolError("message too large to frame")
    return f"{len(body):08x}".encode("ascii") + body


def write_message(fd: int, message: dict[str, Any]) -> None:
    """Write one framed message to ``fd`` completely (blocking)."""
    data = memoryview(encode(message))
    while data:
        written = os.write(fd, data)
        data = data[written:]


def read_message(fd: int) -> dict[str, Any] | None:
    """Read one framed message from ``fd`` (blocking); ``None`` at end of file.

    Used by the worker for its job, which comes from the trusted server.
    """
    header = _read_exact(fd, _HEADER)
    if header is None:
        return None
    size = _parse_header(header)
    body = _read_exact(fd, size)
    if body is None:
        raise ProtocolError("end of file inside a message")
    return decode_body(body)


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = os.read(fd, size - len(chunks))
        if not chunk:
            return None if not chunks else bytes(chunks)
        chunks += chunk
    return bytes(chunks)


def _parse_header(header: bytes) -> int:
    try:
        text = header.decode("ascii")
        size = int(text, 16)
    except (UnicodeDecodeError, ValueError) as err:
        raise ProtocolError(f"bad frame header {header!r}") from err
    if not all(c in "0123456789abcdef" for c in text):
        raise ProtocolError(f"bad frame header {header!r}")
    if size > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message of {size} bytes exceeds {MAX_MESSAGE_BYTES}")
    return size


def decode_body(body: bytes) -> dict[str, Any]:
    """Parse a message body; anything but a JSON object is a :class:`ProtocolError`."""
    try:
        value = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise ProtocolError(f"message is not JSON: {err}") from err
    if not isinstance(value, dict):
        raise ProtocolError("message is not a JSON object")
    return value


class FrameReader:
    """Incremental, size-capped reader of framed messages from untrusted, non-blocking data.

    Feed it whatever bytes arrive (:meth:`feed`); it returns the complete messages so far.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._buffer += data
        messages = []
        while len(self._buffer) >= _HEADER:
            size = _parse_header(bytes(self._buffer[:_HEADER]))
            if len(self._buffer) < _HEADER + size:
                break
            body = bytes(self._buffer[_HEADER : _HEADER + size])
            del self._buffer[: _HEADER + size]
            messages.append(decode_body(body))
        return messages

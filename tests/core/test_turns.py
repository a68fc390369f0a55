"""The measurement lock: re-entrant, and a caller that waits is told its place in the queue."""

from __future__ import annotations

import threading
import time

from jaxplay.core import turns


def test_lock_is_reentrant_and_a_waiting_caller_is_told() -> None:
    told: list[int] = []
    entered = threading.Event()

    def visitor() -> None:
        with turns.exclusive(on_wait=told.append):
            entered.set()

    with turns.exclusive(), turns.exclusive():
        worker = threading.Thread(target=visitor)
        worker.start()
        deadline = time.monotonic() + 5
        while turns.waiting_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert turns.waiting_count() == 1
        assert not entered.is_set()
    worker.join(5)
    assert entered.is_set() and told == [1]
    assert turns.waiting_count() == 0

"""The quiet machine of the ``quiet`` tests (``tests/support/quiet.py``): a worker alone holds
it against the others, and quiet tests one after another keep it without waiting again."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from tests.support.quiet import MachineShare


def _taken_in_thread(share: MachineShare, exclusive: bool) -> threading.Event:
    done = threading.Event()

    def take() -> None:
        share.take(exclusive)
        done.set()

    threading.Thread(target=take, daemon=True).start()
    return done


def test_a_worker_alone_keeps_the_others_out_until_it_releases(tmp_path: Path) -> None:
    quiet, other = MachineShare(tmp_path), MachineShare(tmp_path)
    quiet.take(exclusive=True)
    other_in = _taken_in_thread(other, exclusive=False)
    assert not other_in.wait(0.3), "another worker ran beside a quiet test"
    started = time.monotonic()
    quiet.take(exclusive=True)  # the next quiet test: kept, no wait
    assert time.monotonic() - started < 0.2 and not other_in.is_set()
    quiet.release()
    assert other_in.wait(5), "the other worker never got the machine back"
    other.release()


def test_a_quiet_test_waits_for_the_others_tests_then_goes_first(tmp_path: Path) -> None:
    quiet, other = MachineShare(tmp_path), MachineShare(tmp_path)
    other.take(exclusive=False)
    quiet_in = _taken_in_thread(quiet, exclusive=True)
    assert not quiet_in.wait(0.3), "a quiet test ran beside another worker's test"
    other.release()
    assert quiet_in.wait(5)
    # The turnstile: the other worker's next test waits for the quiet one.
    other_in = _taken_in_thread(other, exclusive=False)
    assert not other_in.wait(0.3)
    quiet.release()
    assert other_in.wait(5)
    other.release()


def test_two_workers_share_the_machine_between_quiet_tests(tmp_path: Path) -> None:
    one, two = MachineShare(tmp_path), MachineShare(tmp_path)
    one.take(exclusive=False)
    assert _taken_in_thread(two, exclusive=False).wait(5)
    one.release()
    two.release()
    assert one.held is None and two.held is None

"""The measurement lock: re-entrant, and a caller that waits is told its place in the queue."""

from __future__ import annotations

import threading
import time

from jaxplay.core import measure_lock
from tests.support.progress import Told


def test_lock_is_reentrant_and_a_waiting_caller_is_told() -> None:
    progress = Told()
    entered = threading.Event()

    def visitor() -> None:
        with measure_lock.exclusive(progress):
            entered.set()

    with measure_lock.exclusive(), measure_lock.exclusive():
        worker = threading.Thread(target=visitor)
        worker.start()
        deadline = time.monotonic() + 5
        while measure_lock.waiting_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert measure_lock.waiting_count() == 1
        assert not entered.is_set()
    worker.join(5)
    assert entered.is_set() and progress.told == [("queued", 1)]
    assert measure_lock.waiting_count() == 0


def test_a_turn_takes_the_lock_only_when_a_computation_enters_it() -> None:
    """A box whose results are all cached never takes the lock (nor its throttle); its first
    computation does, with the box's progress, and its later ones measure in the same turn."""
    throttled: list[str] = []

    def throttle(visitor: str) -> float:
        throttled.append(visitor)
        return 0.0

    measure_lock.set_throttle(throttle)
    try:
        progress, taken = Told("visitor-a"), []
        turn = measure_lock.Turn(progress, taken=lambda: taken.append(True))
        assert not turn.held
        turn.release()  # nothing computed: nothing to give back
        assert measure_lock.MEASURE_LOCK.acquire(blocking=False)  # free all along
        measure_lock.MEASURE_LOCK.release()
        with turn, measure_lock.exclusive():  # a computation (sandbox.timed) enters the turn
            assert turn.held
        with turn, measure_lock.exclusive():  # the box's next one: the same measurement
            pass
        assert turn.held and taken == [True] and throttled == ["visitor-a"]
        got = threading.Event()

        def another_measurement() -> None:
            with measure_lock.exclusive():
                got.set()

        other = threading.Thread(target=another_measurement)
        other.start()
        assert not got.wait(0.2)  # still held between the box's computations
        turn.release()
        other.join(5)
        assert got.is_set() and not turn.held
    finally:
        measure_lock.set_throttle(None)


def test_a_turn_waits_its_place_and_says_so() -> None:
    progress = Told("visitor-b")
    turn = measure_lock.Turn(progress)
    entered = threading.Event()

    def box() -> None:
        with turn:
            entered.set()
        turn.release()

    with measure_lock.exclusive():
        worker = threading.Thread(target=box)
        worker.start()
        deadline = time.monotonic() + 5
        while measure_lock.waiting_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert not entered.is_set()
    worker.join(5)
    assert entered.is_set() and progress.of("queued") == [1]


def test_the_claims_check_takes_turns_with_measurements(monkeypatch) -> None:
    """A claim's check is JAX work on the measurement's cores: it waits for the lock."""
    from jaxplay.core import claims

    ran = threading.Event()

    def check(_case: object) -> claims.Verdict:
        ran.set()
        return claims.Verdict(True, "ran")

    key = "demo.waits_its_turn"
    monkeypatch.setitem(claims.REGISTRY, key, claims.Claim(key, "a check", check, (None,)))
    checking = threading.Thread(target=claims.check_all, args=([key],))
    with measure_lock.exclusive():
        checking.start()
        deadline = time.monotonic() + 5
        while measure_lock.waiting_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert measure_lock.waiting_count() == 1 and not ran.is_set()
    checking.join(5)
    assert ran.is_set()


_HOLDER = """
import os, sys, time
from jaxplay.core import measure_lock
measure_lock.share_with_host(sys.argv[1] or None)
if sys.argv[2]:  # a server pinned to these cores
    os.sched_setaffinity(0, {int(n) for n in sys.argv[2].split(",")})
print("ready", flush=True)
sys.stdin.readline()  # go
class Waited(measure_lock.Unwatched):
    def queued(self, ahead):
        waited.append(ahead)

waited = []
with measure_lock.exclusive(Waited()):
    start = time.time()
    time.sleep(1.0)
    print(start, time.time(), len(waited), flush=True)
"""


def _hold_together(lock: str, cores: tuple[str, str] = ("", "")) -> list[tuple[float, float, int]]:
    """Two processes that each hold the measurement lock for 1 s, started together (each on
    the cores given, as ``0,1``, or on every core)."""
    import subprocess
    import sys

    from jaxplay.hosting import catalog

    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _HOLDER, lock, on],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=catalog.ROOT,
        )
        for on in cores
    ]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    spans = []
    for p in procs:
        out, _ = p.communicate(timeout=30)
        start, end, waited = out.split()
        spans.append((float(start), float(end), int(waited)))
    return sorted(spans)


def test_server_processes_sharing_a_lock_file_never_measure_at_once(tmp_path) -> None:
    """Several server processes on one host: with ``JAXPLAY_MEASURE_LOCK`` their timings take
    turns (the second is told it waits); without it they overlap."""
    (first_start, first_end, _), (second_start, _, second_waited) = _hold_together(
        str(tmp_path / "measure.lock")
    )
    assert second_start >= first_end and second_waited == 1
    (_, first_end, _), (second_start, _, _) = _hold_together("")
    assert second_start < first_end  # each process alone: they overlapped


def test_processes_on_disjoint_cores_measure_at_once_and_overlapping_ones_take_turns(
    tmp_path,
) -> None:
    """The host-wide scheduler: a room's processes pinned to their own cores measure at once
    (no two timings share a core), while processes whose cores overlap take turns."""
    import os

    import pytest

    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("one core: no disjoint cores to measure on")
    lock = str(tmp_path / "measure.lock")
    a, b = str(cores[0]), str(cores[1])
    (_, first_end, _), (second_start, _, waited) = _hold_together(lock, (a, b))
    assert second_start < first_end and waited == 0  # at once, on cores of their own
    (_, first_end, _), (second_start, _, waited) = _hold_together(lock, (f"{a},{b}", b))
    assert second_start >= first_end and waited == 1  # core b is both's: one waited


def test_a_measurement_holds_each_of_its_cores_then_the_accelerator_in_one_order() -> None:
    assert measure_lock.host_resources({3, 1, 10}, accelerated=False) == ["cpu1", "cpu3", "cpu10"]
    assert measure_lock.host_resources({0}, accelerated=True) == ["cpu0", "accelerator"]
    # This process: its affinity, and the accelerator only where JAX's backend is one.
    import os

    import jax

    mine = [f"cpu{n}" for n in sorted(os.sched_getaffinity(0))]
    accelerated = ["accelerator"] if jax.default_backend() != "cpu" else []
    assert measure_lock.host_resources() == mine + accelerated

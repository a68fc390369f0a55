"""The state page's training runs take their turn: each new seed in a link is seconds of server CPU.

The hardening issue measured 2.7 s of server CPU per ``/state?state_seed=N`` with a new seed and
no limiter: four such clients made a bystander's page about 5× slower. A run now goes through
the measurement lock and its per-visitor and server-wide throttle, as the jit page's do.
"""

from __future__ import annotations

import threading
import time

import pytest

from jaxplay import state
from jaxplay.core import measure_lock
from jaxplay.hosting import publicmode
from jaxplay.hosting.ratelimit import RateLimiter
from tests.support.progress import Told


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def setup(seed: int) -> state.Setup:
    return state.Setup(seed, 10, 2, "adam", 0.03)


def test_new_seed_runs_wait_for_the_visitor_and_server_limits() -> None:
    clock = FakeClock()
    per_visitor = RateLimiter(2, 60.0, clock=clock)
    server = RateLimiter(30, 60.0, clock=clock)
    measure_lock.set_throttle(publicmode.both_limits(per_visitor, server), sleep=clock.sleep)
    try:
        ann = Told("ann")
        for seed in (1, 2, 3):
            state.train("threaded", setup(seed), ann)
    finally:
        measure_lock.set_throttle(None)
    # Two runs a minute for one visitor: the third new seed waited for its turn.
    assert clock.slept == [pytest.approx(30.0)] and ann.of("throttled") == [pytest.approx(30.0)]


def test_a_run_queues_behind_a_measurement_in_progress() -> None:
    done = threading.Event()

    def run() -> None:
        state.train("threaded", setup(7))
        done.set()

    with measure_lock.exclusive():
        worker = threading.Thread(target=run)
        worker.start()
        deadline = time.monotonic() + 60
        waiting = measure_lock.waiting_count
        while waiting() == 0 and time.monotonic() < deadline and not done.is_set():
            time.sleep(0.01)
        assert measure_lock.waiting_count() == 1 and not done.is_set()
    worker.join(120)
    assert done.is_set()

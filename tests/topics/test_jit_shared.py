"""Measurements shared by every visitor: one per key, joined while running, bounded, refreshable."""

from __future__ import annotations

import threading

import pytest

from jaxplay.jit import _measurement
from jaxplay.jit._shared import SharedResults


def test_a_second_caller_joins_the_measurement_in_progress_and_sees_its_stages() -> None:
    store: SharedResults[str] = SharedResults(max_entries=4)
    started, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def slow(report):
        calls.append("measured")
        report("compiling", 0.5)
        started.set()
        release.wait(10)
        return "result"

    first: list[object] = []
    owner = threading.Thread(target=lambda: first.append(store.get_or_measure("k", slow)))
    owner.start()
    started.wait(10)
    seen: list[tuple[str, float | None]] = []

    def waiter_report(stage: str, fraction: float | None) -> None:
        seen.append((stage, fraction))
        release.set()  # the waiter saw the other one's stage: let it finish

    second = store.get_or_measure("k", lambda report: "never", waiter_report, poll_s=0.01)
    owner.join(10)
    assert calls == ["measured"] and store.measured == 1
    assert second.value == "result" and first[0].value == "result"
    assert seen and seen[0][0].startswith("compiling") and seen[0][1] == 0.5


def test_kept_results_are_returned_without_measuring_and_force_replaces_them() -> None:
    store: SharedResults[int] = SharedResults(max_entries=4)
    counter = iter(range(100))
    first = store.get_or_measure("k", lambda report: next(counter))
    again = store.get_or_measure("k", lambda report: next(counter))
    assert (first.value, again.value, store.measured) == (0, 0, 1)
    forced = store.get_or_measure("k", lambda report: next(counter), force=True)
    assert (forced.value, forced.number) == (1, 2)
    assert store.get("k").value == 1


def test_the_store_is_bounded_least_recently_used_first() -> None:
    store: SharedResults[str] = SharedResults(max_entries=2)
    for key in ("a", "b"):
        store.get_or_measure(key, lambda report, key=key: key)
    store.get("a")  # used: "b" is now the oldest
    store.get_or_measure("c", lambda report: "c")
    assert store.get("b") is None and store.get("a") is not None and store.get("c") is not None


def test_the_default_view_is_never_dropped() -> None:
    """A room's workloads pushed the default out: the next visitor paid the whole first visit."""
    store: SharedResults[str] = SharedResults(max_entries=2, keep=frozenset({"default"}))
    store.get_or_measure("default", lambda report: "default")
    for key in "abcde":
        store.get_or_measure(key, lambda report, key=key: key)
    assert store.get("default") is not None
    assert store.get("e") is not None and store.get("d") is None  # the others: LRU, as before
    assert store.measured == 6


def test_the_jit_pages_default_is_kept() -> None:
    from jaxplay import jit

    assert jit.key_of(jit.DEFAULT_WORKLOAD) in _measurement.MEASUREMENTS.keep


def test_a_failure_is_not_kept_and_reaches_the_callers_waiting_for_it() -> None:
    store: SharedResults[str] = SharedResults(max_entries=2)
    started, release = threading.Event(), threading.Event()

    def failing(report):
        started.set()
        release.wait(10)
        raise TypeError("x @ x needs a square x")

    errors: list[BaseException] = []

    def owner() -> None:
        try:
            store.get_or_measure("k", failing)
        except TypeError as err:
            errors.append(err)

    thread = threading.Thread(target=owner)
    thread.start()
    started.wait(10)
    timer = threading.Timer(0.2, release.set)
    timer.start()
    with pytest.raises(TypeError, match="square"):
        store.get_or_measure("k", lambda report: "never", poll_s=0.01)
    thread.join(10)
    assert errors and store.get("k") is None
    assert store.get_or_measure("k", lambda report: "fine").value == "fine"


class _Stopped(BaseException):
    """Like Streamlit's StopException: a script run ended, not an error of the measurement."""


def test_a_measurement_stopped_by_its_page_is_taken_over_by_a_waiting_caller() -> None:
    store: SharedResults[str] = SharedResults(max_entries=2)
    started, release = threading.Event(), threading.Event()

    def stopped(report):
        started.set()
        release.wait(10)
        raise _Stopped

    def owner() -> None:
        with pytest.raises(_Stopped):
            store.get_or_measure("k", stopped)

    thread = threading.Thread(target=owner)
    thread.start()
    started.wait(10)
    threading.Timer(0.2, release.set).start()
    kept = store.get_or_measure("k", lambda report: "measured by the waiter", poll_s=0.01)
    thread.join(10)
    assert kept.value == "measured by the waiter" and store.measured == 2

"""The capacity benchmark's counters (``benchmarks/_cpu.py``) and model
(``benchmarks/capacity_model.py``): the parts whose mistakes would skew its figures."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from benchmarks import _cpu
from benchmarks import capacity_model as cap

BURN = """
import os, time
if os.fork() == 0:  # the child burns CPU after its parent has exited without waiting for it
    time.sleep(0.2)
    end = time.process_time() + 0.4
    while time.process_time() < end:
        pass
    os._exit(0)
os._exit(0)
"""


def test_cgroup_counts_a_process_whose_parent_never_waited_for_it() -> None:
    """The single-use sandbox worker's case: /proc's cutime would lose this CPU; a cgroup not."""
    group = _cpu.CpuCgroup()
    if not group.available:
        pytest.skip(f"no cgroup here: {group.why}")
    try:
        subprocess.run([*group.prefix(), sys.executable, "-c", BURN], check=True)
        deadline = time.monotonic() + 30
        while group.pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not group.pids()
        assert group.usage_s() >= 0.4
    finally:
        group.remove()


def record(kind: str, page: str, net: float, python: float = 0.0, lock: float = 0.0) -> dict:
    return {"kind": kind, "page": page, "net_s": net, "python_s": python, "lock_s": lock}


def test_model_inputs_are_means_over_pages_of_each_pages_median() -> None:
    data = {
        "records": [
            record(cap.VIEW_CACHED, "a", 1.0),
            record(cap.VIEW_CACHED, "a", 3.0),
            record(cap.VIEW_CACHED, "a", 100.0),  # a's median is 3
            record(cap.VIEW_CACHED, "b", 1.0),
            record(cap.VIEW_COLD, "a", 10.0),
            record(cap.VIEW_COLD, "b", 4.0),
            record(cap.RUN, "code-lab", 0.8, python=0.2),
        ],
        "idle": [
            {"per_session_cpu_per_s": 0.01, "server_alone_cpu_per_s": 0.005},
            {"per_session_cpu_per_s": 0.03, "server_alone_cpu_per_s": 0.007},
        ],
    }
    inputs = cap.model_inputs(data)
    assert inputs.costs[cap.VIEW_CACHED].cpu_s == pytest.approx(2.0)
    assert inputs.costs[cap.VIEW_COLD].cpu_s == pytest.approx(7.0)
    assert inputs.costs[cap.RUN] == cap.Cost(0.8, 0.2, 0.0)
    assert inputs.costs[cap.CHANGE_NEW].cpu_s == 0.0
    assert inputs.idle_per_s == pytest.approx(0.02)
    assert inputs.cold_tour_s == pytest.approx((10.0 - 3.0) + (4.0 - 1.0))
    # Measured without views again: each view counts as the browser's first.
    assert inputs.costs[cap.VIEW_AGAIN] == inputs.costs[cap.VIEW_CACHED]
    assert inputs.arrival_s != inputs.arrival_s  # not measured


def test_a_browsers_first_view_of_a_page_is_a_one_off_per_visitor() -> None:
    """The steady state counts views again; the first views (their files served) are the
    visitor's arrival, unless the pattern says a share of views are first ones."""
    data = {
        "records": [
            record(cap.VIEW_CACHED, "a", 0.25),
            record(cap.VIEW_CACHED, "b", 0.10),
            record(cap.VIEW_CACHED, "c", 0.02),
            record(cap.VIEW_AGAIN, "a", 0.05),
            record(cap.VIEW_AGAIN, "b", 0.03),
            record(cap.VIEW_AGAIN, "c", 0.025),  # noise: no negative one-off
        ],
        "idle": [],
    }
    inputs = cap.model_inputs(data)
    assert inputs.costs[cap.VIEW_AGAIN].cpu_s == pytest.approx(0.035)
    assert inputs.arrival_s == pytest.approx((0.25 - 0.05) + (0.10 - 0.03))
    steady = cap.capacity(inputs, cap.Pattern(30, 10, 60, 0.0, 0.25, 0.7, 16))
    assert steady["demand"] == pytest.approx(0.035 / 30)
    mixed = cap.capacity(inputs, cap.Pattern(30, 10, 60, 0.0, 0.25, 0.7, 16, first_view_share=0.5))
    assert mixed["demand"] == pytest.approx((0.5 * 0.37 / 3 + 0.5 * 0.035) / 30)


def test_capacity_is_the_smallest_of_the_cpu_gil_and_lock_bounds() -> None:
    costs = {
        cap.VIEW_COLD: cap.Cost(9.0, 9.0, 9.0),  # weighted 0: cold views are left out below
        cap.VIEW_CACHED: cap.Cost(5.0, 5.0, 0.0),  # weighted 0: a one-off per visitor
        cap.VIEW_AGAIN: cap.Cost(0.3, 0.3, 0.0),
        cap.CHANGE_NEW: cap.Cost(1.0, 0.2, 2.0),
        cap.CHANGE_CACHED: cap.Cost(0.2, 0.2, 0.0),
        cap.RUN: cap.Cost(0.9, 0.1, 0.0),
    }
    inputs = cap.Inputs(costs=costs, idle_per_s=0.004, alone_per_s=0.0, cold_tour_s=0.0)
    pattern = cap.Pattern(30, 10, 60, 0.0, 0.5, 0.7, 16)
    c = cap.capacity(inputs, pattern)
    demand = 0.004 + 0.3 / 30 + (0.5 * 1.0 + 0.5 * 0.2) / 10 + 0.9 / 60
    assert c["demand"] == pytest.approx(demand)
    assert c["per_core"] == pytest.approx(0.7 / demand)
    assert c["cpu_bound"] == pytest.approx(16 * 0.7 / demand)
    python = 0.004 + 0.3 / 30 + (0.5 * 0.2 + 0.5 * 0.2) / 10 + 0.1 / 60
    assert c["gil_bound"] == pytest.approx(0.7 / python)
    assert c["lock_bound"] == pytest.approx(0.7 / (0.5 * 2.0 / 10))
    assert c["visitors"] == min(c["cpu_bound"], c["gil_bound"], c["lock_bound"])
    assert c["visitors"] == c["lock_bound"]
    # A room: each process its own GIL, each pinned process its own measurement slot.
    room = cap.capacity(inputs, cap.Pattern(30, 10, 60, 0.0, 0.5, 0.7, 16, processes=8, slots=8))
    assert room["gil_bound"] == pytest.approx(8 * c["gil_bound"])
    assert room["lock_bound"] == pytest.approx(8 * c["lock_bound"])
    assert room["cpu_bound"] == pytest.approx(c["cpu_bound"])
    assert room["visitors"] == min(room["cpu_bound"], room["gil_bound"], room["lock_bound"])


class _NoCgroup:
    """A cgroup that could not be made (as on a host that refuses one): counters fall back."""

    available = False


def test_a_servers_meter_reads_its_own_process_and_its_tree(tmp_path) -> None:
    """The meter's counters name the server's process explicitly: they once read an attribute the
    shared sampler no longer had, and the benchmark failed at its first quiet second."""
    from benchmarks.capacity import Meter

    tree = _cpu.ProcTree(os.getpid())
    meter = Meter(_NoCgroup(), tree, os.getpid(), tmp_path / "probe.json")
    *_, tree_before, server_before = meter._counters()
    end = time.process_time() + 0.3
    while time.process_time() < end:  # CPU of this process that both counters must see
        pass
    *_, tree_after, server_after = meter._counters()
    assert 0.2 <= server_after - server_before <= 0.6  # /proc counts in ticks of 10 ms
    assert tree_after - tree_before >= server_after - server_before - 0.05

"""The local multi-process run: a correct cross-process psum, and no process left behind, also when
a process never arrives and the run times out."""

from __future__ import annotations

import os

import pytest

from jaxplay import devices


def _gone(pid: int) -> bool:
    """True when no process ``pid`` exists (reaped: not even a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_two_processes_agree_on_the_global_devices_and_the_psum() -> None:
    run = devices.run_local_cluster(2, local_devices=2, timeout_s=120)
    assert run.status == "ok", run.errors
    assert run.returncodes == (0, 0)
    assert [r.process_id for r in run.reports] == [0, 1]
    assert all(r.process_count == 2 for r in run.reports)
    # Four devices in all, two per process, every process sees the same global list.
    assert [d.process_index for d in run.global_devices] == [0, 0, 1, 1]
    assert all(r.global_devices == run.global_devices for r in run.reports)
    for r in run.reports:
        own = {d.id for d in run.global_devices if d.process_index == r.process_id}
        assert set(r.local_devices) == own
    # Device g contributes g + 1: numpy's total, and every process got it.
    values = [v for r in run.reports for v in r.local_values]
    assert sorted(values) == [1.0, 2.0, 3.0, 4.0]
    assert run.expected_psum == sum(values) == 10.0
    assert [r.psum for r in run.reports] == [10.0, 10.0]
    assert run.psum_correct
    assert all(_gone(pid) for pid in run.pids)


def test_a_missing_process_times_out_and_nothing_is_left_behind() -> None:
    run = devices.run_local_cluster(2, local_devices=1, timeout_s=3, launch=1)
    assert run.status == "timeout"
    assert run.launched == 1 and len(run.pids) == 1
    assert run.returncodes[0] is not None and run.returncodes[0] < 0  # killed by a signal
    assert run.reports == () and not run.psum_correct
    assert "killed after the timeout" in run.errors[0]
    assert 3 <= run.elapsed_s < 30
    assert all(_gone(pid) for pid in run.pids)


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="num_processes"):
        devices.run_local_cluster(5)
    with pytest.raises(ValueError, match="local_devices"):
        devices.run_local_cluster(2, local_devices=0)


def test_worker_command_is_the_one_a_host_would_run() -> None:
    cmd = devices.worker_command("10.0.0.1:1234", 4, 3, 2)
    assert cmd[1:3] == ["-m", "jaxplay.devices._multiprocess_worker"]
    assert "--coordinator=10.0.0.1:1234" in cmd and "--process-id=3" in cmd
    assert devices.expected_psum(4, 2) == 36.0

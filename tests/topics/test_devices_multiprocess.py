"""The local multi-process run: a correct cross-process psum, and no process left behind, also when
a process never arrives and the run times out."""

from __future__ import annotations

import os

import pytest

from jaxplay import devices, sandbox
from jaxplay.devices import _multiprocess


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
    assert _multiprocess.expected_psum(4, 2) == 36.0


def _public_pool(**config: object) -> sandbox.WorkerPool:
    """A pool with public mode's limits and no spare workers (reserving needs none)."""
    return sandbox.WorkerPool(sandbox.RunnerConfig(public=True, spares=0, **config))


def test_a_visitors_launch_counts_as_a_code_lab_run() -> None:
    """Public mode's per-visitor rate limit holds for the demo: the second launch in a minute
    is refused with the reason, and nothing is started."""
    pool = _public_pool(runs_per_minute=1)
    try:
        first = devices.launch_cluster(2, 1, timeout_s=1, launch=1, visitor="v", pool=pool)
        assert first.status == "timeout"
        with pytest.raises(devices.Refused, match="at most 1 pieces of code a minute"):
            devices.launch_cluster(2, 1, timeout_s=1, launch=1, visitor="v", pool=pool)
        # Another visitor has its own allowance.
        other = devices.launch_cluster(2, 1, timeout_s=1, launch=1, visitor="w", pool=pool)
        assert other.status == "timeout"
    finally:
        pool.shutdown()


def test_a_full_queue_refuses_the_launch() -> None:
    pool = _public_pool(max_queued=0)
    try:
        with pytest.raises(devices.Refused, match="busy"):
            devices.launch_cluster(2, 1, timeout_s=1, visitor="v", pool=pool)
    finally:
        pool.shutdown()


def test_bad_sizes_are_refused_before_a_run_is_counted() -> None:
    pool = _public_pool(runs_per_minute=1)
    try:
        with pytest.raises(ValueError, match="num_processes"):
            devices.launch_cluster(9, 1, visitor="v", pool=pool)
        run = devices.launch_cluster(2, 1, timeout_s=1, launch=1, visitor="v", pool=pool)
        assert run.status == "timeout"  # the refused call spent nothing
    finally:
        pool.shutdown()


def test_stderr_names_processes_by_index_not_host_pid() -> None:
    from types import SimpleNamespace

    from jaxplay.devices._multiprocess import _without_pids

    procs = [SimpleNamespace(pid=4242), SimpleNamespace(pid=77)]
    text = "E1201 coordinator: task 4242 died; pid 77 waits; port 42420"
    assert _without_pids(text, procs) == (  # type: ignore[arg-type]
        "E1201 coordinator: task process 0 died; pid process 1 waits; port 42420"
    )
    run = devices.run_local_cluster(2, local_devices=1, timeout_s=2, launch=1)
    assert run.errors and run.errors[0].startswith("process 0 (")
    assert not [pid for pid in run.pids if str(pid) in " ".join(run.errors)]

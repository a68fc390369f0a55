"""Per-run cgroups: a delegated cgroup v2 subtree, cgroup v1, and memory kills reported as such.

This machine has cgroup v1 only, so the v2 code is checked against a fake cgroupfs tree (the
files a delegated systemd service sees): which directories and settings the pool writes, and how
it reads a kill for memory. The v1 path is checked for real: a run that fills ``/dev/shm`` past
its cgroup's memory is killed by the kernel and must be reported as ``memory``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jaxplay.sandbox import Limits, RunnerConfig, WorkerPool
from jaxplay.sandbox import _process as sandbox


def fake_v2(tmp_path: Path, controllers: str = "cpu io memory pids") -> tuple[Path, Path]:
    """A cgroup v2 mount whose ``/system.slice/jaxplay.service`` this process was delegated."""
    root = tmp_path / "cgroup"
    service = root / "system.slice" / "jaxplay.service"
    service.mkdir(parents=True)
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (service / "cgroup.controllers").write_text(controllers + "\n")
    (service / "cgroup.subtree_control").write_text("")
    (service / "cgroup.procs").write_text(f"{os.getpid()}\n")
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text("0::/system.slice/jaxplay.service\n")
    return root, proc


def test_a_delegated_v2_subtree_gets_a_leaf_for_the_server_and_a_group_per_run(
    tmp_path: Path,
) -> None:
    root, proc = fake_v2(tmp_path)
    groups = sandbox.Cgroups(fs_root=root, proc_cgroup=proc)
    service = root / "system.slice" / "jaxplay.service"
    assert groups.version == 2 and groups.available
    assert "cgroup v2" in groups.describe()
    # "No internal processes": the server moved into a leaf before children got controllers.
    assert (service / "server" / "cgroup.procs").read_text() == str(os.getpid())
    assert (service / "cgroup.subtree_control").read_text() == "+memory +pids"
    assert groups.v2_root is not None and groups.v2_root.parent == service

    group = groups.create()
    assert group is not None and group.version == 2 and group.pids == group.memory
    assert group.procs_files == [str(group.pids / "cgroup.procs")]
    (group.pids / "memory.current").write_text("300000000\n")
    assert group.memory_in_use() == 300_000_000
    assert group.limit_memory(500_000_000)
    assert (group.memory / "memory.max").read_text() == "500000000"
    assert (group.memory / "memory.swap.max").read_text() == "0"
    assert (group.memory / "memory.oom.group").read_text() == "1"
    group.limit_pids(64)
    assert (group.pids / "pids.max").read_text() == "64"

    (group.memory / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 0\n")
    assert not group.oom_killed()
    (group.memory / "memory.events").write_text("low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\n")
    assert group.oom_killed()


def test_v2_without_the_memory_controller_falls_back_to_rlimits(tmp_path: Path) -> None:
    root, proc = fake_v2(tmp_path, controllers="cpu io")
    groups = sandbox.Cgroups(fs_root=root, proc_cgroup=proc)
    assert not groups.available and groups.create() is None
    assert "no cgroups" in groups.describe()
    assert not (root / "system.slice" / "jaxplay.service" / "server").exists()


def test_v1_oom_kill_is_read_from_oom_control(tmp_path: Path) -> None:
    memory = tmp_path / "memory" / "w1"
    memory.mkdir(parents=True)
    group = sandbox.WorkerGroup(pids=tmp_path / "pids", memory=memory)
    (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
    assert not group.oom_killed()
    (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    assert group.oom_killed()


def test_dev_shm_is_sized_and_dev_is_read_only() -> None:
    cmd = sandbox.BwrapSandbox(tmp_mb=32, shm_mb=48)._command(["python"], {}, None)
    shm = cmd.index("/dev/shm")
    assert cmd[shm - 1] == "--tmpfs" and cmd[shm - 3 : shm - 1] == ["--size", str(48 * 2**20)]
    assert cmd[cmd.index("--remount-ro") + 1] == "/dev"
    assert cmd.index("--remount-ro") > shm > cmd.index("--dev")


@pytest.fixture(scope="module")
def oom_pool():  # type: ignore[no-untyped-def]
    if not sandbox.bwrap_usable():
        pytest.skip("bubblewrap is not usable here")
    # /dev/shm larger than the run's memory: only the cgroup can stop the run.
    limits = Limits(timeout_s=30.0, memory_mb=256, scratch_mb=2048)
    pool = WorkerPool(RunnerConfig(sandbox="bwrap", spares=1, max_concurrent=1, limits=limits))
    if pool.cgroups.memory_root is None and pool.cgroups.version != 2:
        pool.shutdown()
        pytest.skip("no memory cgroup here")
    yield pool
    pool.shutdown()


def test_a_run_killed_by_its_memory_cgroup_is_reported_as_memory(oom_pool: WorkerPool) -> None:
    """Files in /dev/shm are memory: the kernel kills the run, and the verdict says so."""
    code = (
        "chunk = b'1' * (8 * 2**20)\n"
        "for i in range(120):\n"
        "    open(f'/dev/shm/f{i}', 'wb').write(chunk)\n"
        "print('wrote 960 MB')"
    )
    result = oom_pool.run(code)
    assert not result.ok and "wrote" not in result.stdout
    assert result.error is not None and result.error.kind == "memory", result.error

"""The server's own timed work in the compute worker: a page's sweep point or variant, where
``JAXPLAY_MEASURE_IN`` says, and the roofs every page compares against."""

from __future__ import annotations

import threading

import pytest

from jaxplay import memory, sandbox, vmap
from jaxplay.core import measure_lock, roofline, timing


def _broken(*args: object, **kwargs: object) -> None:
    raise AssertionError("timed in the server process")


def test_a_page_point_is_timed_in_the_compute_worker_while_the_server_holds_the_lock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the server's stopwatch broken, the point still comes back, timed elsewhere, while
    no other thread of the server could take the measurement lock."""
    monkeypatch.setattr(timing, "compare_jit", _broken)
    monkeypatch.setattr(timing, "measure", _broken)
    original = sandbox.compute
    free: list[bool] = []

    def watched(*args: object, **kwargs: object) -> object:
        took: list[bool] = []
        thread = threading.Thread(
            target=lambda: took.append(measure_lock.MEASURE_LOCK.acquire(blocking=False))
        )
        thread.start()
        thread.join()
        if took[0]:
            measure_lock.MEASURE_LOCK.release()
        free.append(took[0])
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sandbox, "compute", watched)
    point = sandbox.timed(vmap.time_batch, n=4, budget_s=0.05)
    assert isinstance(point, vmap.BatchPoint) and point.batch == 4 and free == [False]


def test_in_the_server_mode_the_function_runs_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXPLAY_MEASURE_IN", "server")
    monkeypatch.setattr(timing, "measure", _broken)
    with pytest.raises(AssertionError, match="timed in the server process"):
        sandbox.timed(vmap.time_batch, n=4, budget_s=0.05)


def test_every_page_compares_against_the_same_roofs() -> None:
    """The memory page's chain, timed in the worker, carries the roofs the server keeps (the
    jit page's too), not ones the worker measured again."""
    roofs = sandbox.machine_reference()
    assert isinstance(roofs, roofline.MachineReference) and roofs.copy_bandwidth_gbps > 0
    assert sandbox.machine_reference() is roofs
    report = sandbox.timed(memory.analyse_chain, ops=("sin", "cos"), size=32, reference=roofs)
    assert isinstance(report, memory.ChainReport) and report.reference == roofs


def test_a_function_that_fails_in_the_worker_says_how(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(sandbox.TaskFailed) as failed:
        sandbox.timed(memory.analyse_chain, ops=("no-such-op",), size=32)
    assert failed.value.error.kind == "exception" and failed.value.error.exc_type == "ValueError"


def test_a_large_result_comes_back_from_the_worker() -> None:
    """The memory page's largest run on CPU (the seed model at 512, its gradient sampled)
    sends about 6 MB back: more than a visitor's run may, within what a compute job may."""
    from jaxplay.memory import _remat
    from jaxplay.sandbox import _protocol

    size = _remat.MAX_RUN_SIZE["cpu"]
    result = sandbox.timed(memory.analyse_variant, "seed", "none", "scan", size, 10, True)
    assert isinstance(result, memory.RematResult) and result.gradient is not None
    assert sum(g.size for g in result.gradient) == memory.GRADIENT_SAMPLE
    assert sandbox.Limits().result_bytes < _protocol.MAX_MESSAGE_BYTES


def test_where_no_worker_can_start_the_work_is_timed_here(monkeypatch: pytest.MonkeyPatch) -> None:
    from jaxplay import jit
    from jaxplay.jit import _measurement

    def refused(*args: object, **kwargs: object) -> None:
        raise sandbox.TaskFailed(sandbox.RunError(kind="refused", message="no worker"))

    monkeypatch.setattr(sandbox, "compute", refused)
    point = sandbox.timed(vmap.time_batch, n=4, budget_s=0.05)
    assert isinstance(point, vmap.BatchPoint) and point.batch == 4
    m = _measurement.measure_in_worker(jit.Workload("softmax", 6, 5))
    assert not m.in_worker and "in the server process" in m.where()


def test_a_kept_workers_next_job_gets_its_allowance_again() -> None:
    """Soft limits only, moved on for each job: the address space a job may add counts from
    what the worker holds when the job comes (run in a child: it changes its own limits)."""
    import subprocess
    import sys

    child = r"""
import resource
from jaxplay.sandbox import _limits
from jaxplay.sandbox._results import Limits
before = resource.getrlimit(resource.RLIMIT_AS)[1]
_limits.apply_limits(Limits(memory_mb=64), "cpu", kept=True)
soft, hard = resource.getrlimit(resource.RLIMIT_AS)
assert hard == before and soft <= _limits.vm_bytes() + 65 * 2**20, (soft, hard)
try:
    block = bytearray(256 * 2**20)
    raise SystemExit("256 MB fitted in 64")
except MemoryError:
    pass
_limits.allow_job(Limits(memory_mb=512), "cpu")
block = bytearray(256 * 2**20)
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_of_two_compute_workers_that_answered_at_once_the_busier_one_is_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A check's trace can take a spare while a measurement holds the kept worker: when both
    answer, the worker that has served more jobs stays (what it compiled stays warm), and the
    other is retired; a worker that served fewer never replaces it."""
    import types

    from jaxplay.sandbox import RunnerConfig, WorkerPool

    pool = WorkerPool(RunnerConfig(sandbox="process", forkserver="off", spares=0))
    retired: list[object] = []
    monkeypatch.setattr(pool, "_retire", lambda worker, background=False: retired.append(worker))
    limits = pool.config.limits

    def worker(jobs: int) -> types.SimpleNamespace:
        return types.SimpleNamespace(jobs=jobs, info={}, vm_bytes=0)

    warm, spare = worker(30), worker(0)
    assert pool._keep_computing(spare, limits)  # the trace answered first: kept for now
    assert pool._keep_computing(warm, limits)  # the measurement's worker replaces it
    assert pool._compute_worker is warm and retired == [spare]
    assert not pool._keep_computing(worker(0), limits)  # one job less: not kept
    assert pool._compute_worker is warm and retired == [spare]
    pool.shutdown()

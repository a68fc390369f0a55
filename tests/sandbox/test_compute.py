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

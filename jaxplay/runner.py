"""Run untrusted JAX code: a pool of warm, single-use, sandboxed worker processes.

Why: the Code Lab lets anyone type code, on a workshop's one shared machine. User code never runs
in the Streamlit server (one process for every visitor: a crash there ends every session, and
code there can reach other sessions and the server's secrets). Each run gets a fresh worker
process, started by exec (never forked from a process where JAX runs), inside bubblewrap when it
is installed, with limits on time, CPU, memory, files, processes and output; the worker is killed
with everything it started after its one job. Results come back over a pipe of their own, as
JSON, and are checked field by field (the worker is untrusted).

Example::

    from jaxplay.runner import run_code
    result = run_code("import jax.numpy as jnp\\nx = jnp.arange(4.0)\\nx.sum()")
    result.ok, result.value_repr, result.arrays[0].shape   # True, 'Array(6., dtype=float32)', (4,)

Settings (environment): ``JAXPLAY_SANDBOX`` (``bwrap``/``process``/``auto``), ``JAXPLAY_PUBLIC``
(``1`` refuses to run code without bwrap), ``JAXPLAY_RUNNER_SPARES``,
``JAXPLAY_RUNNER_CONCURRENCY``, ``JAXPLAY_RUN_TIMEOUT_S``, ``JAXPLAY_RUN_CPU_S``,
``JAXPLAY_RUN_MEMORY_MB``.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable
from typing import Any

from jaxplay._runner.pool import MAX_SOURCE_CHARS as MAX_SOURCE_CHARS
from jaxplay._runner.pool import RunnerConfig as RunnerConfig
from jaxplay._runner.pool import WorkerPool as WorkerPool
from jaxplay._runner.pool import worker_environment as worker_environment
from jaxplay._runner.results import ERROR_KINDS as ERROR_KINDS
from jaxplay._runner.results import ArgSpec as ArgSpec
from jaxplay._runner.results import ArraySummary as ArraySummary
from jaxplay._runner.results import InspectRequest as InspectRequest
from jaxplay._runner.results import Limits as Limits
from jaxplay._runner.results import RunError as RunError
from jaxplay._runner.results import RunResult as RunResult

_pool: WorkerPool | None = None
_pool_lock = threading.Lock()


def get_pool() -> WorkerPool:
    """The process-wide pool (created on first use from the environment's settings).

    Creating it starts warming spares in background threads; it never blocks on JAX. The pool
    is shut down (every worker killed, cgroups removed) when the interpreter exits.
    """
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = WorkerPool(RunnerConfig.from_env())
            atexit.register(shutdown)
        pool = _pool
    pool.warm()
    return pool


def warm_up() -> None:
    """Start warming the pool in the background (returns at once); call early, e.g. from a page."""
    get_pool()


def shutdown() -> None:
    """Stop the process-wide pool; a later :func:`get_pool` makes a new one."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown()


def status() -> dict[str, Any]:
    """The pool's state for display: sandbox, spares ready, runs running and queued."""
    return get_pool().status()


def refusal() -> str | None:
    """Why this server refuses to run code (public without bubblewrap), or ``None``."""
    return get_pool().refusal()


def run_code(
    source: str,
    *,
    timeout_s: float | None = None,
    inspect: InspectRequest | None = None,
    visitor: str | None = None,
    on_queue: Callable[[int], None] | None = None,
) -> RunResult:
    """Run ``source`` in a fresh sandboxed worker and return what it did.

    Arguments:
        source: Python code; a final expression's value is reported like a notebook cell's.
        timeout_s: wall-clock limit (default: the configured 10 s).
        inspect: a function of the code to inspect afterwards (its jaxpr, eager vs jit, ...).
        visitor: an id for the caller (e.g. the Streamlit session); one visitor has at most one
            run in flight, a second waits for the first.
        on_queue: called in the caller's thread with the caller's 1-based queue position each
            time it changes while all workers are busy.

    Returns:
        A :class:`RunResult`; it never raises for anything the code does.
    """
    return get_pool().run(
        source, timeout_s=timeout_s, inspect=inspect, visitor=visitor, on_queue=on_queue
    )

"""A worker's resource limits, which it sets on itself once its job has come.

Why a module of its own: the limits (CPU seconds, address space, files, processes) count from
what the warm-up used, and a worker that takes job after job (the server's compute worker)
moves its CPU allowance on for each; that bookkeeping is apart from running the job.
"""

from __future__ import annotations

import os
import resource

from jaxplay.sandbox._results import Limits


def statm(field: int) -> int:
    """A field of ``/proc/self/statm`` in bytes (0: virtual size, 1: resident), 0 if unknown."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[field]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def vm_bytes() -> int:
    """This process's virtual memory size, 0 if unknown."""
    return statm(0)


def _user_task_count() -> int:
    """Tasks (processes and threads) of this user that this process can see.

    ``RLIMIT_NPROC`` counts all of them, not just this process's: in a fresh user and PID
    namespace (bwrap) that is the sandbox alone, in the process sandbox it is every process of
    the user, so the limit is set relative to this count.
    """
    uid = os.getuid()
    count = 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 1
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid == uid:
                count += len(os.listdir(f"/proc/{entry}/task"))
        except OSError:
            continue
    return max(count, 1)


def _set_limit(which: int, soft: int) -> None:
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(which, (soft, soft))
    except (ValueError, OSError):
        resource.setrlimit(which, (soft, hard))


def apply_limits(limits: Limits, backend: str, kept: bool = False) -> None:
    """Lower this process's resource limits for the user's code (they can never be raised again).

    CPU time and address space count from what the warm-up already used, so the user gets the
    whole allowance. The address-space limit is set on CPU only: CUDA reserves huge address
    ranges it never touches, and ``MALLOC_ARENA_MAX=2`` (set by the pool) keeps the CPU
    worker's baseline near 0.6 GB instead of one 64 MB arena per thread.

    ``kept``: a worker that takes job after job (the server's compute worker, our own code)
    lowers only the soft limits that grow with what it keeps (CPU time, address space,
    processes), which :func:`allow_job` moves on for each job.
    """
    _set_limit(resource.RLIMIT_CORE, 0)
    _set_limit(resource.RLIMIT_FSIZE, limits.file_mb * 1024 * 1024)
    _set_limit(resource.RLIMIT_NOFILE, limits.open_files)
    if kept:
        allow_job(limits, backend)
        return
    _set_limit(resource.RLIMIT_NPROC, _user_task_count() + limits.processes)
    _lower_cpu(limits.cpu_s)
    if backend == "cpu":
        _set_limit(resource.RLIMIT_AS, vm_bytes() + limits.memory_mb * 1024 * 1024)


def allow_job(limits: Limits, backend: str) -> None:
    """A kept worker's next job gets a run's whole allowance again, counted from now: its CPU
    seconds, its processes and (on CPU) its address space, as soft limits (past the CPU one,
    SIGXCPU)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    _set_soft(resource.RLIMIT_CPU, int(used.ru_utime + used.ru_stime + limits.cpu_s) + 1)
    _set_soft(resource.RLIMIT_NPROC, _user_task_count() + limits.processes)
    if backend == "cpu":
        _set_soft(resource.RLIMIT_AS, vm_bytes() + limits.memory_mb * 1024 * 1024)


def _set_soft(which: int, soft: int) -> None:
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(which, (soft, hard))


def _lower_cpu(cpu_s: float) -> None:
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(used.ru_utime + used.ru_stime + cpu_s) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, hard))

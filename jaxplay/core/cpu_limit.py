"""What is left of this process's CPU-time limit, handed on to every Python child it starts.

Why: ``RLIMIT_CPU`` counts one process's own CPU time, and a child inherits the limit afresh, not
what is left of it. A sandboxed worker limited to 20 CPU-seconds that starts two Python
processes could therefore spend 20 s itself and 20 s in each child (the persistent-cache demo
was measured at ~22 s). :func:`python_command` builds a ``python -c`` command whose first line
lowers the child's limit to what this process has left, counting the CPU of children already
finished (``RUSAGE_CHILDREN``), so the worker's limit covers it and its children together.
Setting it in the child's own first line, rather than in a ``preexec_fn``, keeps ``subprocess``
safe to use from a threaded process.
"""

from __future__ import annotations

import resource
import sys


class CpuLimitSpent(RuntimeError):
    """This process and its children have used up the CPU-time limit: no child may start."""


def cpu_seconds_left() -> float | None:
    """CPU seconds left to this process and its children together (``None``: no limit)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_CPU)
    if soft == resource.RLIM_INFINITY:
        return None
    used = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        used += usage.ru_utime + usage.ru_stime
    return soft - used


def python_command(code: str, *args: str) -> list[str]:
    """``[python, "-c", code, *args]``, with the child's CPU limit set to what is left here.

    Raises:
        CpuLimitSpent: less than a CPU-second is left.
    """
    left = cpu_seconds_left()
    if left is None:
        return [sys.executable, "-c", code, *args]
    if left < 1:
        raise CpuLimitSpent("the CPU-time limit is used up: no process can be started")
    seconds = int(left)
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    # The hard limit one second later, as the sandbox sets its own: SIGXCPU first, then SIGKILL.
    ceiling = seconds + 1 if hard == resource.RLIM_INFINITY else min(seconds + 1, hard)
    prelude = f"import resource; resource.setrlimit(resource.RLIMIT_CPU, ({seconds}, {ceiling}))\n"
    return [sys.executable, "-c", prelude + code, *args]

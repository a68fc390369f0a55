"""The persistent-cache demo's child processes count against the worker's CPU-time limit.

``RLIMIT_CPU`` is per process and a child inherits it afresh: a worker limited to 20 CPU-seconds
whose demo started two Python processes was measured at ~22 s. The children now get what is
left of the limit (:func:`jaxplay.core.cpu_limit.python_command`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from jaxplay.core import cpu_limit

#: A process limited to 4 CPU-seconds spends about 2, then starts a child that never stops.
PARENT = textwrap.dedent(
    """
    import json, resource, subprocess, time
    from jaxplay.core import cpu_limit
    resource.setrlimit(resource.RLIMIT_CPU, (4, 5))
    start = time.process_time()
    while time.process_time() - start < 2.0:
        pass
    left = cpu_limit.cpu_seconds_left()
    done = subprocess.run(cpu_limit.python_command("while True: pass"), check=False)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"left": left, "rc": done.returncode,
                      "child_cpu": kids.ru_utime + kids.ru_stime}))
    """
)


def test_a_child_gets_only_what_is_left_of_the_limit() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PARENT], capture_output=True, text=True, timeout=120, check=True
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert 0 < figures["left"] <= 2.5
    assert figures["rc"] < 0  # stopped by the limit (SIGXCPU, or SIGKILL at the hard one)
    # Inheriting the parent's limit afresh, the child would have run 4 to 5 CPU-seconds.
    assert figures["child_cpu"] <= figures["left"] + 1.2


def test_without_a_limit_the_command_is_plain_python() -> None:
    if cpu_limit.cpu_seconds_left() is None:
        assert cpu_limit.python_command("pass", "a") == [sys.executable, "-c", "pass", "a"]
    else:
        assert "RLIMIT_CPU" in cpu_limit.python_command("pass")[2]

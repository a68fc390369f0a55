"""The benchmarks' CPU sampler (``benchmarks/_cpu.py``'s ``ProcTree``) counts what a process
starts from any of its threads, as the server starts its sandbox from a thread of its own."""

from __future__ import annotations

import subprocess
import sys

from benchmarks._cpu import ProcTree

#: A process whose second thread starts a grandchild that burns 0.5 CPU-s, says so, and waits.
PARENT = r"""
import subprocess, sys, threading
BURN = (
    "import sys, time\nt = time.process_time()\n"
    "while time.process_time() - t < 0.5: pass\n"
    "print('burnt', flush=True)\nsys.stdin.read()"
)
def start():
    pipe = subprocess.PIPE
    child = subprocess.Popen([sys.executable, "-c", BURN], stdin=pipe, stdout=pipe, text=True)
    child.stdout.readline()
    print("ready", flush=True)
    sys.stdin.read()
    child.stdin.close()
    child.wait()
thread = threading.Thread(target=start)
thread.start()
thread.join()
"""


def test_a_grandchild_started_by_a_thread_is_counted_and_kept_after_it_exits() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None and parent.stdin is not None
    try:
        assert parent.stdout.readline().strip() == "ready"
        tree = ProcTree(parent.pid)
        assert tree.total_s() >= 0.4  # the grandchild's 0.5 s (the old reader saw ~0)
    finally:
        parent.stdin.close()
        parent.wait(30)
    assert tree.total_s() >= 0.4  # it exited, and still counts

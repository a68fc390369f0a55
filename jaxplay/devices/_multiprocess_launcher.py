"""The one process that starts a local cluster's processes, inside the cluster's own network.

Why a launcher: the processes of :mod:`jaxplay.devices._multiprocess` meet through a coordinator
on a TCP port. Bound to loopback only, it is still reachable by every other process of the
server's machine, and one of them joined as "process 1" (the visitor's psum came out 2003 instead
of 10). So the cluster gets a network of its own: this launcher runs under
``bwrap --unshare-net`` (a new network namespace with nothing in it but its own loopback) and
starts every process of the cluster there, so they reach each other and nothing else reaches them.

Run as a script (``python _multiprocess_launcher.py``, standard library only: it imports neither
JAX nor ``jaxplay``). It starts each command with its stdout and stderr on the inherited file
descriptors it is given, waits for all of them until the deadline (stopping early when one
fails: the others would wait for it forever), kills and reaps each one, and prints one line:
``CLUSTER_REPORT {"status": ..., "pids": [...], "returncodes": [...]}``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time

REPORT_PREFIX = "CLUSTER_REPORT "


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL the process (if it still runs), then reap it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    proc.wait()


def wait_all(procs: list[subprocess.Popen], deadline: float) -> str:
    """Wait for every process; stop early when one fails (the others would wait for it forever)."""
    while True:
        codes = [p.poll() for p in procs]
        if any(c not in (None, 0) for c in codes):
            return "failed"
        if all(c == 0 for c in codes):
            return "ok"
        if time.perf_counter() >= deadline:
            return "timeout"
        time.sleep(0.05)


def run(commands: list[list[str]], fds: list[tuple[int, int]], timeout_s: float) -> dict:
    """Start each command (stdout, stderr on its pair of ``fds``), wait, reap; what happened."""
    deadline = time.perf_counter() + timeout_s
    procs: list[subprocess.Popen] = []
    status = "failed"
    try:
        for command, (out, err) in zip(commands, fds, strict=True):
            procs.append(
                subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    env=dict(os.environ),  # the allow-listed one the server gave the launcher
                    # In the launcher's process group (not one of its own): the server, giving
                    # up on the launcher, kills that group and so every process of the cluster.
                    start_new_session=False,
                )
            )
        status = wait_all(procs, deadline)
    finally:
        for proc in procs:
            kill(proc)
    return {
        "status": status,
        "pids": [p.pid for p in procs],
        "returncodes": [p.returncode for p in procs],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--timeout-s", type=float, required=True)
    parser.add_argument("--fds", required=True, help="stdout,stderr,stdout,stderr,... per command")
    parser.add_argument("--commands", required=True, help="a JSON list of argument lists")
    args = parser.parse_args(argv)
    flat = [int(fd) for fd in args.fds.split(",")]
    fds = list(zip(flat[::2], flat[1::2], strict=True))
    report = run(json.loads(args.commands), fds, args.timeout_s)
    print(REPORT_PREFIX + json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

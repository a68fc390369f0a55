"""The server's side of one worker: its process (exec'd or forked), the pipes it reads, and
the output it collects under one byte cap.

Why a module of its own: a worker's lifetime (started, ready, given one job, killed with all it
started, its pipes closed exactly once) is the same whatever the pool schedules onto it.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from jaxplay.sandbox import _protocol as protocol
from jaxplay.sandbox._config import worker_environment
from jaxplay.sandbox._forkserver import ForkServer
from jaxplay.sandbox._process import Launch, Sandbox


class Worker:
    """The server's side of one worker: its process and the three pipes it reads.

    ``forkserver``: fork the worker from its zygote instead of starting an interpreter.
    """

    def __init__(self, sandbox: Sandbox, forkserver: ForkServer | None = None) -> None:
        job_r, self.job_w = os.pipe()
        self.result_r, result_w = os.pipe()
        self.out_r, out_w = os.pipe()
        self.err_r, err_w = os.pipe()
        child_fds = (job_r, result_w, out_w, err_w)
        argv = [
            sys.executable,
            "-s",
            "-P",
            "-m",
            "jaxplay.sandbox._worker",
            "--job-fd",
            str(job_r),
            "--result-fd",
            str(result_w),
            "--out-fd",
            str(out_w),
            "--err-fd",
            str(err_w),
        ]
        self._fds = [self.job_w, self.result_r, self.out_r, self.err_r]
        self.launcher: Sandbox | ForkServer = forkserver or sandbox
        try:
            if forkserver is not None:
                self.launch: Launch = forkserver.start(child_fds)
            else:
                self.launch = sandbox.start(argv, worker_environment(), child_fds)
        except BaseException:
            self._close_fds()
            raise
        finally:
            for fd in child_fds:
                os.close(fd)
        self.sandbox = sandbox
        self.reader = protocol.FrameReader()
        self.info: dict[str, Any] | None = None
        self.killed = False
        self.cleaned = False
        #: A compute worker's jobs done and its virtual memory after the last (see
        #: ``WorkerPool._keep_computing``); a single-use worker's stay 0.
        self.jobs = 0
        self.vm_bytes = 0
        self._stop_lock = threading.Lock()

    def _close_fds(self) -> None:
        # Each fd is closed once: a second close could hit a number another thread reused.
        while self._fds:
            with contextlib.suppress(OSError):
                os.close(self._fds.pop())

    def close_job(self) -> None:
        """Close the job pipe: the worker never gets a second job."""
        if self.job_w in self._fds:
            self._fds.remove(self.job_w)
            with contextlib.suppress(OSError):
                os.close(self.job_w)

    def wait_ready(self, timeout_s: float) -> dict[str, Any]:
        """Block until the worker reports that JAX is up; raise ``RuntimeError`` otherwise."""
        deadline = time.monotonic() + timeout_s
        while self.info is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"worker did not start within {timeout_s:.0f} s")
            ready, _, _ = select.select([self.result_r], [], [], min(left, 0.5))
            if not ready:
                continue
            data = os.read(self.result_r, 65536)
            if not data:
                raise RuntimeError("worker exited during start-up: " + self.startup_errors())
            for message in self.reader.feed(data):
                if message.get("type") == "ready":
                    self.info = message
        return self.info

    def startup_errors(self) -> str:
        """The last lines the worker (or bwrap) wrote to its own stderr while starting."""
        self.kill()
        stderr = self.launch.process.stderr
        try:
            text = stderr.read(65536).decode("utf-8", "replace") if stderr else ""
        except (OSError, ValueError):
            text = ""
        return text.strip()[-2000:] or f"exit status {self.launch.process.returncode}"

    def kill(self) -> None:
        """Kill the worker and all it started (its pipes and cgroup stay readable)."""
        with self._stop_lock:
            if not self.killed:
                self.killed = True
                self.launcher.kill(self.launch)

    def signal_kill(self) -> None:
        """Send SIGKILL to the worker and all it started without waiting for them to be gone
        (:meth:`stop` waits): a run that answered need not wait for its processes' teardown."""
        with self._stop_lock:
            if not self.killed:
                self.launcher.kill(self.launch, wait=False)

    def stop(self) -> None:
        """Kill the worker, remove its cgroup and close the server's ends of its pipes."""
        self.kill()
        with self._stop_lock:
            if not self.cleaned:
                self.cleaned = True
                self.launcher.stop(self.launch)
            self._close_fds()
        if self.launch.process.stderr is not None:
            with contextlib.suppress(OSError):
                self.launch.process.stderr.close()


@dataclass
class Output:
    """User output collected from fd 1 and 2 under one shared byte cap."""

    cap: int
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    over: bool = False

    def add(self, which: str, data: bytes) -> None:
        room = self.cap - len(self.stdout) - len(self.stderr)
        if len(data) > room:
            self.over = True
            data = data[: max(0, room)]
        (self.stdout if which == "out" else self.stderr).extend(data)


def read_ready(fd: int) -> bytes | None:
    """What a pipe that select() found ready holds: data, ``b""`` at its end (or when it broke),
    or ``None`` when it had nothing after all."""
    try:
        return os.read(fd, 65536)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def decode(data: bytes | bytearray) -> str:
    return data.decode("utf-8", errors="replace")

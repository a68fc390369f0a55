"""CPU counters for the benchmarks: a cgroup that counts every process it ever held, and a
/proc sampler of a process tree as a cross-check.

Why a cgroup: single-use sandbox workers are killed with their sandbox and reaped by init, not
by the process that started them, so ``/proc``'s ``cutime/cstime`` of that process never sees
their CPU; the kernel's counter of a cgroup (v1 ``cpuacct.usage``, v2 ``cpu.stat``) keeps
counting processes that have exited. Used by ``benchmarks/capacity.py`` (the server and its
workers) and ``benchmarks/forkserver.py`` (a pool and everything it starts).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections import defaultdict
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


class CpuCgroup:
    """A cgroup the server is started in; its counter covers every process it ever held."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self.kind = ""
        self.why = ""
        tag = f"jaxplay-capacity-{os.getpid()}-{time.monotonic_ns()}"
        candidates = [
            (Path("/sys/fs/cgroup/cpuacct"), "v1"),
            (Path("/sys/fs/cgroup/unified"), "v2"),
            (Path("/sys/fs/cgroup"), "v2"),
        ]
        for parent, kind in candidates:
            marker = "cpuacct.usage" if kind == "v1" else "cgroup.controllers"
            if not (parent / marker).exists():
                continue
            path = parent / tag
            try:
                path.mkdir()
            except OSError as err:
                self.why = f"cannot create a cgroup under {parent}: {err}"
                continue
            self.path, self.kind = path, kind
            if self._join_works():
                self.why = ""
                return
            self.why = f"cannot move a process into {path}"
            self.remove()
        self.why = self.why or "no cgroup v1 cpuacct or cgroup v2 hierarchy found"

    def _join_works(self) -> bool:
        probe = subprocess.run([*self.prefix(), "true"], capture_output=True, check=False)
        return probe.returncode == 0

    @property
    def available(self) -> bool:
        return self.path is not None

    def prefix(self) -> list[str]:
        """A command prefix that moves the process into the cgroup, then execs the rest."""
        assert self.path is not None
        join = 'echo $$ > "$0" || exit 125; exec "$@"'
        return ["sh", "-c", join, str(self.path / "cgroup.procs")]

    def usage_s(self) -> float:
        assert self.path is not None
        if self.kind == "v1":
            return int((self.path / "cpuacct.usage").read_text()) / 1e9
        for line in (self.path / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6
        raise RuntimeError(f"no usage_usec in {self.path / 'cpu.stat'}")

    def pids(self) -> list[int]:
        if self.path is None:
            return []
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def remove(self) -> list[int]:
        """Kill what our server left in the cgroup (by pid) and remove it; the pids killed."""
        if self.path is None:
            return []
        left = self.pids()
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            try:
                self.path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)
        self.path = None
        return left


def proc_stat(pid: int) -> tuple[int, int, int] | None:
    """(ppid, utime+stime ticks, start time) of a process, or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = text.rsplit(")", 1)[1].split()
    return int(rest[1]), int(rest[11]) + int(rest[12]), int(rest[19])


class ProcTree(threading.Thread):
    """Samples the CPU time of some processes and all their descendants, keeping exited ones.

    Descendants are found by their parent (``/proc/<pid>/stat``), not through
    ``/proc/<pid>/task/<pid>/children``: that file lists only what the process's *main* thread
    started, and the server starts its sandbox (the fork server and every worker) from a thread
    of its own, so a sampler reading it missed the workers' CPU (the room-load benchmark's
    server figures did, until 2026-12-06).
    """

    def __init__(self, *roots: int, interval_s: float = 0.05) -> None:
        super().__init__(daemon=True, name="proc-tree")
        self.roots = roots
        self.interval_s = interval_s
        self._seen: dict[tuple[int, int], int] = {}
        self._lock = threading.Lock()
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval_s):
            self.scan()

    def stop(self) -> None:
        self._stop_event.set()

    def scan(self) -> None:
        stats: dict[int, tuple[int, int, int]] = {}
        children: dict[int, list[int]] = defaultdict(list)
        for name in os.listdir("/proc"):
            if name.isdigit():
                stat = proc_stat(int(name))
                if stat is not None:
                    stats[int(name)] = stat
                    children[stat[0]].append(int(name))
        stack = list(self.roots)
        with self._lock:
            while stack:
                pid = stack.pop()
                if pid in stats:
                    _, ticks, start = stats[pid]
                    key = (pid, start)
                    self._seen[key] = max(self._seen.get(key, 0), ticks)
                    stack.extend(children[pid])

    def total_s(self) -> float:
        self.scan()
        with self._lock:
            return sum(self._seen.values()) / CLK_TCK

    def live(self) -> list[int]:
        with self._lock:
            keys = list(self._seen)
        return [pid for pid, start in keys if (s := proc_stat(pid)) is not None and s[2] == start]

"""A real multi-process JAX run on one machine: N processes, one coordinator, gloo collectives.

Why: everything else in the app runs in one process, where "devices" are all local. A cluster of
hosts is N processes that each own a few devices and meet through ``jax.distributed.initialize``.
This module starts that for real on localhost: it execs N fresh interpreters (never forks: JAX is
already initialised in this process) running :mod:`jaxplay.devices._multiprocess_worker`, waits for
their JSON reports, and always reaps them: on a timeout or any error every process is killed and
waited for, so no process is ever left behind.

Nothing outside the cluster can join it. The coordinator binds loopback only, and all N processes
run in a network namespace of their own, started there by one launcher
(:mod:`jaxplay.devices._multiprocess_launcher`, under ``bwrap --unshare-net`` where bwrap works):
another process of the machine cannot even reach the port. They get an allow-listed environment
(:func:`jaxplay.hosting.environment.child_environment`), never the server's own.

A run costs several CPU-seconds, so a visitor's run (:func:`launch_cluster`) holds a Code Lab
run's place (:func:`jaxplay.sandbox.reserve`): the per-visitor rate limit in public mode, one run
at a time per visitor, a slot of the server's runners and its queue cap. What it returns names
processes by their index, never by host PID (the PIDs stay inside, for reaping and tests).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jaxplay import sandbox
from jaxplay.core import claims
from jaxplay.core.i18n import _
from jaxplay.devices._multiprocess_launcher import REPORT_PREFIX as LAUNCHER_PREFIX
from jaxplay.devices._multiprocess_worker import REPORT_PREFIX
from jaxplay.hosting import catalog, environment

MIN_PROCESSES = 2
MAX_PROCESSES = 4
MAX_LOCAL_DEVICES = 4
DEFAULT_TIMEOUT_S = 60.0
#: The launcher, run as a script (it imports neither JAX nor jaxplay), and how long after the
#: run's timeout the server waits for its report before killing it and all it started.
LAUNCHER = Path(__file__).with_name("_multiprocess_launcher.py")
_LAUNCHER_MARGIN_S = 15.0
#: One local cluster at a time per server: two visitors' clusters would compete for the cores.
LAUNCH_LOCK = threading.Lock()


@dataclass(frozen=True)
class GlobalDevice:
    """A device as every process of the cluster sees it."""

    id: int
    process_index: int
    kind: str


@dataclass(frozen=True)
class ProcessReport:
    """What one process printed: its devices, its contribution and the all-reduced total."""

    process_id: int
    process_count: int
    local_devices: tuple[int, ...]
    global_devices: tuple[GlobalDevice, ...]
    local_values: tuple[float, ...]
    psum: float


@dataclass(frozen=True)
class ClusterRun:
    """The outcome of :func:`run_local_cluster`.

    Attributes:
        status: ``"ok"``, ``"timeout"`` (killed after ``timeout_s``) or ``"failed"`` (a process
            exited with an error or printed no report).
        num_processes, local_devices: the cluster asked for.
        launched: how many processes were started (fewer than ``num_processes`` only on purpose,
            to show what a missing host does).
        reports: the reports of the processes that finished, by process id.
        expected_psum: the all-reduced value numpy computes for the same inputs.
        pids: the host process ids that were started (all reaped when this returns); for
            reaping and tests only: a page shows process indices.
        returncodes: each process's exit status (negative: killed by that signal).
        errors: the tail of stderr of each process that failed, by process index, with every
            host PID replaced by ``process <index>``.
        elapsed_s: wall time from the first start to the last reap.
    """

    status: str
    num_processes: int
    local_devices: int
    launched: int
    reports: tuple[ProcessReport, ...]
    expected_psum: float
    pids: tuple[int, ...]
    returncodes: tuple[int | None, ...]
    errors: tuple[str, ...]
    elapsed_s: float

    @property
    def global_devices(self) -> tuple[GlobalDevice, ...]:
        """The global device list (as process 0 reported it; every process reports the same)."""
        return self.reports[0].global_devices if self.reports else ()

    @property
    def psum_correct(self) -> bool:
        """Every process got the numpy total."""
        return bool(self.reports) and all(r.psum == self.expected_psum for r in self.reports)

    def device_rows(self) -> list[dict[str, object]]:
        """The global device list as table rows (id, process index, kind)."""
        return [vars(d) for d in self.global_devices]

    def psum_rows(self) -> list[dict[str, object]]:
        """One row per reporting process: its devices, what it contributed, the psum it got (the
        column names in the visitor's language)."""
        process, its, gives = _("process"), _("its devices"), _("contributes")
        return [
            {
                process: r.process_id,
                its: str(list(r.local_devices)),
                gives: str(r.local_values),
                "psum": r.psum,
            }
            for r in self.reports
        ]


def expected_psum(num_processes: int, local_devices: int) -> float:
    """The total the workers must agree on: device g contributes g + 1, so 1 + 2 + ... + n."""
    n = num_processes * local_devices
    return float(n * (n + 1) // 2)


def free_port() -> int:
    """A TCP port on localhost that is free right now (the coordinator binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def worker_command(
    coordinator: str, num_processes: int, process_id: int, local_devices: int
) -> list[str]:
    """The command line of one process: the same one each host of a real cluster would run."""
    return [
        sys.executable,
        "-m",
        "jaxplay.devices._multiprocess_worker",
        f"--coordinator={coordinator}",
        f"--num-processes={num_processes}",
        f"--process-id={process_id}",
        f"--local-devices={local_devices}",
    ]


def _worker_env(local_devices: int) -> dict[str, str]:
    """The allow-listed environment of every child (nothing of the server's own: no database URL,
    no token), with the worker's device count and the CPU backend."""
    env = environment.child_environment(cpu_devices=local_devices)
    env["JAX_PLATFORMS"] = "cpu"
    return env


def own_network(argv: list[str]) -> list[str]:
    """``argv`` run in a network namespace of its own (``bwrap --unshare-net``: nothing in it but
    its own loopback), where bwrap can make one here; else ``argv`` as is (loopback only)."""
    if not sandbox.bwrap_usable():
        return argv
    return [sandbox.BWRAP, "--unshare-net", "--dev-bind", "/", "/", "--", *argv]


def _without_pids(text: str, procs: Sequence[Any]) -> str:
    """``text`` with each started process's host PID written as ``process <index>``."""
    for i, proc in enumerate(procs):
        text = re.sub(rf"(?<!\d){proc.pid}(?!\d)", f"process {i}", text)
    return text


@dataclass(frozen=True)
class _Started:
    """A process the launcher started, as it reported it."""

    pid: int
    returncode: int | None


@claims.states_nothing("a launcher's status: no sentence")
def _launch(
    commands: list[list[str]], outputs: list[tuple[Any, Any]], env: dict[str, str], timeout_s: float
) -> tuple[str, list[_Started], str]:
    """Run ``commands`` through the launcher, in their own network; (status, processes, why not).

    The launcher kills and reaps them at ``timeout_s``; should it not report by a margin after,
    its process group (it, bwrap and every process it started) is killed here.
    """
    fds = [f.fileno() for pair in outputs for f in pair]
    argv = [
        sys.executable,
        str(LAUNCHER),
        f"--timeout-s={timeout_s}",
        "--fds=" + ",".join(map(str, fds)),
        "--commands=" + json.dumps(commands),
    ]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            own_network(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=env,
            cwd=str(catalog.ROOT),
            pass_fds=fds,
            start_new_session=True,  # its own process group: killable as a whole
        )
        try:
            proc.wait(timeout=timeout_s + _LAUNCHER_MARGIN_S)
        except subprocess.TimeoutExpired:
            pass
        finally:
            _kill_group(proc)
        out.seek(0)
        err.seek(0)
        for line in reversed(out.read().decode("utf-8", "replace").splitlines()):
            if line.startswith(LAUNCHER_PREFIX):
                raw = json.loads(line[len(LAUNCHER_PREFIX) :])
                started = [
                    _Started(int(pid), None if code is None else int(code))
                    for pid, code in zip(raw["pids"], raw["returncodes"], strict=True)
                ]
                return str(raw["status"]), started, ""
        why = err.read().decode("utf-8", "replace")[-1500:]
        failed = _("the launcher failed (exit status {code}):").format(code=proc.returncode)
        return "failed", [], f"{failed}\n{why}"


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process's whole group (it leads one), then reap it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    proc.wait()


def _parse(stdout: str) -> ProcessReport | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(REPORT_PREFIX):
            raw = json.loads(line[len(REPORT_PREFIX) :])
            return ProcessReport(
                process_id=int(raw["process_id"]),
                process_count=int(raw["process_count"]),
                local_devices=tuple(int(i) for i in raw["local_devices"]),
                global_devices=tuple(
                    GlobalDevice(int(d["id"]), int(d["process_index"]), str(d["kind"]))
                    for d in raw["global_devices"]
                ),
                local_values=tuple(float(v) for v in raw["local_values"]),
                psum=float(raw["psum"]),
            )
    return None


def launch_cluster(
    num_processes: int,
    local_devices: int = 2,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    launch: int | None = None,
    *,
    visitor: str | None,
    on_queue: Callable[[int], None] | None = None,
    pool: sandbox.WorkerPool | None = None,
) -> ClusterRun:
    """:func:`run_local_cluster` for a visitor: it counts as one Code Lab run.

    The arguments are checked first (a refused input spends nothing); then the run holds a run's
    place from ``pool`` (default: the server's, :func:`jaxplay.sandbox.reserve`) while its
    processes live: the per-visitor rate limit in public mode, one run at a time per visitor, a
    runner slot and the queue cap.

    Raises:
        ValueError: a size outside the limits.
        jaxplay.sandbox.Refused: the limits said no (its message says why, for the page).
    """
    _check(num_processes, local_devices)
    held = sandbox.reserve(visitor, on_queue) if pool is None else pool.reserve(visitor, on_queue)
    with held:
        return run_local_cluster(num_processes, local_devices, timeout_s, launch)


def _check(num_processes: int, local_devices: int) -> None:
    if not MIN_PROCESSES <= num_processes <= MAX_PROCESSES:
        raise ValueError(
            f"num_processes must be {MIN_PROCESSES} to {MAX_PROCESSES}, got {num_processes}"
        )
    if not 1 <= local_devices <= MAX_LOCAL_DEVICES:
        raise ValueError(f"local_devices must be 1 to {MAX_LOCAL_DEVICES}, got {local_devices}")


def run_local_cluster(
    num_processes: int,
    local_devices: int = 2,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    launch: int | None = None,
) -> ClusterRun:
    """Start ``num_processes`` JAX processes on localhost, collect their reports, reap them all.

    Arguments:
        num_processes: the cluster size announced to the coordinator (2 to 4).
        local_devices: CPU devices each process owns (1 to 4).
        timeout_s: after this, every process still running is killed (with its process group).
        launch: how many processes to actually start (default: all). Starting fewer shows what
            happens when a host never arrives: the others wait in ``initialize`` until killed.

    Returns:
        A :class:`ClusterRun`; when it returns, every started process has exited and been reaped.
    """
    _check(num_processes, local_devices)
    launched = num_processes if launch is None else max(1, min(num_processes, launch))
    with LAUNCH_LOCK:
        return _run(num_processes, local_devices, timeout_s, launched)


def _run(num_processes: int, local_devices: int, timeout_s: float, launched: int) -> ClusterRun:
    coordinator = f"127.0.0.1:{free_port()}"
    commands = [
        worker_command(coordinator, num_processes, pid, local_devices) for pid in range(launched)
    ]
    start = time.perf_counter()
    with contextlib.ExitStack() as files:
        outputs = [
            (
                files.enter_context(tempfile.TemporaryFile()),
                files.enter_context(tempfile.TemporaryFile()),
            )
            for _ in range(launched)
        ]
        status, procs, failure = _launch(commands, outputs, _worker_env(local_devices), timeout_s)
        elapsed = time.perf_counter() - start
        reports: list[ProcessReport] = []
        errors: list[str] = [failure] if failure else []
        for i, (out, err) in enumerate(outputs[: len(procs)]):
            out.seek(0)
            err.seek(0)
            report = (
                _parse(out.read().decode("utf-8", "replace")) if procs[i].returncode == 0 else None
            )
            if report is not None:
                reports.append(report)
                continue
            code = procs[i].returncode
            why = (
                _("killed after the timeout")
                if status == "timeout" and code is not None and code < 0
                else _("exit status {code}").format(code=code)
            )
            tail = err.read().decode("utf-8", "replace")[-1500:]
            head = _("process {i} ({why}):").format(i=i, why=why)
            errors.append(f"{head}\n" + _without_pids(tail, procs))
    if status == "ok" and (errors or len(reports) != num_processes):
        status = "failed"
    return ClusterRun(
        status=status,
        num_processes=num_processes,
        local_devices=local_devices,
        launched=launched,
        reports=tuple(sorted(reports, key=lambda r: r.process_id)),
        expected_psum=expected_psum(num_processes, local_devices),
        pids=tuple(p.pid for p in procs),
        returncodes=tuple(p.returncode for p in procs),
        errors=tuple(errors),
        elapsed_s=elapsed,
    )

"""Isolation of the workers, behind one small adapter so the pool never checks for a tool.

Long: both sandboxes (bubblewrap and a plain process), their mounts, limits and cgroups, and the
probe that picks one are one adapter: the pool and the fork server see only its small surface.

Two sandboxes start a worker command:

* :class:`BwrapSandbox` runs it inside Debian's bubblewrap: every namespace unshared (no network,
  own PIDs, so nothing it starts outlives it), a cleared environment, read-only system,
  interpreter and virtualenv, the ``jaxplay`` package read-only, a small private tmpfs as
  ``/tmp`` and working directory and another as ``/dev/shm`` (both sized: files in memory are
  memory the address-space limit does not see), the rest of ``/dev`` read-only. Nothing else
  of the server's files is visible.
* :class:`ProcessSandbox` runs it as a plain child in its own session with a private temporary
  working directory (removed after the run). For laptops; a public deployment refuses it.

Both put the worker into a fresh cgroup where the kernel offers one (``pids.max`` bounds fork
and thread bombs; the cgroup is how every leftover process is found and killed). The worker
process sets its own ``setrlimit`` limits before it touches user code.
"""

from __future__ import annotations

import abc
import contextlib
import glob
import logging
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jaxplay.core.i18n import _
from jaxplay.hosting import environment

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent.parent
#: The run's own empty working directory on the sandbox's private /tmp (which may also hold the
#: read-only mount points of a checkout that lives under /tmp).
SANDBOX_WORKDIR = "/tmp/work"
BWRAP = "/usr/bin/bwrap"
CGROUP_FS = Path("/sys/fs/cgroup")

# The trampoline joins the cgroups before exec, so the worker and all it starts are inside.
_JOIN = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; '
    'exec "$@"'
)


class _Spawner:
    """One long-lived thread that starts every worker process.

    Why: ``bwrap --die-with-parent`` uses ``PR_SET_PDEATHSIG``, which fires when the *thread*
    that started the process ends, not the process. Streamlit's script threads and the pool's
    warm-up threads come and go, so they must not be the parent thread of a worker.
    """

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _loop(self) -> None:
        while True:
            call, future = self._requests.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(call())
            except BaseException as exc:
                future.set_exception(exc)

    def run(self, call: Callable[[], Any]) -> Any:
        """Run ``call`` on the spawner thread and return its result (or raise its error)."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="jaxplay-spawner", daemon=True
                )
                self._thread.start()
        future: Future[Any] = Future()
        self._requests.put((call, future))
        return future.result()


_SPAWNER = _Spawner()


class Cgroups:
    """A process-private tree of cgroups, one per worker: cgroup v1 or a delegated v2 subtree.

    *cgroup v1* (``/sys/fs/cgroup/pids`` and ``.../memory`` writable, e.g. root on an older
    distribution): a ``pids`` and a ``memory`` directory per worker.

    *cgroup v2* (every current distribution): a process may only manage the subtree it was
    delegated, e.g. a systemd service with ``Delegate=yes``. Then the server's own cgroup is
    ``S``; v2 forbids processes in a cgroup whose children have controllers, so the server moves
    itself into the leaf ``S/server``, enables ``memory`` and ``pids`` for ``S``'s children,
    and puts each worker into ``S/jaxplay-<pid>/w<n>`` with ``memory.max``, ``memory.swap.max``
    and ``pids.max``. A kill for memory shows in ``memory.events`` (``oom_kill``).

    Everything is best effort: where neither works (no root on v1, v2 without delegation),
    :attr:`available` is False and workers rely on rlimits and sized file systems alone;
    :meth:`describe` says which is in force, for the Code Lab's limits line.

    Arguments:
        fs_root: where cgroups are mounted (tests pass a fake tree).
        proc_cgroup: this process's ``/proc/self/cgroup`` (tests pass a file of their own).
    """

    def __init__(
        self, fs_root: Path = CGROUP_FS, proc_cgroup: Path = Path("/proc/self/cgroup")
    ) -> None:
        tag = f"jaxplay-{os.getpid()}-{id(self):x}"
        self._lock = threading.Lock()
        self._counter = 0
        self.fs_root = fs_root
        self.proc_cgroup = proc_cgroup
        self.version: int | None = None
        self.pids_root: Path | None = None
        self.memory_root: Path | None = None
        self.v2_root: Path | None = None
        if (fs_root / "cgroup.controllers").exists():
            self.v2_root = self._delegated_v2(tag)
            self.version = 2 if self.v2_root is not None else None
        else:
            self.pids_root = self._make(fs_root / "pids", tag)
            if self.pids_root is not None:
                self.memory_root = self._make(self._own_v1("memory"), tag)
                self.version = 1

    # -- discovery -------------------------------------------------------------------------
    def _own_path(self, controller: str | None) -> str | None:
        """This process's cgroup path for ``controller`` (``None``: the v2 unified line)."""
        try:
            for line in self.proc_cgroup.read_text().splitlines():
                hierarchy, controllers, path = line.split(":", 2)
                if controller is None and hierarchy == "0" and controllers == "":
                    return path
                if controller is not None and controller in controllers.split(","):
                    return path
        except (OSError, ValueError):
            pass
        return None

    def _own_v1(self, controller: str) -> Path | None:
        path = self._own_path(controller)
        return None if path is None else self.fs_root / controller / path.lstrip("/")

    def _delegated_v2(self, tag: str) -> Path | None:
        """The v2 directory for this pool's workers, if this process may manage a subtree."""
        own = self._own_path(None)
        if own is None:
            return None
        base = self.fs_root / own.lstrip("/")
        try:
            offered = (base / "cgroup.controllers").read_text().split()
        except OSError:
            return None
        if not {"memory", "pids"} <= set(offered):
            return None
        if not os.access(base / "cgroup.subtree_control", os.W_OK):
            return None
        try:
            enabled = (base / "cgroup.subtree_control").read_text().split()
            if not {"memory", "pids"} <= set(enabled):
                # "No internal processes": move whoever is in ``base`` into a leaf first.
                leaf = base / "server"
                leaf.mkdir(exist_ok=True)
                for pid in (base / "cgroup.procs").read_text().split():
                    with contextlib.suppress(OSError):  # a process that ended meanwhile
                        (leaf / "cgroup.procs").write_text(pid)
                (base / "cgroup.subtree_control").write_text("+memory +pids")
            root = base / tag
            root.mkdir(exist_ok=True)
            (root / "cgroup.subtree_control").write_text("+memory +pids")
            return root
        except OSError as exc:
            log.warning("jaxplay runner: cgroup v2 subtree %s is not usable: %s", base, exc)
            return None

    @staticmethod
    def _make(parent: Path | None, tag: str) -> Path | None:
        if parent is None or not (parent / "cgroup.procs").exists():
            return None
        try:
            path = parent / tag
            path.mkdir(exist_ok=True)
            return path
        except OSError:
            return None

    # -- use -------------------------------------------------------------------------------
    @property
    def available(self) -> bool:
        return self.version is not None

    def describe(self) -> str:
        """Which per-run limits the kernel enforces here, in a few words."""
        if self.version == 2:
            return _("cgroup v2: memory (files in memory included) and processes per run")
        if self.version == 1:
            if self.memory_root is not None:
                return _("cgroup v1: memory (files in memory included) and processes per run")
            return _("cgroup v1: processes per run (no memory cgroup)")
        return _("no cgroups here: address-space and process rlimits, sized file systems")

    def create(self) -> WorkerGroup | None:
        """A new empty group for one worker (``None`` without cgroup support)."""
        if not self.available:
            return None
        with self._lock:
            self._counter += 1
            name = f"w{self._counter}"
        if self.v2_root is not None:
            path = self.v2_root / name
            try:
                path.mkdir()
            except OSError:
                return None
            return WorkerGroup(pids=path, memory=path, version=2)
        pids = self._make(self.pids_root, name)
        if pids is None:
            return None
        memory = self._make(self.memory_root, name) if self.memory_root else None
        return WorkerGroup(pids=pids, memory=memory)

    def remove(self) -> None:
        roots = (self.v2_root,) if self.v2_root is not None else (self.pids_root, self.memory_root)
        for root in roots:
            if root is None:
                continue
            for child in root.glob("w*"):
                WorkerGroup(pids=child, version=self.version or 1).remove()
            with contextlib.suppress(OSError):
                root.rmdir()


@dataclass
class WorkerGroup:
    """The cgroup(s) of one worker: v1 ``pids`` (+ ``memory``) directories, or one v2 directory.

    Arguments:
        pids: the directory holding ``pids.*`` (v1), or the worker's v2 directory.
        memory: the v1 memory directory (v2: the same directory as ``pids``).
        version: 1 or 2.
    """

    pids: Path
    memory: Path | None = None
    version: int = 1

    @property
    def procs_files(self) -> list[str]:
        dirs = [self.pids] + ([self.memory] if self.memory and self.memory != self.pids else [])
        return [str(d / "cgroup.procs") for d in dirs]

    def _write(self, path: Path | None, name: str, value: str) -> bool:
        if path is None:
            return False
        try:
            (path / name).write_text(value)
            return True
        except OSError:
            return False

    def _read_int(self, path: Path | None, name: str) -> int | None:
        if path is None:
            return None
        try:
            return int((path / name).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def limit_pids(self, extra: int) -> None:
        """Allow ``extra`` more tasks (processes or threads) than the group has now."""
        current = self._read_int(self.pids, "pids.current") or 0
        self._write(self.pids, "pids.max", str(current + extra))

    def memory_in_use(self) -> int | None:
        """Bytes the group holds now (its processes and their files in memory)."""
        name = "memory.current" if self.version == 2 else "memory.usage_in_bytes"
        return self._read_int(self.memory, name)

    def limit_memory(self, limit_bytes: int) -> bool:
        """Cap the group's memory (files in tmpfs count too); False if the kernel refused."""
        if self.version == 2:
            self._write(self.memory, "memory.swap.max", "0")
            self._write(self.memory, "memory.oom.group", "1")
            return self._write(self.memory, "memory.max", str(limit_bytes))
        ok = self._write(self.memory, "memory.limit_in_bytes", str(limit_bytes))
        # Without swap limit a group over its limit would swap instead of failing.
        self._write(self.memory, "memory.memsw.limit_in_bytes", str(limit_bytes))
        return ok

    def oom_killed(self) -> bool:
        """Whether the kernel killed something in this group for exceeding its memory."""
        if self.memory is None:
            return False
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            for line in (self.memory / name).read_text().splitlines():
                key, _sep, value = line.partition(" ")
                if key in ("oom_kill", "oom_group_kill") and int(value) > 0:
                    return True
        except (OSError, ValueError):
            pass
        return False

    def pids_list(self) -> list[int]:
        try:
            return [int(p) for p in (self.pids / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def signal_all(self) -> list[int]:
        """SIGKILL every process in the group once, without waiting; the pids signalled (v2's
        ``cgroup.kill`` kills them all at once where the kernel has it)."""
        if self.version == 2:
            self._write(self.pids, "cgroup.kill", "1")
        pids = self.pids_list()
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        return pids

    def kill_all(self, timeout_s: float = 2.0) -> None:
        """SIGKILL every process in the group until it is empty (a fork bomb races, pids.max
        bounds the race)."""
        deadline = time.monotonic() + timeout_s
        # A killed JAX process takes a few milliseconds to be gone: poll from half a millisecond,
        # doubling up to 10 ms, rather than sleeping a fixed 10 ms each time.
        pause = 0.0005
        while self.signal_all() and time.monotonic() < deadline:
            time.sleep(pause)
            pause = min(pause * 2, 0.01)

    def remove(self) -> None:
        self.kill_all()
        for path in dict.fromkeys((self.pids, self.memory)):
            if path is None:
                continue
            for _attempt in range(50):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


@dataclass
class Launch:
    """A started worker process and what must be cleaned up after it."""

    #: A ``subprocess.Popen``, or the fork server's handle of a forked run (same methods).
    process: Any
    group: WorkerGroup | None
    workdir: Path | None = None
    extra: dict[str, str] = field(default_factory=dict)


def _python_paths() -> list[str]:
    """Directories the interpreter and its packages live in (real paths, deduplicated)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths.add(os.path.dirname(os.path.realpath(sys.executable)))
    out: list[str] = []
    for p in sorted(paths):
        for candidate in {p, os.path.realpath(p)}:
            if os.path.isdir(candidate) and candidate not in out:
                out.append(candidate)
    # A parent directory makes its children redundant.
    return [p for p in out if not any(p != q and p.startswith(q + os.sep) for q in out)]


class Sandbox(abc.ABC):
    """Starts and stops workers. Subclasses decide how isolated they are (the command that
    starts a worker is theirs: :meth:`_command`)."""

    name = "base"
    #: Whether the worker is isolated from the server's files, processes and network.
    isolated = False

    def __init__(self, cgroups: Cgroups | None = None) -> None:
        self.cgroups = cgroups

    def available(self) -> bool:
        return True

    @abc.abstractmethod
    def _command(
        self,
        argv: list[str],
        env: dict[str, str],
        workdir: Path | None,
        caps: tuple[str, ...] = (),
    ) -> list[str]:
        """The command line that starts ``argv`` in this sandbox."""

    def _workdir(self) -> Path | None:
        return None

    def start(
        self,
        argv: list[str],
        env: dict[str, str],
        pass_fds: tuple[int, ...],
        caps: tuple[str, ...] = (),
    ) -> Launch:
        """Start ``argv`` (a worker command) with ``env`` as its whole environment.

        ``caps``: capabilities bubblewrap leaves the process (the fork server's zygote needs
        two at start-up; a worker none); the process sandbox ignores them.
        """
        workdir = self._workdir()
        command = self._command(argv, env, workdir, caps)
        group = self.cgroups.create() if self.cgroups is not None else None
        if group is not None:
            files = group.procs_files
            command = ["/bin/sh", "-c", _JOIN, "sh", str(len(files)), *files, *command]
        try:
            process = _SPAWNER.run(
                lambda: subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    pass_fds=pass_fds,
                    env=env,
                    cwd=str(workdir) if workdir else "/",
                    start_new_session=True,
                    close_fds=True,
                )
            )
        except BaseException:
            if group is not None:
                group.remove()
            if workdir is not None:
                shutil.rmtree(workdir, ignore_errors=True)
            raise
        return Launch(process=process, group=group, workdir=workdir)

    def kill(self, launch: Launch, wait: bool = True) -> None:
        """Kill the worker and everything it started; its cgroup stays, to be read. Without
        ``wait``, only send the signals (:meth:`stop` waits for them to be gone)."""
        with contextlib.suppress(OSError):
            os.killpg(launch.process.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            launch.process.kill()
        if launch.group is not None:
            if not wait:
                launch.group.signal_all()
                return
            launch.group.kill_all()
        if wait:
            with contextlib.suppress(subprocess.TimeoutExpired):
                launch.process.wait(timeout=5)

    def stop(self, launch: Launch) -> None:
        """:meth:`kill`, then remove the worker's cgroup and working directory."""
        self.kill(launch)
        if launch.group is not None:
            launch.group.remove()
        if launch.workdir is not None:
            _remove_tree(launch.workdir)


def _remove_tree(path: Path) -> None:
    def make_writable(func, target, _exc):  # type: ignore[no-untyped-def]
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(target), 0o700)
            os.chmod(target, 0o700)
            func(target)

    shutil.rmtree(path, onexc=make_writable) if sys.version_info >= (3, 12) else shutil.rmtree(
        path, onerror=make_writable
    )


class ProcessSandbox(Sandbox):
    """A plain child process: own session, private working directory, rlimits, cgroup."""

    name = "process"
    isolated = False

    def _workdir(self) -> Path:
        return Path(tempfile.mkdtemp(prefix="jaxplay-run-"))

    def _command(
        self,
        argv: list[str],
        env: dict[str, str],
        workdir: Path | None,
        caps: tuple[str, ...] = (),
    ) -> list[str]:
        if workdir is not None:
            env["HOME"] = env["TMPDIR"] = str(workdir)
        return argv


class BwrapSandbox(Sandbox):
    """bubblewrap: all namespaces unshared, read-only system, private tmpfs, cleared env."""

    name = "bwrap"
    isolated = True

    def __init__(
        self,
        cgroups: Cgroups | None = None,
        executable: str = BWRAP,
        tmp_mb: int = 64,
        shm_mb: int = 64,
    ) -> None:
        super().__init__(cgroups)
        self.executable = executable
        self.tmp_mb = tmp_mb
        self.shm_mb = shm_mb

    def available(self) -> bool:
        """bwrap is installed *and* can create its namespaces here (containers often forbid
        user namespaces); checked once per executable with a trivial sandbox."""
        return bwrap_usable(self.executable)

    def _command(
        self,
        argv: list[str],
        env: dict[str, str],
        workdir: Path | None,
        caps: tuple[str, ...] = (),
    ) -> list[str]:
        env["HOME"] = env["TMPDIR"] = SANDBOX_WORKDIR
        cmd = [
            self.executable,
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
            "--cap-drop",
            "ALL",
            *(arg for cap in caps for arg in ("--cap-add", cap)),
            "--hostname",
            "sandbox",
        ]
        for top in ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            path = "/" + top
            if os.path.islink(path):
                cmd += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                cmd += ["--ro-bind", path, path]
        for name in ("ld.so.cache", "ld.so.conf", "localtime", "alternatives"):
            cmd += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        # The private /tmp first: a virtualenv or checkout that lives under /tmp (a CI clone)
        # is bound on top of it below, rather than hidden by it.
        cmd += ["--size", str(self.tmp_mb * 1024 * 1024), "--tmpfs", "/tmp"]
        cmd += ["--dir", SANDBOX_WORKDIR]
        for path in _python_paths():
            cmd += ["--ro-bind", path, path]
        package = str(ROOT / "jaxplay")
        cmd += ["--ro-bind", package, package]
        # --dev makes /dev a tmpfs of half the host's memory, and /dev/shm a directory in it,
        # neither counted by the address-space limit: give /dev/shm a size of its own and make
        # the rest of /dev read-only (device nodes stay usable).
        cmd += ["--proc", "/proc", "--dev", "/dev"]
        cmd += ["--size", str(self.shm_mb * 1024 * 1024), "--tmpfs", "/dev/shm"]
        gpus = sorted(glob.glob("/dev/nvidia*"))
        for dev in gpus:
            cmd += ["--dev-bind", dev, dev]
        cmd += ["--remount-ro", "/dev"]
        if gpus:
            cmd += ["--ro-bind-try", "/sys", "/sys"]
        cmd += ["--chdir", SANDBOX_WORKDIR]
        for key, value in sorted(env.items()):
            cmd += ["--setenv", key, value]
        return [*cmd, "--", *argv]


#: Executable -> when it was found usable (forever) or not (monotonic time: asked again later).
_USABLE: dict[str, tuple[bool, float]] = {}
#: How long a failed probe stands before the next asks again, and how often one probe tries.
PROBE_AGAIN_S = 60.0
PROBE_TRIES = 3


def bwrap_usable(executable: str = BWRAP) -> bool:
    """Whether ``executable`` exists and can run ``/bin/true`` with every namespace unshared.

    A success is kept for the process; a failure only for :data:`PROBE_AGAIN_S`, after
    :data:`PROBE_TRIES` tries: on a busy machine one probe can fail (a namespace limit met for a
    moment), and a failure kept for good refused every run of a public server, and failed a test
    worker's every sandbox test after it.
    """
    known = _USABLE.get(executable)
    if known is not None and (known[0] or time.monotonic() - known[1] < PROBE_AGAIN_S):
        return known[0]
    ok = os.access(executable, os.X_OK)
    why = "not an executable"
    for attempt in range(PROBE_TRIES if ok else 0):
        probe = [executable, "--unshare-all", "--die-with-parent", "--new-session"]
        probe += ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "/bin/true"]
        try:
            done = subprocess.run(
                probe, env=environment.child_environment(), capture_output=True, timeout=30
            )
            ok, why = done.returncode == 0, done.stderr.decode("utf-8", "replace")[-300:]
        except (OSError, subprocess.SubprocessError) as err:
            ok, why = False, f"{type(err).__name__}: {err}"
        if ok:
            break
        if attempt + 1 < PROBE_TRIES:
            time.sleep(0.5 * (attempt + 1))
    if not ok:
        log.warning("bubblewrap (%s) cannot isolate a run here: %s", executable, why)
    _USABLE[executable] = (ok, time.monotonic())
    return ok


def make_sandbox(mode: str, cgroups: Cgroups | None = None, scratch_mb: int = 64) -> Sandbox:
    """The sandbox for ``mode``: ``"bwrap"``, ``"process"``, or ``"auto"`` (bwrap if present).

    ``scratch_mb`` sizes bubblewrap's in-memory ``/tmp`` and ``/dev/shm``.
    """
    if mode == "process":
        return ProcessSandbox(cgroups)
    bwrap = BwrapSandbox(cgroups, tmp_mb=scratch_mb, shm_mb=scratch_mb)
    if mode == "bwrap" or bwrap.available():
        return bwrap
    return ProcessSandbox(cgroups)

"""The server's side of the fork server: one zygote, and a handle per forked run.

The zygote and how it makes and isolates a run are described in :mod:`jaxplay.sandbox._zygote`
(the process this module starts and talks to). Here: starting it (inside bubblewrap when the
pool's sandbox is bwrap) and replacing it when it dies, asking it for a run, learning the run's
pid from the kernel (``SCM_CREDENTIALS``) to put it into its own cgroup, and reading the
zygote's reports of each run's end.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from jaxplay.core.i18n import _
from jaxplay.sandbox._process import Launch, Sandbox, WorkerGroup

log = logging.getLogger(__name__)

#: What bubblewrap leaves the zygote for :func:`_namespaces.prepare_zygote` (dropped at once).
ZYGOTE_CAPS = ("CAP_SYS_ADMIN", "CAP_SETFCAP")
_MAX_PACKET = 65536


def _our_warm_up_cache(path: str) -> bool:
    """Whether ``path`` is what a zygote without bubblewrap makes for its warm-up cache: a
    directory (not a link) ``/tmp/jaxplay-warm-up-*`` of this user's, safe to remove."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (
        os.path.dirname(path) == "/tmp"
        and os.path.basename(path).startswith("jaxplay-warm-up-")
        and stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.getuid()
    )


class ForkServerUnavailable(Exception):
    """This host cannot fork runs from a zygote (the reason is the message)."""


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.send(json.dumps(message).encode())


class ForkedProcess:
    """The server's handle of one forked run (``C``), with the ``Popen`` methods the pool uses.

    ``returncode`` follows ``Popen``: ``-n`` for signal ``n`` (``C`` reports the run's
    ``128 + n``), set when the zygote reports the end.
    """

    def __init__(self, run: int, stderr_fd: int) -> None:
        self.run = run
        self.pid = 0
        self.pidfd: int | None = None
        self.returncode: int | None = None
        self.threads_at_fork: int | None = None
        self.forked: Future[dict[str, Any]] = Future()
        self.stderr = os.fdopen(stderr_fd, "rb")
        self._ended = threading.Event()

    def ended(self, code: int) -> None:
        if self.returncode is None:
            self.returncode = -(code - 128) if 128 < code < 128 + 65 else code
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired("forked run", timeout or 0)
        return self.returncode if self.returncode is not None else -9

    def kill(self) -> None:
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)

    def close(self) -> None:
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self.pidfd)
            self.pidfd = None
        with contextlib.suppress(OSError):
            self.stderr.close()


class ForkServer:
    """The server's side of one zygote: starts it (and replaces it when it dies), forks runs.

    One zygote serves the whole pool: a fork takes milliseconds of its time while a run's
    backend start-up and code run in the forked process, so it is not the bottleneck (see
    ``benchmarks/forkserver.py``), and a second one would cost its own ~0.3 GB.

    Arguments:
        sandbox: starts the zygote (bubblewrap or a plain process) and holds the cgroups.
        scratch_mb: the size of each run's in-memory ``/tmp`` and ``/dev/shm``.
        environment: the zygote's (and so every run's) whole environment.
        start_timeout_s: how long the zygote may take to import JAX.
    """

    def __init__(
        self,
        sandbox: Sandbox,
        scratch_mb: int,
        environment: Callable[[], dict[str, str]],
        start_timeout_s: float = 120.0,
    ) -> None:
        self.sandbox = sandbox
        self.scratch_mb = scratch_mb
        self.environment = environment
        self.start_timeout_s = start_timeout_s
        #: Why this host cannot fork runs (set once, for good), or ``None``.
        self.unusable: str | None = None
        self.zygote: Launch | None = None
        self.starts = 0
        self._sock: socket.socket | None = None
        #: The zygote's warm-up cache when it is a directory of this host (no bubblewrap).
        self._host_cache: str | None = None
        self._lock = threading.Lock()
        self._children: dict[int, ForkedProcess] = {}
        self._state: Future[dict[str, Any]] | None = None
        self._counter = 0
        self._closed = False

    # -- the zygote ------------------------------------------------------------------------
    def _alive(self) -> bool:
        return self.zygote is not None and self.zygote.process.poll() is None and bool(self._sock)

    def _start_zygote(self) -> None:
        """Start a zygote and wait until it imported JAX (under ``self._lock``)."""
        self._stop_zygote()
        server_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [sys.executable, "-s", "-P", "-m", "jaxplay.sandbox._zygote"]
        argv += ["--control-fd", str(zygote_end.fileno())]
        argv += ["--scratch-bytes", str(self.scratch_mb * 1024 * 1024)]
        bwrap = self.sandbox.name == "bwrap"
        argv += ["--bwrap"] if bwrap else []
        env = {**self.environment(), "OPENBLAS_NUM_THREADS": "1"}
        try:
            launch = self.sandbox.start(
                argv, env, (zygote_end.fileno(),), caps=ZYGOTE_CAPS if bwrap else ()
            )
        finally:
            zygote_end.close()
        self.zygote, self._sock = launch, server_end
        self.starts += 1
        server_end.settimeout(self.start_timeout_s)
        try:
            message = json.loads(server_end.recv(_MAX_PACKET) or b"{}")
        except (OSError, ValueError) as exc:
            message = {"type": "died", "reason": str(exc)}
        if message.get("type") != "ready":
            self._stop_zygote()
            if self._closed:
                raise RuntimeError("the fork server is shut down")
            reason = str(message.get("reason") or self._zygote_errors(launch))
            raise ForkServerUnavailable(reason)
        server_end.settimeout(None)
        cache = message.get("warm_up_cache")
        # Without bubblewrap the zygote's warm-up cache is a directory of this machine's /tmp,
        # which the server removes with the zygote (it may be killed before it could).
        if isinstance(cache, str) and not getattr(self.sandbox, "isolated", True):
            self._host_cache = cache
        threading.Thread(
            target=self._read, args=(server_end,), daemon=True, name="jaxplay-zygote"
        ).start()

    @staticmethod
    def _zygote_errors(launch: Launch) -> str:
        with contextlib.suppress(OSError, ValueError, subprocess.TimeoutExpired):
            launch.process.wait(timeout=5)
            text = launch.process.stderr.read(65536).decode("utf-8", "replace").strip()
            return "the zygote did not start: " + (text[-1500:] or "no message")
        return "the zygote did not start"

    def _read(self, sock: socket.socket) -> None:
        """The reader of one zygote's reports (its own thread), until the zygote ends."""
        while True:
            try:
                data = sock.recv(_MAX_PACKET)
                message = json.loads(data) if data else None
            except (OSError, ValueError):
                message = None
            if not isinstance(message, dict):
                break
            kind, run = message.get("type"), message.get("id")
            with self._lock:
                child = self._children.get(run) if isinstance(run, int) else None
                if kind in ("exit", "refused") and child is not None:
                    del self._children[child.run]  # ended, or never forked: no more will come
                state = self._state
            if kind == "state" and state is not None:
                state.set_result(message)
            elif child is not None and kind in ("forked", "refused"):
                if kind == "forked":
                    child.threads_at_fork = message.get("threads_at_fork")
                    child.forked.set_result(message)
                else:
                    child.forked.set_exception(
                        ForkServerUnavailable(str(message.get("reason", "refused")))
                    )
            elif child is not None and kind == "exit":
                child.ended(int(message.get("code", 1)))
        # The zygote is gone: so are its children (each dies with its parent).
        with self._lock:
            orphans = [c for c in self._children.values()]
            self._children.clear()
            if self._sock is sock:
                self._sock = None
        for child in orphans:
            if not child.forked.done():
                child.forked.set_exception(RuntimeError("the zygote died"))
            child.ended(128 + signal.SIGKILL)

    def _stop_zygote(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        if self.zygote is not None:
            self.sandbox.stop(self.zygote)
            with contextlib.suppress(OSError):
                if self.zygote.process.stderr is not None:
                    self.zygote.process.stderr.close()
            self.zygote = None
        cache, self._host_cache = self._host_cache, None
        if cache is not None and _our_warm_up_cache(cache):
            shutil.rmtree(cache, ignore_errors=True)

    def zygote_state(self, timeout_s: float = 10.0) -> dict[str, Any]:
        """What the live zygote says of itself: JAX backends, threads, preloaded modules."""
        with self._lock:
            if not self._alive():
                raise RuntimeError("no zygote is running")
            self._state = Future()
            state = self._state
            _send(self._sock, {"type": "state"})  # type: ignore[arg-type]
        return state.result(timeout=timeout_s)

    # -- runs ------------------------------------------------------------------------------
    def start(self, fds: tuple[int, int, int, int]) -> Launch:
        """Fork a run for the worker pipes ``fds`` (job, result, out, err; the child's ends).

        Raises:
            ForkServerUnavailable: this host cannot fork runs (the pool falls back).
            RuntimeError, OSError: this one start failed (the pool retries as for a worker).
        """
        log_r, log_w = os.pipe()
        server_ctl, child_ctl = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        server_ctl.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        child = ForkedProcess(0, log_r)
        try:
            with self._lock:
                if self._closed:
                    raise RuntimeError("the fork server is shut down")
                if self.unusable is not None:
                    raise ForkServerUnavailable(self.unusable)
                if not self._alive():
                    try:
                        self._start_zygote()
                    except ForkServerUnavailable as exc:
                        self.unusable = str(exc)
                        raise
                self._counter += 1
                child.run = self._counter
                self._children[child.run] = child
                sock = self._sock
                assert sock is not None
                socket.send_fds(
                    sock,
                    [json.dumps({"type": "fork", "id": child.run}).encode()],
                    [child_ctl.fileno(), *fds, log_w],
                )
            os.close(log_w)
            log_w = -1
            child_ctl.close()
            try:
                child.forked.result(timeout=self.start_timeout_s)
            except ForkServerUnavailable as exc:
                with self._lock:
                    self.unusable = str(exc)
                raise
            group = self._join_cgroup(child, server_ctl)
        except BaseException:
            forked = child.forked.done() and child.forked.exception() is None
            if not forked:  # no exit report will come for a run that never started
                with self._lock:
                    if self._children.get(child.run) is child:
                        del self._children[child.run]
            if log_w >= 0:
                os.close(log_w)
            child_ctl.close()
            server_ctl.close()
            child.kill()
            child.close()
            raise
        server_ctl.close()
        return Launch(process=child, group=group)

    def _join_cgroup(self, child: ForkedProcess, ctl: socket.socket) -> WorkerGroup | None:
        """Learn ``C``'s pid from the kernel, put it into a new cgroup, let it go on."""
        ctl.settimeout(self.start_timeout_s)
        size = socket.CMSG_SPACE(struct.calcsize("3i"))
        data, ancillary = ctl.recvmsg(1, size)[:2]
        pid = 0
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = struct.unpack("3i", payload[: struct.calcsize("3i")])[0]
        if data != b"h" or pid <= 0:
            raise RuntimeError("the forked run did not report")
        child.pid = pid
        child.pidfd = os.pidfd_open(pid)
        cgroups = self.sandbox.cgroups
        group = cgroups.create() if cgroups is not None else None
        if group is not None:
            for path in group.procs_files:
                with open(path, "w") as f:
                    f.write(str(pid))
        try:
            ctl.sendall(b"g")
        except OSError:
            if group is not None:
                group.remove()
            raise
        return group

    def kill(self, launch: Launch, wait: bool = True) -> None:
        """Kill the run and all it started (its cgroup stays, to be read). Without ``wait``,
        only send the signals (:meth:`stop` waits for them to be gone)."""
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
        """:meth:`kill`, then remove the run's cgroup."""
        self.kill(launch)
        if launch.group is not None:
            launch.group.remove()
        launch.process.close()

    def shutdown(self) -> None:
        """Stop the zygote (one still importing JAX too) and every run it forked."""
        self._closed = True
        starting = self.zygote
        if starting is not None:
            self.sandbox.kill(starting)  # ends a start-up that holds the lock
        with self._lock:
            self._stop_zygote()

    def describe(self) -> str:
        """Which kind of process runs the code, in a few words, for the limits line."""
        if self.unusable is not None:
            return _("a fresh interpreter per run (no fork server here)")
        return _("a process forked per run from a zygote that imported JAX once")

"""The fork server: a zygote that imports JAX once and forks one isolated process per run.

Why: an exec'd worker pays JAX's import (about 2 CPU-s here) for every run; a process forked
after ``import jax`` but before any backend exists starts its own backend in a tenth of that.

How a run is made (``Z`` the zygote, started like a worker: inside bubblewrap in ``bwrap`` mode):

1. The server sends ``Z`` a fork request with the run's pipes (``SCM_RIGHTS``). ``Z`` checks it
   is fork-safe (below), forks ``C`` and reports the thread count it forked with.
2. ``C`` closes every descriptor but the run's, says hello on a socket of its own; the kernel
   tells the server ``C``'s pid (``SCM_CREDENTIALS``, translated into the server's PID
   namespace), and the server moves ``C`` into the run's own cgroup before it answers.
3. ``C`` unshares user, PID, mount, IPC, UTS and network namespaces and forks ``I``, PID 1 of
   the new PID namespace: it mounts a fresh ``/proc`` (``sys``, ``sysrq-trigger``, ``irq``,
   ``bus`` read-only, as bubblewrap does), sized tmpfs on ``/tmp`` (bwrap mode, the
   interpreter's paths under it bound back read-only) or on the working directory (process
   mode) and on ``/dev/shm``, and reaps orphans.
4. ``I`` drops every capability (bounding set included), forks ``R`` (PID 2) and makes itself
   undumpable (``R`` cannot ptrace it); ``R`` runs the exec'd worker's own code
   (:func:`jaxplay.sandbox._worker.main`): its own backend, the job, its limits, the result.
   When ``R`` ends, ``I`` exits with its status (``128 + signal`` for a signal, as bubblewrap
   reports it) and the kernel kills everything left in the namespace; ``C`` reports it, ``Z``
   reaps ``C`` and tells the server. ``C``, ``I`` and ``R`` each die with their parent.

**A warm-up compiled once.** Before its first fork, ``Z`` forks one child that starts a
backend, compiles the worker's first computation into JAX's persistent compilation cache in a
new directory and exits (:func:`fill_warm_up_cache`; ``Z`` still starts none). Every run's
``I`` binds that directory read-only (keeping the flags of the mount it sits on, which a user
namespace may not drop); ``R``'s warm-up loads the programs instead of compiling them, then puts
back the JAX settings ``Z`` changed, so the visitor's code compiles everything itself, as in a
fresh process (its first compile also pays XLA's one-off start), and every compile time it
measures is a compile. Where the bind fails the run compiles its warm-up as before.

Two concurrent runs share nothing: neither can name the other's processes (PID namespaces,
own ``/proc``), nor reach its files (own tmpfs), its abstract sockets (network namespaces) or
its SysV IPC. ``Z`` itself runs no visitor code and receives no visitor data (requests carry an
id and descriptors only), so a forked run's memory holds nothing of another visitor's.

**The zygote holds no JAX object and no backend.** JAX objects are not fork-safe (a backend
owns threads and device state), so ``Z`` only *imports*: ``jax``, ``jax.numpy``, numpy and the
worker's modules (:data:`PRELOAD`), which create no backend at import. It never calls
``jax.devices()``, creates no array and traces nothing. Before each fork it checks, and
refuses to fork if either fails: JAX's backend registry is empty (so
``_at_fork_handler_installed``, set with the first backend, is false too) and
``/proc/self/task`` has one entry (no thread to be cut in half; numpy's OpenBLAS would start
threads at import, so the zygote's environment sets ``OPENBLAS_NUM_THREADS=1``). A refused
fork makes the pool fall back to exec'd workers. Tests ask a live zygote for both
(``ForkServer.zygote_state``, :mod:`jaxplay.sandbox._forkserver`). Every child reseeds
numpy's global generator (Python's ``random`` reseeds itself at fork).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
from typing import Any

from jaxplay.core import jax_private
from jaxplay.sandbox import _namespaces as namespaces
from jaxplay.sandbox._process import ROOT, _python_paths

#: Modules the zygote imports once, so no run imports them (each checked to start no backend).
PRELOAD = (
    "jax",
    "jax.numpy",
    # JAX imports these on its first lowering: each run would import them again.
    "jaxlib.mlir.dialects.builtin",
    "jaxlib.mlir.dialects.mhlo",
    "numpy",
    "jaxplay.sandbox._worker",
    "jaxplay.sandbox._inspectors",
    "jaxplay.core.codec",
    "jaxplay.core.timing",
    "jaxplay.tracing._sandboxed",
)
_MAX_PACKET = 65536


# --- the zygote's side --------------------------------------------------------------------------


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.send(json.dumps(message).encode())


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


def fork_safety() -> str | None:
    """Why this process must not fork now (a JAX backend exists, more than one thread)."""
    backends, at_fork = jax_private.backend_state()
    if backends or at_fork:
        return "a JAX backend exists in the zygote"
    threads = _thread_count()
    if threads != 1:
        return f"the zygote has {threads} threads"
    return None


#: The JAX settings the zygote changes for its warm-up cache (a run puts them back after its
#: warm-up, so the visitor's code runs with JAX's own).
CACHE_SETTINGS = (
    "jax_compilation_cache_dir",
    "jax_persistent_cache_enable_xla_caches",
    "jax_persistent_cache_min_compile_time_secs",
)


def fill_warm_up_cache(timeout_s: float = 60.0) -> dict[str, Any] | None:
    """Compile the worker's first computation once, into a cache every run reads read-only.

    Why: every run's process starts a backend and pays its first dispatch, lowering and compiles
    (docs/benchmarks.md, *Fork server*); they are the same each time, so a run loads them instead.
    The zygote itself still starts no backend: a child forked for this only (before any run,
    running only :func:`jaxplay.sandbox._worker.first_computation`, no visitor's code or data)
    writes JAX's persistent compilation cache into a new private directory. Runs see that
    directory bound read-only (:func:`_init`) with JAX told never to write there, and put JAX's
    settings back once their warm-up is done, so a visitor's compiles are never cache loads and
    nothing a visitor does reaches the next run.

    Returns the settings a run puts back after its warm-up (their values before this call), or
    ``None`` (runs compile as before) if the child fails, hangs past ``timeout_s`` or writes
    nothing.
    """
    import jax

    before = {name: getattr(jax.config, name) for name in CACHE_SETTINGS}
    try:
        path = tempfile.mkdtemp(prefix="jaxplay-warm-up-", dir="/tmp")
    except OSError:
        return None
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_enable_xla_caches", "none")
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1e9)  # a run never writes
    try:
        pid = os.fork()
    except OSError:
        _put_back(before)
        shutil.rmtree(path, ignore_errors=True)
        return None
    if pid == 0:
        code = 1
        try:
            namespaces.die_with_parent()
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
            from jaxplay.sandbox import _worker

            _worker.first_computation()
            code = 0
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout_s
    done, status = 0, 1
    while done == 0 and time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            time.sleep(0.01)
    if done == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    if done == 0 or _exit_code(status) != 0 or not os.listdir(path):
        _put_back(before)
        shutil.rmtree(path, ignore_errors=True)
        return None
    return before


def _state() -> dict[str, Any]:
    backends, at_fork = jax_private.backend_state()
    return {
        "type": "state",
        "backends": backends,
        "at_fork_handler": at_fork,
        "threads": _thread_count(),
        "modules": [m for m in PRELOAD if m in sys.modules],
        "warm_up_cache": jax_cache_dir(),
        "pid": os.getpid(),
    }


def _put_back(settings: dict[str, Any] | None) -> None:
    """Set JAX's settings to ``settings`` (what :func:`fill_warm_up_cache` changed)."""
    if settings:
        import jax

        for name, value in settings.items():
            jax.config.update(name, value)


def jax_cache_dir() -> str | None:
    """The zygote's warm-up cache (see :func:`fill_warm_up_cache`), if it has one."""
    jax = sys.modules.get("jax")
    return None if jax is None else jax.config.jax_compilation_cache_dir


def _exit_code(status: int) -> int:
    """A wait status as a shell would report it (``128 + n`` for signal ``n``)."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1


def _close_all_but(keep: set[int]) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def _run(fds: list[int], workdir: str, after_warm_up: dict[str, Any] | None) -> None:
    """``R``: the run itself, PID 2 of its namespace; never returns."""
    try:
        os.setsid()
        os.chdir(workdir)
        namespaces.set_capabilities(())
        import numpy

        numpy.random.seed()
        from jaxplay.sandbox import _worker

        job, result, out, err = fds
        argv = ["--job-fd", str(job), "--result-fd", str(result)]
        _worker.main([*argv, "--out-fd", str(out), "--err-fd", str(err)], after_warm_up)
    except BaseException as exc:
        print(f"jaxplay fork server: the run failed to start: {exc!r}", file=sys.stderr)
    os._exit(70)


def _init(fds: list[int], config: dict[str, Any]) -> None:
    """``I``: PID 1 of the run's namespaces: mounts, then reaps until the run ends."""
    try:
        namespaces.die_with_parent()
        namespaces.private_mounts()
        namespaces.mount_proc()
        scratch = int(config["scratch_bytes"])
        workdir = str(config["workdir"])
        cache, after = config["cache"], config["after_warm_up"]
        cache_fd = None if cache is None else os.open(cache, os.O_PATH | os.O_DIRECTORY)
        if config["cover_tmp"]:
            kept = [p for p in config["keep"] if p.startswith("/tmp/") and os.path.isdir(p)]
            handles = [os.open(p, os.O_PATH | os.O_DIRECTORY) for p in kept]
            namespaces.mount_tmpfs("/tmp", scratch)
            for path, fd in zip(kept, handles, strict=True):
                namespaces.bind_fd(fd, path)
                os.close(fd)
            os.makedirs(workdir, exist_ok=True)
        else:
            namespaces.mount_tmpfs(workdir, scratch, mode="700")
        if cache is not None and cache_fd is not None:
            # The zygote's warm-up cache, read-only (it may sit under the /tmp just covered).
            # Where that cannot be done the run compiles its warm-up without it.
            try:
                namespaces.bind_read_only(f"/proc/self/fd/{cache_fd}", cache)
            except OSError as exc:
                print(f"jaxplay fork server: no warm-up cache for this run: {exc}", file=sys.stderr)
                _put_back(after)
                after = None
            os.close(cache_fd)
        os.chdir(workdir)  # not left in the zygote's directory, under the /tmp just covered
        namespaces.mount_tmpfs("/dev/shm", scratch)
        namespaces.set_hostname("sandbox")
        namespaces.loopback_up()
        # Nothing left to do that needs a capability; the run inherits none of them.
        namespaces.set_capabilities(())
    except OSError as exc:
        print(f"jaxplay fork server: the run's namespaces failed: {exc}", file=sys.stderr)
        os._exit(71)
    pid = os.fork()
    if pid == 0:
        _run(fds, workdir, after)
    namespaces.not_dumpable()  # the run cannot ptrace its init
    for fd in fds:
        os.close(fd)
    while True:
        try:
            done, status = os.wait()
        except ChildProcessError:
            os._exit(70)
        if done == pid:
            os._exit(_exit_code(status))


def _child(zygote: int, fds: list[int], config: dict[str, Any]) -> None:
    """``C``: joins its cgroup (through the server), makes the namespaces, waits; never returns."""
    try:
        os.setpgid(0, 0)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        ctl, *run_fds, log_fd = fds
        os.dup2(log_fd, 2)
        os.close(log_fd)
        _close_all_but({0, 1, 2, ctl, *run_fds})
        namespaces.die_with_parent()
        if os.getppid() != zygote:
            os._exit(0)
        with socket.socket(fileno=ctl) as hello:
            hello.sendall(b"h")
            if hello.recv(1) != b"g":
                os._exit(0)
        namespaces.enter_run_namespaces()
        pid = os.fork()
        if pid == 0:
            _init(run_fds, config)
        for fd in run_fds:
            os.close(fd)
        _, status = os.waitpid(pid, 0)
        os._exit(_exit_code(status))
    except BaseException as exc:
        with contextlib.suppress(BaseException):
            print(f"jaxplay fork server: the run failed to start: {exc!r}", file=sys.stderr)
        os._exit(72)


def _serve(sock: socket.socket, config: dict[str, Any]) -> None:
    """The zygote's loop: fork on request, report each child's end; single-threaded."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, int] = {}
    zygote = os.getpid()
    while True:
        ready, _, _ = select.select([sock, wake_r], [], [], 5.0)
        if wake_r in ready:
            with contextlib.suppress(OSError):
                os.read(wake_r, 4096)
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            run = children.pop(pid, None)
            if run is not None:
                _send(sock, {"type": "exit", "id": run, "code": _exit_code(status)})
        if sock not in ready:
            continue
        data, fds, _, _ = socket.recv_fds(sock, _MAX_PACKET, 8)
        if not data:
            cache = config["cache"]
            if cache is not None:
                shutil.rmtree(cache, ignore_errors=True)
            os._exit(0)  # the server closed its end
        request = json.loads(data)
        if request.get("type") == "state":
            _send(sock, _state())
            continue
        run = int(request["id"])
        reason = fork_safety()
        if reason is not None or len(fds) != 6:
            for fd in fds:
                os.close(fd)
            _send(sock, {"type": "refused", "id": run, "reason": reason or "bad request"})
            continue
        threads = _thread_count()
        pid = os.fork()
        if pid == 0:
            sock.close()
            _child(zygote, list(fds), config)
        for fd in fds:
            os.close(fd)
        children[pid] = run
        _send(sock, {"type": "forked", "id": run, "threads_at_fork": threads})


def main(argv: list[str] | None = None) -> None:
    """The zygote's entry point: ``python -m jaxplay.sandbox._zygote --control-fd N ...``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--control-fd", type=int, required=True)
    parser.add_argument("--scratch-bytes", type=int, required=True)
    parser.add_argument("--bwrap", action="store_true")
    opts = parser.parse_args(argv)
    parent = os.getppid()
    namespaces.die_with_parent()
    if os.getppid() != parent:
        os._exit(0)
    sock = socket.socket(fileno=opts.control_fd)
    if opts.bwrap:
        namespaces.prepare_zygote()
    reason = namespaces.probe()
    if reason is not None:
        _send(sock, {"type": "unusable", "reason": f"no namespaces for a run here: {reason}"})
        os._exit(0)
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
        if fork_safety() is not None:
            why = f"importing {name}: {fork_safety()}"
            _send(sock, {"type": "unusable", "reason": why})
            os._exit(0)
    try:
        after_warm_up = fill_warm_up_cache()
    except Exception as exc:  # the runs compile their warm-up as before: say why in the log
        print(f"jaxplay fork server: no warm-up cache: {exc!r}", file=sys.stderr)
        after_warm_up = None
    if fork_safety() is not None:
        _send(sock, {"type": "unusable", "reason": f"after its warm-up cache: {fork_safety()}"})
        os._exit(0)
    gc.collect()
    gc.freeze()  # the children's collections then never touch (and copy) the zygote's pages
    config = {
        "scratch_bytes": opts.scratch_bytes,
        "workdir": os.getcwd(),
        "cover_tmp": opts.bwrap,
        "keep": [*_python_paths(), str(ROOT / "jaxplay")],
        "cache": jax_cache_dir() if after_warm_up is not None else None,
        "after_warm_up": after_warm_up,
    }
    _send(sock, {**_state(), "type": "ready"})
    _serve(sock, config)


if __name__ == "__main__":
    main()

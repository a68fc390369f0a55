"""The fork server: a zygote without a backend, isolated forked runs, the fallback.

The rest of the sandbox's tests (``test_sandbox*.py``) run against the fork server too: their
pools use the default ``JAXPLAY_FORKSERVER=auto``, which forks where the host allows it (and
``test_sandbox_hostile`` runs its bwrap cases once more with ``forkserver="off"``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from jaxplay.hosting import environment
from jaxplay.sandbox import Limits, RunnerConfig, WorkerPool
from jaxplay.sandbox._forkserver import ForkServer, ForkServerUnavailable
from jaxplay.sandbox._process import bwrap_usable

MODE = "bwrap" if bwrap_usable() else "process"


@pytest.fixture(scope="module")
def pool():  # type: ignore[no-untyped-def]
    p = WorkerPool(
        RunnerConfig(
            sandbox=MODE,
            forkserver="on",
            spares=2,
            max_concurrent=2,
            limits=Limits(timeout_s=20.0, memory_mb=512),
        )
    )
    first = p.run("print('up')")
    if first.error is not None and "fork server cannot run here" in first.error.message:
        p.shutdown()
        pytest.skip(f"no fork server on this host: {first.error.message}")
    assert first.ok, first.error
    yield p
    p.shutdown()


def _zygote(pool: WorkerPool) -> ForkServer:
    assert pool.forkserver is not None and pool.forkserver.zygote is not None
    return pool.forkserver


def test_the_zygote_has_no_backend_and_forks_with_one_thread(pool: WorkerPool) -> None:
    assert pool.run("import jax\nprint(len(jax.devices()))").ok
    state = _zygote(pool).zygote_state()
    assert state["backends"] == [] and state["at_fork_handler"] is False
    assert state["threads"] == 1
    assert {"jax", "jax.numpy", "jaxplay.sandbox._worker"} <= set(state["modules"])
    deadline = time.monotonic() + 120
    while not pool._spares and time.monotonic() < deadline:
        time.sleep(0.05)
    spare = pool._spares[0]
    assert spare.launch.process.threads_at_fork == 1
    assert spare.info is not None and spare.info["backend"] == "cpu"  # the child's own backend
    assert pool.worker_kind().startswith("a process forked per run")
    assert pool.status()["forkserver"] is True


CACHE_PROBE = """
import json, os, jax
from jax._src import compilation_cache
path = {path!r}
seen = {{"entries": sorted(os.listdir(path)), "writes": []}}
for name in ("planted", seen["entries"][0]):
    try:
        with open(os.path.join(path, name), "w") as f:
            f.write("x")
        seen["writes"].append("written")
    except OSError as exc:
        seen["writes"].append(exc.errno)
try:
    os.remove(os.path.join(path, seen["entries"][0]))
    seen["remove"] = "removed"
except OSError as exc:
    seen["remove"] = exc.errno
seen["cache_on"] = compilation_cache.is_persistent_cache_enabled()
seen["settings"] = {{name: getattr(jax.config, name) for name in {settings!r}}}
print(json.dumps(seen))
"""
FRESH_SETTINGS = """
import json, jax
print(json.dumps({{name: getattr(jax.config, name) for name in {settings!r}}}))
"""


def test_runs_load_the_zygotes_warm_up_and_cannot_change_it(pool: WorkerPool) -> None:
    """The zygote's one compile of the warm-up is what every forked run loads (JAX counts
    persistent-cache hits); a run can neither add to that cache nor alter or remove an entry,
    and its own code compiles without it, with JAX's settings as the zygote found them."""
    state = _zygote(pool).zygote_state()
    path = state["warm_up_cache"]
    assert path is not None and state["backends"] == [] and state["threads"] == 1
    deadline = time.monotonic() + 120
    while not pool._spares and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pool._spares[0].info is not None
    assert pool._spares[0].info["warm_up_cache_hits"] >= 1
    from jaxplay.sandbox._zygote import CACHE_SETTINGS

    result = pool.run(CACHE_PROBE.format(path=path, settings=CACHE_SETTINGS))
    assert result.ok, (result.error, result.stderr[-2000:])
    seen = json.loads(result.stdout)
    assert any(name.startswith("jit_") for name in seen["entries"])
    assert seen["writes"] == [30, 30] and seen["remove"] == 30  # EROFS, each time
    assert seen["cache_on"] is False
    # JAX's own settings are back for the visitor's code, as in a fresh process of a worker's
    # environment (this process's may differ: tests/conftest.py gives it a compilation cache).
    fresh = subprocess.run(
        [sys.executable, "-c", FRESH_SETTINGS.format(settings=CACHE_SETTINGS)],
        env=environment.child_environment(),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert seen["settings"] == json.loads(fresh.stdout)


# Each run leaves marks in every place a neighbour could look, waits while the other run is
# alive, then reports what it can see of the other: files, sockets, processes.
ISOLATION = """
import json, os, socket, time, ctypes, signal
me = {me!r}
other = {other!r}
for d in ('/tmp', '/dev/shm', '.'):
    open(os.path.join(d, 'mark-' + me), 'w').write(me)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind('\\0jaxplay-iso-' + me)
srv.listen(1)
time.sleep(4)
seen = {{}}
places = ('/tmp', '/dev/shm', '.')
seen['files'] = [d for d in places if os.path.exists(os.path.join(d, 'mark-' + other))]
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect('\\0jaxplay-iso-' + other)
    seen['socket'] = 'connected'
except OSError as exc:
    seen['socket'] = type(exc).__name__
seen['pid'] = os.getpid()
seen['proc'] = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
signalled = []
own = {{int(t) for t in os.listdir('/proc/self/task')}}  # our threads' ids answer kill() too
for pid in range(1, 400):
    if pid in own:
        continue
    try:
        os.kill(pid, 0)
        signalled.append(pid)
    except ProcessLookupError:
        pass
    except PermissionError:
        signalled.append(-pid)
seen['signalled'] = signalled
try:
    os.kill(-1, signal.SIGTERM)
    seen['kill_all'] = 'sent'
except ProcessLookupError:
    seen['kill_all'] = 'none'
libc = ctypes.CDLL(None, use_errno=True)
seen['ptrace_init'] = libc.ptrace(16, 1, None, None)  # PTRACE_ATTACH to our own PID 1
seen['ptrace_errno'] = ctypes.get_errno()
print(json.dumps(seen))
"""


def test_two_concurrent_runs_cannot_see_each_other(pool: WorkerPool) -> None:
    with ThreadPoolExecutor(2) as ex:
        futures = [
            ex.submit(pool.run, ISOLATION.format(me=me, other=other))
            for me, other in (("a", "b"), ("b", "a"))
        ]
        results = [f.result(timeout=120) for f in futures]
    for r in results:
        assert r.ok, (r.error, r.stderr[-2000:])
        seen = json.loads(r.stdout)
        assert seen["files"] == []
        assert seen["socket"] == "ConnectionRefusedError"  # no such name in its network ns
        assert seen["pid"] == 2 and seen["proc"] == [1, 2]  # its own /proc, its own PIDs
        assert seen["signalled"] == [1]  # only its own init, nobody else's
        assert seen["kill_all"] == "none"
        assert seen["ptrace_init"] == -1 and seen["ptrace_errno"] == 1  # EPERM
    for d in ("/tmp", "/dev/shm"):
        assert not (Path(d) / "mark-a").exists()  # nothing reached the server's file systems


@pytest.mark.parametrize(
    ("source", "kind", "exc_type"),
    [
        ("import ctypes\nctypes.string_at(0)", "crashed", None),
        ("import time\ntime.sleep(100)", "timeout", None),
        ("import os\nos._exit(7)", "exit", None),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "crashed", None),
        (
            "chunk = b'0' * (8 * 2**20)\nfor i in range(40):\n"
            "    open(f'/dev/shm/f{i}', 'wb').write(chunk)",
            "memory",
            "OSError",
        ),
        ("b = bytearray(10**10)", "memory", "MemoryError"),
        (
            "import os, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n"
            "            time.sleep(100)\n        n += 1\nfinally:\n    print(n)",
            "exception",
            "BlockingIOError",
        ),
    ],
    ids=["segfault", "hang", "os_exit", "sigkill", "fill_dev_shm", "bytearray", "fork_bomb"],
)
def test_a_bad_run_ends_with_its_error_kind_and_the_zygote_lives_on(
    pool: WorkerPool, source: str, kind: str, exc_type: str | None
) -> None:
    zygote = _zygote(pool)
    before = (zygote.starts, zygote.zygote.process.pid)  # type: ignore[union-attr]
    result = pool.run(source, timeout_s=5.0 if kind == "timeout" else 20.0)
    assert result.error is not None and result.error.kind == kind, (result.error, result.stderr)
    if exc_type is not None:
        assert result.error.exc_type == exc_type
    assert (zygote.starts, zygote.zygote.process.pid) == before  # type: ignore[union-attr]
    assert zygote.zygote_state()["threads"] == 1
    after = pool.run("print('next')")
    assert after.ok and after.stdout == "next\n"


def test_a_dead_zygote_is_replaced(pool: WorkerPool) -> None:
    zygote = _zygote(pool)
    starts = zygote.starts
    process = zygote.zygote.process  # type: ignore[union-attr]
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    results = [pool.run(f"print({i})") for i in range(4)]  # spares of the old one die with it
    assert [r.stdout for r in results if r.ok][-1:] == ["3\n"], [r.error for r in results]
    assert zygote.starts > starts and zygote.zygote_state()["backends"] == []


def test_a_run_over_its_memory_cgroup_is_reported_as_memory() -> None:
    limits = Limits(timeout_s=30.0, memory_mb=256, scratch_mb=2048)
    p = WorkerPool(
        RunnerConfig(sandbox=MODE, forkserver="on", spares=1, max_concurrent=1, limits=limits)
    )
    try:
        if p.cgroups.memory_root is None and p.cgroups.version != 2:
            pytest.skip("no memory cgroup here")
        code = (
            "chunk = b'1' * (8 * 2**20)\nfor i in range(120):\n"
            "    open(f'/dev/shm/f{i}', 'wb').write(chunk)\nprint('wrote 960 MB')"
        )
        result = p.run(code)
        assert "wrote" not in result.stdout
        assert result.error is not None and result.error.kind == "memory", result.error
        assert p.status()["forkserver"] is True
    finally:
        p.shutdown()


def _unavailable(self: ForkServer) -> None:
    raise ForkServerUnavailable("no user namespaces here (test)")


def test_without_namespaces_auto_falls_back_to_a_fresh_interpreter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ForkServer, "_start_zygote", _unavailable)
    p = WorkerPool(RunnerConfig(sandbox=MODE, forkserver="auto", spares=1, max_concurrent=1))
    try:
        result = p.run("import os\nprint(os.getpid() > 0)")
        assert result.ok and result.stdout == "True\n", result.error
        assert p.forkserver is not None and "test" in (p.forkserver.unusable or "")
        assert p.status()["forkserver"] is False
        assert p.worker_kind() == "a fresh interpreter per run (no fork server here)"
    finally:
        p.shutdown()


def test_forkserver_on_refuses_to_fall_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ForkServer, "_start_zygote", _unavailable)
    p = WorkerPool(RunnerConfig(sandbox=MODE, forkserver="on", spares=1, max_concurrent=1))
    try:
        result = p.run("print(1)")
        assert result.error is not None and result.error.kind == "refused"
        assert "no user namespaces here (test)" in result.error.message
    finally:
        p.shutdown()


def test_forkserver_off_starts_no_zygote() -> None:
    p = WorkerPool(RunnerConfig(sandbox=MODE, forkserver="off", spares=1, max_concurrent=1))
    try:
        assert p.forkserver is None and p.worker_kind() == "a fresh interpreter per run"
        result = p.run("print(2)")
        assert result.ok and result.stdout == "2\n"
        assert p.status()["forkserver"] is False
    finally:
        p.shutdown()


def test_the_setting_reads_auto_on_off() -> None:
    assert RunnerConfig.from_env({}).forkserver == "auto"
    assert RunnerConfig.from_env({"JAXPLAY_FORKSERVER": "OFF"}).forkserver == "off"
    assert RunnerConfig.from_env({"JAXPLAY_FORKSERVER": "maybe"}).forkserver == "auto"


def test_a_refused_fork_leaves_no_run_behind() -> None:
    """The zygote refuses a fork (a JAX backend or a second thread appeared in it): the start
    fails with ``ForkServerUnavailable``, the pool falls back for good, and the refused run is
    not kept waiting for an exit report that never comes. A stand-in zygote answers here."""
    import socket
    import threading
    from types import SimpleNamespace

    server_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)

    def refuse() -> None:
        data, fds, _, _ = socket.recv_fds(zygote_end, 65536, 8)
        for fd in fds:
            os.close(fd)
        reply = {"type": "refused", "id": json.loads(data)["id"], "reason": "2 threads"}
        zygote_end.send(json.dumps(reply).encode())

    forks = ForkServer(SimpleNamespace(name="process", cgroups=None), 64, dict, 10.0)
    forks.zygote = SimpleNamespace(process=SimpleNamespace(poll=lambda: None))  # type: ignore[assignment]
    forks._sock = server_end
    threading.Thread(target=forks._read, args=(server_end,), daemon=True).start()
    threading.Thread(target=refuse, daemon=True).start()
    pipes = [os.pipe() for _ in range(2)]
    try:
        with pytest.raises(ForkServerUnavailable, match="2 threads"):
            forks.start((pipes[0][0], pipes[0][1], pipes[1][0], pipes[1][1]))
        assert forks.unusable == "2 threads"
        assert forks._children == {}
    finally:
        for r, w in pipes:
            os.close(r)
            os.close(w)
        zygote_end.close()
        server_end.close()

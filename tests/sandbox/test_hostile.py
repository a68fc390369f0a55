"""Hostile code against the sandboxed runner, in both sandbox modes.

bwrap gets every case, twice: with workers forked by the fork server (the default where the
host allows it) and with exec'd ones (``bwrap-exec``). The process mode shares the limits code
(rlimits, cgroup, timeouts, output cap), so it gets a subset that covers each of those paths; it
has no filesystem, network or PID isolation by design (a public server refuses it).

Every case must end with the right ``error.kind`` (and exception type where one is raised) and
leave the pool serving. The cases run concurrently through one pool per mode (a module fixture
submits them all at once) so the file stays fast; limits are short (3 s) for the same reason.
Each assertion depends on a limit: without the timeout a loop hangs (pytest-timeout fails it),
without ``RLIMIT_AS`` ``bytearray(10**10)`` succeeds, without the output cap the flood passes,
without bwrap ``/etc/passwd`` is readable, and so on.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

SECRET = "jaxplay-test-secret-7f3a9c"
os.environ["JAXPLAY_TEST_SECRET"] = SECRET

from jaxplay.sandbox import Limits, RunnerConfig, RunResult, WorkerPool  # noqa: E402
from jaxplay.sandbox._process import bwrap_usable  # noqa: E402

BWRAP = bwrap_usable()
#: One xdist worker takes this module: each mode's pool runs every case at once, and a pool per
#: worker would run them all again on the same two cores.
pytestmark = pytest.mark.xdist_group("sandbox-hostile")
LIMITS = Limits(timeout_s=3.0, cpu_s=6.0, memory_mb=512)

#: name -> (source, expected kind(s), expected exception type or None, modes)
CASES: dict[str, tuple[str, str | tuple[str, ...], str | None, tuple[str, ...]]] = {
    "python_loop": ("while True:\n    pass", "timeout", None, ("bwrap", "process")),
    "sleep_forever": ("import time\ntime.sleep(10**6)", "timeout", None, ("bwrap",)),
    "jitted_cpu_loop": (
        "import jax\nfrom jax import lax\n"
        "f = jax.jit(lambda x: lax.while_loop(lambda v: v > -1.0, lambda v: v + 1.0, x))\n"
        "f(1.0).block_until_ready()",
        "timeout",
        None,
        ("bwrap",),
    ),
    # A real bomb: every child forks too. It ends by the process limit (the original gets
    # EAGAIN) or, when exiting children keep freeing slots, by the timeout; never unbounded.
    "fork_loop": (
        "import os\nwhile True:\n    os.fork()",
        ("exception", "timeout"),
        None,
        ("bwrap",),
    ),
    # Children that stay alive: the limit must stop the parent after about 64 forks.
    "fork_count": (
        "import os, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n"
        "            time.sleep(100)\n        n += 1\nfinally:\n    print(n)",
        "exception",
        "BlockingIOError",
        ("bwrap", "process"),
    ),
    "shell_fork_bomb": (
        "import os\nos.system('bomb() { bomb | bomb & }; bomb')\nimport time\ntime.sleep(10**6)",
        "timeout",
        None,
        ("bwrap", "process"),
    ),
    "thread_bomb": (
        "import threading, time\nwhile True:\n"
        "    threading.Thread(target=time.sleep, args=(100,), daemon=True).start()",
        "exception",
        "RuntimeError",
        ("bwrap",),
    ),
    "jnp_huge": (
        "import jax.numpy as jnp\njnp.ones((10**6, 10**6)).block_until_ready()",
        "memory",
        None,
        ("bwrap", "process"),
    ),
    "bytearray_10gb": ("b = bytearray(10**10)", "memory", "MemoryError", ("bwrap", "process")),
    # Grows a page at a time: the memory cgroup (real memory, where there is one) or the
    # address-space limit (a MemoryError) ends it, whichever is reached first.
    "list_growth": (
        "l = []\nwhile True:\n    l.append(' ' * 10**6)",
        "memory",
        None,
        ("bwrap",),
    ),
    "print_flood": (
        "while True:\n    print('x' * 1000)",
        "output_limit",
        None,
        ("bwrap", "process"),
    ),
    "huge_write": (
        "import os\nos.write(1, b'y' * (64 * 1024 * 1024))",
        "output_limit",
        None,
        ("bwrap",),
    ),
    "read_passwd": (
        "print(open('/etc/passwd').read())",
        "exception",
        "FileNotFoundError",
        ("bwrap",),
    ),
    "server_environment": (
        "import os\nprint(dict(os.environ))\ntry:\n"
        "    print(open('/proc/1/environ', 'rb').read())\n"
        "except PermissionError:\n    print('init unreadable')",  # a forked run's init
        "ok",
        None,
        ("bwrap",),
    ),
    "own_environment": ("import os\nprint(dict(os.environ))", "ok", None, ("process",)),
    "write_virtualenv": (
        "import os, jax\nopen(os.path.join(os.path.dirname(jax.__file__), 'pwned.txt'), 'w')",
        "exception",
        "OSError",
        ("bwrap",),
    ),
    "write_100mb": (
        "open('big.bin', 'wb').write(b'0' * (100 * 1024 * 1024))",
        "exception",
        "OSError",
        ("bwrap", "process"),
    ),
    "thousands_of_files": (
        "import os\nfor i in range(3000):\n    open(f'f{i}.txt', 'w').write('x')\n"
        "print(os.getcwd(), len(os.listdir('.')))",
        "ok",
        None,
        ("bwrap", "process"),
    ),
    "tcp_connection": (
        "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)",
        "exception",
        "OSError",
        ("bwrap",),
    ),
    "sys_exit": ("import sys\nsys.exit(3)", "exit", "SystemExit", ("bwrap", "process")),
    "os_exit": ("import os\nos._exit(7)", "exit", None, ("bwrap", "process")),
    "keyboard_interrupt": (
        "raise KeyboardInterrupt",
        "exception",
        "KeyboardInterrupt",
        ("bwrap",),
    ),
    "deep_recursion": (
        "def f(n):\n    return f(n + 1)\nf(0)",
        "exception",
        "RecursionError",
        ("bwrap",),
    ),
    "segfault": ("import ctypes\nctypes.string_at(0)", "crashed", None, ("bwrap", "process")),
    "ignore_sigterm": (
        "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass",
        "timeout",
        None,
        ("bwrap", "process"),
    ),
    "double_fork_daemon": (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        "        os.execv('/bin/sleep', ['sleep', '{marker}'])\n    os._exit(0)\n"
        "time.sleep(0.5)\nprint('parent done')",
        "ok",
        None,
        ("bwrap", "process"),
    ),
    "kill_parent": (
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nprint('still here')",
        "ok",
        None,
        ("bwrap",),
    ),
    # kill(-1) signals every process the caller may signal: inside the PID namespace, none.
    "kill_everything": (
        "import os, signal\nos.kill(-1, signal.SIGKILL)",
        "exception",
        "ProcessLookupError",
        ("bwrap",),
    ),
    # /dev/shm and /tmp live in memory the address-space limit does not see: each is sized,
    # and filling one ends the run as a memory error (unsized, /dev/shm took 4.1 GB).
    "fill_dev_shm": (
        "chunk = b'0' * (8 * 2**20)\nfor i in range(40):\n"
        "    open(f'/dev/shm/f{i}', 'wb').write(chunk)",
        "memory",
        "OSError",
        ("bwrap",),
    ),
    "write_dev": ("open('/dev/junk', 'w').write('x')", "exception", "OSError", ("bwrap",)),
    "input": ("x = input()", "exception", "EOFError", ("bwrap",)),
    "script_tag": ("print('<script>alert(1)</script>')", "ok", None, ("bwrap",)),
}

#: Cases that need more than the short limit on a busy machine: writing thousands of files,
#: forking a multi-threaded JAX process 64 times, growing memory a megabyte at a time.
TIMEOUTS = {"thousands_of_files": 15.0, "fork_count": 10.0, "list_growth": 10.0}

#: The daemon's ``sleep`` argument, unique to this process: every xdist worker that runs a case
#: of a mode starts its own pool, and another worker's daemon must not be taken for this one's.
DAEMON_MARKER = {
    mode: f"987.{os.getpid()}{i}" for i, mode in enumerate(("bwrap", "process", "bwrap-exec"))
}


def _source(name: str, mode: str) -> str:
    source = CASES[name][0]
    return (
        source.replace("{marker}", DAEMON_MARKER[mode]) if name == "double_fork_daemon" else source
    )


def _params(mode: str) -> list[str]:
    return [name for name, case in CASES.items() if mode in case[3]]


class _Runs:
    """One pool per mode; every case submitted at once, results awaited per test."""

    def __init__(self, mode: str) -> None:
        sandbox, _, exec_ = mode.partition("-")
        forkserver = "off" if exec_ else "auto"
        self.pool = WorkerPool(
            RunnerConfig(
                sandbox=sandbox, forkserver=forkserver, spares=3, max_concurrent=3, limits=LIMITS
            )
        )
        self.executor = ThreadPoolExecutor(max_workers=8)
        self.futures: dict[str, Future[RunResult]] = {
            name: self.executor.submit(
                self.pool.run, _source(name, mode), timeout_s=TIMEOUTS.get(name)
            )
            for name in _params(sandbox)
        }
        # A variable set by one run must be absent in the next (single-use workers).
        self.first = self.executor.submit(self.pool.run, "leftover = 42")

    def result(self, name: str) -> RunResult:
        return self.futures[name].result(timeout=240)

    def close(self) -> None:
        self.executor.shutdown(wait=True)
        self.pool.shutdown()


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    mode = request.param
    if mode.startswith("bwrap") and not BWRAP:
        pytest.skip("bubblewrap is not installed or cannot create namespaces here")
    r = _Runs(mode)
    yield r
    r.close()


#: How long a killed run's processes may take to be gone (a busy CI machine).
DAEMON_GONE_S = 10.0


def _with_marker(marker: str) -> list[str]:
    """The process ids whose command line holds ``marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if marker.encode() in (proc / "cmdline").read_bytes():
                found.append(proc.name)
        except OSError:
            continue
    return found


def _check(r: RunResult, name: str, mode: str) -> None:
    source, kind, exc_type, _ = CASES[name]
    got = "ok" if r.ok else r.error.kind  # type: ignore[union-attr]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    assert got in kinds, (name, r.error, r.stdout[-500:], r.stderr[-500:])
    if name == "fork_loop" and got == "exception":
        assert r.error is not None and r.error.exc_type == "BlockingIOError"
    if name == "fork_count":
        assert 0 < int(r.stdout.split()[0]) <= LIMITS.processes + 8
    if exc_type is not None:
        assert r.error is not None and r.error.exc_type == exc_type, r.error
    # Case-specific evidence that the limit, not luck, ended the run.
    if name in ("print_flood", "huge_write"):
        assert r.truncated
        assert len(r.stdout.encode()) <= LIMITS.output_bytes + 200
    if name in ("server_environment", "own_environment"):
        assert SECRET not in r.stdout + r.stderr
        assert "JAXPLAY_TEST_SECRET" not in r.stdout
    if name == "thousands_of_files":
        workdir = r.stdout.split()[0]
        assert r.stdout.split()[1] == "3000"
        if mode == "process":
            # exec'd: the directory is removed; forked: the run's tmpfs over the zygote's
            # directory went with the run's namespaces, and the files with it.
            left = Path(workdir).exists() and any(Path(workdir).iterdir())
            assert not left, "the private working directory was not emptied"
    if name == "double_fork_daemon":
        # A run that answered is killed without waiting (the pool retires it in the background),
        # so the daemon may take a moment to go; one that escaped sleeps for 987 s.
        deadline = time.monotonic() + DAEMON_GONE_S
        while (survivors := _with_marker(DAEMON_MARKER[mode])) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not survivors, f"daemon survived the run by {DAEMON_GONE_S} s: {survivors}"
    if name == "write_virtualenv":
        import jax

        assert not (Path(jax.__file__).parent / "pwned.txt").exists()
    if name == "script_tag":
        assert r.stdout == "<script>alert(1)</script>\n"
    if name == "deep_recursion":
        assert r.error is not None and r.error.line == 2
        assert "<code-lab>" in r.error.traceback and "worker.py" not in r.error.traceback


@pytest.mark.parametrize("runs", ["bwrap"], indirect=True)
@pytest.mark.parametrize("name", _params("bwrap"))
def test_hostile_bwrap(runs: _Runs, name: str) -> None:
    _check(runs.result(name), name, "bwrap")


@pytest.mark.parametrize("runs", ["bwrap-exec"], indirect=True)
@pytest.mark.parametrize("name", _params("bwrap"))
def test_hostile_bwrap_exec(runs: _Runs, name: str) -> None:
    _check(runs.result(name), name, "bwrap-exec")


@pytest.mark.parametrize("runs", ["process"], indirect=True)
@pytest.mark.parametrize("name", _params("process"))
def test_hostile_process(runs: _Runs, name: str) -> None:
    _check(runs.result(name), name, "process")


@pytest.mark.parametrize("runs", ["bwrap", "bwrap-exec", "process"], indirect=True)
def test_pool_still_serves_and_forgets(runs: _Runs) -> None:
    """After every hostile case: the next run works and sees nothing of earlier runs."""
    for future in runs.futures.values():
        future.result(timeout=240)
    assert runs.first.result(timeout=240).ok
    r = runs.pool.run("print(leftover)")
    assert r.error is not None and r.error.exc_type == "NameError"
    r = runs.pool.run("print(1 + 1)")
    assert r.ok and r.stdout == "2\n"
    status = runs.pool.status()
    assert status["running"] == 0 and status["queued"] == 0

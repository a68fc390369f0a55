"""Nothing outside the multi-process demo can join it, and its processes get none of the server's
secrets (issue 20, item 6).

The coordinator listened on every interface: an outside process joined as process 1 and the
visitor's page showed psum 2003 instead of 10. Its processes also got the server's environment,
a database URL with its password included. Now the coordinator binds loopback, all the demo's
processes share a network namespace of their own (one launcher under ``bwrap --unshare-net``),
and every child process of the app gets an allow-listed environment.
"""

from __future__ import annotations

import ast
import json
import os
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from jaxplay import sandbox
from jaxplay.devices import _multiprocess
from jaxplay.hosting import catalog, environment, settings

SECRETS = {
    "JAXPLAY_SNIPPET_DB": "postgresql://jaxplay:hunter2@db.internal/snippets",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI",
}


def _needs_bwrap() -> None:
    """The namespace needs bwrap; CI has it, so there a missing bwrap fails the test."""
    if not sandbox.bwrap_usable():
        if os.environ.get("CI"):
            pytest.fail("CI must run the network-namespace tests, but bwrap cannot run here")
        pytest.skip("bwrap cannot create namespaces here")


def _outside_address() -> str | None:
    """An address of this machine that is not loopback (where another host would connect)."""
    for target in ("192.0.2.1", "10.255.255.254", "8.8.8.8"):  # any route away from here
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.connect((target, 9))  # no packet is sent: this only picks a route
            except OSError:
                continue
            address = str(s.getsockname()[0])
        if not address.startswith("127."):
            return address
    return None


def _joins(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


#: How long process 0 waits for the process that never comes. It listens about 1.3 s after its
#: start on an idle machine (JAX's import, then the coordinator); a busy CI machine gets several
#: times that, and the probes run all the while.
WAIT_S = 12


def _probe_while_waiting(
    monkeypatch: pytest.MonkeyPatch, hosts: tuple[str, ...]
) -> tuple[_multiprocess.ClusterRun, dict[str, bool]]:
    """Start a 2-process cluster with only process 0 (it serves the coordinator and waits for
    process 1 until the timeout) and try to reach its port from this process meanwhile."""
    port = _multiprocess.free_port()
    monkeypatch.setattr(_multiprocess, "free_port", lambda: port)
    result: list[_multiprocess.ClusterRun] = []
    reached = _probe_during(
        lambda: result.append(_multiprocess.run_local_cluster(2, 1, WAIT_S, launch=1)), hosts, port
    )
    return result[0], reached


def _probe_during(run: Callable[[], None], hosts: tuple[str, ...], port: int) -> dict[str, bool]:
    """Call ``run`` in a thread; until it returns, try to reach ``port`` on each host."""
    thread = threading.Thread(target=run)
    thread.start()
    reached = dict.fromkeys(hosts, False)
    while thread.is_alive():
        for host in hosts:
            reached[host] = reached[host] or _joins(host, port)
        time.sleep(0.2)
    thread.join()
    return reached


#: Run inside the demo's namespace beside process 0: connects to its coordinator until it
#: answers and says when (seconds since its start), so the test knows from inside that the port
#: listened while the probes from outside failed.
PROBE_INSIDE = """
import socket, sys, time
start = time.monotonic()
while time.monotonic() - start < {wait_s}:
    with socket.socket() as s:
        s.settimeout(0.5)
        if s.connect_ex(("127.0.0.1", {port})) == 0:
            print(f"reached {{time.monotonic() - start:.2f}}", flush=True)
            sys.exit(0)
    time.sleep(0.1)
print("never reached", flush=True)
"""


def test_the_coordinator_cannot_be_reached_from_outside_its_namespace() -> None:
    """Process 0 of a 2-process demo, launched as the page launches it (in a network namespace of
    its own), waits for process 1, which never comes; a probe in the same namespace reaches its
    coordinator, and probes from this process, on loopback and on the machine's address, do not,
    before, while and after it listens."""
    _needs_bwrap()
    outside = _outside_address()
    hosts = ("127.0.0.1", *([outside] if outside else []))
    port = _multiprocess.free_port()
    commands = [
        _multiprocess.worker_command(f"127.0.0.1:{port}", 2, 0, 1),
        [sys.executable, "-c", PROBE_INSIDE.format(port=port, wait_s=WAIT_S)],
    ]
    launched: list[tuple[str, list, str]] = []
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        with tempfile.TemporaryFile() as out0, tempfile.TemporaryFile() as err0:
            outputs = [(out0, err0), (out, err)]
            env = _multiprocess._worker_env(1)
            with _multiprocess.LAUNCH_LOCK:
                reached = _probe_during(
                    lambda: launched.append(_multiprocess._launch(commands, outputs, env, WAIT_S)),
                    hosts,
                    port,
                )
        out.seek(0)
        inside = out.read().decode()
        err.seek(0)
        problem = err.read().decode()[-1500:]
    status, _procs, failure = launched[0]
    assert status == "timeout", failure  # process 0 was up, waiting for process 1
    assert inside.startswith("reached"), inside + problem  # it listened, seen from inside
    assert not any(reached.values()), reached


def test_the_coordinator_binds_loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the namespace (a server with no bwrap), only this machine reaches the port."""
    outside = _outside_address()
    if outside is None:
        pytest.skip("this machine has no address but loopback")
    monkeypatch.setattr(_multiprocess, "own_network", lambda argv: argv)
    run, reached = _probe_while_waiting(monkeypatch, ("127.0.0.1", outside))
    assert run.status == "timeout", run.errors
    assert reached["127.0.0.1"], "the coordinator never listened: the test proves nothing"
    assert not reached[outside]


def test_the_demos_processes_get_no_server_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a process of the cluster sees, run as the demo runs them (launcher, namespace)."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    show = [sys.executable, "-c", "import json, os; print(json.dumps(dict(os.environ)))"]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        status, procs, failure = _multiprocess._launch(
            [show], [(out, err)], _multiprocess._worker_env(2), 30.0
        )
        assert (status, failure) == ("ok", ""), err.seek(0) or err.read()
        out.seek(0)
        seen = json.loads(out.read().decode())
    assert not set(SECRETS) & set(seen)
    assert not any("hunter2" in v for v in seen.values())
    allowed = {*environment.CHILD_BASE, *settings.PASSED_TO_WORKERS, "PYTHONPATH"}
    allowed |= {"JAXPLAY_CPU_DEVICES", "JAX_NUM_CPU_DEVICES", "JAX_PLATFORMS", "XLA_FLAGS"}
    allowed |= {"XLA_PYTHON_CLIENT_PREALLOCATE"}
    # What the interpreter or the kernel adds by itself (a shell is not involved).
    assert set(seen) - allowed <= {"LC_CTYPE", "PWD", "SHLVL", "_"}, set(seen) - allowed
    assert seen["JAX_NUM_CPU_DEVICES"] == "2"


def test_child_environment_is_the_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("JAX_ENABLE_X64", "1")
    env = environment.child_environment(cpu_devices=3)
    assert not set(SECRETS) & set(env)
    assert env["JAX_ENABLE_X64"] == "1"  # a JAX setting the server has, handed on
    assert env["JAXPLAY_CPU_DEVICES"] == env["JAX_NUM_CPU_DEVICES"] == "3"
    assert sandbox.worker_environment().keys() <= {*env, "XLA_PYTHON_CLIENT_PREALLOCATE"}


#: The ``env`` of a child process that is not written ``environment.child_environment(...)``
#: where it is started, and why it is the allow-list's all the same (or needs no allow-list).
OTHER_ENVIRONMENTS = {
    ("jaxplay/devices/_multiprocess.py", "env"): "child_environment(cpu_devices=...) above",
    ("jaxplay/devices/_multiprocess_launcher.py", "dict(os.environ)"): (
        "the launcher runs with the allow-listed environment the server gave it"
    ),
    ("jaxplay/sandbox/_process.py", "env"): "the worker's, from sandbox.worker_environment()",
    ("jaxplay/hosting/serve.py", "self.env"): (
        "a server process of the room: the operator's own app, with the operator's settings"
    ),
}


def test_every_child_process_of_jaxplay_gets_an_environment() -> None:
    """Each ``subprocess`` call in ``jaxplay`` names its ``env`` (else the child inherits the
    server's whole environment), and each names one built by the one allow-list helper, or
    one of :data:`OTHER_ENVIRONMENTS`, which says why."""
    calls = []
    for path in sorted((catalog.ROOT / "jaxplay").rglob("*.py")):
        for node in ast.walk(ast.parse(Path(path).read_text())):
            if not isinstance(node, ast.Call):
                continue
            func = ast.unparse(node.func)
            if func.startswith("subprocess.") and func.split(".")[1] in {
                "Popen",
                "run",
                "call",
                "check_call",
                "check_output",
            }:
                env = [ast.unparse(k.value) for k in node.keywords if k.arg == "env"]
                calls.append((str(path.relative_to(catalog.ROOT)), node.lineno, env))
            assert not func.startswith(("os.exec", "os.spawn", "os.system", "os.popen")), func
    assert calls
    assert [c for c in calls if not c[2]] == []
    unexplained = [
        c
        for c in calls
        if not c[2][0].startswith("environment.child_environment(")
        and (c[0], c[2][0]) not in OTHER_ENVIRONMENTS
    ]
    assert unexplained == [], "an env that is neither the allow-list's nor explained"

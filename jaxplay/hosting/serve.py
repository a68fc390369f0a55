"""Run jaxplay as a room: N ``streamlit run app.py`` processes behind HAProxy, or one alone.

Why: one Streamlit process is one Python interpreter (one GIL), so a room outgrows it long before
the machine's cores are busy. Several processes behind a proxy fill the cores; the proxy keeps
each browser on its process with a cookie it inserts (a whole room behind one NAT address still
spreads over the processes, which ``ip_hash``-style stickiness would not do), passes the
``/_stcore/stream`` websocket through, and checks every process on ``/_stcore/health``. All the
processes share one snippet database (a SQLite file unless ``JAXPLAY_SNIPPET_DB`` names one), so
a shared link made on one process opens on any other.

The one launcher of the app for tests, benchmarks and a laptop::

    python -m jaxplay.hosting.serve --processes 4 --port 8501

    with serve.Room(processes=2) as room:   # the proxy's address
        room.url
    with serve.Room(processes=1) as room:   # one process, no proxy (what most tests want)
        room.url

It starts Streamlit as a subprocess (this package never imports it), writes the HAProxy
configuration to a temporary folder, waits until every process and the proxy answer, forwards
SIGINT/SIGTERM, stops everything when one part dies, and stops it all on the way out.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from jaxplay.core.measure_lock import usable_cores
from jaxplay.hosting import catalog, environment, results, settings, snippets, warm_up

HEALTH = "/_stcore/health"
#: The cookie HAProxy inserts to keep a browser on its process.
COOKIE = "jaxplay_server"
#: The proxy keeps Streamlit's script and style files (``/static/``: 25 MB, hashed names the
#: server marks immutable) in its memory: a room's browsers each fetch them once, and the
#: server processes' Python stops serving them (the jit page's first view fetches 11 MB of them).
STATIC_CACHE_MB = 64
#: The largest file kept (the largest of Streamlit 1.67's is 4.7 MB); at most half the cache.
STATIC_OBJECT_BYTES = 8 * 1024 * 1024
#: The header the proxy adds to a file it served from its memory.
CACHE_HEADER = "X-Jaxplay-Cache"
HAPROXY = "haproxy"
STREAMLIT = (sys.executable, "-m", "streamlit")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def default_processes() -> int:
    """One server process per core this process may run on."""
    return max(1, len(usable_cores()))


def core_shares(cores: Sequence[int], processes: int) -> list[frozenset[int]]:
    """Disjoint, equal shares of ``cores``, one per process (consecutive cores together), or no
    shares when there are fewer cores than processes (they then share every core and take turns
    to measure).

    Equal: a room's processes run on as many cores each, so a result one measured is the
    measurement any other would make (the result store keys results by the core count). Cores
    left over (16 cores for 3 processes: one) run no server; the proxy and the warm-up use them.
    """
    ordered = sorted(set(cores))
    if processes < 2 or len(ordered) < processes:
        return []
    each = len(ordered) // processes
    return [frozenset(ordered[i * each : (i + 1) * each]) for i in range(processes)]


def haproxy_path() -> str | None:
    """The HAProxy executable, or ``None`` where it is not installed.

    Debian puts it in ``/usr/sbin``, which is not on every user's ``PATH``.
    """
    return shutil.which(HAPROXY) or shutil.which(HAPROXY, path="/usr/sbin:/usr/local/sbin")


def healthy(url: str, timeout_s: float = 2.0) -> bool:
    """Whether ``url``'s health endpoint answers 200 now."""
    try:
        with urllib.request.urlopen(url + HEALTH, timeout=timeout_s) as response:
            return response.status == 200
    except OSError:
        return False


def haproxy_config(
    port: int, backends: Sequence[int], address: str = "127.0.0.1", behind_proxy: bool = False
) -> str:
    """HAProxy's configuration for a room: ``address:port`` in front of ``127.0.0.1:backends``.

    Cookie stickiness (``cookie ... insert``): the first answer sets :data:`COOKIE` to the name
    of the process that served it, and every later request (the page, its websocket, a
    reconnect) goes back there while that process is up. ``timeout tunnel`` keeps an idle
    websocket open for a workshop's length; ``option forwardfor`` appends the client's address
    to ``X-Forwarded-For`` for ``JAXPLAY_TRUSTED_PROXY=1``. ``behind_proxy``: a proxy of yours
    (nginx with TLS) already appended it, and HAProxy leaves the header as that proxy wrote it.

    The ``static`` cache answers ``/static/`` from the proxy's memory (:data:`STATIC_CACHE_MB`),
    only there: pages, the websocket and media stay the processes'. HAProxy stores a response
    only when it is a 200 to a GET, without ``Vary`` and cacheable. No visitor's cookie is ever
    replayed to another: HAProxy inserts its stickiness cookie after the ``http-response`` rules
    have stored the answer, and an answer whose process set a cookie is not stored. It answers
    :data:`CACHE_HEADER` ``hit`` when it served the file itself.
    """
    forwardfor = "option forwardfor if-none" if behind_proxy else "option forwardfor"
    servers = "\n".join(
        f"    server s{i} 127.0.0.1:{p} check cookie s{i} inter 2s fall 3 rise 1"
        for i, p in enumerate(backends)
    )
    return f"""\
global
    maxconn 4000

defaults
    mode http
    {forwardfor}
    timeout connect 5s
    timeout client 60s
    timeout server 300s
    timeout tunnel 8h
    timeout http-request 30s

cache static
    total-max-size {STATIC_CACHE_MB}
    max-object-size {STATIC_OBJECT_BYTES}
    max-age 86400

frontend room
    bind {address}:{port}
    # No page takes a file upload: Streamlit's upload route kept each PUT in memory.
    http-request deny deny_status 403 if {{ path_beg /_stcore/upload_file }}
    default_backend jaxplay

backend jaxplay
    balance roundrobin
    cookie {COOKIE} insert indirect nocache httponly
    option httpchk GET {HEALTH}
    http-check expect status 200
    http-request set-var(txn.static) bool(true) if {{ path_beg /static/ }}
    acl static_file var(txn.static) -m bool
    acl sets_cookie res.hdr(set-cookie) -m found
    http-request cache-use static if static_file
    http-response cache-store static if static_file !sets_cookie
    http-response set-header {CACHE_HEADER} hit if {{ res.cache_hit }}
{servers}
"""


def _terminate(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process's whole group (its sandbox workers too)."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)


def _reap(process: subprocess.Popen[bytes], grace_s: float = 15.0) -> None:
    """Wait for a terminated process; SIGKILL its group after ``grace_s``."""
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    # The leader is gone; workers of its group may not be.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _stop(process: subprocess.Popen[bytes], grace_s: float = 15.0) -> None:
    _terminate(process)
    _reap(process, grace_s)


class Server:
    """One ``streamlit run`` process on ``127.0.0.1:port``, as a context manager.

    Arguments:
        port: where it listens (a free port unless given).
        script: the app's entry file, relative to ``cwd``.
        env: variables added to this process's environment.
        options: more ``--name value`` arguments for ``streamlit run``.
        cwd: the checkout to run (this one unless given).
        launcher: what stands for ``python -m streamlit`` (a wrapper module, a cgroup prefix).
        log: where its output goes (a temporary file, quoted if it fails to start, unless
            given).
        startup_s: how long it may take to answer on the health endpoint.
    """

    def __init__(
        self,
        port: int | None = None,
        *,
        script: str = "app.py",
        env: Mapping[str, str] | None = None,
        options: Sequence[str] = (),
        cwd: Path = catalog.ROOT,
        launcher: Sequence[str] = STREAMLIT,
        log: IO[bytes] | None = None,
        startup_s: float = 180.0,
    ) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = [
            *launcher,
            "run",
            script,
            "--server.port",
            str(self.port),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
            *options,
        ]
        self.env = {**os.environ, **(env or {})}
        self.cwd = cwd
        self.log = log
        self.startup_s = startup_s
        self.process: subprocess.Popen[bytes] | None = None
        self._own_log: IO[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None, "not started"
        return self.process.pid

    def start(self) -> None:
        """Start the process; :meth:`wait_healthy` waits until it answers."""
        if self.log is None:
            # A file, not a pipe: nobody reads a pipe once the server is up, and a full one
            # would block it.
            self._own_log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()
        self.process = subprocess.Popen(
            self.command,
            cwd=self.cwd,
            env=self.env,
            stdout=self.log if self.log is not None else self._own_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def output(self) -> str:
        """The end of what the process printed (when its output went to no log of the caller's)."""
        if self._own_log is None:
            return ""
        self._own_log.seek(0)
        return self._own_log.read().decode(errors="replace")[-3000:]

    def wait_healthy(self) -> None:
        assert self.process is not None, "not started"
        deadline = time.monotonic() + self.startup_s
        while not healthy(self.url):
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"streamlit exited with {self.process.returncode}:\n{self.output()}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not answer on {self.url} in {self.startup_s} s")
            time.sleep(0.3)

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)
        if self._own_log is not None:
            self._own_log.close()
            self._own_log = None

    def __enter__(self) -> Server:
        self.start()
        try:
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class Proxy:
    """HAProxy in the foreground (``-db``) with a configuration written to ``folder``."""

    port: int
    backends: Sequence[int]
    folder: Path
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    def start(self) -> None:
        executable = haproxy_path()
        if executable is None:
            raise RuntimeError(f"no {HAPROXY} on PATH: install HAProxy (apt-get install haproxy)")
        config = self.folder / "haproxy.cfg"
        config.write_text(haproxy_config(self.port, self.backends), encoding="utf-8")
        self.log = self.folder / "haproxy.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [executable, "-db", "-f", str(config)],
                env=environment.child_environment(),  # the proxy needs none of the server's
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_healthy(self, url: str, startup_s: float = 30.0) -> None:
        assert self.process is not None, "not started"
        deadline = time.monotonic() + startup_s
        while not healthy(url):
            if self.process.poll() is not None:
                output = self.log.read_text(errors="replace")[-3000:] if self.log else ""
                raise RuntimeError(f"haproxy exited with {self.process.returncode}:\n{output}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"haproxy did not answer on {url} in {startup_s} s")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process, grace_s=5.0)


class Room:
    """``processes`` server processes and, for more than one, HAProxy in front of them.

    Arguments:
        processes: how many (one per core unless given).
        port: where the room listens (the proxy's port, or the one process's; free unless given).
        address: the proxy's address (``127.0.0.1``; ``0.0.0.0`` to serve a network).
        proxy: whether to put the proxy in front (by default: for more than one process, or
            another address than loopback).
        env: variables for every server process (``JAXPLAY_PUBLIC``, ...).
        snippet_db: the snippet store every process shares (``JAXPLAY_SNIPPET_DB`` or its
            default file unless given).
        result_db: the result store every process shares, so a page's result is computed once
            for all of them (``JAXPLAY_RESULT_DB`` or its default file unless given); set for a
            room of more than one process, or when given.
        pin: give each process its own share of the cores (:func:`core_shares`, through
            ``JAXPLAY_CPUS``), so their measurements run at once on disjoint cores; without it
            (or with fewer cores than processes) every process runs on every core and their
            measurements take turns.
        The room opens the pages ``JAXPLAY_WARM_UP`` names (in ``env`` or this environment) once
        it answers, through its first process (:attr:`warming`).
        Other keywords go to each :class:`Server`.

    ``url`` is the room's address; ``servers`` the processes (each with its own ``url``).
    """

    def __init__(
        self,
        processes: int | None = None,
        *,
        port: int | None = None,
        address: str = "127.0.0.1",
        proxy: bool | None = None,
        env: Mapping[str, str] | None = None,
        snippet_db: str | None = None,
        result_db: str | None = None,
        pin: bool = True,
        script: str = "app.py",
        options: Sequence[str] = (),
        cwd: Path = catalog.ROOT,
        launcher: Sequence[str] = STREAMLIT,
        log: IO[bytes] | None = None,
        startup_s: float = 180.0,
    ) -> None:
        self.processes = processes or default_processes()
        # The servers listen on loopback only: another address needs the proxy in front.
        self.proxied = (self.processes > 1 or address != "127.0.0.1") if proxy is None else proxy
        self.address = address
        self.port = port or free_port()
        server_env = {**(env or {})}
        merged = {**os.environ, **server_env}
        server_env["JAXPLAY_SNIPPET_DB"] = snippet_db or snippets.default_location(merged)
        if result_db or self.processes > 1:
            server_env["JAXPLAY_RESULT_DB"] = result_db or results.default_location(merged)
        if self.processes > 1:  # their measurements take turns where their cores overlap
            lock = settings.measure_lock(merged) or settings.default_measure_lock()
            try:
                Path(lock).parent.mkdir(parents=True, exist_ok=True)
            except OSError:  # no writable home: this user's lock in the temporary folder
                lock = str(Path(tempfile.gettempdir()) / f"jaxplay-measure-{os.getuid()}.lock")
            server_env["JAXPLAY_MEASURE_LOCK"] = lock
        if self.proxied:
            # Every request reaches the processes from the proxy on loopback.
            server_env.setdefault("JAXPLAY_TRUSTED_PROXY", "1")
        # The room warms its pages itself, as soon as it answers (its processes then need not).
        self.warm_pages = warm_up.pages_to_warm(merged)
        self.warm_env = {**merged, **server_env}
        server_env["JAXPLAY_WARM_UP"] = "off"
        #: The warm-up (:mod:`jaxplay.hosting.warm_up`) once started; ``None`` if none is asked.
        self.warming: subprocess.Popen[bytes] | None = None
        #: Each process's cores (empty: every process runs on every core).
        self.shares = core_shares(sorted(usable_cores()), self.processes) if pin else []
        self.servers = [
            Server(
                None if self.proxied else self.port,
                script=script,
                env=(
                    {**server_env, "JAXPLAY_CPUS": settings.cpu_list(self.shares[i])}
                    if self.shares
                    else server_env
                ),
                options=options,
                cwd=cwd,
                launcher=launcher,
                log=log,
                startup_s=startup_s,
            )
            for i in range(self.processes)
        ]
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self.proxy: Proxy | None = None
        host = "127.0.0.1" if address in ("0.0.0.0", "") else address
        self.url = f"http://{host}:{self.port}"

    @property
    def pids(self) -> list[int]:
        """The server processes' pids (each the leader of its own process group)."""
        return [s.pid for s in self.servers]

    def start(self) -> None:
        try:
            for server in self.servers:
                server.start()
            for server in self.servers:
                server.wait_healthy()
            if self.proxied:
                self._folder = tempfile.TemporaryDirectory(prefix="jaxplay-room-")
                folder = Path(self._folder.name)
                self.proxy = Proxy(self.port, [s.port for s in self.servers], folder)
                self.proxy.start()
                self.proxy.wait_healthy(self.url)
            if self.warm_pages:
                server = self.servers[0]
                self.warming = warm_up.launch(server.url, self.warm_pages, self.warm_env)
        except BaseException:
            self.stop()
            raise

    def alive(self) -> bool:
        """Whether every part of the room is still running."""
        parts = [s.process for s in self.servers]
        if self.proxy is not None:
            parts.append(self.proxy.process)
        return all(p is not None and p.poll() is None for p in parts)

    def stop(self) -> None:
        if self.warming is not None and self.warming.poll() is None:
            self.warming.terminate()  # a client of the room: nothing of its own to stop
            try:
                self.warming.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.warming.kill()
                self.warming.wait()
        if self.proxy is not None:
            self.proxy.stop()
        # All at once: N processes stop in one grace period, not N.
        for server in self.servers:
            if server.process is not None:
                _terminate(server.process)
        for server in self.servers:
            server.stop()
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None

    def __enter__(self) -> Room:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Stopped(Exception):
    """A signal asked the launcher to stop."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jaxplay.hosting.serve", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("--processes", type=int, default=default_processes())
    parser.add_argument("--port", type=int, default=8501)
    parser.add_argument("--address", default="127.0.0.1", help="the proxy's address")
    parser.add_argument(
        "--print-config",
        action="store_true",
        help="print HAProxy's configuration for --port in front of the next --processes ports "
        "(for systemd units on those ports) and exit",
    )
    parser.add_argument(
        "--no-pin",
        action="store_true",
        help="run every process on every core (their measurements then take turns) instead of "
        "giving each its own share of the cores",
    )
    parser.add_argument(
        "--behind-proxy",
        action="store_true",
        help="with --print-config: your own proxy (nginx with TLS) sets X-Forwarded-For",
    )
    args = parser.parse_args(argv)
    if args.processes < 1:
        parser.error("--processes must be at least 1")
    if args.print_config:
        backends = [args.port + 1 + i for i in range(args.processes)]
        print(haproxy_config(args.port, backends, args.address, args.behind_proxy), end="")
        return 0

    def stop(signum: int, _frame: object) -> None:
        raise _Stopped(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        with Room(
            args.processes, port=args.port, address=args.address, pin=not args.no_pin
        ) as room:
            where = ", ".join(
                s.url + (f" on cores {settings.cpu_list(room.shares[i])}" if room.shares else "")
                for i, s in enumerate(room.servers)
            )
            print(f"jaxplay on {room.url} ({args.processes} process(es): {where})", flush=True)
            while room.alive():
                time.sleep(1.0)
            print("a part of the room stopped; stopping the rest", file=sys.stderr)
            return 1
    except _Stopped as why:
        print(f"stopped by {why}", file=sys.stderr)
        return 0


if __name__ == "__main__":
    sys.exit(main())

"""A throwaway PostgreSQL server for the tests: a fresh cluster in a temporary folder.

The tests start Debian's (or any) PostgreSQL server binaries themselves, so no database has to be
set up beforehand. ``initdb`` and ``postgres`` refuse to run as root: when the tests run as root
(CI containers do), both run as the ``postgres`` system user (the Debian package creates it) in a
folder that user owns; otherwise as the current user. The server listens on a free port on
127.0.0.1 and on a Unix socket in the same folder, trusts local connections, and writes nothing
durably (``fsync=off``). Each test gets its own schema (the URL sets ``search_path``), so tests
never see each other's tables and no database has to be created per test.

Without the binaries the PostgreSQL half of the tests skips with the reason; with ``CI`` set it
fails instead (``.ci/run`` installs the ``postgresql`` package).
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from jaxplay.hosting.chromium import free_port

#: The superuser of the test cluster (trusted, no password).
USER = "jaxplay"
DATABASE = "postgres"


def find_binaries() -> Path | None:
    """The folder with ``initdb`` and ``postgres``: ``JAXPLAY_PG_BIN``, Debian's newest
    ``/usr/lib/postgresql/<version>/bin``, or the ``PATH``."""
    configured = os.environ.get("JAXPLAY_PG_BIN", "").strip()
    if configured:  # an explicit choice: that folder or nothing
        folder = Path(configured)
        return folder if (folder / "initdb").is_file() and (folder / "postgres").is_file() else None
    debian = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit() else 0,
    )
    candidates = [Path(p) for p in reversed(debian)]
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "postgres").is_file():
            return folder
    return None


def require_binaries() -> Path:
    """The binaries' folder; without them the calling test skips, or fails where ``CI`` is set."""
    import pytest

    folder = find_binaries()
    if folder is not None:
        return folder
    reason = (
        "no PostgreSQL server binaries (initdb, postgres) for the PostgreSQL half of the tests: "
        "install Debian's postgresql package, or set JAXPLAY_PG_BIN to their folder"
    )
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the PostgreSQL tests, but found {reason}")
    pytest.skip(reason)


def _run_as() -> dict:
    """``subprocess`` arguments that drop root to the ``postgres`` user (nothing otherwise)."""
    if os.geteuid() != 0:
        return {}
    try:
        user = pwd.getpwnam("postgres")
    except KeyError as err:
        raise RuntimeError(
            "running as root, and PostgreSQL refuses root: create a 'postgres' user "
            "(Debian's postgresql package does)"
        ) from err
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


@dataclass(frozen=True)
class Server:
    """A running test cluster."""

    port: int
    socket_dir: Path

    def url(self, schema: str | None = None) -> str:
        """A ``postgresql://`` URL; with ``schema``, unqualified tables live in that schema."""
        base = f"postgresql://{USER}@127.0.0.1:{self.port}/{DATABASE}"
        return base if schema is None else f"{base}?options={quote(f'-csearch_path={schema}')}"

    def new_schema(self) -> str:
        """Create an empty schema with a fresh name and return a URL that works in it."""
        import psycopg

        name = f"t_{secrets.token_hex(6)}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"CREATE SCHEMA {name}")
        return self.url(name)

    def drop_schema(self, url: str) -> None:
        import psycopg

        name = url.rsplit("%3D", 1)[-1]
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


@contextmanager
def running_server(binaries: Path, startup_s: float = 60.0) -> Iterator[Server]:
    """``initdb`` a cluster in a temporary folder, start ``postgres`` on it, stop and delete it."""
    import psycopg

    run_as = _run_as()
    folder = Path(tempfile.mkdtemp(prefix="jaxplay-pg-"))
    data = folder / "data"
    log = folder / "server.log"
    if run_as:
        os.chown(folder, run_as["user"], run_as["group"])
    process = None
    try:
        init = subprocess.run(
            [str(binaries / "initdb"), "-D", str(data), "-U", USER, "-A", "trust", "-E", "UTF8"]
            + ["--no-sync", "--no-instructions"],
            cwd=folder,
            capture_output=True,
            text=True,
            **run_as,
        )
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed:\n{init.stdout}{init.stderr}")
        port = free_port()
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [str(binaries / "postgres"), "-D", str(data), "-p", str(port), "-k", str(folder)]
                + ["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"]
                + ["-c", "full_page_writes=off", "-c", "synchronous_commit=off"],
                cwd=folder,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **run_as,
            )
        server = Server(port, folder)
        deadline = time.monotonic() + startup_s
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"postgres exited with {process.returncode}:\n{log.read_text()}")
            try:
                psycopg.connect(server.url(), connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"postgres did not start:\n{log.read_text()}") from None
                time.sleep(0.2)
        yield server
    finally:
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)  # "fast" shutdown: disconnect clients, stop
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(folder, ignore_errors=True)

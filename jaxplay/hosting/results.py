"""Results computed once for every server process: a shared store of what pages measure.

Why: a room is served by several ``streamlit run`` processes behind a proxy
(:mod:`jaxplay.hosting.serve`), and Streamlit's caches are per process, so each process would pay
every cold first visit and every measurement again, and two processes opening the same page at
once would measure it twice on the same cores. This store keeps each result once per deployment:

- **Keyed by what was computed and where**: the kind of result, its inputs (canonical JSON), and
  the environment it was measured in (:func:`fingerprint`: JAX and jaxlib versions, platform,
  device kind and count, the host), so a timing measured on one machine or JAX is never shown as
  another's.
- **Single flight across processes**: the first caller takes a *lease* on the key (a row marked
  pending, with an expiry it renews while it works); the others wait for its result instead of
  measuring the same thing again. A lease whose owner died expires and is taken over; a
  computation that fails releases it, so the next caller tries again.
- **Safe values**: results are written with the typed JSON codec (:mod:`jaxplay.core.codec`) and
  read back accepting only the dataclasses the caller names, never pickle: the database is shared,
  so what it holds is treated as untrusted. A value is at most :data:`MAX_VALUE_BYTES`; the store
  keeps at most ``max_bytes`` of results, dropping the least recently used.

Two backends, the same SQL: a SQLite file on the host (the embedded default, WAL mode) for the
processes of one machine, or a ``postgresql://`` URL for several machines (``JAXPLAY_RESULT_DB``).

Long: the key, the lease protocol, reading rows this server did not write and eviction are one
table's rules; split over modules, each would have to know the others' SQL.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import os
import platform as _platform
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from jaxplay.core import codec, measure_lock, timing, untrusted
from jaxplay.hosting import settings

log = logging.getLogger(__name__)
T = TypeVar("T")

#: The largest value kept, as JSON text.
MAX_VALUE_BYTES = 8 * 1024 * 1024
#: The most arrays and objects, and values, a stored value may hold when it is read back (an
#: array's numbers count as values; each row of an array is a list): about as many as
#: :data:`MAX_VALUE_BYTES` of real numbers can make, and a bound on what a row this server did
#: not write costs to read (7 MB of ``[[]]``, 2.8 million lists, cost 2.8 CPU-s and 460 MB).
MAX_VALUE_CONTAINERS = 1_000_000
MAX_VALUE_ITEMS = 2_000_000
#: Total size of the kept values before the least recently used are dropped.
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
#: How long a lease lasts without renewal; its owner renews it every third of this while working.
DEFAULT_LEASE_S = 30.0
#: How long a store that failed is left alone before it is tried again: a held or broken
#: database would otherwise cost every computation its timeout (a memory page view makes four).
RETRY_AFTER_S = 60.0
SCHEMA_VERSION = 1

_CREATE = """CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    owner TEXT NOT NULL,
    lease_until DOUBLE PRECISION NOT NULL,
    value TEXT,
    size BIGINT NOT NULL DEFAULT 0,
    finished DOUBLE PRECISION,
    used DOUBLE PRECISION NOT NULL,
    computations BIGINT NOT NULL DEFAULT 0
)"""
#: The PostgreSQL advisory lock the table's creation holds ("jaxplay" in ASCII): see ``_setup``.
_CREATE_LOCK = 0x6A6178706C6179


class ResultError(RuntimeError):
    """The store could not be used (a message for the log; callers compute without it)."""


#: jaxplay's own folder: the source :func:`code_version` hashes.
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def code_version(root: Path = PACKAGE_ROOT) -> str:
    """A hash of jaxplay's own source (every ``.py`` under ``root``, by path and content).

    Why: a stored result is the data of the code that made it. After a fix (a trace that counted
    two programs as one, a claim's new field), a store kept from before served the old figures
    until they expired; with the code in the fingerprint a new deployment measures anew.
    """
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def fingerprint(extra: Iterable[tuple[str, str]] = ()) -> str:
    """Where results are measured, as one string: JAX, jaxlib, platform, device kind and count,
    how many cores the process runs on, the host (its name and machine id), how long its
    measurements sample (``JAXPLAY_MEASURE_SCALE``) and jaxplay's code (:func:`code_version`),
    plus ``extra`` pairs.

    A result stored under another fingerprint is never served: a timing from another GPU, host,
    JAX version or number of cores would be a number this server did not measure, and one made by
    other code may be data this code no longer makes. (A room's processes run on equal shares of
    the cores from one checkout, so they share their results.)
    """
    import jax
    import jaxlib.version

    devices = jax.devices()
    machine = ""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            machine = Path(path).read_text(encoding="ascii").strip()
            break
        except OSError:
            continue
    parts = {
        "jax": jax.__version__,
        "jaxlib": jaxlib.version.__version__,
        "platform": devices[0].platform,
        "kind": getattr(devices[0], "device_kind", devices[0].platform),
        "devices": str(len(devices)),
        "cores": str(len(measure_lock.usable_cores())),
        "measure_scale": f"{timing.BUDGET_SCALE:g}",
        "code": code_version(),
        "host": _platform.node() + ":" + hashlib.sha256(machine.encode()).hexdigest()[:12],
        **dict(extra),
    }
    return json.dumps(parts, sort_keys=True)


def result_key(kind: str, inputs: Any, environment: str) -> str:
    """The store's key for ``kind`` computed from ``inputs`` in ``environment``.

    Inputs are plain values (strings, numbers, booleans, ``None``, tuples and lists of them):
    written as canonical JSON, so ``(1, "a")`` and ``[1, "a"]`` name the same result.
    """
    text = json.dumps([kind, inputs, environment], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Stored:
    """A result read from the store."""

    value: Any
    finished: float
    #: True when this call computed it; False when another caller (any process) had.
    computed_here: bool


class ResultStore:
    """The shared store; see the module docstring.

    Arguments:
        location: a SQLite file path, or a ``postgresql://`` URL.
        environment: this server's :func:`fingerprint` (part of every key).
        max_bytes: total size of kept values.
        lease_s: how long a lease lasts without renewal.
        poll_s: how often a waiting caller looks for the result.
    """

    def __init__(
        self,
        location: str | os.PathLike[str],
        environment: str,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        lease_s: float = DEFAULT_LEASE_S,
        poll_s: float = 0.1,
    ) -> None:
        self.location = str(location)
        self.environment = environment
        self.max_bytes = max_bytes
        self.lease_s = lease_s
        self.poll_s = poll_s
        self.postgres = self.location.startswith(("postgresql://", "postgres://"))
        self._local = threading.local()
        self._pool: Any = None
        self._owner = secrets.token_hex(8)
        self._down_until = 0.0
        self._setup()

    # --- connections: one SQLite connection per thread, or a PostgreSQL pool ---------------

    def _setup(self) -> None:
        if self.postgres:
            from psycopg_pool import ConnectionPool

            self._pool = ConnectionPool(
                self.location,
                min_size=0,
                max_size=4,
                kwargs={"autocommit": True, "connect_timeout": 2},
                open=True,
            )
            # A room's processes start at once, and PostgreSQL lets two concurrent
            # CREATE TABLE IF NOT EXISTS race on its catalog: one fails with a unique violation
            # (pg_type). Under this lock the first creates the table and the others find it.
            with self._pool.connection(timeout=2.0) as conn, conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATE_LOCK,))
                conn.execute(_CREATE)
            return
        Path(self.location).parent.mkdir(parents=True, exist_ok=True)

        def create() -> None:
            with self._connection() as db:
                db.execute(_CREATE)

        _retry_locked(create)

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        if self.postgres:
            with self._pool.connection(timeout=2.0) as conn:
                yield _Postgres(conn)
            return
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = _retry_locked(lambda: _open_sqlite(self.location))
            self._local.conn = conn
        yield _Sqlite(conn)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # --- reading and computing --------------------------------------------------------------

    def get(self, kind: str, inputs: Any, allowed: Iterable[type]) -> Stored | None:
        """The stored result of ``kind`` for ``inputs`` in this environment, or ``None``."""
        key = result_key(kind, inputs, self.environment)
        with self._connection() as db:
            row = db.one(
                f"SELECT state, {self._value()}, finished FROM results WHERE key = ?", (key,)
            )
            if row is None or row[0] != "done":
                return None
            db.execute("UPDATE results SET used = ? WHERE key = ?", (time.time(), key))
        try:
            return self._stored(row[1], row[2], allowed)
        except ResultError as err:
            log.warning("a stored result could not be read: %s", err)
            return None

    def get_or_compute(
        self,
        kind: str,
        inputs: Any,
        compute: Callable[[], T],
        allowed: Iterable[type],
        *,
        force: bool = False,
        waiting: Callable[[], None] | None = None,
        timeout_s: float = 600.0,
    ) -> Stored:
        """The stored result, else wait for the caller computing it, else compute it here.

        Arguments:
            kind: what is computed (``"jit.measurement"``); part of the key.
            inputs: the plain values it is computed from; part of the key.
            compute: makes the value (a dataclass, numbers, strings, tuples, numpy arrays).
            allowed: the dataclasses the value may contain (for reading it back).
            force: compute anew and replace what is stored ("Measure again").
            waiting: called now and then while another caller computes it.
            timeout_s: the longest this call waits for another caller.

        Raises:
            Whatever ``compute`` raised. A store that cannot be used is logged and the value is
            computed here without it.
        """
        allowed = tuple(allowed)
        key = result_key(kind, inputs, self.environment)
        if time.monotonic() < self._down_until:  # failed a moment ago: not tried again yet
            return Stored(compute(), time.time(), computed_here=True)
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                claimed = _retry_locked(
                    lambda force=force: self._read_or_claim(key, kind, allowed, force)
                )
                if isinstance(claimed, Stored):
                    return claimed
                if claimed is True:
                    break
                if time.monotonic() > deadline:
                    raise ResultError(f"waited {timeout_s:.0f} s for another process's result")
                if waiting is not None:
                    waiting()
                force = False  # another caller is computing it anew: its result is ours
                time.sleep(self.poll_s)
        except ResultError as err:  # waited too long for another caller: the store works
            return self._without_store(err, compute)
        except (sqlite3.Error, OSError) as err:
            return self._without_store(err, compute, failed=True)
        except Exception as err:  # psycopg's errors, a pool timeout
            if type(err).__module__.startswith(("psycopg", "psycopg_pool")):
                return self._without_store(err, compute, failed=True)
            raise
        return self._compute_leased(key, compute)

    def _read_or_claim(
        self, key: str, kind: str, allowed: tuple[type, ...], force: bool
    ) -> Stored | bool:
        """The stored result; else True when this caller took the lease (what is stored cannot
        be read, too), False when another holds it."""
        with self._connection() as db:
            row = db.one(
                f"SELECT state, {self._value()}, finished, lease_until FROM results WHERE key = ?",
                (key,),
            )
            if row is not None and row[0] == "done" and not force:
                try:
                    stored = self._stored(row[1], row[2], allowed)
                except ResultError as err:
                    # Not what this server writes: measured anew, never shown. The row is
                    # deleted, not claimed in place: an update copies the row's value first
                    # (a 300 MB value cost 3.7 CPU-s and 570 MB that way).
                    log.warning("a stored result could not be read: %s", err)
                    db.execute("DELETE FROM results WHERE key = ? AND state = 'done'", (key,))
                    return bool(self._claim(db, key, kind, False))
                db.execute("UPDATE results SET used = ? WHERE key = ?", (time.time(), key))
                return stored
            return bool(self._claim(db, key, kind, force))

    def computations(self, kind: str, inputs: Any) -> int:
        """How many times the result of ``kind`` for ``inputs`` was computed (for tests)."""
        key = result_key(kind, inputs, self.environment)
        with self._connection() as db:
            row = db.one("SELECT computations FROM results WHERE key = ?", (key,))
        return 0 if row is None else int(row[0])

    # --- inside -----------------------------------------------------------------------------

    def _claim(self, db: Any, key: str, kind: str, force: bool) -> bool:
        """Take the lease on ``key``: a new row, an expired lease, or (``force``) a done row."""
        now = time.time()
        taken = db.execute(
            "INSERT INTO results (key, kind, state, owner, lease_until, used)"
            " VALUES (?, ?, 'pending', ?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET state = 'pending', owner = excluded.owner,"
            " lease_until = excluded.lease_until"
            " WHERE (results.state = 'pending' AND results.lease_until < ?)"
            + (" OR results.state = 'done'" if force else ""),
            (key, kind, self._owner, now + self.lease_s, now, now),
        )
        return taken == 1

    def _compute_leased(self, key: str, compute: Callable[[], T]) -> Stored:
        stop = threading.Event()

        def renew() -> None:
            while not stop.wait(self.lease_s / 3):
                try:
                    with self._connection() as db:
                        db.execute(
                            "UPDATE results SET lease_until = ? WHERE key = ? AND owner = ?",
                            (time.time() + self.lease_s, key, self._owner),
                        )
                except Exception as err:  # the lease lapses; another process may take over
                    log.warning("could not renew a result lease: %s", err)

        renewer = threading.Thread(target=renew, name="jaxplay-result-lease", daemon=True)
        renewer.start()
        try:
            value = compute()
        except BaseException:
            stop.set()
            self._release(key)
            raise
        stop.set()
        finished = time.time()
        try:
            text = json.dumps(codec.encode(value), separators=(",", ":"))
            if len(text) > MAX_VALUE_BYTES:
                raise ResultError(f"a result of {len(text):,} bytes is too large to keep")
            with self._connection() as db:
                db.execute(
                    "UPDATE results SET state = 'done', value = ?, size = ?, finished = ?,"
                    " used = ?, computations = computations + 1 WHERE key = ? AND owner = ?",
                    (text, len(text), finished, finished, key, self._owner),
                )
                self._evict(db)
        except Exception as err:
            log.warning("could not keep a result: %s", err)
            self._release(key)
        return Stored(value, finished, computed_here=True)

    def _release(self, key: str) -> None:
        try:
            with self._connection() as db:
                db.execute(
                    "DELETE FROM results WHERE key = ? AND owner = ? AND state = 'pending'",
                    (key, self._owner),
                )
        except Exception as err:
            log.warning("could not release a result lease: %s", err)

    def _evict(self, db: Any) -> None:
        total = db.one("SELECT COALESCE(SUM(size), 0) FROM results", ())
        excess = int(total[0]) - self.max_bytes
        if excess <= 0:
            return
        rows = db.all(
            "SELECT key, size FROM results WHERE state = 'done' ORDER BY used LIMIT 1000", ()
        )
        for key, size in rows:
            if excess <= 0:
                break
            db.execute("DELETE FROM results WHERE key = ?", (key,))
            excess -= int(size)

    def _value(self) -> str:
        """The value column as a query reads it: NULL where it is larger than any this server
        writes, so such a value never reaches Python. The size is the value's own, not the
        size column's (whoever wrote the row wrote that too). PostgreSQL's ``octet_length``
        reads it from the value's header; SQLite 3.40's ``length`` loads a text to count it
        (a 300 MB value: 0.4 CPU-s, its size in memory for that moment, outside the GIL), the
        one cost left to a row written around this server. Our JSON is ASCII: bytes are
        characters."""
        size = "octet_length" if self.postgres else "length"
        return f"CASE WHEN {size}(value) <= {MAX_VALUE_BYTES} THEN value END"

    def _stored(self, text: object, finished: object, allowed: Iterable[type]) -> Stored:
        """A row's value and time as a :class:`Stored`, read as any bytes this process did not
        make (another process, another host, or someone with the database, wrote them): its
        cost bounded before the work, anything else than what this server writes a
        :class:`ResultError`."""
        if not isinstance(text, str):  # NULL: larger than MAX_VALUE_BYTES (see _value)
            raise ResultError("a stored result is larger than any this server writes, or none")
        if not isinstance(finished, int | float) or not 0 < finished < math.inf:
            raise ResultError(f"a stored result's time is no time ({type(finished).__name__})")
        try:
            data = untrusted.json_text(
                text,
                most_containers=MAX_VALUE_CONTAINERS,
                most_values=MAX_VALUE_ITEMS,
                deepest_allowed=codec.MAX_DEPTH,
            )
            value = codec.decode(data, allowed, most_values=MAX_VALUE_ITEMS)
        except (ValueError, TypeError) as err:
            raise ResultError(f"a stored result is not what this server writes: {err}") from None
        return Stored(value, float(finished), computed_here=False)

    def _without_store(
        self, err: BaseException, compute: Callable[[], T], failed: bool = False
    ) -> Stored:
        if failed:
            self._down_until = time.monotonic() + RETRY_AFTER_S
            log.warning(
                "result store unavailable, computing without it for %.0f s: %s", RETRY_AFTER_S, err
            )
        else:
            log.warning("computing without the result store: %s", err)
        return Stored(compute(), time.time(), computed_here=True)


def _open_sqlite(location: str) -> sqlite3.Connection:
    conn = sqlite3.connect(location, timeout=10.0, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=10000")
    except BaseException:
        conn.close()
        raise
    return conn


def _retry_locked(op: Callable[[], T], timeout_s: float = 10.0) -> T:
    """``op()``, again while SQLite refuses it at once as locked, for at most ``timeout_s``.

    Why: SQLite waits for a lock (the busy timeout) except where waiting could deadlock, and
    refuses at once there: switching a new file to WAL, or upgrading a read to a write while
    another connection writes. A room's processes opening a new store together met it (CI: one
    of four failed with "database is locked"); the snippet store retries the same way. A
    refusal after waiting out the busy timeout is not retried: the database is held, and the
    caller computes without it rather than wait again.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        started = time.monotonic()
        try:
            return op()
        except sqlite3.OperationalError as err:
            waited = time.monotonic() - started
            if "locked" not in str(err) or waited >= _AT_ONCE_S or time.monotonic() >= deadline:
                raise
        time.sleep(0.02)


#: A refusal sooner than this after asking is SQLite's at-once refusal, not its busy timeout.
_AT_ONCE_S = 1.0


class _Sqlite:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        return self.conn.execute(sql, args).rowcount

    def one(self, sql: str, args: tuple[Any, ...]) -> Any:
        return self.conn.execute(sql, args).fetchone()

    def all(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        return self.conn.execute(sql, args).fetchall()


class _Postgres:
    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        return int(self.conn.execute(sql.replace("?", "%s"), args).rowcount)

    def one(self, sql: str, args: tuple[Any, ...]) -> Any:
        return self.conn.execute(sql.replace("?", "%s"), args).fetchone()

    def all(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        return self.conn.execute(sql.replace("?", "%s"), args).fetchall()


def default_location(environ: Mapping[str, str] | None = None) -> str:
    """``JAXPLAY_RESULT_DB`` (a file or a ``postgresql://`` URL), else a file in ``~/.local``
    (used when a store is asked for explicitly; pages use one only when the variable is set)."""
    given = settings.result_db(environ).strip()
    if given:
        return given if given.startswith("postgres") else str(Path(given).expanduser())
    return str(Path.home() / ".local" / "share" / "jaxplay" / "results.sqlite3")


_shared: dict[str, ResultStore] = {}
#: Location -> when a store that could not be opened there may be tried again.
_failed: dict[str, float] = {}
_shared_lock = threading.Lock()


def shared_store() -> ResultStore | None:
    """This process's store at :func:`default_location` (one per location, made on first use);
    ``None`` if it cannot be opened (results are then computed per process, as before)."""
    location = default_location()
    with _shared_lock:
        if location not in _shared:
            if time.monotonic() < _failed.get(location, 0.0):
                return None  # it failed a moment ago: not tried for every computation
            try:
                _shared[location] = ResultStore(location, fingerprint())
            except Exception as err:
                _failed[location] = time.monotonic() + RETRY_AFTER_S
                log.warning("no shared result store at %s: %s", location, err)
                return None
        return _shared[location]


def configured_store() -> ResultStore | None:
    """The shared store when one is configured (``JAXPLAY_RESULT_DB``: several server
    processes), else ``None`` (one process: its own caches suffice)."""
    return shared_store() if settings.result_db().strip() else None


def stored(kind: str, returns: Any) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Keep what a function returns in the shared store (when one is configured), by its
    arguments: a page's cached computation is then made once for every server process.

    Arguments:
        kind: names the computation (``"vmap.timings"``); part of the key.
        returns: the function's return type; the dataclasses it may hold are what is read back
            (:func:`jaxplay.core.codec.dataclass_types`), nothing else.

    Without a store (``JAXPLAY_RESULT_DB`` unset: one server process) the function runs as is.
    Arguments that are not plain values (strings, numbers, booleans, ``None``, tuples and lists
    of them) also bypass the store. Keyword arguments named with a leading underscore are not
    part of the key, as for ``st.cache_data`` (a page's measurement turn: who waits, not what
    is computed).
    """

    allowed = _allowed(returns)

    def wrap(function: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(function)
        def inner(*args: Any, **kwargs: Any) -> T:
            store = configured_store()
            inputs = [list(args), sorted((k, v) for k, v in kwargs.items() if k[:1] != "_")]
            if store is None or not _plain(inputs):
                return function(*args, **kwargs)
            return store.get_or_compute(
                kind, inputs, lambda: function(*args, **kwargs), allowed
            ).value  # type: ignore[no-any-return]

        return inner

    return wrap


@functools.lru_cache(maxsize=256)
def _allowed(returns: Any) -> frozenset[type]:
    """:func:`jaxplay.core.codec.dataclass_types` of a return type, worked out once: a page
    wraps its cached functions again on every rerun (Streamlit runs its file again), and
    walking the dataclasses' fields cost about 0.5 ms of a page view."""
    return codec.dataclass_types(returns)


def _plain(value: Any, depth: int = 0) -> bool:
    if depth > 8:
        return False
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list | tuple):
        return all(_plain(v, depth + 1) for v in value)
    return False

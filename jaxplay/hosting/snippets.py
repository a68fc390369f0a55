"""Saved snippets: the Code Lab's "Share" button stores code and hands back a short link.

Workshop attendees share code with each other and with the presenter through a link such as
``?snippet=Xk3p9QmZt2Lw``. Ids are 12 characters drawn from ``secrets`` (about 71 bits), so links
cannot be guessed or enumerated; the same code saved twice gets the same id.

Long: one store with two backends, its schema and its migrations, and every limit it keeps;
split, the limits' single locked transaction would be spread over modules.

Two backends, one behaviour. ``JAXPLAY_SNIPPET_DB`` names either a SQLite file (the default: an
embedded database with nothing to run, in WAL mode so the server's threads read while one writes)
or a ``postgresql://`` URL, which several app instances behind a load balancer share, so that a
link opens on every instance. The store's rules (validation, limits, expiry) are written once, in
:class:`SnippetStore`, over a connection wrapper that hides the two SQL dialects' few differences;
the backends differ only in how they connect, lock and recover.

Limits, for a server that strangers reach:

- the size of one snippet (``max_bytes``);
- per visitor, a token bucket (:class:`~jaxplay.ratelimit.RateLimiter`) kept in this process, so
  with several instances each counts on its own;
- for the whole store, counted in the database inside one locked transaction per save (the
  ``snippet_usage`` row is locked ``FOR UPDATE`` on PostgreSQL, SQLite takes its write lock with
  ``BEGIN IMMEDIATE``), so instances sharing a database share these limits and a scripted client
  with a new visitor id per session cannot get around them: new snippets per hour, and the total
  stored bytes;
- per visitor, a share of each of those two, counted the same way (each snippet records who
  stored it, as a hash of the visitor id): one address cannot use up everyone's sharing;
- expiry: a snippet nobody has opened or shared for ``expiry_days`` no longer loads and is
  deleted by the next save; opening it refreshes it.

Failures. A corrupt SQLite file is moved aside (kept for inspection, never deleted), a fresh
database is created, and the caller is told so it can show a note. A database that cannot be
reached or refuses to work raises :class:`StoreUnavailable` with a message for the visitor (the
details go to the log): the Code Lab keeps working and says why it cannot share. PostgreSQL
connections and statements time out after about 2 s, so a dead database never stalls a page for
long. The schema is created on first use and records its version in ``snippet_schema``; a
database set up by a newer jaxplay is refused, never altered.
"""

from __future__ import annotations

import enum
import hashlib
import logging
import math
import secrets
import sqlite3
import string
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from jaxplay.core.i18n import N_, _
from jaxplay.hosting import settings
from jaxplay.hosting.ratelimit import RateLimiter

log = logging.getLogger(__name__)
T = TypeVar("T")

ID_ALPHABET = string.ascii_letters + string.digits
ID_LENGTH = 12
MAX_SNIPPET_BYTES = 64 * 1024
#: The version of the tables below; a database recording a higher one is not touched.
SCHEMA_VERSION = 2
#: Seconds a page waits for the snippet database before saying that it cannot be reached.
CONNECT_TIMEOUT_S = 2.0
MB = 1024 * 1024
_HOUR_S = 3600.0
_DAY_S = 86400.0
#: A load refreshes a snippet's last-viewed time at most this often, so reading rarely writes.
_REFRESH_S = 3600.0
#: PostgreSQL advisory lock taken while the tables are created (two instances may start at once).
_SCHEMA_LOCK = 0x6A617870

# Plain types that mean the same in SQLite and PostgreSQL; times are Unix seconds. Version 2
# added ``owner``: who stored the snippet (a hash of the visitor id; empty before version 2).
_CREATE_SNIPPETS = """CREATE TABLE snippets (
    id TEXT PRIMARY KEY,
    digest TEXT NOT NULL UNIQUE,
    code TEXT NOT NULL,
    size BIGINT NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    viewed DOUBLE PRECISION NOT NULL,
    owner TEXT NOT NULL DEFAULT ''
)"""
_ADD_OWNER = "ALTER TABLE snippets ADD COLUMN owner TEXT NOT NULL DEFAULT ''"
_CREATE_OWNER_INDEX = "CREATE INDEX snippets_owner ON snippets (owner, created)"
_CREATE_REST = (
    "CREATE INDEX snippets_created ON snippets (created)",
    "CREATE INDEX snippets_viewed ON snippets (viewed)",
    "CREATE TABLE snippet_usage "
    "(id INTEGER PRIMARY KEY CHECK (id = 1), total_bytes BIGINT NOT NULL)",
    "INSERT INTO snippet_usage (id, total_bytes) SELECT 1, coalesce(sum(size), 0) FROM snippets",
    "CREATE TABLE snippet_schema (version INTEGER NOT NULL)",
)

#: What a visitor is told when the database cannot be reached, by action (translated when raised).
_UNREACHABLE = {
    "save": N_(
        "Sharing is unavailable: the snippet store cannot be reached right now. Your code "
        "is unaffected; try Share again later."
    ),
    "load": N_(
        "The snippet store cannot be reached right now, so this link's code cannot be "
        "loaded; open the link again later."
    ),
    "read": N_("The snippet store cannot be reached right now."),
}


def is_postgres_url(location: str) -> bool:
    """Whether ``location`` names a PostgreSQL database rather than a SQLite file."""
    return location.strip().startswith(("postgresql://", "postgres://"))


def default_location(environ: Mapping[str, str] | None = None) -> str:
    """``JAXPLAY_SNIPPET_DB`` (a file or a ``postgresql://`` URL), else a file in ``~/.local``."""
    configured = settings.snippet_db(environ)
    if configured:
        return configured if is_postgres_url(configured) else str(Path(configured).expanduser())
    return str(Path.home() / ".local" / "share" / "jaxplay" / "snippets.sqlite3")


def share_link(
    base_url: str | None, snippet_id: str, params: Mapping[str, str] | None = None
) -> str:
    """The address that opens ``snippet_id`` in the Code Lab (relative if the base is unknown),
    with the app's own ``params`` after it (the visitor's language: the link opens in it)."""
    base = (base_url or "").split("?", 1)[0].rstrip("/")
    for suffix in ("/code-lab",):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    query = urllib.parse.urlencode({"snippet": snippet_id, **(params or {})})
    return f"{base}/code-lab?{query}"


class SnippetError(ValueError):
    """A snippet that cannot be saved or loaded, with a message for the visitor."""


class StoreUnavailable(SnippetError):
    """The snippet database cannot be reached or used; the message says so (not "not found")."""


@dataclass(frozen=True)
class Snippet:
    """A saved piece of code."""

    id: str
    code: str
    created: float


@dataclass(frozen=True)
class SaveResult:
    """The id of a saved snippet, and a note if the store had to be recovered first."""

    snippet: Snippet
    recovered: str | None = None


def is_valid_id(snippet_id: str) -> bool:
    """Whether ``snippet_id`` has the shape of an id this store hands out."""
    return len(snippet_id) == ID_LENGTH and all(c in ID_ALPHABET for c in snippet_id)


def _owner(visitor: str) -> str:
    """How a snippet records who stored it: a hash, so the database keeps no addresses."""
    return hashlib.sha256(f"jaxplay-snippet-owner:{visitor}".encode()).hexdigest()[:32]


def new_id() -> str:
    """An unguessable id: 12 characters from 62 (about 71 bits of randomness)."""
    return "".join(secrets.choice(ID_ALPHABET) for _ in range(ID_LENGTH))


# --- the schema, in either dialect --------------------------------------------------------------


class _Db:
    """One connection of either backend, taking ``?`` placeholders in both dialects."""

    def __init__(self, connection: Any, *, postgres: bool) -> None:
        self.connection = connection
        self.postgres = postgres
        self.for_update = " FOR UPDATE" if postgres else ""

    def rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        cursor = self.connection.execute(sql.replace("?", "%s") if self.postgres else sql, params)
        return cursor.fetchall() if cursor.description else []

    def one(self, sql: str, params: tuple = ()) -> tuple | None:
        rows = self.rows(sql, params)
        return rows[0] if rows else None

    def single(self, sql: str, params: tuple = ()) -> tuple:
        """The row of a query that always has one (an aggregate, the one usage row)."""
        row = self.one(sql, params)
        if row is None:
            raise RuntimeError(f"the snippet store answered no row to {sql!r}")
        return row

    def has_table(self, name: str) -> bool:
        if self.postgres:  # the table the search path finds, as unqualified statements do
            return self.single("SELECT to_regclass(?::text)", (name,))[0] is not None
        sql = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
        return self.single(sql, (name,))[0] > 0


def _schema_version(db: _Db) -> int | None:
    """The database's schema version: ``None`` for an empty database, 0 for the first store
    (one ``snippets`` table of id, digest, code and created, from before versions were kept)."""
    if not db.has_table("snippet_schema"):
        return 0 if db.has_table("snippets") else None
    row = db.one("SELECT max(version) FROM snippet_schema")
    return None if row is None or row[0] is None else int(row[0])


def _check_not_newer(version: int | None) -> None:
    if version is not None and version > SCHEMA_VERSION:
        raise StoreUnavailable(
            _(
                "The snippet store was set up by a newer version of jaxplay (schema version "
                "{version}; this one knows versions up to {known}), so it is left "
                "untouched and sharing is unavailable until this server is upgraded."
            ).format(version=version, known=SCHEMA_VERSION)
        )


def _set_up(db: _Db) -> None:
    """Create the tables, or bring the first store's table up to date (inside a transaction)."""
    version = _schema_version(db)
    _check_not_newer(version)
    if version == SCHEMA_VERSION:
        return
    if version is None:
        db.rows(_CREATE_SNIPPETS)
    elif version >= 1:
        db.rows(_ADD_OWNER)
    elif db.postgres:  # stores before version 1 were SQLite files: this table is someone else's
        raise StoreUnavailable(
            _(
                "The snippet database already has a table named snippets that jaxplay did not "
                "create, so it is left untouched and sharing is unavailable."
            )
        )
    else:  # version 0: add each snippet's size and last-viewed time
        db.rows("ALTER TABLE snippets ADD COLUMN size BIGINT NOT NULL DEFAULT 0")
        db.rows("ALTER TABLE snippets ADD COLUMN viewed DOUBLE PRECISION NOT NULL DEFAULT 0")
        db.rows("UPDATE snippets SET size = length(CAST(code AS BLOB)), viewed = created")
        db.rows(_ADD_OWNER)
    if version is None or version == 0:
        for statement in _CREATE_REST:
            db.rows(statement)
    db.rows(_CREATE_OWNER_INDEX)
    db.rows("DELETE FROM snippet_schema")
    db.rows("INSERT INTO snippet_schema (version) VALUES (?)", (SCHEMA_VERSION,))
    log.info("snippet store: schema version %s set up (was %s)", SCHEMA_VERSION, version)


# --- the backends -------------------------------------------------------------------------------


def _is_corrupt(err: sqlite3.Error) -> bool:
    return getattr(err, "sqlite_errorname", "").startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))


class _Sqlite:
    """A SQLite file; a connection per call (SQLite connections cannot be shared across threads,
    and one per call is cheap next to a page render)."""

    name = "SQLite"
    errors: tuple[type[BaseException], ...] = (sqlite3.Error, OSError)

    def __init__(self, path: Path, timeout_s: float) -> None:
        self.path = path
        self.timeout_s = timeout_s
        self._lock = threading.Lock()

    def run(self, op: Callable[[_Db], T], *, write: bool) -> tuple[T, str | None]:
        """``op`` in one transaction (``write``) or autocommitted statements; a recovery note."""
        try:
            return self._attempt(op, write), None
        except sqlite3.DatabaseError as err:
            if not _is_corrupt(err):
                raise
        with self._lock:  # one thread recovers; the others find the fresh file
            try:
                return self._attempt(op, write), None
            except sqlite3.DatabaseError as err:
                if not _is_corrupt(err):
                    raise
                note = self._move_aside(err)
            return self._attempt(op, write), note

    @contextmanager
    def _transaction(self, connection: sqlite3.Connection) -> Iterator[None]:
        connection.execute("BEGIN IMMEDIATE")  # the write lock, taken at once: saves serialize
        try:
            yield
        except BaseException:
            connection.rollback()
            raise
        connection.execute("COMMIT")

    def _attempt(self, op: Callable[[_Db], T], write: bool) -> T:
        """One try of ``op``, tried again while SQLite answers "database is locked" at once.

        SQLite waits ``timeout_s`` for a lock, except where waiting could deadlock: switching a
        new file to WAL or upgrading a lock while another connection holds one is refused at
        once. A burst of first saves from several threads met that (one in many test runs), so
        such a refusal is retried until the same timeout; a transaction refused rolled back, and
        a save is idempotent.
        """
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                return self._attempt_once(op, write)
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or time.monotonic() >= deadline:
                    raise
            time.sleep(0.02)

    def _attempt_once(self, op: Callable[[_Db], T], write: bool) -> T:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=self.timeout_s, isolation_level=None)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            db = _Db(connection, postgres=False)
            version = _schema_version(db)
            _check_not_newer(version)
            if version != SCHEMA_VERSION:
                with self._transaction(connection):
                    _set_up(db)
            if not write:
                return op(db)
            with self._transaction(connection):
                return op(db)
        finally:
            connection.close()

    def _move_aside(self, err: sqlite3.Error) -> str:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        for suffix in ("", "-wal", "-shm"):
            part = Path(f"{self.path}{suffix}")
            if part.exists():
                part.replace(Path(f"{aside}{suffix}"))
        log.warning("snippet store: %s was unreadable (%s); moved to %s", self.path, err, aside)
        return _(
            "The snippet database was unreadable ({error}); it was moved to {aside} "
            "and a new, empty one was created. Links saved before may no longer open."
        ).format(error=err, aside=aside.name)

    def close(self) -> None:
        """Nothing to release: every call closes its own connection."""


class _Postgres:
    """A PostgreSQL database through a small psycopg connection pool (opened on first use)."""

    name = "PostgreSQL"

    def __init__(self, url: str, pool_size: int, timeout_s: float) -> None:
        import psycopg  # only a deployment that names a PostgreSQL URL needs the driver
        from psycopg_pool import ConnectionPool

        self.errors: tuple[type[BaseException], ...] = (psycopg.Error,)
        timeout_ms = int(timeout_s * 1000)
        self._statement_timeout = f"SET statement_timeout = {timeout_ms}"
        self._pool = ConnectionPool(
            url,
            min_size=0,  # nothing is opened until someone shares or opens a link
            max_size=pool_size,
            open=False,
            timeout=timeout_s,  # a page waits this long for a connection, then says why
            kwargs={
                "connect_timeout": max(2, math.ceil(timeout_s)),  # libpq's minimum is 2 s
                "tcp_user_timeout": timeout_ms,  # a server that vanishes mid-query
                "application_name": "jaxplay",
            },
            configure=self._configure,
            check=ConnectionPool.check_connection,  # a restarted server: reconnect, not fail
            reconnect_timeout=5.0,  # give up soon, so the next request tries afresh
            name="jaxplay-snippets",
        )
        self._lock = threading.Lock()
        self._opened = False
        self._ready = False

    def _configure(self, connection: Any) -> None:
        connection.execute(self._statement_timeout)  # a locked or stuck server: no long waits
        connection.commit()

    def run(self, op: Callable[[_Db], T], *, write: bool) -> tuple[T, str | None]:
        """``op`` in one transaction (committed unless it raises); never a recovery note."""
        with self._lock:
            if not self._opened:
                self._pool.open(wait=False)
                self._opened = True
        with self._pool.connection() as connection:
            db = _Db(connection, postgres=True)
            if not self._ready:
                db.rows("SELECT pg_advisory_xact_lock(?)", (_SCHEMA_LOCK,))
                _set_up(db)
                connection.commit()
                self._ready = True
            return op(db), None

    def close(self) -> None:
        with self._lock:
            if self._opened:
                self._pool.close()


# --- the store ----------------------------------------------------------------------------------


class SnippetStore:
    """Snippets in a SQLite file or a PostgreSQL database, with their limits and expiry.

    Arguments:
        location: a SQLite file (its folder is created if missing) or a ``postgresql://`` URL.
        max_bytes: the largest snippet accepted, in UTF-8 bytes.
        limiter: per-visitor rate limit on saves, in this process (default: 10 a minute).
        per_hour: new snippets the whole store accepts per hour (a save of stored code is free).
        store_bytes: the total size of stored snippets; when full, new code is refused.
        visitor_per_hour: one visitor's share of ``per_hour``.
        visitor_bytes: one visitor's share of ``store_bytes`` (its snippets still stored).
        expiry_days: a snippet not opened or shared for this long is deleted.
        pool_size: PostgreSQL connections this store opens at most.
        timeout_s: how long to wait for the database before saying it cannot be reached.
        clock: wall-clock seconds (tests pass a fake one); saved in the rows, so the
            instances sharing a database should have synchronized clocks.
    """

    def __init__(
        self,
        location: str | Path,
        *,
        max_bytes: int = MAX_SNIPPET_BYTES,
        limiter: RateLimiter | None = None,
        per_hour: int = settings.DEFAULT_SNIPPETS_PER_HOUR,
        store_bytes: int = settings.DEFAULT_SNIPPET_STORE_MB * MB,
        visitor_per_hour: int = settings.DEFAULT_VISITOR_SNIPPETS_PER_HOUR,
        visitor_bytes: int = settings.DEFAULT_VISITOR_SNIPPET_MB * MB,
        expiry_days: float = settings.DEFAULT_SNIPPET_EXPIRY_DAYS,
        pool_size: int = settings.DEFAULT_SNIPPET_DB_POOL,
        timeout_s: float = CONNECT_TIMEOUT_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        location = str(location)
        self._backend: _Sqlite | _Postgres
        if is_postgres_url(location):
            self.path: Path | None = None
            self._backend = _Postgres(location.strip(), pool_size, timeout_s)
        else:
            self.path = Path(location).expanduser()
            self._backend = _Sqlite(self.path, timeout_s)
        self.max_bytes = max_bytes
        self.limiter = limiter or RateLimiter(settings.DEFAULT_SHARES_PER_MINUTE, 60.0)
        self.per_hour = per_hour
        self.store_bytes = store_bytes
        self.visitor_per_hour = visitor_per_hour
        self.visitor_bytes = visitor_bytes
        self.expiry_days = expiry_days
        self.clock = clock
        self.last_recovery: str | None = None

    @classmethod
    def from_env(
        cls, location: str | None = None, environ: Mapping[str, str] | None = None
    ) -> SnippetStore:
        """A store configured by the environment (the snippet rows of the settings table)."""
        return cls(
            location or default_location(environ),
            limiter=RateLimiter(settings.shares_per_minute(environ), 60.0),
            per_hour=settings.snippets_per_hour(environ),
            store_bytes=settings.snippet_store_mb(environ) * MB,
            visitor_per_hour=settings.visitor_snippets_per_hour(environ),
            visitor_bytes=settings.visitor_snippet_mb(environ) * MB,
            expiry_days=settings.snippet_expiry_days(environ),
            pool_size=settings.snippet_db_pool(environ),
        )

    @property
    def backend(self) -> str:
        """``"SQLite"`` or ``"PostgreSQL"``."""
        return self._backend.name

    def _run(self, op: Callable[[_Db], T], *, write: bool, action: str) -> T:
        try:
            result, note = self._backend.run(op, write=write)
        except self._backend.errors as err:
            log.warning("snippet store (%s) unavailable: %s", self._backend.name, err)
            raise StoreUnavailable(_(_UNREACHABLE[action])) from err
        self.last_recovery = note
        return result

    def save(self, code: str, visitor: str) -> SaveResult:
        """Store ``code`` and return its snippet; the same code always gets the same id.

        Raises:
            SnippetError: the code is empty or too large, the visitor saves too often, the
                visitor's share of the hourly or total limit is used up, or the store's is.
            StoreUnavailable: the database cannot be reached or used.
        """
        if not code.strip():
            raise SnippetError(_("There is no code to share."))
        encoded = code.encode("utf-8")
        size = len(encoded)
        if size > self.max_bytes:
            raise SnippetError(
                _(
                    "This snippet is {size} bytes; shared snippets are limited to {limit} bytes."
                ).format(size=f"{size:,}", limit=f"{self.max_bytes:,}")
            )
        wait = self.limiter.try_acquire(visitor)
        if wait > 0:
            raise SnippetError(
                _("Too many shares in a short time; try again in {seconds} s.").format(
                    seconds=f"{wait:.0f}"
                )
            )
        digest = hashlib.sha256(encoded).hexdigest()
        owner = _owner(visitor)

        def save(db: _Db) -> Snippet:
            now = self.clock()
            # Every save holds this row's lock to its end: the limits below count in one order.
            total = int(db.single("SELECT total_bytes FROM snippet_usage" + db.for_update)[0])
            total -= self._expire(db, now)
            row = db.one("SELECT id, code, created FROM snippets WHERE digest = ?", (digest,))
            if row is not None:
                db.rows("UPDATE snippets SET viewed = ? WHERE id = ?", (now, row[0]))
                return Snippet(*row)
            since = now - _HOUR_S
            recent, oldest = db.single(
                "SELECT count(*), min(created) FROM snippets WHERE created > ?", (since,)
            )
            if recent >= self.per_hour:
                minutes = max(1, math.ceil((oldest - since) / 60))
                raise SnippetError(
                    _(
                        "This server has stored its limit of {limit} new snippets for this hour; "
                        "try again in {minutes} min."
                    ).format(limit=f"{self.per_hour:,}", minutes=minutes)
                )
            mine, my_oldest, my_bytes = db.single(
                "SELECT count(CASE WHEN created > ? THEN 1 END), "
                "min(CASE WHEN created > ? THEN created END), coalesce(sum(size), 0) "
                "FROM snippets WHERE owner = ?",
                (since, since, owner),
            )
            if mine >= self.visitor_per_hour:
                minutes = max(1, math.ceil((my_oldest - since) / 60))
                raise SnippetError(
                    _(
                        "You have shared {mine} new snippets this hour, the most one visitor may "
                        "(the server's {limit} an hour are for everyone); try again in "
                        "{minutes} min. Sharing code that is already stored still works."
                    ).format(mine=f"{mine:,}", limit=f"{self.per_hour:,}", minutes=minutes)
                )
            if int(my_bytes) + size > self.visitor_bytes:
                raise SnippetError(
                    _(
                        "Your shared snippets take {used} MB of this server's store, the most one "
                        "visitor may ({limit} MB); new code can be shared once yours expire "
                        "({days} days unopened)."
                    ).format(
                        used=f"{int(my_bytes) / MB:.1f}",
                        limit=f"{self.visitor_bytes / MB:g}",
                        days=f"{self.expiry_days:g}",
                    )
                )
            if total + size > self.store_bytes:
                raise SnippetError(
                    _(
                        "The snippet store is full ({limit} MB); new code can be shared again "
                        "once old snippets expire ({days} days unopened)."
                    ).format(limit=f"{self.store_bytes / MB:g}", days=f"{self.expiry_days:g}")
                )
            snippet = Snippet(new_id(), code, now)
            db.rows(
                "INSERT INTO snippets (id, digest, code, size, created, viewed, owner) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (snippet.id, digest, code, size, now, now, owner),
            )
            db.rows("UPDATE snippet_usage SET total_bytes = total_bytes + ?", (size,))
            return snippet

        snippet = self._run(save, write=True, action="save")
        return SaveResult(snippet, self.last_recovery)

    def _expire(self, db: _Db, now: float) -> int:
        """Delete the snippets nobody opened or shared within the expiry; their total bytes."""
        cutoff = now - self.expiry_days * _DAY_S
        count, freed = db.single(
            "SELECT count(*), coalesce(sum(size), 0) FROM snippets WHERE viewed < ?", (cutoff,)
        )
        if count:
            db.rows("DELETE FROM snippets WHERE viewed < ?", (cutoff,))
            db.rows("UPDATE snippet_usage SET total_bytes = total_bytes - ?", (int(freed),))
            log.info("snippet store: %d expired snippets deleted (%d bytes)", count, freed)
        return int(freed)

    def load(self, snippet_id: str) -> Snippet:
        """The snippet saved under ``snippet_id``; opening it keeps it from expiring.

        Raises:
            SnippetError: the id is malformed, unknown or expired.
            StoreUnavailable: the database cannot be reached or used.
        """
        if not is_valid_id(snippet_id):
            raise SnippetError(_("This link's snippet id is not valid."))

        # The row is read as bytes this server did not make (another instance's code, someone
        # with the database): a code larger than any Share stores never reaches Python (NULL;
        # 200 MB of it cost 380 MB here before), and a row of other types is no snippet.
        # PostgreSQL's octet_length reads the size from the value's header.
        most = max(self.max_bytes, MAX_SNIPPET_BYTES)

        def load(db: _Db) -> tuple | None:
            now = self.clock()
            size = "octet_length" if db.postgres else "length"
            row = db.one(
                f"SELECT id, CASE WHEN {size}(code) <= {most:d} THEN code END, created, viewed"
                " FROM snippets WHERE id = ? AND viewed >= ?",
                (snippet_id, now - self.expiry_days * _DAY_S),
            )
            if row is not None and _is_time(row[3]) and row[3] < now - _REFRESH_S:
                db.rows("UPDATE snippets SET viewed = ? WHERE id = ?", (now, snippet_id))
            return row

        row = self._run(load, write=False, action="load")
        if row is None:
            raise SnippetError(
                _(
                    "No snippet {id} is stored on this server (a snippet nobody opens for {days} "
                    "days is deleted)."
                ).format(id=repr(snippet_id), days=f"{self.expiry_days:g}")
            )
        if not (isinstance(row[1], str) and _is_time(row[2]) and _is_time(row[3])):
            log.warning("snippet %s: a stored row of other types or size than Share writes", row[0])
            raise SnippetError(
                _(
                    "The snippet {id} stored on this server cannot be read: it is not what "
                    "Share stores."
                ).format(id=repr(snippet_id))
            )
        return Snippet(snippet_id, row[1], float(row[2]))

    def count(self) -> int:
        """How many snippets are stored."""
        return self._run(
            lambda db: int(db.single("SELECT count(*) FROM snippets")[0]),
            write=False,
            action="read",
        )

    def stored_bytes(self) -> int:
        """The total size of the stored snippets, as the store counts it for its limit."""
        return self._run(
            lambda db: int(db.single("SELECT total_bytes FROM snippet_usage")[0]),
            write=False,
            action="read",
        )

    def close(self) -> None:
        """Close the PostgreSQL connections (a SQLite store holds none between calls)."""
        self._backend.close()


def _is_time(value: object) -> bool:
    """A stored time this server wrote: a finite number (SQLite keeps any type anywhere)."""
    return isinstance(value, int | float) and math.isfinite(value)


_stores: dict[str, SnippetStore] = {}
_stores_lock = threading.Lock()


def shared_store(location: str | None = None) -> SnippetStore:
    """This process's one store at ``location`` (default: the configured one), made on first use.

    Kept in this module rather than a Streamlit cache: a client can empty those (Streamlit's
    ``clear_cache`` message), and the store holds the per-visitor rate limiter.
    """
    location = location or default_location()
    with _stores_lock:
        if location not in _stores:
            _stores[location] = SnippetStore.from_env(location)
        return _stores[location]


class NoticeKind(enum.Enum):
    """What the store tells a visitor beside a load or a save is about; the value is the icon a
    page shows it with (a Material icon, as the catalog names each page's)."""

    UNAVAILABLE = ":material/cloud_off:"  # the store cannot be reached or used
    BAD_LINK = ":material/link_off:"  # a link's snippet is malformed, unknown or expired
    REFUSED = ":material/block:"  # the code was not saved (too big, a limit reached)
    RECOVERED = ":material/build:"  # the store was rebuilt first (a corrupt file moved aside)


@dataclass(frozen=True)
class Notice:
    kind: NoticeKind
    text: str


@dataclass(frozen=True)
class Shared:
    """A load or a save as the Code Lab shows it: the snippet, or None when it failed, and what
    the visitor is told (the store is never an error page: the Code Lab keeps working)."""

    snippet: Snippet | None
    notices: tuple[Notice, ...] = ()


def _failure(err: SnippetError, kind: NoticeKind, text: str) -> Notice:
    return Notice(NoticeKind.UNAVAILABLE if isinstance(err, StoreUnavailable) else kind, text)


def open_link(store: SnippetStore, snippet_id: str) -> Shared:
    """A shared link's snippet (``?snippet=<id>``); when it cannot be loaded the visitor keeps
    their own code, and the notice says so."""
    notices = []
    snippet = None
    try:
        snippet = store.load(snippet_id)
    except SnippetError as err:
        instead = _("{error} Showing your own code instead.").format(error=err)
        notices.append(_failure(err, NoticeKind.BAD_LINK, instead))
    if store.last_recovery:
        notices.append(Notice(NoticeKind.RECOVERED, store.last_recovery))
    return Shared(snippet, tuple(notices))


def share(store: SnippetStore, code: str, visitor: str) -> Shared:
    """Save ``code`` for a link, under the store's limits for ``visitor``."""
    try:
        saved = store.save(code, visitor=visitor)
    except SnippetError as err:
        return Shared(None, (_failure(err, NoticeKind.REFUSED, str(err)),))
    recovered = (Notice(NoticeKind.RECOVERED, saved.recovered),) if saved.recovered else ()
    return Shared(saved.snippet, recovered)

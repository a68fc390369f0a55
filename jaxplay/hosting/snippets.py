"""Saved snippets: the Code Lab's "Share" button stores code and hands back a short link.

Workshop attendees share code with each other and with the presenter through a link such as
``?snippet=Xk3p9QmZt2Lw``. The store is an embedded SQLite database (no server to run on the VM)
in WAL mode, so the Streamlit server's threads can read while one writes. Ids are 12 characters
drawn from ``secrets`` (72 bits), so links cannot be guessed or enumerated. Snippets are capped in
size, saving is rate-limited per visitor, and the same code saved twice gets the same id.

A corrupt or unreadable database file must not take the app down: it is moved aside (kept for
inspection, never deleted), a fresh database is created, and the caller is told so it can show a
note. Every public method opens its own short-lived connection: SQLite connections cannot be
shared across threads, and a connection per call is cheap next to a page render.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import sqlite3
import string
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from jaxplay.hosting.ratelimit import RateLimiter

ID_ALPHABET = string.ascii_letters + string.digits
ID_LENGTH = 12
MAX_SNIPPET_BYTES = 64 * 1024

_SCHEMA = """
CREATE TABLE IF NOT EXISTS snippets (
    id TEXT PRIMARY KEY,
    digest TEXT NOT NULL UNIQUE,
    code TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def default_path() -> Path:
    """The database file: ``JAXPLAY_SNIPPET_DB``, else ``~/.local/share/jaxplay/``."""
    configured = os.environ.get("JAXPLAY_SNIPPET_DB", "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".local" / "share" / "jaxplay" / "snippets.sqlite3"


def share_link(base_url: str | None, snippet_id: str) -> str:
    """The address that opens ``snippet_id`` in the Code Lab (relative if the base is unknown)."""
    base = (base_url or "").split("?", 1)[0].rstrip("/")
    for suffix in ("/code-lab",):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    return f"{base}/code-lab?snippet={snippet_id}"


class SnippetError(ValueError):
    """A snippet that cannot be saved or loaded, with a message for the visitor."""


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


def new_id() -> str:
    """An unguessable id: 12 characters from 62 (about 71 bits of randomness)."""
    return "".join(secrets.choice(ID_ALPHABET) for _ in range(ID_LENGTH))


class SnippetStore:
    """Snippets in one SQLite file, created on first use.

    Arguments:
        path: the database file (its folder is created if missing).
        max_bytes: the largest snippet accepted, in UTF-8 bytes.
        limiter: per-visitor rate limit on saves (default: 10 saves a minute).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        max_bytes: int = MAX_SNIPPET_BYTES,
        limiter: RateLimiter | None = None,
    ) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.limiter = limiter or RateLimiter(capacity=10, per_seconds=60.0)
        self._lock = threading.Lock()
        self.last_recovery: str | None = None

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=10.0)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(_SCHEMA)
        except sqlite3.DatabaseError:
            connection.close()
            raise
        return connection

    def _open(self) -> sqlite3.Connection:
        """A connection to a healthy database, recovering from a corrupt file if needed."""
        try:
            connection = self._connect()
        except sqlite3.DatabaseError as err:
            with self._lock:
                return self._recover(err)
        try:
            connection.execute("SELECT count(*) FROM snippets").fetchone()
            return connection
        except sqlite3.DatabaseError as err:
            connection.close()
            with self._lock:
                return self._recover(err)

    def _recover(self, err: sqlite3.DatabaseError) -> sqlite3.Connection:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        for suffix in ("", "-wal", "-shm"):
            part = Path(f"{self.path}{suffix}")
            if part.exists():
                part.replace(Path(f"{aside}{suffix}"))
        self.last_recovery = (
            f"The snippet database was unreadable ({err}); it was moved to {aside.name} "
            "and a new, empty one was created. Links saved before may no longer open."
        )
        return self._connect()

    def save(self, code: str, visitor: str) -> SaveResult:
        """Store ``code`` and return its snippet; the same code always gets the same id.

        Raises:
            SnippetError: the code is empty or too large, or the visitor saves too often.
        """
        if not code.strip():
            raise SnippetError("There is no code to share.")
        size = len(code.encode("utf-8"))
        if size > self.max_bytes:
            raise SnippetError(
                f"This snippet is {size:,} bytes; shared snippets are limited to "
                f"{self.max_bytes:,} bytes."
            )
        wait = self.limiter.try_acquire(visitor)
        if wait > 0:
            raise SnippetError(f"Too many shares in a short time; try again in {wait:.0f} s.")
        digest = hashlib.sha256(code.encode("utf-8")).hexdigest()
        self.last_recovery = None
        connection = self._open()
        try:
            with connection:
                row = connection.execute(
                    "SELECT id, code, created FROM snippets WHERE digest = ?", (digest,)
                ).fetchone()
                if row is None:
                    row = (new_id(), code, time.time())
                    connection.execute(
                        "INSERT INTO snippets (id, digest, code, created) VALUES (?, ?, ?, ?)",
                        (row[0], digest, row[1], row[2]),
                    )
        finally:
            connection.close()
        return SaveResult(Snippet(*row), self.last_recovery)

    def load(self, snippet_id: str) -> Snippet:
        """The snippet saved under ``snippet_id``.

        Raises:
            SnippetError: the id is malformed or unknown.
        """
        if not is_valid_id(snippet_id):
            raise SnippetError("This link's snippet id is not valid.")
        self.last_recovery = None
        connection = self._open()
        try:
            row = connection.execute(
                "SELECT id, code, created FROM snippets WHERE id = ?", (snippet_id,)
            ).fetchone()
        finally:
            connection.close()
        if row is None:
            raise SnippetError(f"No snippet {snippet_id!r} is stored on this server.")
        return Snippet(*row)

    def count(self) -> int:
        """How many snippets are stored."""
        connection = self._open()
        try:
            return int(connection.execute("SELECT count(*) FROM snippets").fetchone()[0])
        finally:
            connection.close()

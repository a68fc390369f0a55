"""The snippet store and the rate limiter behind the Code Lab's Share button.

Every test taking ``make_store`` runs twice: on a SQLite file and on a real PostgreSQL server
started by the tests (``tests/support/postgres.py``), so both backends keep one behaviour.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest

from jaxplay.hosting import settings, snippets
from jaxplay.hosting.chromium import free_port
from jaxplay.hosting.ratelimit import RateLimiter
from jaxplay.hosting.snippets import (
    ID_LENGTH,
    SCHEMA_VERSION,
    SnippetError,
    SnippetStore,
    StoreUnavailable,
    is_valid_id,
)
from tests.support import postgres as postgres_support

DAY = 86400.0


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the store keeps its snippets: a SQLite file, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        return str(tmp_path / "db" / "snippets.sqlite3")
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def make_store(location: str) -> Iterator[Callable[..., SnippetStore]]:
    """Stores on the test's database (several act as several app instances); closed after.

    They wait for the database as long as it takes unless a test says otherwise: what these
    tests check is what the store does, and on a loaded machine saves from many threads can queue
    for SQLite's write lock past the 2 s a page waits (the tests of that wait make their own).
    """
    made: list[SnippetStore] = []

    def make(**options: object) -> SnippetStore:
        options.setdefault("timeout_s", 60.0)
        made.append(SnippetStore(location, **options))
        return made[-1]

    yield make
    for store in made:
        store.close()


def _sql(location: str, statement: str) -> list[tuple]:
    """Run one statement on the store's database directly, as an operator would."""
    if snippets.is_postgres_url(location):
        import psycopg

        with psycopg.connect(location, autocommit=True) as connection:
            cursor = connection.execute(statement)
            return cursor.fetchall() if cursor.description else []
    with closing(sqlite3.connect(location)) as connection, connection:
        return connection.execute(statement).fetchall()


def _many(n: int) -> RateLimiter:
    return RateLimiter(n, 1.0)


# --- both backends ------------------------------------------------------------------------------


def test_save_and_load_round_trip(make_store: Callable[..., SnippetStore]) -> None:
    store = make_store()
    saved = store.save("print(jnp.ones(3).sum())\n", visitor="a").snippet
    assert is_valid_id(saved.id) and len(saved.id) == ID_LENGTH
    assert store.load(saved.id).code == "print(jnp.ones(3).sum())\n"
    assert store.save("print(jnp.ones(3).sum())\n", visitor="b").snippet.id == saved.id
    assert store.count() == 1
    assert store.stored_bytes() == len(b"print(jnp.ones(3).sum())\n")


def test_unicode_is_kept_and_counted_in_bytes(make_store: Callable[..., SnippetStore]) -> None:
    store = make_store(max_bytes=20)
    code = "# π ≈ 3.14159\n"  # 14 characters, 17 bytes
    assert store.load(store.save(code, visitor="a").snippet.id).code == code
    assert store.stored_bytes() == len(code.encode()) == 17
    with pytest.raises(SnippetError, match="is 22 bytes"):
        store.save("# " + "π" * 10, visitor="a")  # 12 characters, 22 bytes


def test_snippets_survive_a_restart(make_store: Callable[..., SnippetStore]) -> None:
    snippet_id = make_store().save("y = 2", visitor="a").snippet.id
    assert make_store().load(snippet_id).code == "y = 2"


def test_ids_are_unguessable_and_distinct(make_store: Callable[..., SnippetStore]) -> None:
    store = make_store(limiter=_many(1000), visitor_per_hour=1000)
    ids = {store.save(f"v = {i}", visitor="a").snippet.id for i in range(200)}
    assert len(ids) == 200
    assert all(is_valid_id(i) for i in ids)


def test_oversize_and_empty_are_refused_with_the_limit(
    make_store: Callable[..., SnippetStore],
) -> None:
    store = make_store(max_bytes=100)
    with pytest.raises(SnippetError, match="100 bytes"):
        store.save("x" * 101, visitor="a")
    with pytest.raises(SnippetError, match="no code"):
        store.save("   ", visitor="a")
    assert store.count() == 0


def test_malformed_and_unknown_ids(make_store: Callable[..., SnippetStore]) -> None:
    store = make_store()
    with pytest.raises(SnippetError, match="not valid"):
        store.load("../../etc/passwd")
    with pytest.raises(SnippetError, match="No snippet") as unknown:
        store.load("A" * ID_LENGTH)
    assert not isinstance(unknown.value, StoreUnavailable)


#: What is done to a stored row, for SQLite and for PostgreSQL (None: it keeps the types).
TAMPERED = {
    "viewed": ("viewed = 'soon'", None),  # SQLite keeps text in a number column: a TypeError
    "created": ("created = 'then'", None),
    "code": ("code = printf('%.*c', 70000, 'x')", "code = repeat('x', 70000)"),  # > any Share
}


@pytest.mark.parametrize("tampered", TAMPERED)
def test_a_row_share_did_not_write_is_a_message_not_an_error_page(
    location: str, make_store: Callable[..., SnippetStore], tampered: str
) -> None:
    """A row written around the store (another instance's code, someone with the database)
    opened by its link: a clear message, and the code of a larger one never read."""
    statement = TAMPERED[tampered][snippets.is_postgres_url(location)]
    if statement is None:
        pytest.skip("PostgreSQL keeps only numbers in a DOUBLE PRECISION column")
    store = make_store()
    snippet_id = store.save("y = 2", visitor="a").snippet.id
    _sql(location, f"UPDATE snippets SET {statement} WHERE id = '{snippet_id}'")
    with pytest.raises(SnippetError, match="cannot be read"):
        store.load(snippet_id)


def test_rate_limit_refuses_a_burst_per_visitor(make_store: Callable[..., SnippetStore]) -> None:
    clock = FakeClock()
    store = make_store(limiter=RateLimiter(3, 60.0, clock=clock))
    for i in range(3):
        store.save(f"a = {i}", visitor="alice")
    with pytest.raises(SnippetError, match="try again in 20 s"):
        store.save("a = 99", visitor="alice")
    store.save("b = 1", visitor="bob")  # others are not affected
    clock.now += 20.0
    store.save("a = 100", visitor="alice")


def test_concurrent_saves_from_threads(make_store: Callable[..., SnippetStore]) -> None:
    store = make_store(limiter=_many(1000))
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(20):
                store.save(f"t{n} = {i}", visitor=f"v{n}")
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and store.count() == 120
    assert store.stored_bytes() == sum(len(f"t{n} = {i}") for n in range(6) for i in range(20))


def test_hourly_limit_holds_for_a_new_visitor_id_per_share(
    make_store: Callable[..., SnippetStore],
) -> None:
    clock = FakeClock(1_000_000.0)
    store = make_store(per_hour=5, clock=clock)
    for i in range(5):
        clock.now += 60.0
        store.save(f"spam = {i}", visitor=f"session-{i}")
    for i in range(5, 40):  # a scripted client: every share from a fresh visitor id
        with pytest.raises(SnippetError, match="limit of 5 new snippets for this hour") as err:
            store.save(f"spam = {i}", visitor=f"session-{i}")
    assert "try again in 56 min" in str(err.value)  # when the oldest of the hour drops out
    assert store.count() == 5
    # Code that is already stored is still shared (same link, nothing new is stored).
    assert store.save("spam = 0", visitor="teacher").snippet.code == "spam = 0"
    clock.now = 1_000_060.0 + 3600.0 + 1.0  # the hour's first save is now more than an hour old
    store.save("spam = 40", visitor="session-40")
    with pytest.raises(SnippetError, match="this hour"):
        store.save("spam = 41", visitor="session-41")
    assert store.count() == 6


def test_total_size_limit_holds_for_many_visitors(make_store: Callable[..., SnippetStore]) -> None:
    store = make_store(store_bytes=1000)
    for i in range(3):
        store.save(f"# {i:03d}" + "x" * 295, visitor=f"v{i}")  # 300 bytes each
    assert store.stored_bytes() == 900
    for i in range(3, 30):
        with pytest.raises(SnippetError, match="store is full"):
            store.save(f"# {i:03d}" + "x" * 295, visitor=f"v{i}")
    store.save("small = 1", visitor="v99")  # still fits: 909 bytes
    assert store.stored_bytes() == 909 and store.count() == 4


def test_unopened_snippets_expire_and_opening_one_keeps_it(
    make_store: Callable[..., SnippetStore],
) -> None:
    clock = FakeClock(1_000_000.0)
    store = make_store(expiry_days=30, clock=clock)
    kept = store.save("kept = 1", visitor="a").snippet.id
    forgotten = store.save("forgotten = 2", visitor="a").snippet.id
    clock.now += 20 * DAY
    assert store.load(kept).code == "kept = 1"  # opened on day 20: kept until day 50
    clock.now += 11 * DAY  # day 31
    with pytest.raises(SnippetError, match="No snippet"):
        store.load(forgotten)
    assert store.load(kept).code == "kept = 1"
    assert store.count() == 2  # expired rows go on the next save
    store.save("new = 3", visitor="b")
    assert store.count() == 2
    assert store.stored_bytes() == len("kept = 1") + len("new = 3")
    # Sharing code again counts as a visit too.
    clock.now += 29 * DAY  # day 60: kept was last opened on day 31
    assert store.save("kept = 1", visitor="c").snippet.id == kept
    clock.now += 29 * DAY
    assert store.load(kept).code == "kept = 1"


def test_expired_snippets_free_room_in_a_full_store(
    make_store: Callable[..., SnippetStore],
) -> None:
    clock = FakeClock(1_000_000.0)
    store = make_store(store_bytes=100, expiry_days=7, clock=clock)
    store.save("a" * 90, visitor="a")
    with pytest.raises(SnippetError, match="store is full"):
        store.save("b" * 20, visitor="b")
    clock.now += 8 * DAY
    store.save("b" * 20, visitor="b")
    assert store.count() == 1 and store.stored_bytes() == 20


def test_two_instances_share_the_global_limit_atomically(
    make_store: Callable[..., SnippetStore],
) -> None:
    # Two stores on one database, as two app instances: 6 threads each, every share from a new
    # visitor id; exactly the hourly limit gets through, however the saves interleave.
    instances = [make_store(per_hour=10, limiter=_many(1000)) for _ in range(2)]
    stored: list[str] = []
    refused: list[str] = []
    failed: list[BaseException] = []

    def work(store: SnippetStore, n: int) -> None:
        for i in range(5):
            try:
                stored.append(store.save(f"w{n}_{i} = 1", visitor=f"v{n}-{i}").snippet.id)
            except SnippetError as err:
                refused.append(str(err))
            except BaseException as err:
                failed.append(err)

    threads = [threading.Thread(target=work, args=(instances[n % 2], n)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failed
    assert len(stored) == 10 and len(set(stored)) == 10
    assert len(refused) == 50 and all("this hour" in r for r in refused)
    assert instances[0].count() == instances[1].count() == 10


def test_schema_is_versioned_and_a_newer_one_is_refused(
    make_store: Callable[..., SnippetStore], location: str
) -> None:
    snippet_id = make_store().save("v = 1", visitor="a").snippet.id
    assert _sql(location, "SELECT version FROM snippet_schema") == [(SCHEMA_VERSION,)]
    _sql(location, f"INSERT INTO snippet_schema (version) VALUES ({SCHEMA_VERSION + 1})")
    store = make_store()  # a fresh instance: an older jaxplay meeting a newer database
    for attempt in (lambda: store.save("w = 2", visitor="a"), lambda: store.load(snippet_id)):
        with pytest.raises(StoreUnavailable, match="newer version of jaxplay"):
            attempt()
    assert _sql(location, "SELECT count(*) FROM snippets") == [(1,)]  # left untouched
    if not snippets.is_postgres_url(location):
        assert not list(Path(location).parent.glob("*.corrupt-*"))


def test_settings_configure_the_store(location: str) -> None:
    env = {
        "JAXPLAY_SNIPPET_DB": location,
        "JAXPLAY_SHARES_PER_MINUTE": "2",
        "JAXPLAY_SNIPPETS_PER_HOUR": "7",
        "JAXPLAY_SNIPPET_STORE_MB": "3",
        "JAXPLAY_SNIPPET_EXPIRY_DAYS": "oops",  # a typo falls back to the default
    }
    store = SnippetStore.from_env(environ=env)
    try:
        assert store.backend == ("PostgreSQL" if "postgresql" in location else "SQLite")
        assert (store.per_hour, store.store_bytes) == (7, 3 * snippets.MB)
        assert store.expiry_days == settings.DEFAULT_SNIPPET_EXPIRY_DAYS
        store.save("a = 1", visitor="a")
        store.save("a = 2", visitor="a")
        with pytest.raises(SnippetError, match="Too many shares"):
            store.save("a = 3", visitor="a")
    finally:
        store.close()
    assert snippets.default_location({"JAXPLAY_SNIPPET_DB": location}) == location


# --- a database that cannot be reached ----------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
def unreachable(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        (tmp_path / "a-file").write_text("not a folder")
        return str(tmp_path / "a-file" / "snippets.sqlite3")
    return f"postgresql://jaxplay@127.0.0.1:{free_port()}/jaxplay"  # nothing listens there


def test_an_unreachable_database_says_so(unreachable: str) -> None:
    store = SnippetStore(unreachable, timeout_s=0.5)
    try:
        with pytest.raises(StoreUnavailable, match="Sharing is unavailable") as err:
            store.save("x = 1", visitor="a")
        assert "127.0.0.1" not in str(err.value) and "a-file" not in str(err.value)
        with pytest.raises(StoreUnavailable, match="cannot be reached") as err:
            store.load("A" * ID_LENGTH)
        assert "No snippet" not in str(err.value)
        with pytest.raises(SnippetError, match="not valid"):  # checked before any connection
            store.load("bad id")
    finally:
        store.close()


def test_postgres_waits_at_most_the_timeout_for_a_connection() -> None:
    store = SnippetStore("postgresql://nobody@127.0.0.1:1/x")
    pool = store._backend._pool
    assert pool.timeout == snippets.CONNECT_TIMEOUT_S <= 2.0
    assert pool.kwargs["connect_timeout"] == 2
    assert pool.min_size == 0  # nothing connects before the first share or link
    store.close()


# --- one backend only ---------------------------------------------------------------------------


def test_database_is_in_wal_mode(tmp_path: Path) -> None:
    store = SnippetStore(tmp_path / "s.sqlite3")
    store.save("x = 1", visitor="a")
    with sqlite3.connect(tmp_path / "s.sqlite3") as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _corrupt(path: Path) -> None:
    """Overwrite a SQLite store with bytes that are no database (and drop its WAL files)."""
    for extra in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        extra.unlink(missing_ok=True)
    path.write_bytes(b"this is not a database" * 100)


def test_corrupt_file_is_moved_aside_and_recreated(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    store = SnippetStore(path)
    store.save("z = 3", visitor="a")
    _corrupt(path)
    result = store.save("w = 4", visitor="a")
    assert result.recovered and "moved to" in result.recovered
    assert store.load(result.snippet.id).code == "w = 4"
    assert list(tmp_path.glob("s.sqlite3.corrupt-*"))


def test_a_locked_database_is_unavailable_not_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    store = SnippetStore(path, timeout_s=0.2)
    store.save("z = 3", visitor="a")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holding the write lock
    try:
        with pytest.raises(StoreUnavailable, match="Sharing is unavailable"):
            store.save("w = 4", visitor="a")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert not list(tmp_path.glob("*.corrupt-*"))
    assert store.save("w = 4", visitor="a").recovered is None


def _refusing(monkeypatch: pytest.MonkeyPatch, message: str, times: int | None) -> list[float]:
    """Make the SQLite backend's tries fail with ``message`` (``times`` times, or always) before
    doing the real one, as SQLite does when it refuses a lock at once; returns when each try
    began."""
    tries: list[float] = []
    real = snippets._Sqlite._attempt_once

    def attempt_once(self, op, write):  # type: ignore[no-untyped-def]
        tries.append(time.monotonic())
        if times is None or len(tries) <= times:
            raise sqlite3.OperationalError(message)
        return real(self, op, write)

    monkeypatch.setattr(snippets._Sqlite, "_attempt_once", attempt_once)
    return tries


def test_a_lock_refused_at_once_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite answers "database is locked" without waiting where waiting could deadlock (a new
    file switched to WAL, a lock upgrade during a burst of first saves): the save is retried
    within the store's timeout and succeeds."""
    store = SnippetStore(tmp_path / "s.sqlite3", timeout_s=30)
    tries = _refusing(monkeypatch, "database is locked", times=2)
    saved = store.save("v = 6", visitor="a")
    assert len(tries) == 3
    assert store.load(saved.snippet.id).code == "v = 6"


def test_a_lock_refused_past_the_timeout_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SnippetStore(tmp_path / "s.sqlite3", timeout_s=0.3)
    tries = _refusing(monkeypatch, "database is locked", times=None)
    with pytest.raises(StoreUnavailable, match="Sharing is unavailable"):
        store.save("v = 6", visitor="a")
    assert len(tries) > 1
    assert 0.25 <= tries[-1] - tries[0] < 5  # retried until the timeout, not for ever


def test_another_error_is_not_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SnippetStore(tmp_path / "s.sqlite3", timeout_s=30)
    tries = _refusing(monkeypatch, "disk I/O error", times=None)
    with pytest.raises(StoreUnavailable):
        store.save("v = 6", visitor="a")
    assert len(tries) == 1


def test_missing_file_is_created(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    store = SnippetStore(path)
    snippet_id = store.save("q = 5", visitor="a").snippet.id
    path.unlink()
    Path(f"{path}-wal").unlink(missing_ok=True)
    Path(f"{path}-shm").unlink(missing_ok=True)
    with pytest.raises(SnippetError, match="No snippet"):
        store.load(snippet_id)
    assert store.count() == 0


def test_a_store_from_before_schema_versions_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as connection:  # the table of the first jaxplay releases
        connection.execute(
            "CREATE TABLE snippets (id TEXT PRIMARY KEY, digest TEXT NOT NULL UNIQUE, "
            "code TEXT NOT NULL, created REAL NOT NULL)"
        )
        connection.execute("INSERT INTO snippets VALUES ('OldSnippet01', 'd1', 'π = 3.14', 1000.0)")
    clock = FakeClock(1000.0 + DAY)
    store = SnippetStore(path, clock=clock)
    assert store.load("OldSnippet01").code == "π = 3.14"
    assert store.stored_bytes() == len("π = 3.14".encode())
    assert _sql(str(path), "SELECT version FROM snippet_schema") == [(SCHEMA_VERSION,)]
    clock.now += 31 * DAY  # its first view (day 1) counts as a visit
    with pytest.raises(SnippetError, match="No snippet"):
        store.load("OldSnippet01")


def test_a_foreign_snippets_table_in_postgres_is_left_alone(postgres_url: str) -> None:
    _sql(postgres_url, "CREATE TABLE snippets (id TEXT PRIMARY KEY, title TEXT)")
    store = SnippetStore(postgres_url)
    try:
        with pytest.raises(StoreUnavailable, match="did not create"):
            store.save("x = 1", visitor="a")
    finally:
        store.close()
    columns = _sql(
        postgres_url,
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'snippets' "
        "AND table_schema = current_schema() ORDER BY ordinal_position",
    )
    assert columns == [("id",), ("title",)]


def test_rate_limiter_bounds_its_table() -> None:
    limiter = RateLimiter(1, 1.0, max_visitors=5, clock=FakeClock())
    for i in range(50):
        limiter.try_acquire(f"v{i}")
    assert len(limiter._buckets) == 5
    with pytest.raises(ValueError):
        RateLimiter(0, 1.0)


# --- the test server itself ---------------------------------------------------------------------


def test_missing_postgres_binaries_skip_locally_and_fail_in_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAXPLAY_PG_BIN", str(tmp_path))  # a folder without initdb
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no PostgreSQL server binaries"):
        postgres_support.require_binaries()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run the PostgreSQL tests"):
        postgres_support.require_binaries()


def test_a_link_and_a_share_as_the_code_lab_shows_them(tmp_path: Path) -> None:
    """open_link/share never raise: the snippet or None, and what the visitor is told, by kind."""
    store = SnippetStore(tmp_path / "s.sqlite3", max_bytes=100)
    shared = snippets.share(store, "x = 1", visitor="a")
    assert shared.snippet is not None and shared.notices == ()
    opened = snippets.open_link(store, shared.snippet.id)
    assert opened.snippet == store.load(shared.snippet.id) and opened.notices == ()
    unknown = snippets.open_link(store, "A" * ID_LENGTH)
    assert unknown.snippet is None
    assert [n.kind for n in unknown.notices] == [snippets.NoticeKind.BAD_LINK]
    assert unknown.notices[0].text.endswith("Showing your own code instead.")
    too_big = snippets.share(store, "y" * 101, visitor="a")
    assert too_big.snippet is None
    assert [n.kind for n in too_big.notices] == [snippets.NoticeKind.REFUSED]


def test_an_unreachable_or_rebuilt_store_is_told_as_such(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("a file where the folder should be")
    down = SnippetStore(tmp_path / "a-file" / "s.sqlite3", timeout_s=0.5)
    for shared in (snippets.share(down, "x = 1", "a"), snippets.open_link(down, "A" * ID_LENGTH)):
        assert shared.snippet is None
        assert [n.kind for n in shared.notices] == [snippets.NoticeKind.UNAVAILABLE]
    path = tmp_path / "s.sqlite3"
    store = SnippetStore(path)
    store.save("z = 3", visitor="a")
    _corrupt(path)
    rebuilt = snippets.share(store, "w = 4", "a")
    assert rebuilt.snippet is not None
    assert [n.kind for n in rebuilt.notices] == [snippets.NoticeKind.RECOVERED]

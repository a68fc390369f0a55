"""One visitor's share of the snippet store's limits, counted in the database (issue 20, item 5).

One address used to make 485 snippets in two minutes (its in-process rate limit reset by a client
message) and every other visitor got "limit of 500 new snippets for this hour". Every test runs on
SQLite and on PostgreSQL, with two stores on one database acting as two app instances.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from jaxplay.hosting import snippets
from jaxplay.hosting.ratelimit import RateLimiter
from jaxplay.hosting.snippets import SCHEMA_VERSION, SnippetError, SnippetStore
from tests.hosting import test_snippets
from tests.hosting.test_snippets import FakeClock, _sql

# The two backends' fixtures of the store's own tests.
location = test_snippets.location
make_store = test_snippets.make_store


def _unlimited() -> RateLimiter:
    """A per-process limiter that never refuses: only the database's counts are tested."""
    return RateLimiter(10_000, 1.0)


def test_one_visitor_cannot_use_up_the_hour_for_everyone(
    make_store: Callable[..., SnippetStore],
) -> None:
    clock = FakeClock(1_000_000.0)
    options = dict(per_hour=20, visitor_per_hour=5, clock=clock)
    first, second = (make_store(limiter=_unlimited(), **options) for _ in range(2))
    for i in range(5):
        clock.now += 60.0
        (first if i % 2 else second).save(f"spam = {i}", visitor="203.0.113.9")
    for store in (first, second):  # both instances count the same rows
        with pytest.raises(SnippetError, match="the most one visitor may") as err:
            store.save("spam = 99", visitor="203.0.113.9")
    assert "try again in 56 min" in str(err.value)
    # A limiter that starts afresh (a restart, a cleared cache) changes nothing: the rows count.
    with pytest.raises(SnippetError, match="the most one visitor may"):
        make_store(limiter=_unlimited(), **options).save("spam = 98", visitor="203.0.113.9")
    assert first.save("mine = 1", visitor="198.51.100.7").snippet.code == "mine = 1"
    assert first.save("spam = 0", visitor="203.0.113.9").snippet.code == "spam = 0"  # stored
    clock.now += 3600.0
    assert second.save("spam = 99", visitor="203.0.113.9").snippet.code == "spam = 99"
    assert first.count() == 7


def test_one_visitor_cannot_fill_the_store_for_everyone(
    make_store: Callable[..., SnippetStore],
) -> None:
    first, second = (
        make_store(limiter=_unlimited(), store_bytes=10_000, visitor_bytes=1000) for _ in range(2)
    )
    for i in range(3):
        (first, second)[i % 2].save(f"# {i:03d}" + "x" * 295, visitor="203.0.113.9")  # 300 B
    for store in (first, second):
        with pytest.raises(SnippetError, match="the most one visitor may"):
            store.save("# 004" + "x" * 295, visitor="203.0.113.9")
    assert first.save("small = 1", visitor="203.0.113.9")  # 909 bytes: still fits
    second.save("# 005" + "x" * 295, visitor="198.51.100.7")
    assert first.stored_bytes() == 1209


def test_the_database_keeps_a_hash_not_the_address(
    make_store: Callable[..., SnippetStore], location: str
) -> None:
    make_store().save("x = 1", visitor="203.0.113.9")
    ((owner,),) = _sql(location, "SELECT owner FROM snippets")
    assert owner and "203.0.113.9" not in owner


def test_settings_configure_the_visitor_share(
    location: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JAXPLAY_VISITOR_SNIPPETS_PER_HOUR", "3")
    monkeypatch.setenv("JAXPLAY_VISITOR_SNIPPET_MB", "2")
    store = SnippetStore.from_env(location)
    try:
        assert (store.visitor_per_hour, store.visitor_bytes) == (3, 2 * snippets.MB)
    finally:
        store.close()


def test_a_version_1_store_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite3"
    with closing(sqlite3.connect(path)) as connection, connection:  # jaxplay's version 1 tables
        connection.executescript(
            "CREATE TABLE snippets (id TEXT PRIMARY KEY, digest TEXT NOT NULL UNIQUE, "
            "code TEXT NOT NULL, size BIGINT NOT NULL, created DOUBLE PRECISION NOT NULL, "
            "viewed DOUBLE PRECISION NOT NULL);"
            "CREATE TABLE snippet_usage (id INTEGER PRIMARY KEY CHECK (id = 1), "
            "total_bytes BIGINT NOT NULL);"
            "INSERT INTO snippet_usage VALUES (1, 5);"
            "CREATE TABLE snippet_schema (version INTEGER NOT NULL);"
            "INSERT INTO snippet_schema VALUES (1);"
            "INSERT INTO snippets VALUES ('OldSnippet01', 'd1', 'x = 1', 5, 1000.0, 1000.0);"
        )
    store = SnippetStore(path, clock=FakeClock(2000.0), visitor_per_hour=1)
    assert store.load("OldSnippet01").code == "x = 1"
    assert _sql(str(path), "SELECT version FROM snippet_schema") == [(SCHEMA_VERSION,)]
    store.save("y = 2", visitor="v")
    with pytest.raises(SnippetError, match="the most one visitor may"):
        store.save("y = 3", visitor="v")

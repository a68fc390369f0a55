"""The snippet store and the rate limiter behind the Code Lab's Share button."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from jaxplay.hosting.ratelimit import RateLimiter
from jaxplay.hosting.snippets import ID_LENGTH, SnippetError, SnippetStore, is_valid_id


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    store = SnippetStore(tmp_path / "db" / "snippets.sqlite3")
    saved = store.save("print(jnp.ones(3).sum())\n", visitor="a").snippet
    assert is_valid_id(saved.id) and len(saved.id) == ID_LENGTH
    assert store.load(saved.id).code == "print(jnp.ones(3).sum())\n"
    assert store.save("print(jnp.ones(3).sum())\n", visitor="b").snippet.id == saved.id
    assert store.count() == 1


def test_database_is_in_wal_mode(tmp_path: Path) -> None:
    store = SnippetStore(tmp_path / "s.sqlite3")
    store.save("x = 1", visitor="a")
    with sqlite3.connect(tmp_path / "s.sqlite3") as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_snippets_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    snippet_id = SnippetStore(path).save("y = 2", visitor="a").snippet.id
    assert SnippetStore(path).load(snippet_id).code == "y = 2"


def test_ids_are_unguessable_and_distinct(tmp_path: Path) -> None:
    store = SnippetStore(tmp_path / "s.sqlite3", limiter=RateLimiter(1000, 1.0))
    ids = {store.save(f"v = {i}", visitor="a").snippet.id for i in range(200)}
    assert len(ids) == 200
    assert all(is_valid_id(i) for i in ids)


def test_oversize_and_empty_are_refused_with_the_limit(tmp_path: Path) -> None:
    store = SnippetStore(tmp_path / "s.sqlite3", max_bytes=100)
    with pytest.raises(SnippetError, match="100 bytes"):
        store.save("x" * 101, visitor="a")
    with pytest.raises(SnippetError, match="no code"):
        store.save("   ", visitor="a")


def test_malformed_and_unknown_ids(tmp_path: Path) -> None:
    store = SnippetStore(tmp_path / "s.sqlite3")
    with pytest.raises(SnippetError, match="not valid"):
        store.load("../../etc/passwd")
    with pytest.raises(SnippetError, match="No snippet"):
        store.load("A" * ID_LENGTH)


def test_rate_limit_refuses_a_burst_per_visitor(tmp_path: Path) -> None:
    clock = FakeClock()
    store = SnippetStore(tmp_path / "s.sqlite3", limiter=RateLimiter(3, 60.0, clock=clock))
    for i in range(3):
        store.save(f"a = {i}", visitor="alice")
    with pytest.raises(SnippetError, match="try again in 20 s"):
        store.save("a = 99", visitor="alice")
    store.save("b = 1", visitor="bob")  # others are not affected
    clock.now += 20.0
    store.save("a = 100", visitor="alice")


def test_corrupt_file_is_moved_aside_and_recreated(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    store = SnippetStore(path)
    store.save("z = 3", visitor="a")
    for extra in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        extra.unlink(missing_ok=True)
    path.write_bytes(b"this is not a database" * 100)
    result = store.save("w = 4", visitor="a")
    assert result.recovered and "moved to" in result.recovered
    assert store.load(result.snippet.id).code == "w = 4"
    assert list(tmp_path.glob("s.sqlite3.corrupt-*"))


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


def test_concurrent_saves_from_threads(tmp_path: Path) -> None:
    store = SnippetStore(tmp_path / "s.sqlite3", limiter=RateLimiter(1000, 1.0))
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(20):
                store.save(f"t{n} = {i}", visitor=f"v{n}")
        except BaseException as err:  # noqa: BLE001 - collected for the assertion
            errors.append(err)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and store.count() == 120


def test_rate_limiter_bounds_its_table() -> None:
    limiter = RateLimiter(1, 1.0, max_visitors=5, clock=FakeClock())
    for i in range(50):
        limiter.try_acquire(f"v{i}")
    assert len(limiter._buckets) == 5
    with pytest.raises(ValueError):
        RateLimiter(0, 1.0)

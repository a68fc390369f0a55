"""The shared result store: computed once per deployment, across processes, never for another
environment, values read back only as the types named, and a store that fails never loses a page.

Both backends (a SQLite file, a throwaway PostgreSQL schema) run the same tests.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from jaxplay.core import codec
from jaxplay.hosting import results
from jaxplay.jit import _measurement
from tests.support import stores


@dataclasses.dataclass(frozen=True)
class Measured:
    name: str
    samples: np.ndarray


@dataclasses.dataclass(frozen=True)
class Other:
    name: str


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "results.sqlite3")
    return request.getfixturevalue("postgres_url")


def _store(location: str, environment: str = "env-a", **kwargs: object) -> results.ResultStore:
    return results.ResultStore(location, environment, **kwargs)  # type: ignore[arg-type]


def test_a_result_is_computed_once_and_read_back_as_its_type(location: str) -> None:
    store = _store(location)
    calls: list[int] = []

    def compute() -> Measured:
        calls.append(1)
        return Measured("softmax", np.array([1.5, 2.5], dtype=np.float32))

    first = store.get_or_compute("jit.measurement", ("softmax", 100), compute, [Measured])
    again = _store(location).get_or_compute(
        "jit.measurement", ["softmax", 100], compute, [Measured]
    )
    assert first.computed_here and not again.computed_here
    assert calls == [1]
    assert isinstance(again.value, Measured) and again.value.name == "softmax"
    np.testing.assert_array_equal(again.value.samples, [1.5, 2.5])
    assert store.computations("jit.measurement", ("softmax", 100)) == 1


def test_another_environment_never_gets_the_result(location: str) -> None:
    """A timing from another device, host or JAX is a number this server did not measure."""
    _store(location, "gpu H200").get_or_compute("k", (1,), lambda: Other("gpu"), [Other])
    here = _store(location, "cpu").get_or_compute("k", (1,), lambda: Other("cpu"), [Other])
    assert here.computed_here and here.value == Other("cpu")


def test_a_stored_value_of_an_unnamed_type_is_not_shown_but_computed_anew(location: str) -> None:
    store = _store(location)
    store.get_or_compute("k", (1,), lambda: Other("stored"), [Other])
    assert store.get("k", (1,), [Measured]) is None  # Other is not among the allowed
    got = store.get_or_compute("k", (1,), lambda: Measured("new", np.zeros(1)), [Measured])
    assert got.computed_here and got.value.name == "new"


_DEEP = "[" * 200_000 + "]" * 200_000  # json.loads: RecursionError
_MANY = json.dumps({"__dataclass__": "Other", "name": [[[]]] * 150_000})  # 300,000 lists
_WIDE = json.dumps(
    {"__dataclass__": "Measured", "name": "x", "samples": {"__ndarray__": [10**400]}}
).replace('"samples": {', '"samples": {"dtype": "float64", "shape": [1], ')  # OverflowError


@pytest.mark.parametrize(
    ("value", "finished", "said"),
    [
        (None, time.time(), "larger than any"),
        ('{"__dataclass__": "Other", "name": "x"}', None, "time is no time"),
        ('{"__dataclass__": "Other", "name": "x"}', "yesterday", "time is no time"),  # SQLite
        (_DEEP, time.time(), "arrays and objects"),  # refused before parsing
        (_MANY, time.time(), "arrays and objects"),
        (_WIDE, time.time(), "OverflowError"),
        ("x" * 2_000_000, time.time(), "larger than any"),  # MAX_VALUE_BYTES: 1.5 MB here
        ("[1, 2", time.time(), "not JSON"),
    ],
    ids=["no value", "no time", "a time of text", "deep", "many", "wide", "large", "not JSON"],
)
def test_a_row_this_server_did_not_write_is_measured_anew_and_replaced(
    location: str, value: object, finished: object, said: str, monkeypatch, caplog
) -> None:
    """A row written around this server (another host's code, someone with the database) is
    read as untrusted bytes: each of these raised out of the page's call (an error page), or
    cost seconds and hundreds of MB to read, before."""
    if location.startswith("postgresql") and finished == "yesterday":
        pytest.skip("PostgreSQL keeps only numbers in a DOUBLE PRECISION column")
    monkeypatch.setattr(results, "MAX_VALUE_BYTES", 1_500_000)
    monkeypatch.setattr(results, "MAX_VALUE_CONTAINERS", 100_000)  # the "many" case's 300,000
    store = _store(location)
    store.get_or_compute("k", (1,), lambda: Other("stored"), [Other, Measured])
    with store._connection() as db:
        db.execute("UPDATE results SET value = ?, finished = ? WHERE kind = 'k'", (value, finished))
    assert store.get("k", (1,), [Other, Measured]) is None
    assert said in caplog.text, caplog.text
    got = store.get_or_compute("k", (1,), lambda: Other("new"), [Other, Measured])
    assert got.computed_here and got.value == Other("new")
    again = _store(location).get("k", (1,), [Other, Measured])  # another process reads it
    assert again is not None and again.value == Other("new")


def test_a_failed_computation_releases_its_lease(location: str) -> None:
    store = _store(location)
    with pytest.raises(RuntimeError, match="boom"):
        store.get_or_compute("k", (1,), lambda: (_ for _ in ()).throw(RuntimeError("boom")), [])
    got = store.get_or_compute("k", (1,), lambda: 42, [])
    assert got.computed_here and got.value == 42


def test_a_dead_owners_lease_expires_and_is_taken_over(location: str) -> None:
    dead = _store(location, lease_s=0.2)
    with dead._connection() as db:  # a process that took the lease and died
        assert dead._claim(db, results.result_key("k", (1,), "env-a"), "k", False)
    start = time.monotonic()
    got = _store(location, lease_s=0.2).get_or_compute("k", (1,), lambda: "mine", [])
    assert got.value == "mine" and time.monotonic() - start < 10


def test_measure_again_replaces_the_result_for_everyone(location: str) -> None:
    store = _store(location)
    store.get_or_compute("k", (1,), lambda: 1, [])
    assert store.get_or_compute("k", (1,), lambda: 2, [], force=True).value == 2
    assert _store(location).get("k", (1,), []).value == 2
    assert store.computations("k", (1,)) == 2


def test_a_value_too_large_to_keep_is_still_returned(location: str, monkeypatch) -> None:
    monkeypatch.setattr(results, "MAX_VALUE_BYTES", 100)
    store = _store(location)
    got = store.get_or_compute("k", (1,), lambda: "x" * 500, [])
    assert got.value == "x" * 500 and store.get("k", (1,), []) is None


def test_the_store_drops_the_least_recently_used_beyond_its_size(tmp_path: Path) -> None:
    store = _store(str(tmp_path / "r.sqlite3"), max_bytes=2_500)
    for i in range(6):
        store.get_or_compute("k", (i,), lambda i=i: "v" * 1000 + str(i), [])
    kept = [i for i in range(6) if store.get("k", (i,), []) is not None]
    assert kept == [4, 5]


def test_an_unusable_store_computes_without_it(tmp_path: Path) -> None:
    store = _store(str(tmp_path / "r.sqlite3"))
    (tmp_path / "r.sqlite3").unlink()
    (tmp_path / "r.sqlite3").mkdir()  # the file is gone and a folder is in its place
    store.close()
    assert store.get_or_compute("k", (1,), lambda: "still", []).value == "still"


def test_a_burst_of_processes_computes_once(location: str, tmp_path: Path) -> None:
    """Four server processes opening the same page at once: one measures, three wait for it."""
    log = tmp_path / "computed.log"
    with stores.spawning() as context, context.Manager() as manager:
        barrier = manager.Barrier(4)
        with context.Pool(4) as pool:
            got = pool.starmap(stores.burst_worker, [(location, str(log), barrier)] * 4)
    assert got == ['"the result"'] * 4
    assert log.read_text(encoding="utf-8").count("computed") == 1


def test_a_room_starting_at_once_opens_a_new_store(location: str) -> None:
    """Eight processes opening a new store at once. PostgreSQL's CREATE TABLE IF NOT EXISTS lets
    two of them race on its catalog (a unique violation) unless they take turns; SQLite refuses
    at once, as "database is locked", the switch of a new file to WAL while another connection
    holds a lock, unless the refusal is retried."""
    # SQLite's refusal comes one time in a few dozen, so eight processes open 12 new files at once.
    sqlite = not location.startswith("postgres")
    locations = [f"{location}.{i}" for i in range(12)] if sqlite else [location]
    with stores.spawning() as context, context.Manager() as manager:
        barrier = manager.Barrier(8)
        with context.Pool(8) as pool:
            got = pool.starmap(stores.open_store, [(locations, barrier)] * 8)
    assert got == ["opened"] * 8


def test_the_fingerprint_names_jax_the_device_and_the_host() -> None:
    import jax

    parts = json.loads(results.fingerprint())
    assert parts["jax"] == jax.__version__
    assert parts["platform"] == jax.devices()[0].platform
    assert parts["devices"] == str(len(jax.devices()))
    assert parts["host"]


def test_a_result_measured_on_fewer_cores_is_not_another_process_s(monkeypatch) -> None:
    """A room's processes on equal shares of the cores share results; a process on another
    number of cores (its timings are another machine's) does not."""
    import os

    mine = results.fingerprint()
    assert json.loads(mine)["cores"] == str(len(os.sched_getaffinity(0)))
    more = set(range(len(os.sched_getaffinity(0)) + 1))
    monkeypatch.setattr(results.measure_lock, "usable_cores", lambda: frozenset(more))
    assert results.fingerprint() != mine
    monkeypatch.undo()
    assert results.fingerprint() == mine


def test_a_result_sampled_at_another_scale_is_not_served(monkeypatch) -> None:
    """A server measuring at JAXPLAY_MEASURE_SCALE=0.05 (quick, noisy) stores nothing a server
    at the default scale would show as its own."""
    mine = results.fingerprint()
    monkeypatch.setattr(results.timing, "BUDGET_SCALE", results.timing.BUDGET_SCALE * 20)
    assert results.fingerprint() != mine


@results.stored("demo.square", Measured)
def _square(name: str, n: int) -> Measured:
    _square.calls += 1  # type: ignore[attr-defined]
    return Measured(name, np.arange(n, dtype=np.float32) ** 2)


def test_a_stored_function_runs_once_per_deployment(tmp_path: Path, monkeypatch) -> None:
    _square.calls = 0  # type: ignore[attr-defined]
    monkeypatch.delenv("JAXPLAY_RESULT_DB", raising=False)
    _square("a", 3)
    _square("a", 3)
    assert _square.calls == 2  # type: ignore[attr-defined]  # no store: plain calls
    monkeypatch.setenv("JAXPLAY_RESULT_DB", str(tmp_path / "r.sqlite3"))
    first, second = _square("a", 3), _square("a", 3)
    assert _square.calls == 3  # type: ignore[attr-defined]
    assert second.name == "a" and list(second.samples) == [0.0, 1.0, 4.0] == list(first.samples)


def test_arguments_named_with_an_underscore_are_not_part_of_the_key(
    tmp_path: Path, monkeypatch
) -> None:
    """As for ``st.cache_data``: a page passes its box's measurement turn as ``_turn``, which
    says who waits, not what is computed."""

    @results.stored("demo.turned", Measured)
    def square(name: str, n: int, _turn: object = None) -> Measured:
        square.calls += 1  # type: ignore[attr-defined]
        return Measured(name, np.arange(n, dtype=np.float32) ** 2)

    square.calls = 0  # type: ignore[attr-defined]
    monkeypatch.setenv("JAXPLAY_RESULT_DB", str(tmp_path / "r.sqlite3"))
    square("a", 3, _turn=object())
    assert list(square("a", 3, _turn=object()).samples) == [0.0, 1.0, 4.0]
    assert square.calls == 1  # type: ignore[attr-defined]


def test_a_pages_result_is_computed_once_for_every_server_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two server processes share the store: the second's empty Streamlit cache (cleared here,
    as a fresh process has it) is filled from the store, not by computing again."""
    import streamlit as st

    from jaxplay.hosting import catalog
    from tests.support.apptest import assert_clean, open_page

    location = tmp_path / "results.sqlite3"
    monkeypatch.setenv("JAXPLAY_RESULT_DB", str(location))
    spec = catalog.find("vmap")
    for _ in range(2):  # the first process, then the second
        st.cache_data.clear()
        at = open_page(spec, vmap_in_axes="(0, None)", vmap_out_axes="0")
        assert_clean(at)
    store = results.shared_store()
    assert store is not None
    kind = "vmap.outcome"
    inputs = [["(0, None)", "0", "X is (batch, D)", "W shared: (H, D)", "en"], []]
    assert store.computations(kind, inputs) == 1


def _stored_page_values() -> dict[str, tuple[Callable[[], Any], type]]:
    """What the pages keep in the shared store (``_ui.cached``), made small, by name."""
    from jaxplay import compose, devices, grad, jit, memory, tracing

    def preset_stages() -> tracing.SandboxStages:
        preset = tracing.PRESETS[0]
        return tracing.preset_stages(preset.key, preset.args)

    def pipeline() -> compose.PipelineResult:
        preset = next(iter(compose.STACK_PRESETS.values()))
        source, shape = compose.FUNCTIONS[preset.function], compose.INPUT_SHAPES[preset.shape]
        return compose.pipeline(preset.stack, source, shape)

    model, loop = next(iter(memory.MODELS)), next(iter(memory.LOOPS))
    workload = jit.Workload("softmax", 8, 4, "float32", jit.DEFAULT_FORMULA)
    return {
        "jit.sweep_point": (lambda: jit.sweep_point(workload), jit.SweepPoint),
        "memory.variant": (
            lambda: memory.analyse_variant(model, "none", loop, 16, 2, True),
            memory.RematResult,
        ),
        "memory.chain": (lambda: memory.analyse_chain(("sin", "cos"), 16), memory.ChainReport),
        "tracing.preset_stages": (preset_stages, tracing.SandboxStages),
        "grad.curves": (lambda: grad.curves("jnp.sin(x)", 2, -1.0, 1.0, 50), grad.DerivativeCurves),
        "grad.checks": (lambda: grad.checks("jnp.sin(x)", 0.5, 2), grad.PointChecks),
        "compose.pipeline": (pipeline, compose.PipelineResult),
        "compose.jacobian_point": (
            lambda: compose.jacobian_point("wide input", 4),
            compose.JacobianPoint,
        ),
        "compose.hvp_point": (
            lambda: compose.hvp_point(compose.HVP_METHODS[0], 8),
            compose.HvpPoint,
        ),
        "devices.layout": (
            lambda: devices.shard_layout((2, 2), ("x", "y"), (4, 4), ("x", None), platform="cpu"),
            devices.ShardLayout,
        ),
        "devices.collective": (
            lambda: devices.run_collective("psum", 2, platform="cpu"),
            devices.CollectiveRun,
        ),
        "devices.compiled": (
            lambda: devices.compiled_collectives(devices.XLA_EXAMPLES[0], 2, platform="cpu"),
            devices.CompiledCollectives,
        ),
    }


@pytest.mark.parametrize("name", list(_stored_page_values()))
def test_what_a_page_keeps_in_the_store_reads_back_as_it_was(name: str) -> None:
    """Another process shows what it reads back: nothing may be lost on the way (a dict's int
    keys turned into strings, a tuple into a list, a dtype changed)."""
    make, returns = _stored_page_values()[name]
    value = make()
    written = codec.encode(value)
    read = codec.decode(json.loads(json.dumps(written)), codec.dataclass_types(returns))
    assert type(read) is type(value)
    assert json.dumps(codec.encode(read), sort_keys=True) == json.dumps(written, sort_keys=True)


def test_the_memory_pages_chain_is_measured_once_for_every_server_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As for vmap: the fusion chain's compile and timing, made by the first process, is read
    by the second (an empty Streamlit cache, as a fresh process has) without measuring again."""
    import streamlit as st

    from jaxplay import memory
    from jaxplay.hosting import catalog
    from tests.support.apptest import assert_clean, open_page

    monkeypatch.setenv("JAXPLAY_RESULT_DB", str(tmp_path / "results.sqlite3"))
    chain = list(next(iter(memory.CHAIN_PRESETS.values())))
    for _ in range(2):
        st.cache_data.clear()
        at = open_page(catalog.find("memory"), memory_panel="Fusion", memory_chain_size=64)
        assert_clean(at)
        assert any("jit speedup" in m.label for m in at.metric)
    store = results.shared_store()
    assert store is not None
    assert store.computations("memory.chain", [[chain, 64], []]) == 1


def test_the_jit_measurement_is_made_once_for_every_server_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The jit page's main measurement (seconds of compile and timing): the second process,
    with nothing kept of its own, reads the first one's instead of measuring again."""
    from jaxplay import jit

    monkeypatch.setenv("JAXPLAY_RESULT_DB", str(tmp_path / "results.sqlite3"))
    workload = jit.Workload("chain", 9, 3, "float32", jit.DEFAULT_FORMULA)
    first = jit.measure_shared(workload).value
    _measurement.MEASUREMENTS.clear()  # the second process has kept nothing
    second = jit.measure_shared(workload).value
    store = results.shared_store()
    assert store is not None
    assert store.computations("jit.measurement", list(jit.key_of(workload))) == 1
    assert second.profile.steady.samples == first.profile.steady.samples
    assert second.program == first.program and second.device == first.device


def test_the_jit_race_is_made_once_for_every_server_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eager against jit and the article's stopwatch, measured when their tab opens, are kept
    for every process like the measurement: the second process reads the first one's."""
    from jaxplay import jit

    monkeypatch.setenv("JAXPLAY_RESULT_DB", str(tmp_path / "results.sqlite3"))
    workload = jit.Workload("chain", 11, 3, "float32", jit.DEFAULT_FORMULA)
    measured = jit.measure_shared(workload).value
    first = jit.race_shared(measured).value
    _measurement.RACES.clear()  # the second process has kept nothing
    second = jit.race_shared(measured).value
    store = results.shared_store()
    assert store is not None
    assert store.computations("jit.race", list(jit.key_of(workload))) == 1
    assert second.comparison.eager.samples == first.comparison.eager.samples
    assert second.article == first.article and second.device == first.device


def test_sqlites_at_once_refusal_is_retried_and_its_busy_timeout_is_not(monkeypatch) -> None:
    """A refusal at once (where waiting could deadlock) is retried; one after waiting out the
    busy timeout is not, so a held database costs a visitor one timeout, not several."""
    calls: list[int] = []

    def refused_twice() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise sqlite3.OperationalError("database is locked")
        return "done"

    assert results._retry_locked(refused_twice) == "done" and len(calls) == 3
    monkeypatch.setattr(results, "_AT_ONCE_S", 0.05)
    waited: list[int] = []

    def timed_out() -> str:
        waited.append(1)
        time.sleep(0.06)  # as SQLite's busy timeout, scaled down
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError):
        results._retry_locked(timed_out)
    assert len(waited) == 1
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        results._retry_locked(
            lambda: (_ for _ in ()).throw(sqlite3.OperationalError("no such table"))
        )


def test_a_store_that_failed_is_left_alone_for_a_while(tmp_path: Path, monkeypatch) -> None:
    """A held or broken database would cost every computation its timeout: after a failure the
    store is not asked again until RETRY_AFTER_S has passed; what is computed meanwhile is
    still returned."""
    store = _store(str(tmp_path / "r.sqlite3"))
    asked: list[int] = []

    def broken(*args: object) -> object:
        asked.append(1)
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(store, "_read_or_claim", broken)
    assert store.get_or_compute("k", (1,), lambda: "one", []).value == "one"
    assert store.get_or_compute("k", (2,), lambda: "two", []).value == "two"
    assert asked == [1]  # the second did not wait on the broken store
    store._down_until = 0.0  # RETRY_AFTER_S later
    assert store.get_or_compute("k", (3,), lambda: "three", []).value == "three"
    assert asked == [1, 1]


def test_a_store_that_cannot_be_opened_is_not_opened_for_every_computation(
    tmp_path: Path, monkeypatch
) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    monkeypatch.setenv("JAXPLAY_RESULT_DB", str(tmp_path / "a-file" / "results.sqlite3"))
    opened: list[int] = []
    real = results.ResultStore

    def counted(*args: object, **kwargs: object) -> results.ResultStore:
        opened.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(results, "ResultStore", counted)
    monkeypatch.setattr(results, "_failed", {})
    assert results.configured_store() is None and results.configured_store() is None
    assert opened == [1]
    monkeypatch.setattr(results, "_failed", {})  # RETRY_AFTER_S later
    assert results.configured_store() is None and opened == [1, 1]


def test_a_result_made_by_other_code_is_not_served(tmp_path) -> None:
    """A store kept across a deployment served the figures of the code before a fix (a trace
    that counted two programs as one): jaxplay's source is part of the fingerprint."""
    assert json.loads(results.fingerprint())["code"] == results.code_version()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    before = results.code_version.__wrapped__(tmp_path)
    assert results.code_version.__wrapped__(tmp_path) == before  # the same code, the same hash
    (tmp_path / "pkg" / "a.py").write_text("x = 2\n")
    assert results.code_version.__wrapped__(tmp_path) != before

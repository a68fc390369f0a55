"""The runner's contract: results, errors, inspections, the protocol, settings and the queue."""

from __future__ import annotations

import dataclasses
import os
import threading
import time

import pytest

from jaxplay import code_lab
from jaxplay.core import codec, timing
from jaxplay.hosting import environment
from jaxplay.hosting.ratelimit import RateLimiter
from jaxplay.sandbox import (
    ArgSpec,
    InspectionFailed,
    InspectRequest,
    JaxprText,
    Limits,
    Refused,
    RunnerConfig,
    RunResult,
    WorkerPool,
    defined_functions,
    function_arities,
    parse_arg_specs,
    worker_environment,
)
from jaxplay.sandbox import _inspectors as inspectors
from jaxplay.sandbox import _protocol as protocol
from jaxplay.sandbox._results import decode_arrays, decode_error


@pytest.fixture(scope="module", params=["auto", "off"], ids=["forkserver", "exec"])
def pool(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """A pool whose workers are forked by the fork server (where the host allows it), and one
    whose workers are fresh interpreters: every run-based test runs against both."""
    config = RunnerConfig(
        forkserver=request.param, spares=2, max_concurrent=2, limits=Limits(timeout_s=20)
    )
    p = WorkerPool(config)
    p.warm()
    yield p
    p.shutdown()


# -- pure parts ---------------------------------------------------------------------------


def test_frames_round_trip_and_junk_is_rejected() -> None:
    reader = protocol.FrameReader()
    data = protocol.encode({"type": "result", "x": [1, 2]}) + protocol.encode({"type": "b"})
    assert reader.feed(data[:5]) == []
    assert [m["type"] for m in reader.feed(data[5:])] == ["result", "b"]
    with pytest.raises(protocol.ProtocolError):
        protocol.FrameReader().feed(b"zzzzzzzz{}")
    with pytest.raises(protocol.ProtocolError):
        protocol.FrameReader().feed(b"%08x" % (protocol.MAX_MESSAGE_BYTES + 1))
    with pytest.raises(protocol.ProtocolError):
        protocol.FrameReader().feed(protocol.encode({"a": 1})[:8] + b"[1]" + b" " * 4)


def test_a_worker_cannot_claim_the_servers_verdicts() -> None:
    """Only the server decides timeouts and output limits; odd fields are dropped."""
    err = decode_error({"kind": "timeout", "message": "fake", "line": "3"})
    assert err is not None and err.kind == "crashed" and err.line is None
    assert decode_error({"kind": "nonsense"}).kind == "crashed"  # type: ignore[union-attr]
    arrays = decode_arrays([{"name": "x", "shape": [2], "dtype": "f32"}, {"shape": "bad"}, 5])
    assert [a.name for a in arrays] == ["x"]
    # A run's array of 40 axes is shown with all 40 (it was cut to 32, silently); no array has
    # more than NumPy's 64, so a longer shape is a forged frame's and dropped.
    deep = [{"name": "deep", "shape": [1] * 40}, {"name": "forged", "shape": [1] * 65}]
    assert [(a.name, len(a.shape)) for a in decode_arrays(deep)] == [("deep", 40)]


def test_worker_environment_is_a_whitelist_with_the_apps_device_count() -> None:
    os.environ["JAXPLAY_UNIT_SECRET"] = "hunter2"
    try:
        env = worker_environment()
    finally:
        del os.environ["JAXPLAY_UNIT_SECRET"]
    assert "JAXPLAY_UNIT_SECRET" not in env and "hunter2" not in str(env)
    assert env["MALLOC_ARENA_MAX"] == "2"
    count = environment.requested_cpu_devices()
    assert f"--xla_force_host_platform_device_count={count}" in env["XLA_FLAGS"]
    assert set(env) <= {
        "PATH", "LANG", "LC_ALL", "MALLOC_ARENA_MAX", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE",
        "PYTHONNOUSERSITE", "JAXPLAY_CPU_DEVICES", "XLA_FLAGS", "JAX_NUM_CPU_DEVICES",
        "XLA_PYTHON_CLIENT_PREALLOCATE", "JAX_PLATFORMS", "CUDA_VISIBLE_DEVICES", "JAX_ENABLE_X64",
        "XLA_PYTHON_CLIENT_MEM_FRACTION",
    }  # fmt: skip


def test_config_from_environment() -> None:
    config = RunnerConfig.from_env(
        {"JAXPLAY_SANDBOX": "process", "JAXPLAY_PUBLIC": "1", "JAXPLAY_RUN_TIMEOUT_S": "4",
         "JAXPLAY_RUNNER_SPARES": "oops"}
    )  # fmt: skip
    assert config.sandbox == "process" and config.public and config.limits.timeout_s == 4
    assert config.spares == 2
    assert RunnerConfig.from_env({"JAXPLAY_SANDBOX": "docker"}).sandbox == "auto"


def test_public_server_without_bwrap_refuses() -> None:
    pool = WorkerPool(RunnerConfig(sandbox="process", public=True, spares=1))
    try:
        result = pool.run("print(1)")
        assert result.error is not None and result.error.kind == "refused"
        assert "bubblewrap" in result.error.message
        assert pool.status()["spares_ready"] == 0 and pool.status()["starting"] == 0
    finally:
        pool.shutdown()


def test_functions_and_argument_shapes_are_read_without_running() -> None:
    assert defined_functions("def f(x): pass\ng = lambda x: x\nh = jit(f)\n1 +") == []
    assert defined_functions("def f(x): pass\ng = lambda x: x\nh = jit(f)") == ["f", "g", "h"]
    assert parse_arg_specs("(3,), 4, ()", "int32") == (
        ArgSpec((3,), "int32"), ArgSpec((4,), "int32"), ArgSpec((), "int32"),
    )  # fmt: skip
    with pytest.raises(ValueError, match="not a shape"):
        parse_arg_specs("(3, -1)")
    with pytest.raises(ValueError, match="Could not read"):
        parse_arg_specs("__import__('os')")
    for unhashable in ("{[]}", "{[]: 1}", "(3,), {(1,), [2]}"):  # literal_eval's TypeError
        with pytest.raises(ValueError, match="Could not read"):
            parse_arg_specs(unhashable)
    # Refused as typed, not at Run (the worker's "example argument of … elements exceeds").
    for huge in ("(100000, 100000)", "(2**40,)".replace("2**40", str(2**40)), str((1,) * 65)):
        with pytest.raises(ValueError, match="too large for an example argument"):
            parse_arg_specs(huge)
    assert parse_arg_specs("(1000, 10000)") == (ArgSpec((1000, 10000)),)


def test_function_arities() -> None:
    source = (
        "import jax\n\ndef f(x, y, z=1):\n    return x\n\nasync def g():\n    pass\n\n"
        "h = lambda a, b, c: a\nfast = jax.jit(f)\n"
    )
    assert function_arities(source) == (("f", 2), ("g", 0), ("h", 3), ("fast", 2))
    # Values are no functions: the Function box listed `x` and `key`.
    values = (
        "import jax\nimport jax.numpy as jnp\n\ndef f(x, y):\n    return x\n\n"
        "x = jnp.ones(3)\nkey = jax.random.key(0)\ny = jnp.sin(x)\n"
        "df = jax.jit(jax.grad(f))\nsq = jax.vmap(lambda v: v * v)\n"
    )
    assert function_arities(values) == (("f", 2), ("df", 2), ("sq", 1))
    # Only a transform keeps a function's arguments: the default example's
    # `cache_size = getattr(dynamic_control_flow, "_cache_size", None)` was offered as a
    # 2-argument function, and staging it crashed the worker. partial gives the first ones.
    calls = (
        "from functools import partial\nimport jax\n\ndef f(a, b, c):\n    return a\n\n"
        "n = getattr(f, '_cache_size', None)\np = partial(f, 1)\nm = staticmethod(f)\n"
        "k = jax.jit(f, static_argnums=0)\n"
    )
    assert function_arities(calls) == (("f", 3), ("p", 2), ("k", 3))
    with pytest.raises(SyntaxError):
        function_arities("def f(:\n")


def test_bad_inspect_requests_are_refused_before_running(pool: WorkerPool) -> None:
    for request, words in [
        (InspectRequest("f; import os", (), ("jaxpr",)), "not a Python name"),
        (InspectRequest("f", (ArgSpec((10**5, 10**5)),), ("jaxpr",)), "limit"),
        (InspectRequest("f", (ArgSpec((3,), "object"),), ("jaxpr",)), "dtype"),
        (InspectRequest("f", (), ("rm_rf",)), "Unknown inspector"),
    ]:
        result = pool.run("def f(x): return x", inspect=request)
        assert result.error is not None and result.error.kind == "refused"
        assert words in result.error.message


def test_oversized_source_is_refused(pool: WorkerPool) -> None:
    result = pool.run("x = 1\n" * 20_000)
    assert result.error is not None and result.error.kind == "refused"


# -- runs ---------------------------------------------------------------------------------


def test_a_run_waits_for_the_arrays_its_code_left() -> None:
    """JAX returns from a call before its work is done: a run timed at the end of the code
    said "Ran in 895 ms" for work that took 2 s more. The worker waits for every array the code
    left (named, in containers, or its last value) before it stops the clock; a leaked tracer
    is no array to wait for."""
    import jax
    import jax.numpy as jnp

    from jaxplay.sandbox import _arrays

    x = jnp.ones((1500, 1500))
    y = x
    for _ in range(8):
        y = y @ x / 1500.0
    leaked = jax.jit(lambda v: v).trace(x).jaxpr  # not an array: skipped
    namespace = {"params": {"w": [y]}, "leaked": leaked, "module": jnp}
    assert _arrays.wait_for_arrays(x + 1, namespace) is None
    assert y.is_ready()
    # The code's odd objects are skipped, not the run's error (a mock posing as an array made
    # the worker exit with status 70 after code that ran fine), and a huge list is not walked
    # to its end (ten million numbers took 1 s of the run's time).
    from unittest import mock

    class Lies:
        @property
        def __class__(self):  # type: ignore[override]
            raise RuntimeError("no class")

    odd = {"m": mock.MagicMock(spec=jax.Array), "l": [Lies()], "t": Lies(), "n": [0] * 10**6}
    odd["n"].append(odd["n"])  # and a list that holds itself
    assert _arrays.wait_for_arrays(None, odd) is None


def test_run_reports_output_value_and_arrays(pool: WorkerPool) -> None:
    source = (
        "import jax, jax.numpy as jnp\n"
        "x = jnp.arange(6.0).reshape(2, 3)\n"
        "k = jax.random.key(0)\n"
        "n = jnp.log(jnp.arange(-1.0, 2.0))\n"
        "z = jnp.array([1j, 2 + 0j])\n"
        "print('devices', len(jax.devices()))\n"
        "x.sum()"
    )
    result = pool.run(source)
    assert result.ok, result.error
    assert result.stdout == f"devices {environment.requested_cpu_devices()}\n"
    assert result.value_repr == "Array(15., dtype=float32)"
    x = next(a for a in result.arrays if a.name == "x")
    assert (x.shape, x.dtype, x.min, x.max, x.mean) == ((2, 3), "float32", 0.0, 5.0, 2.5)
    assert x.preview == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    key = next(a for a in result.arrays if a.name == "k")
    assert key.preview is None and key.min is None  # typed keys have no numeric preview
    # A NaN reaches the table as NaN (it was shown as a missing value, like a key's), and
    # complex values by their text.
    rows = {r["name"]: r for r in code_lab.array_table(result.arrays)}
    assert (rows["n"]["min"], rows["n"]["mean"], rows["k"]["min"]) == ("NaN", "NaN", "—")
    assert rows["z"]["first values"] == "1j, (2+0j)" and rows["z"]["min"] == "—"
    # Why, per kind of row: the key is one element, neither complex nor large.
    note = code_lab.array_table_note(result.arrays) or ""
    assert "typed PRNG keys" in note and "complex values" in note and "elements" not in note
    assert 0 < result.duration_s < 20


def test_syntax_error_points_at_its_line(pool: WorkerPool) -> None:
    result = pool.run("x = 1\ny = (\n")
    assert result.error is not None and result.error.kind == "syntax"
    assert result.error.line == 2 and result.error.exc_type == "SyntaxError"


def test_exception_traceback_is_trimmed_to_user_frames(pool: WorkerPool) -> None:
    source = "import jax\n\ndef f(x):\n    return x.shape[5]\n\njax.jit(f)(jax.numpy.ones(3))"
    result = pool.run(source)
    err = result.error
    assert err is not None and err.kind == "exception" and err.exc_type == "IndexError"
    assert err.line == 4
    assert 'File "<code-lab>", line 6' in err.traceback
    assert "site-packages" not in err.traceback and "worker.py" not in err.traceback
    # The traceback's source line is the line Python counted, past a U+2028 in a string.
    odd = pool.run('x = "a\u2028b"\ny = 1\nraise ValueError("boom")').error
    assert odd is not None and odd.line == 3
    assert 'line 3, in <module>\n    raise ValueError("boom")' in odd.traceback, odd.traceback


def test_key_reuse_error_reports_its_class_name(pool: WorkerPool) -> None:
    source = (
        "import jax\njax.config.update('jax_debug_key_reuse', True)\n"
        "k = jax.random.key(0)\njax.random.normal(k)\njax.random.normal(k)"
    )
    result = pool.run(source)
    assert result.error is not None and result.error.exc_type == "KeyReuseError"
    assert result.error.line == 5


def test_user_output_on_raw_fds_and_closed_streams_keeps_the_result(pool: WorkerPool) -> None:
    source = (
        "import os, sys\nprint('a')\nos.write(1, b'\\xff\\xfe binary\\n')\n"
        "os.write(2, b'to stderr\\n')\nsys.stdout.close()\nos.close(1)\nos.close(2)\n41 + 1"
    )
    result = pool.run(source)
    assert result.ok, result.error
    assert result.value_repr == "42"
    assert result.stdout.startswith("a\n") and "binary" in result.stdout
    assert result.stderr == "to stderr\n"


def test_an_answered_run_has_all_it_printed_and_its_processes_end_after(pool: WorkerPool) -> None:
    """A run returns once its worker answered, before its processes are gone (they are killed,
    waited for and their cgroup removed in the background): all it printed before answering is
    in the result, on both streams, and the worker ends with what it started."""
    retired: list = []
    original = pool._retire

    def spy(worker, background: bool = False) -> None:  # type: ignore[no-untyped-def]
        retired.append((worker, background))
        original(worker, background=background)

    pool._retire = spy  # type: ignore[method-assign]
    try:
        source = (
            "import subprocess, sys\nsubprocess.Popen(['sleep', '600'])\n"
            "print('o' * 300_000)\nsys.stderr.write('e' * 200_000)\n'done'"
        )
        result = pool.run(source)
    finally:
        del pool._retire
    assert result.ok, result.error
    assert result.stdout == "o" * 300_000 + "\n" and result.stderr == "e" * 200_000
    worker, background = retired[0]
    assert background  # retired in the background (the thread may come back through the spy)
    assert all(w is worker for w, _ in retired)
    deadline = time.monotonic() + 30
    while not worker.cleaned and time.monotonic() < deadline:
        time.sleep(0.05)
    assert worker.cleaned and worker.launch.process.poll() is not None
    if worker.launch.group is not None:
        assert worker.launch.group.pids_list() == []  # the sleep went with it


#: User code that finds the worker's result pipe (its number is in the worker's frame; an exec'd
#: worker also has it on its command line, a forked one has the zygote's).
RESULT_FD = (
    "import json, os, sys\n"
    "caller = sys._getframe()\n"
    "while caller.f_code.co_name != 'main':\n"
    "    caller = caller.f_back\n"
    "fd = caller.f_locals['opts'].result_fd\n"
    "def frame(message):\n"
    "    body = json.dumps(message).encode()\n"
    "    return f'{len(body):08x}'.encode() + body\n"
)


def test_frames_that_are_not_the_result_end_the_run_at_once(pool: WorkerPool) -> None:
    """Junk frames in a loop cost the server 9 CPU-s when it parsed them until the deadline."""
    source = RESULT_FD + "while True:\n    os.write(fd, frame({'type': 'junk', 'x': 'y' * 1000}))"
    started = time.monotonic()
    result = pool.run(source, timeout_s=15)
    assert result.error is not None and result.error.kind == "crashed", result.error
    assert "not its result" in result.error.message
    assert time.monotonic() - started < 10  # ended by the first junk frame, not the deadline


def test_the_result_channel_has_a_byte_cap(pool: WorkerPool) -> None:
    """An 8 MB frame (under the protocol's frame cap) is more than a run may send back."""
    source = RESULT_FD + "os.write(fd, frame({'type': 'result', 'pad': 'z' * (7 * 2**20)}))"
    result = pool.run(source, timeout_s=15)
    assert result.error is not None and result.error.kind == "output_limit", result.error
    assert "results" in result.error.message


def test_a_forged_result_carries_only_what_was_asked(pool: WorkerPool) -> None:
    jaxpr = codec.encode(JaxprText("x"))
    forged = {"type": "result", "value_repr": "'forged'", "inspections": {"jaxpr": jaxpr, "e": 1}}
    source = RESULT_FD + f"os.write(fd, frame({forged!r}))\nos._exit(0)"
    result = pool.run(source)
    assert result.value_repr == "'forged'"  # the first result frame is the run's, by protocol
    assert result.inspections == {}
    asked = pool.run(source, inspect=InspectRequest("f", (), ("jaxpr",)))
    assert asked.inspections == {"jaxpr": JaxprText("x")}


def test_an_inspection_of_another_type_is_refused() -> None:
    """Decoded by type: a plain string, another inspector's result type, a class the server
    does not know or a field of the wrong type is an InspectionFailed, never passed on."""
    sampled = timing.Timing(samples=(1e-3,), number=1, warmup=0)
    comparison = codec.encode(inspectors.JitTiming(timing.JitComparison(sampled, sampled), "cpu"))
    for forged in (
        "x",
        comparison,
        {"__dataclass__": "Evil", "text": "x"},
        {"__dataclass__": "JaxprText", "text": ["not", "a", "string"]},
    ):
        got = inspectors.decode({"jaxpr": forged}, ("jaxpr",))["jaxpr"]
        assert isinstance(got, InspectionFailed) and "malformed" in got.error, forged


def test_a_well_typed_inspection_with_impossible_numbers_is_refused() -> None:
    """A number too large for its array's dtype raised OverflowError through the run (an error
    page); a jit sample of 0 s passed as a timing, then divided by zero on every rerun."""

    def compare(eager: object, jitted: object) -> dict[str, object]:
        def timed(samples: object) -> dict[str, object]:
            return {
                "__dataclass__": "Timing",
                "samples": samples,
                "number": 1,
                "warmup": 0,
                "cut": False,
            }

        comparison = {
            "__dataclass__": "JitComparison",
            "eager": timed(eager),
            "jitted": timed(jitted),
        }
        return {
            "__dataclass__": "JitTiming",
            "comparison": comparison,
            "device": "cpu",
            "undecorated": False,
        }

    huge = {"__ndarray__": [int("9" * 400)], "dtype": "float64", "shape": [1]}
    wide = {"__ndarray__": [2**70], "dtype": "int64", "shape": [1]}
    ones = {"__tuple__": [1.0, 1.0, 1.0]}
    fine = inspectors.decode({"compare_jit": compare(ones, ones)}, ("compare_jit",))
    assert isinstance(fine["compare_jit"], inspectors.JitTiming)  # the same, with real numbers
    for forged in (
        compare(ones, {"__tuple__": [0.0, 1.0, 1.0]}),
        compare(ones, {"__tuple__": [-1.0, 1.0, 1.0]}),
        compare(huge, ones),
        compare(wide, ones),
    ):
        got = inspectors.decode({"compare_jit": forged}, ("compare_jit",))["compare_jit"]
        assert isinstance(got, InspectionFailed) and "malformed" in got.error, forged


def test_inspections_run_in_the_sandbox(pool: WorkerPool) -> None:
    source = "import jax.numpy as jnp\n\ndef f(x, y):\n    return jnp.sin(x) * y\n"
    request = InspectRequest("f", (ArgSpec((3,)), ArgSpec(())), ("jaxpr", "compare_jit"))
    result = pool.run(source, inspect=request)
    assert result.ok, result.error
    jaxpr = result.inspections["jaxpr"]
    assert isinstance(jaxpr, JaxprText) and "sin" in jaxpr.text and "f32[3]" in jaxpr.text
    timed = result.inspections["compare_jit"]
    assert isinstance(timed, inspectors.JitTiming) and timed.device
    assert timed.comparison.eager.median > 0 and timed.comparison.jitted.median > 0
    assert not timed.undecorated
    jitted = pool.run(
        source + "\nimport jax\n\ng = jax.jit(f)\n",
        inspect=InspectRequest("g", (ArgSpec((3,)), ArgSpec(())), ("compare_jit",)),
    )
    assert jitted.ok, jitted.error
    assert jitted.inspections["compare_jit"].undecorated  # its eager side: f, not the jitted g
    missing = pool.run("x = 1", inspect=InspectRequest("g", (), ("jaxpr",)))
    assert isinstance(missing.inspections["jaxpr"], InspectionFailed)
    assert "no function named 'g'" in missing.inspections["jaxpr"].error


def test_inspector_registry_names_resolve_to_functions() -> None:
    import importlib

    for name, inspector in inspectors.INSPECTORS.items():
        module, _, attr = inspector.function.partition(":")
        assert callable(getattr(importlib.import_module(module), attr)), name
        returns = inspectors.resolve(inspector.returns)
        assert dataclasses.is_dataclass(returns) and returns.__dataclass_params__.frozen, name


def test_a_busy_pool_queues_and_tells_the_position() -> None:
    """With one slot, a second visitor waits for the first and is told it is number 1."""
    pool = WorkerPool(RunnerConfig(spares=2, max_concurrent=1, limits=Limits(timeout_s=20)))
    try:
        positions: list[int] = []
        results: dict[str, RunResult] = {}

        def visit(name: str, source: str) -> None:
            results[name] = pool.run(source, visitor=name, on_queue=positions.append)

        first = threading.Thread(target=visit, args=("alice", "import time\ntime.sleep(1.5)"))
        first.start()
        while pool.status()["running"] == 0:
            time.sleep(0.01)
        visit("bob", "print('bob')")
        first.join()
        assert positions == [1]
        assert results["alice"].ok and results["bob"].ok
        assert results["bob"].queued_s > 0
    finally:
        pool.shutdown()


def test_a_full_queue_refuses_instead_of_growing() -> None:
    """A scripted client with a new visitor id per run cannot queue without bound."""
    config = RunnerConfig(spares=1, max_concurrent=1, max_queued=2, limits=Limits(timeout_s=20))
    pool = WorkerPool(config)
    try:
        with pool.reserve("holder"):  # the one slot is taken
            waiting = [
                threading.Thread(target=pool.run, args=("x = 1",), kwargs={"visitor": f"v{i}"})
                for i in range(2)
            ]
            for t in waiting:
                t.start()
            while pool.status()["queued"] < 2:
                time.sleep(0.01)
            refused = pool.run("x = 1", visitor="v-late")
            assert refused.error is not None and refused.error.kind == "refused"
            assert "busy" in refused.error.message and "2 runs" in refused.error.message
            with pytest.raises(Refused, match="busy"), pool.reserve("another"):
                pass
        for t in waiting:
            t.join()
    finally:
        pool.shutdown()


def test_a_reserved_place_counts_as_a_run() -> None:
    """The multi-process demo holds a run's place: others queue behind it, its visitor too."""
    pool = WorkerPool(RunnerConfig(spares=1, max_concurrent=1, limits=Limits(timeout_s=20)))
    pool.run_limiter = RateLimiter(1, 60.0)
    try:
        positions: list[int] = []
        with pool.reserve("dana"):
            other = threading.Thread(
                target=pool.run,
                args=("x = 1",),
                kwargs={"visitor": "eve", "on_queue": positions.append},
            )
            other.start()
            while not positions:
                time.sleep(0.01)
        other.join()
        assert positions[0] == 1
        # dana used her one run of the minute
        with pytest.raises(Refused, match="a minute per visitor"), pool.reserve("dana"):
            pass
    finally:
        pool.shutdown()


def test_one_visitor_has_one_run_in_flight() -> None:
    """Two runs of the same visitor never overlap, even with free slots."""
    pool = WorkerPool(RunnerConfig(spares=2, max_concurrent=2, limits=Limits(timeout_s=20)))
    try:
        spans: list[tuple[float, float]] = []
        source = "import time\nstart = time.time()\ntime.sleep(0.5)\nprint(start, time.time())"

        def run() -> None:
            result = pool.run(source, visitor="carol")
            start, end = map(float, result.stdout.split())
            spans.append((start, end))

        threads = [threading.Thread(target=run) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        (s1, e1), (s2, e2) = sorted(spans)
        assert s2 >= e1  # the second started after the first ended
    finally:
        pool.shutdown()


def test_warm_up_does_not_block_and_a_dead_spare_is_replaced() -> None:
    pool = WorkerPool(RunnerConfig(spares=1, max_concurrent=1, limits=Limits(timeout_s=20)))
    try:
        pool.warm()
        assert pool.status()["starting"] == 1  # warming happens in the background
        deadline = time.monotonic() + 120
        while pool.status()["spares_ready"] < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        spare = pool._spares[0]
        os.killpg(spare.launch.process.pid, 9)  # a spare dies while idle
        spare.launch.process.wait(timeout=10)
        result = pool.run("print('served')")
        assert result.ok and result.stdout == "served\n"
    finally:
        pool.shutdown()


def test_workers_end_with_the_interpreter() -> None:
    """A server that exits (normally) leaves no worker behind."""
    import subprocess
    import sys

    script = (
        "import time\nfrom jaxplay.hosting import environment\nenvironment.configure()\n"
        "from jaxplay import sandbox\npool = sandbox.get_pool()\n"
        "deadline = time.monotonic() + 120\n"
        "while pool.status()['spares_ready'] < 1 and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        "print(' '.join(str(w.launch.process.pid) for w in pool._spares))\n"
    )
    env = {**os.environ, "JAXPLAY_RUNNER_SPARES": "1", "PYTHONPATH": str(os.getcwd())}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=180
    )
    pids = [int(p) for p in out.stdout.split()]
    assert pids, out.stderr
    deadline = time.monotonic() + 10
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in pids if os.path.exists(f"/proc/{p}") and not _zombie(p)]
        time.sleep(0.1)
    assert not alive


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize("mode", ["process"])
def test_a_busy_worker_dies_with_the_server(mode: str) -> None:
    """The server is killed mid-run (no atexit, no shutdown): its sleeping worker dies too."""
    import subprocess
    import sys

    script = (
        "import os, threading, time\n"
        "from jaxplay.hosting import environment\nenvironment.configure()\n"
        "from jaxplay.sandbox import RunnerConfig, WorkerPool\n"
        f"pool = WorkerPool(RunnerConfig(sandbox={mode!r}, spares=1))\n"
        "threading.Thread(target=pool.run, args=('import time\\ntime.sleep(1000)',),"
        " daemon=True).start()\n"
        "while not any(w.info for w in list(pool._all)):\n    time.sleep(0.05)\n"
        "time.sleep(1.0)\nprint(list(pool._all)[0].launch.process.pid, flush=True)\nos._exit(0)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(os.getcwd())}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=180
    )
    pid = int(out.stdout.split()[0])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not _zombie(pid):
        time.sleep(0.1)
    assert _zombie(pid), "the worker outlived the server"


def test_a_task_calls_one_of_jaxplays_functions_in_the_sandbox(pool: WorkerPool) -> None:
    from jaxplay.sandbox import Task

    done = pool.run("", task=Task("jaxplay.core.budget:format_bytes", {"n": 3 * 2**20}))
    assert done.ok and done.task == "3 MiB", done.error
    failed = pool.run("", task=Task("jaxplay.core.expr:parse", {"source": "9**9**9 + x"}))
    assert failed.error is not None and failed.error.kind == "exception"
    assert failed.error.exc_type == "ExprError" and "too large" in failed.error.message
    not_json = pool.run("", task=Task("jaxplay.core.expr:parse", {"source": "x"}))
    assert not_json.error is not None and "cannot send" in not_json.error.message


@pytest.mark.parametrize(
    "target", ["os:system", "jaxplay.core.expr", "jaxplay.core.expr:parse; import os", "x:y"]
)
def test_a_task_must_name_a_jaxplay_function(pool: WorkerPool, target: str) -> None:
    from jaxplay.sandbox import Task

    result = pool.run("", task=Task(target, {}))
    assert result.error is not None and result.error.kind == "refused"


def test_a_task_with_progress_sends_its_stages_before_its_result(pool: WorkerPool) -> None:
    """Stage frames reach the caller's ``on_stage`` in this thread, in order; a pool that did
    not ask for them treats one as a corrupt result channel."""
    import dataclasses
    import json
    import threading

    from jaxplay import jit
    from jaxplay.core import codec, roofline
    from jaxplay.sandbox import Task

    arguments = {
        "workload": jit.Workload("softmax", 4, 3),
        "budget_s": 5.0,
        "reference": roofline.machine_reference(),
    }
    kwargs = {name: json.dumps(codec.encode(value)) for name, value in arguments.items()}
    task = Task("jaxplay.jit._measurement:measure", kwargs, progress=True, encoded=True)
    limits = dataclasses.replace(pool.config.limits, timeout_s=60.0)
    seen: list[tuple[str, float | None, bool]] = []
    caller = threading.get_ident()
    done = pool.run(
        "",
        task=task,
        limits=limits,
        trusted=True,
        on_stage=lambda s, f: seen.append((s, f, threading.get_ident() == caller)),
    )
    assert done.ok, done.error
    # Every stage of the measurement, in order, but the roofs: the worker is given them.
    assert [s for s, _, _ in seen] == list(jit._measurement.STAGES[:-1])
    assert seen[0][0].startswith("checking what one call costs")
    assert all(here for _, _, here in seen)
    unasked = pool.run("", task=task, limits=limits, trusted=True)
    assert unasked.error is not None and unasked.error.kind == "crashed"
    assert "corrupted" in unasked.error.message


@pytest.mark.parametrize(
    "frame",
    [
        {"stage": 3, "fraction": 0.5},
        {"stage": "x" * 201, "fraction": 0.5},
        {"stage": "tracing", "fraction": 1.5},
        {"stage": "tracing", "fraction": True},
        {"stage": "tracing", "fraction": "0.5"},
        {"stage": "tracing", "fraction": float("nan")},
    ],
)
def test_a_stage_frame_is_checked_before_it_is_told(frame: dict[str, object]) -> None:
    from jaxplay.sandbox import _pool

    with pytest.raises(_pool.protocol.ProtocolError):
        _pool.stage_of({"type": "stage", **frame})
    assert _pool.stage_of({"type": "stage", "stage": "tracing", "fraction": 1}) == ("tracing", 1.0)
    assert _pool.stage_of({"type": "stage", "stage": "tracing", "fraction": None})[1] is None


def test_the_servers_own_work_does_not_wait_behind_visitors_runs() -> None:
    """A compute job (trusted) starts while a visitor's run holds the pool's only slot, and is
    counted apart from the Code Lab's runs; public mode without bubblewrap refuses the visitor's
    code, not the server's own work."""
    from jaxplay.sandbox import Task

    pool = WorkerPool(
        RunnerConfig(sandbox="process", spares=2, max_concurrent=1, limits=Limits(timeout_s=20))
    )
    try:
        slow = threading.Thread(
            target=pool.run, args=("import time\ntime.sleep(3)",), kwargs={"visitor": "alice"}
        )
        slow.start()
        while pool.status()["running"] == 0:
            time.sleep(0.01)
        seen: list[dict[str, object]] = []
        task = Task("jaxplay.core.budget:format_bytes", {"n": 2**20})
        original = pool._execute

        def watched(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
            seen.append(pool.status())
            return original(*args, **kwargs)

        pool._execute = watched  # type: ignore[method-assign]
        done = pool.run("", task=task, trusted=True)
        assert done.ok and done.task == "1 MiB" and slow.is_alive()
        assert seen[0]["computing"] == 1 and seen[0]["running"] == 1
        assert pool.status()["computing"] == 0
        slow.join()
    finally:
        pool.shutdown()
    public = WorkerPool(RunnerConfig(sandbox="process", public=True, spares=0))
    try:
        assert public.run("print(1)").error.kind == "refused"  # type: ignore[union-attr]
        assert public.run("", task=task, trusted=True).ok
    finally:
        public.shutdown()


def test_the_compute_worker_is_kept_for_the_next_job_and_ended_by_a_failure(
    pool: WorkerPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's own jobs reuse one worker (what it compiled stays compiled); a visitor's
    run never lands on it; a job that fails, or its job count, ends it."""
    from jaxplay.sandbox import Task, _pool

    def compute(n: int) -> RunResult:
        return pool.run("", task=Task("jaxplay.core.budget:format_bytes", {"n": n}), trusted=True)

    assert compute(2**20).task == "1 MiB"
    kept = pool._compute_worker
    assert kept is not None and kept.jobs == 1 and not kept.killed
    assert compute(2**30).task == "1 GiB" and pool._compute_worker is kept and kept.jobs == 2
    visitor = pool.run("print('hi')", visitor="ann")
    assert visitor.ok and pool._compute_worker is kept and kept.jobs == 2  # not on it
    failed = pool.run("", task=Task("jaxplay.core.expr:parse", {"source": "9**9**9"}), trusted=True)
    assert failed.error is not None and failed.error.exc_type == "ExprError"
    assert pool._compute_worker is None and _ended(kept)
    monkeypatch.setattr(_pool, "MAX_COMPUTE_JOBS", 2)
    compute(1)
    second = pool._compute_worker
    compute(2)
    assert pool._compute_worker is None and second is not None and _ended(second)


def _ended(worker: object, within_s: float = 10.0) -> bool:
    """Whether a retired worker was killed (its retirement may run in the background)."""
    deadline = time.monotonic() + within_s
    while not getattr(worker, "killed", False) and time.monotonic() < deadline:
        time.sleep(0.02)
    return bool(getattr(worker, "killed", False))


def test_a_sandbox_probe_that_fails_once_is_tried_again(tmp_path, monkeypatch) -> None:
    """On a busy machine one bubblewrap probe failed and the failure was kept for good: every
    run of a public server refused, every sandbox test of that test worker failed."""
    from jaxplay.sandbox import _process

    marker = tmp_path / "failed-once"
    flaky = tmp_path / "flaky-bwrap"
    flaky.write_text(f"#!/bin/sh\n[ -e {marker} ] && exit 0\ntouch {marker}\nexit 1\n")
    flaky.chmod(0o755)
    monkeypatch.setattr(_process.time, "sleep", lambda s: None)
    assert _process.bwrap_usable(str(flaky))
    broken = tmp_path / "broken-bwrap"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    assert not _process.bwrap_usable(str(broken))
    broken.write_text("#!/bin/sh\nexit 0\n")  # mended: asked again once the wait is over
    assert not _process.bwrap_usable(str(broken))
    monkeypatch.setattr(_process, "PROBE_AGAIN_S", 0.0)
    assert _process.bwrap_usable(str(broken))


def test_code_too_deep_to_parse_is_a_syntax_error_in_the_worker() -> None:
    """Python's parser raises RecursionError or MemoryError, not SyntaxError, on such code."""
    from jaxplay.sandbox import _worker

    for source in ("-" * 3_000 + "1", "y = " + "2**" * 3_000 + "2"):
        value, error = _worker.run_source(source, {})
        assert value is None and error is not None and error["kind"] == "syntax", error
        assert error["message"]

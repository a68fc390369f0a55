"""The jit page's statements about JAX, each checked against JAX itself.

Every check runs a small case of what the page runs (its presets, at small sizes) and compares
the page's sentence with JAX's own answer: ``memory_analysis()``, ``cost_analysis()``, the
profiler trace, ``is_ready()`` at return, how often JAX ran the Python function.
"""

from __future__ import annotations

import re
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from jaxplay.core import claims
from jaxplay.core.claims import Verdict
from jaxplay.jit import _donation, _first_call, _program, _side_effects, _trace
from jaxplay.jit._program import human_bytes
from jaxplay.jit._workloads import DTYPES, PRESETS, Workload, function_of, inputs

#: (preset, dtype, formula): what the donation claim compiles, at :data:`DONATION_SIZE`.
#: Every function the jit page offers (a typed formula too), and every dtype (each choice of
#: each widget; all pairs would compile 40 programs at start-up).
DONATION_CASES = (
    *((preset, DTYPES[0], "") for preset in PRESETS if preset != "formula"),
    *(("softmax", dtype, "") for dtype in DTYPES[1:]),
    ("formula", DTYPES[0], "jnp.tanh(x) * 2 + x"),
)
DONATION_SIZE = (64, 32)
#: A figure as :func:`human_bytes` writes it.
_BYTES = r"[\d.]+ (?:[kMG]B|B)"


def _reported(analysis: Any | None, name: str) -> Any:
    """XLA's ``name`` of a compiled program: JAX returns None where the backend reports none, and
    a claim checked against a figure that is not there fails saying so."""
    if analysis is None:
        raise RuntimeError(f"XLA reported no {name} for the compiled program")
    return analysis


def _xla_peak(fn: Any, args: tuple[Any, ...], donate: bool) -> int:
    import jax

    compiled = jax.jit(fn, donate_argnums=(0,) if donate else ()).lower(*args).compile()
    return int(_reported(compiled.memory_analysis(), "memory_analysis()").peak_memory_in_bytes)


@claims.claim(
    "jit.donation_peak_is_xlas",
    "The donation sentence's peak is XLA's own (`memory_analysis().peak_memory_in_bytes`) with "
    "and without donating, and it says 'drops' only when XLA's figure does.",
    cases=DONATION_CASES,
)
def _donation_peak(case: tuple[str, str, str]) -> Verdict:
    import warnings

    preset, dtype, formula = case
    rows, cols = DONATION_SIZE
    result = _donation.donation_demo(preset, rows, cols, dtype, formula)
    text = _donation.donation_sentence(result)
    workload = Workload(preset, rows, cols, dtype, formula)
    fn = function_of(workload)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an unusable donation warns; the page shows that
        plain = _xla_peak(fn, inputs(workload), donate=False)
        donated = _xla_peak(fn, inputs(workload), donate=True)
    said = re.search(rf"(drops|rises) from ({_BYTES}) to ({_BYTES})", text)
    stays = re.search(rf"stays at ({_BYTES})", text)
    a, b = human_bytes(plain), human_bytes(donated)
    if said:
        verb, before, after = said.groups()
        ok = (
            (before, after) == (a, b) and before != after and (verb == "drops") == (donated < plain)
        )
    elif stays:
        ok = stays.group(1) == a == b
    else:
        ok = result.donated.alias_bytes <= 0
    return Verdict(ok, f"XLA's peak: {a} without donation, {b} with; the page said: {text!r}")


#: What an output of ``x`` (float32[64,32]) can be: (code, whether it can take x's buffer).
ALIAS_CASES = (
    ("x.T * 2", True),
    ("(x * 2).reshape(-1)", True),
    ("jax.lax.bitcast_convert_type(x, jnp.int32)", True),
    ("(x * 2).astype(jnp.int32)", True),
    ("x[:32] * 2", False),
    ("jnp.sum(x, axis=1)", False),
    ("(x * 2).astype(jnp.float16)", False),  # as many elements, half as wide
    ("jnp.concatenate([x, x]).astype(jnp.bfloat16)", False),  # as many bytes, twice the elements
)


@claims.claim(
    "jit.donation_aliases_same_size",
    "A donated argument's buffer is reused by an output with as many elements, each as wide (a "
    "transpose, a reshape, another dtype of the same width), not only one of the same shape and "
    "dtype; as many bytes in other elements is not enough.",
    cases=ALIAS_CASES,
)
def _aliases(case: tuple[str, bool]) -> Verdict:
    import warnings

    import jax
    import jax.numpy as jnp

    code, same_size = case
    x = jnp.ones((64, 32), jnp.float32)
    fn = eval(f"lambda x: {code}", {"jax": jax, "jnp": jnp})  # our own constant cases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = jax.jit(fn, donate_argnums=0).lower(x).compile()
        stats = _reported(compiled.memory_analysis(), "memory_analysis()")
    aliased = int(stats.alias_size_in_bytes)
    holds = (aliased == x.nbytes) if same_size else aliased == 0
    if holds and not same_size:
        unused = _donation.donation_sentence(
            _donation.donation_demo("formula", 64, 32, "float32", "jnp.sum(x, axis=1)")
        )
        holds = "as many elements as `x`, each as wide" in unused
        holds = holds and "shape and dtype" not in unused
        return Verdict(holds, f"the page said: {unused!r}")
    return Verdict(holds, f"{code}: XLA aliased {aliased} of x's {x.nbytes} bytes")


@claims.claim(
    "jit.first_call_ready_at_return",
    "The first-call sentence calls the time before a call returns host time only when the "
    "result was not ready yet (`is_ready()`): on the CPU backend a call can run the whole "
    "program before it returns.",
)
def _first_call_ready(_: None) -> Verdict:
    import jax.numpy as jnp

    from jaxplay.article import naive_softmax

    x = jnp.ones((64, 64))
    anatomy = _first_call.first_call_anatomy(naive_softmax, x, executables=1, lock=False)
    # What JAX said of these very calls (`is_ready()` at return), not of another call: whether a
    # result is ready at return varies from call to call on a busy machine.
    ready = any(c.ready_at_return for c in anatomy.first)
    text = _first_call.first_call_sentence(anatomy, anatomy.first_ready_s, anatomy.second_ready_s)
    host_only = "not in the device" in text or "the device's work came after" in text
    return Verdict(
        not (ready and host_only),
        f"a fresh executable's first result was {'' if ready else 'not '}ready when the call "
        f"returned; the page said: {text!r}",
    )


@claims.claim(
    "jit.dispatch_returns_before_the_work",
    "A call can return before its work is done (JAX dispatches asynchronously): a jitted "
    "1500 × 1500 matmul's result is not yet ready (`is_ready()`) when the call returns.",
)
def _dispatch_returns_early(_: None) -> Verdict:
    import jax
    import jax.numpy as jnp

    matmul = jax.jit(lambda a: (a @ a).sum())
    a = jnp.ones((1500, 1500))
    matmul(a).block_until_ready()  # compiled, and the input in place
    ready = []
    for _call in range(5):
        y = matmul(a)
        ready.append(y.is_ready())
        y.block_until_ready()
    return Verdict(
        not all(ready),
        f"ready when the call returned in {sum(ready)} of {len(ready)} calls",
    )


def _eager_trace(fn: Any, x: Any) -> tuple[dict[str, int], _trace.TraceDemo]:
    """Each program an eager call of ``fn`` dispatched and how often (distinct ``run_id`` of
    its kernels' events in a profiler trace), and the page's summary of the same trace."""
    import jax

    from jaxplay.core import timing

    name = fn.__name__
    jitted = jax.jit(fn)
    timing.block((fn(x), jitted(x)))  # compile first: the trace then holds runs only
    with tempfile.TemporaryDirectory(prefix="jaxplay-claim-") as directory:
        with jax.profiler.trace(directory):
            timing.block(fn(x))
            timing.block(jitted(x))
        path = str(next(Path(directory).rglob("*.xplane.pb")))
        data = jax.profiler.ProfileData.from_file(path)
        runs: dict[str, set[Any]] = defaultdict(set)
        for plane in data.planes:
            for line in plane.lines:
                for event in line.events:
                    stats = dict(event.stats)
                    if stats.get("hlo_module") and "run_id" in stats:
                        # A program is its name and its id: two may share a name.
                        program = f"{stats['hlo_module']}/{stats.get('program_id')}"
                        runs[program].add(stats["run_id"])
        kernels, modules, events, counted = _trace.summarise_trace(path)
    demo = _trace.TraceDemo(
        kernels,
        modules,
        events,
        (),
        "",
        "",
        0,
        f"1 eager call, then 1 of jax.jit({name})",
        name,
        counted,
    )
    return {m: len(r) for m, r in runs.items() if not m.startswith(f"jit_{name}/")}, demo


@claims.claim(
    "jit.eager_dispatches_from_trace",
    "An eager call dispatches one small program per call JAX dispatches (a `jnp` function is "
    "one), not one per jaxpr operation (the naive softmax's 5 operations are 4 dispatches of 3 "
    "programs); the page's counts come from the profiler trace, and no sentence says each "
    "operation is dispatched on its own.",
    cases=("softmax", "chain"),
)
def _eager_dispatches(preset: str) -> Verdict:
    import jax
    import jax.numpy as jnp

    from jaxplay.core import timing

    fn = function_of(Workload(preset, 32, 32, "float32", ""))
    x = jnp.ones((32, 32))
    runs, demo = _eager_trace(fn, x)
    dispatches = sum(runs.values())
    programs = len(runs)  # the eager call's own: the jitted program is left out
    text = _trace.trace_sentence(demo)
    said = re.search(r"made ([\d,]+) dispatch\w* of ([\d,]+) program", text)
    if not said or [int(g.replace(",", "")) for g in said.groups()] != [dispatches, programs]:
        return Verdict(
            False,
            f"the trace holds {dispatches} dispatches of {programs} eager programs {runs}; "
            f"page: {text!r}",
        )
    profile = timing.profile_jit(fn, x, budget_s=0.01, lock=False)
    program = _program.read_program(profile, fn, x)
    sentence = _program.program_sentence(program)
    operations = len(jax.make_jaxpr(fn)(x).jaxpr.eqns)
    from jaxplay import article

    # The article page's explanations speak of the same eager calls.
    walkthrough = " ".join(e.explanation for e in article.EXAMPLES)
    each = (
        "dispatches each on its own" in sentence
        or "one per operation" in text
        or "dispatched on its own" in walkthrough
    )
    return Verdict(
        not (each and operations != dispatches),
        f"{operations} jaxpr operations, {dispatches} dispatches in the trace; the pages said: "
        f"{sentence!r}" + (" and the article page: each is dispatched on its own" if each else ""),
    )


#: (preset, formula, rows, cols): the programs whose bytes the cost-analysis sentence states;
#: ``x - jnp.max(x)`` is one kernel that counts one read and one write yet waits for the max.
COST_CASES = (
    ("softmax", "", 100, 50),
    ("chain", "", 100, 50),
    ("formula", "x - jnp.max(x)", 100, 50),
)


@claims.claim(
    "jit.cost_analysis_bytes",
    "The bytes the page quotes are XLA's `cost_analysis()['bytes accessed']`, and a byte count "
    "equal to one read and one write is not called one pass when the work needs a reduction "
    "first.",
    cases=COST_CASES,
)
def _cost_bytes(case: tuple[str, str, int, int]) -> Verdict:
    import types

    import jax

    preset, formula, rows, cols = case
    workload = Workload(preset, rows, cols, "float32", formula)
    fn, args = function_of(workload), inputs(workload)
    compiled = jax.jit(fn).lower(*args).compile()
    cost = _reported(compiled.cost_analysis(), "cost_analysis()")
    cost = cost[0] if isinstance(cost, list) else cost
    # What read_program reads of a timing profile: the optimized HLO and XLA's cost analysis.
    profile = types.SimpleNamespace(hlo_text=compiled.as_text(), cost=cost)
    program = _program.read_program(profile, fn, *args)  # type: ignore[arg-type]
    text = _program.program_sentence(program)
    quoted = f"counts {human_bytes(cost['bytes accessed'])} read and written"
    contradiction = "nothing in between" in text and "one pass" in text
    return Verdict(
        quoted in text and not contradiction,
        f"XLA counts {cost['bytes accessed']:,.0f} bytes; the page said: {text!r}",
    )


@claims.claim(
    "jit.library_calls_count_no_flops",
    "XLA's cost analysis counts none of a library call's flops: `jnp.linalg.inv` and `det` run "
    "LAPACK `custom-call`s, and the flops XLA reports are far below their LU factorization's "
    "2/3·n³; the roofline's note names those calls, and no note is shown without one.",
    cases=("jnp.linalg.inv(x)", "jnp.linalg.det(x)", "jnp.tanh(x) * 2 + x"),
)
def _library_flops(formula: str) -> Verdict:
    import types

    import jax

    n = 256
    workload = Workload("formula", n, n, "float32", formula)
    fn, args = function_of(workload), inputs(workload)
    compiled = jax.jit(fn).lower(*args).compile()
    cost = _reported(compiled.cost_analysis(), "cost_analysis()")
    cost = cost[0] if isinstance(cost, list) else cost
    text = compiled.as_text() or ""
    profile = types.SimpleNamespace(hlo_text=text, cost=cost)
    program = _program.read_program(profile, fn, *args)  # type: ignore[arg-type]
    note = _program.library_calls_note(program)
    calls = "custom-call" in text
    lu_flops = 2 / 3 * n**3
    if not calls:
        return Verdict(note is None, f"{formula}: no custom-call; the note: {note!r}")
    return Verdict(
        note is not None and cost.get("flops", 0.0) < lu_flops / 10,
        f"{formula}: XLA counts {cost.get('flops', 0.0):,.0f} flops against the LU's "
        f"{lu_flops:,.0f}; the note: {note!r}",
    )


@claims.claim(
    "jit.traces_once_per_signature",
    "jit runs the Python function once per new input signature: again for a new shape or "
    "dtype, not for new values of the same shape and dtype; Python's `print` runs only then, "
    "`jax.debug.print` on every call.",
)
def _once_per_signature(_: None) -> Verdict:
    import jax
    import jax.numpy as jnp

    counter = _side_effects.impure_counter_demo(calls=2)
    ran = []

    def f(x):
        ran.append(x.shape)
        return x * 2

    g = jax.jit(f)
    g(jnp.ones(3))
    g(jnp.zeros(3))  # new values: no new trace
    g(jnp.ones(4))  # new shape
    g(jnp.ones(4, jnp.int32))  # new dtype
    printed = _side_effects.debug_print_demo(calls=3)
    traced = sum("print (trace time)" in t for t in printed.outputs)
    at_run = sum("jax.debug.print (run time)" in t for t in printed.outputs)
    text = _side_effects.side_effects_sentence(counter, printed)
    holds = (
        (counter.eager_count, counter.jit_count, counter.jit_count_after_new_shape) == (2, 1, 2)
        and len(ran) == 3
        and (traced, at_run) == (1, 3)
        and "new shape (a new trace)" in text
    )
    return Verdict(
        holds,
        f"counter {counter}; Python ran {len(ran)} times for 4 calls; print in {traced} of 3 "
        f"calls, jax.debug.print in {at_run}",
    )


@claims.claim(
    "jit.cache_skips_only_compile",
    "The persistent compilation cache saves the compile only: its key is computed from the "
    "lowered program, so tracing and lowering run in every process, hit or miss.",
)
def _cache_key(_: None) -> Verdict:
    from jaxplay.core import jax_private

    needs = jax_private.cache_key_needs_lowered_module()
    return Verdict(
        needs is True,
        "JAX's compilation-cache key "
        + (
            "is computed from the lowered module"
            if needs
            else "is not (or not known to be) computed from the lowered module here"
        ),
    )


#: Shapes no other code of the process uses: an eager op's program is kept per shape, so a shape
#: met before would hold no compile (each check takes the next).
_FRESH_ROWS = iter(range(7919, 10**9, 2))


@claims.claim(
    "jit.eager_compiles_per_new_shape",
    "Eager JAX compiles a small program for each call it dispatches (one per `jnp` function; "
    "a library function that is not jitted itself, such as `jax.nn.gelu`, dispatches each of "
    "its operations) the first time it meets a shape and dtype, and reuses it after: a warm "
    "eager call holds no compile.",
    cases=("softmax", "gelu"),
)
def _eager_compiles(case: str) -> Verdict:
    import jax
    import jax.numpy as jnp

    from jaxplay.core.compilation import capture_compiles

    def softmax(x: Any) -> Any:  # the article's: three `jnp` calls (exp twice), 5 operations
        return jnp.exp(x) / jnp.exp(x).sum(axis=1, keepdims=True)

    # One library call, not jitted: its operations dispatch one by one (more than one program).
    fn, expected = (softmax, 3) if case == "softmax" else (jax.nn.gelu, None)
    x = jnp.ones((next(_FRESH_ROWS), 3), jnp.float32)
    with capture_compiles(explain_cache_misses=False) as first:
        fn(x).block_until_ready()
    with capture_compiles(explain_cache_misses=False) as again:
        fn(x).block_until_ready()
    names = [e.function for e in first.compiles]
    operations = len(jax.make_jaxpr(fn)(x).eqns)
    dispatched = len(names) == expected and operations > 3 if expected else len(names) > 1
    return Verdict(
        dispatched and not again.compiles,
        f"first call at a new shape ({operations} jaxpr operations) compiled {names}; the same "
        f"call again compiled {[e.function for e in again.compiles]}",
    )


@claims.claim(
    "jit.signature_includes_structure_and_placement",
    "jit traces again for the same arrays in another pytree structure (a list for a tuple, a "
    "keyword for a position); it compiles again, without tracing, for inputs on another device; "
    "inputs on a mesh are traced again for another mesh, and on a mesh's Explicit axes "
    "(jax.make_mesh's default) for another sharding too.",
)
def _signature(_: None) -> Verdict:
    import jax
    import jax.numpy as jnp

    from jaxplay.core.compilation import capture_compiles

    traced: list[str] = []

    def add_pair(xs: Any) -> Any:
        traced.append(type(xs).__name__)
        return xs[0] + xs[1]

    f = jax.jit(add_pair)
    x = jnp.ones((2 * next(_FRESH_ROWS),), jnp.float32)
    devices = jax.devices()[:2]
    calls = [
        ("tuple", lambda: f((x, x))),
        ("tuple again", lambda: f((x, x))),
        ("list", lambda: f([x, x])),
        ("keyword", lambda: f(xs=(x, x))),
    ]
    expected = {
        "tuple": (True, True),
        "tuple again": (False, False),
        "list": (True, True),
        "keyword": (True, True),
    }
    # With one device there is no other to place on (placed on the same one, the arrays are
    # committed: a compile again too, which the claim does not state); nor a mesh to split.
    if len(devices) > 1:
        calls.append(("device 1", lambda: f(tuple(jax.device_put(v, devices[-1]) for v in (x, x)))))
        expected["device 1"] = (False, True)
        calls += [
            (f"{kind} mesh, {spec}", _on_mesh(f, x, devices, kind, spec))
            for kind in ("Explicit", "Auto")
            for spec in ("split", "replicated")
        ]
        expected |= {
            "Explicit mesh, split": (True, True),
            "Explicit mesh, replicated": (True, True),
            "Auto mesh, split": (True, True),
            "Auto mesh, replicated": (False, True),
        }
    seen = {}
    for what, call in calls:
        before = len(traced)
        with capture_compiles(explain_cache_misses=False) as log:
            call().block_until_ready()
        seen[what] = (len(traced) > before, bool(log.for_function("add_pair")))
    return Verdict(seen == expected, f"(traced, compiled) per call: {seen}")


def _on_mesh(f: Any, x: Any, devices: list[Any], kind: str, spec: str) -> Any:
    """A call of ``f`` on ``(x, x)`` placed on a two-device mesh of axis type ``kind``, split
    over its axis or replicated: the sharding as the page's sentence names it."""
    import jax
    import numpy as np
    from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(devices), ("i",), axis_types=(getattr(AxisType, kind),))
    sharding = NamedSharding(mesh, PartitionSpec("i" if spec == "split" else None))
    return lambda: f(tuple(jax.device_put(v, sharding) for v in (x, x)))

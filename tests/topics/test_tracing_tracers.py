"""Tracers: what a function sees, the pitfalls' real errors, the recompilation lab, loop growth."""

from __future__ import annotations

import pytest

from jaxplay import tracing
from jaxplay.core import capture
from jaxplay.tracing import _tracers


def test_what_a_function_sees_under_each_transform() -> None:
    views = {v.how: v.outcome for v in tracing.trace_views()}
    assert all(o.ok for o in views.values())
    assert "type: ArrayImpl" in views["peek(x)"].stdout
    assert "Tracer" in views["jax.jit(peek)(x)"].stdout.splitlines()[0]
    assert "Tracer" in views["jax.grad(lambda x: peek(x).sum())(x)"].stdout.splitlines()[0]
    vmapped = views["jax.vmap(peek)(jnp.stack([x, x]))"].stdout
    # One example's shape: the batch axis of size 2 is hidden from the function.
    assert "BatchTracer" in vmapped and "shape: (3,)" in vmapped


@pytest.mark.parametrize("pitfall", tracing.PITFALLS, ids=lambda p: p.key)
def test_each_pitfall_fails_as_documented_and_its_fixes_work(pitfall: _tracers.Pitfall) -> None:
    broken = capture.run(pitfall.broken)
    if pitfall.expected_error:
        assert not broken.ok and broken.error_type == pitfall.expected_error
        assert broken.message
    else:
        assert broken.ok
    for fix in pitfall.fixes:
        assert capture.run(fix).ok, fix.__name__
    assert pitfall.broken_source.startswith("def ")
    assert "pyright" not in pitfall.broken_source  # the checker's pragma is not the page's code


def test_print_runs_once_and_debug_print_every_call() -> None:
    out = capture.run(_tracers.print_vs_debug_print)
    assert out.stdout.count("print sees:") - out.stdout.count("jax.debug.print sees:") == 1
    assert out.stdout.count("jax.debug.print sees:") == 3
    assert "Tracer" in out.stdout.splitlines()[0]


def test_the_articles_counter_is_one_after_two_calls() -> None:
    assert capture.run(_tracers.impure_counter).value == "1"
    assert capture.run(_tracers.fix_counter_as_state).value == "2"


def test_the_if_pitfall_message_is_jaxs() -> None:
    out = capture.run(_tracers.python_if_under_jit)
    assert "Attempted boolean conversion of traced array" in out.message


# --- recompilation lab ---------------------------------------------------------------------------


def _lab(key: str) -> tracing.LabRun:
    scenario = {s.key: s for s in tracing.SCENARIOS}[key]
    return tracing.run_recompilation_lab(scenario.calls, redefine=scenario.redefine)


def test_article_scenario_compiles_twice_then_hits_the_cache() -> None:
    run = _lab("article")
    assert [r.compiled for r in run.rows] == [True, True, False]
    assert [r.cache_size for r in run.rows] == [1, 2, 2]
    assert "never seen function" in run.rows[0].explanation
    assert run.rows[2].explanation == "" and run.compilations == 2
    assert "Compiling" in run.log


def test_a_new_shape_or_dtype_compiles_and_jax_says_why() -> None:
    shape = _lab("shape")
    assert [r.compiled for r in shape.rows] == [True, True, False]
    assert "f32[6]" in shape.rows[1].explanation
    dtype = _lab("dtype")
    assert [r.compiled for r in dtype.rows] == [True, True, False]
    assert "i32[5]" in dtype.rows[1].explanation


def test_static_values_one_and_true_are_separate_entries() -> None:
    run = _lab("static")
    assert [r.compiled for r in run.rows] == [True, True, True, False]
    assert run.rows[-1].cache_size == 3


def test_unhashable_static_argument_shows_jaxs_error() -> None:
    run = _lab("unhashable")
    assert run.rows[1].error and run.rows[1].error.startswith("ValueError: Non-hashable static")
    assert not run.rows[1].compiled


def test_redefining_the_function_compiles_every_call() -> None:
    run = _lab("redefine")
    assert run.compilations == 3
    assert [r.cache_size for r in run.rows] == [1, 1, 1]
    assert "defined on the same line" in run.rows[-1].explanation


def test_the_lab_refuses_too_many_calls() -> None:
    calls = [tracing.LabCall((2,), "float32", "True")] * (tracing.MAX_LAB_CALLS + 1)
    with pytest.raises(ValueError, match=f"limit of {tracing.MAX_LAB_CALLS}"):
        tracing.run_recompilation_lab(calls)


# --- loops ---------------------------------------------------------------------------------------


def test_python_loops_grow_the_jaxpr_lax_loops_do_not() -> None:
    rows = tracing.loop_growth((1, 8, 64))
    by = {(r.loop, r.length): r for r in rows}
    assert [by[("Python for loop", n)].equations for n in (1, 8, 64)] == [2, 16, 128]
    for loop in ("lax.fori_loop", "lax.scan"):
        counts = {by[(loop, n)].equations for n in (1, 8, 64)}
        assert len(counts) == 1 and by[(loop, 64)].top_level == 1
    figure = tracing.loop_growth_figure(rows)
    assert [t.name for t in figure.data] == list(_tracers.LOOPS)
    with pytest.raises(ValueError, match="outside 1"):
        tracing.loop_growth((_tracers.MAX_LOOP_LENGTH + 1,))


def test_the_recompilation_lab_refuses_a_large_x_before_allocating_it() -> None:
    big = tracing.LabCall((_tracers.MAX_LAB_ELEMENTS + 1,), "float32", "True")
    with pytest.raises(ValueError, match="over the lab's limit"):
        tracing.run_recompilation_lab((big,), redefine=False)


def _branch(x):
    if x.sum() > 0:
        return x
    return -x


def _loop(n):
    total = 0.0
    for i in range(n):
        total = total + i
    return total


def _numpy(x):
    import numpy as np

    return np.asarray(x) * 2


def _to_float(x):
    return float(x.sum()) * x


def _to_int(x):
    return int(x.sum()) * x


def _nonzero(x):
    import jax.numpy as jnp

    return jnp.nonzero(x)


@pytest.mark.parametrize(
    "fn,shape,dtype,kind",
    [
        (_branch, (3,), "float32", "TracerBoolConversionError"),
        (_loop, (), "int32", "TracerIntegerConversionError"),
        (_numpy, (3,), "float32", "TracerArrayConversionError"),
        (_to_float, (3,), "float32", "ConcretizationTypeError"),
        (_to_int, (3,), "float32", "ConcretizationTypeError"),  # int(): not the index error
        (_nonzero, (3,), "float32", "ConcretizationTypeError"),  # the hint names size=
    ],
)
def test_a_staged_error_gets_the_hint_of_its_type_whatever_the_code(fn, shape, dtype, kind) -> None:
    """The page explained any staged error by the first pitfall of its type: ``float(x.sum())``
    got the pitfall about shapes and ``n``, any ImportError the article's ``partial``. The hint
    now says what the type means for any code; the type is JAX's own."""
    from jaxplay.tracing import _variants

    found = _variants.stage_variant(fn, [tracing.InputSpec(shape, dtype)], "f")
    assert found.error is not None and found.error.startswith(kind + ":"), found.error
    hint = tracing.error_hint(found.error)
    assert hint is not None and hint is _tracers.ERROR_HINTS[kind]
    if fn is _nonzero:
        assert "`size=`" in hint.fix


def test_an_escaped_tracer_gets_its_hint_and_an_import_error_none() -> None:
    with pytest.raises(Exception) as raised:
        tracing.find_pitfall("leak").broken()
    assert type(raised.value).__name__ == "UnexpectedTracerError"
    assert tracing.error_hint(f"UnexpectedTracerError: {raised.value}") is not None
    assert tracing.error_hint("ImportError: cannot import name 'partial' from 'jax'") is None

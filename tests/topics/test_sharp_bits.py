"""The sharp-bits cases: each variant does what the page says, raises what the page names, and
each sentence is computed from the run (other parameters, other sentence)."""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest

from jaxplay import sharp_bits
from jaxplay.sharp_bits import _nans, _printing

VARIANTS = [(c.key, v.key) for c in sharp_bits.CASES for v in c.variants]


@pytest.mark.parametrize(("case", "variant"), VARIANTS, ids=[f"{c}-{v}" for c, v in VARIANTS])
def test_every_variant_raises_exactly_what_the_page_names(case: str, variant: str) -> None:
    run = sharp_bits.run(case, variant)
    assert run.outcome.error_type == run.expected_error, run.outcome.headline
    assert run.sentence
    assert run.snippet.rstrip().endswith(")")


def test_params_are_checked_against_the_widget_ranges() -> None:
    with pytest.raises(ValueError, match="between"):
        sharp_bits.run("bounds", "gather", index=99)
    with pytest.raises(ValueError, match="one of"):
        sharp_bits.run("weak", "promotion", dtype="float64")


def test_hidden_state_under_jit() -> None:
    effect = sharp_bits.run("purity", "side-effect", calls=5)
    assert "ran 5 times eagerly and once under `jit`" in effect.sentence
    stale = sharp_bits.run("purity", "global", calls=4)
    assert "went 1 → 4 over 4 calls" in stale.sentence
    assert "returned 1 different value (1, 1, 1, 1)" in stale.sentence
    fixed = sharp_bits.run("purity", "argument", calls=4)
    assert "returned 4 different values (1, 2, 3, 4)" in fixed.sentence


def test_in_place_assignment_raises_type_error_and_at_returns_a_copy() -> None:
    assert sharp_bits.run("updates", "assign").outcome.error_type == "TypeError"
    run = sharp_bits.run("updates", "set", index=3, value=-2.0)
    assert "position 3: 3 → -2" in run.sentence and "`x` itself is unchanged" in run.sentence
    repeated = sharp_bits.run("updates", "add-repeated", index=1, value=0.5)
    assert "position 1: 1 → 2.5" in repeated.sentence and "added 3 × 0.5" in repeated.sentence
    assert "no element" in sharp_bits.run("updates", "min", index=1, value=4.0).sentence
    assert "position 1: 1 → -4" in sharp_bits.run("updates", "min", index=1, value=-4.0).sentence


def test_modes_decide_what_an_out_of_bounds_update_does() -> None:
    clip = sharp_bits.run("updates", "clip", index=7, value=9.0)
    assert "out of bounds" in clip.sentence and "position 4: 4 → 9" in clip.sentence
    drop = sharp_bits.run("updates", "drop", index=7, value=9.0)
    assert "no element of the result differs" in drop.sentence


def test_out_of_bounds_reads_clamp_and_writes_drop() -> None:
    gather = sharp_bits.run("bounds", "gather", index=7)
    assert (
        "returned 40, the value at position 4" in gather.sentence and "clamped" in gather.sentence
    )
    low = sharp_bits.run("bounds", "gather", index=-9)
    assert "returned 0, the value at position 0" in low.sentence
    inside = sharp_bits.run("bounds", "gather", index=2)
    assert "is in bounds" in inside.sentence and "clamped" not in inside.sentence
    assert sharp_bits.run("bounds", "numpy", index=7).outcome.error_type == "IndexError"
    assert sharp_bits.run("bounds", "numpy", index=2).outcome.ok
    assert "dropped" in sharp_bits.run("bounds", "scatter", index=7).sentence
    assert "position 2: 20 → -1" in sharp_bits.run("bounds", "scatter", index=2).sentence
    assert "returned nan" in sharp_bits.run("bounds", "fill", index=-7).sentence


def test_where_gradients_are_nan_below_zero_and_the_double_where_fixes_them() -> None:
    run = sharp_bits.run("where", "single", x=0.0)
    assert "gradient is nan" in run.sentence and "0 × inf = nan" in run.sentence
    xs, grads = _nans.gradient_curve("single")
    nans = int(np.isnan(grads).sum())
    assert nans == int((xs <= 0).sum())
    assert f"{nans} of {_nans.CURVE_POINTS} points" in run.sentence
    assert "gradient is 0.5" in sharp_bits.run("where", "single", x=1.0).sentence
    fixed = sharp_bits.run("where", "double", x=-1.0)
    assert (
        "gradient is 0." in fixed.sentence and f"none of the {_nans.CURVE_POINTS}" in fixed.sentence
    )
    assert not np.isnan(_nans.gradient_curve("double")[1]).any()


@pytest.mark.parametrize(("x", "primitive"), [(0.5, "sqrt"), (0.0, "sqrt"), (-1.0, "log")])
def test_debug_nans_names_the_first_nan_and_leaves_the_flag_off(x: float, primitive: str) -> None:
    run = sharp_bits.run("debug_nans", "debug_nans", x=x)
    assert run.outcome.error_type == "FloatingPointError"
    assert f"at `{primitive}`" in run.sentence
    assert "`jax_debug_nans` is off after the run" in run.sentence
    assert not jax.config.jax_debug_nans
    silent = sharp_bits.run("debug_nans", "plain", x=x)
    assert silent.outcome.ok and "1 NaN, no error" in silent.sentence


@pytest.mark.parametrize("x", [0.5, -1.0, 2.0])
def test_the_sentence_writes_the_values_as_the_block_under_it_prints_them(x: float) -> None:
    """The returned array in the sentence reads as JAX printed it below (it said ``1.177`` over
    a block printing ``1.17741``, and ``1.1774100065231323`` before that)."""
    run = sharp_bits.run("debug_nans", "plain", x=x)
    said = re.search(r"(?:returned|appears:) \[([^\]]*)\]", run.sentence)
    assert said is not None, run.sentence
    unspaced = "".join(run.outcome.value.split())
    assert "".join(said.group(1).split()) in unspaced, (run.sentence, run.outcome.value)


def test_debug_nans_is_quiet_without_a_nan() -> None:
    run = sharp_bits.run("debug_nans", "debug_nans", x=2.0)
    assert run.outcome.ok and "no NaN appears" in run.sentence


def test_checkify_reports_what_it_was_asked_to_check() -> None:
    assert "out-of-bounds index" in sharp_bits.run("checkify", "index", x=1.0, index=5).sentence
    assert "found nothing" in sharp_bits.run("checkify", "index", x=-1.0, index=1).sentence
    assert "a NaN" in sharp_bits.run("checkify", "nan", x=-1.0, index=1).sentence
    assert "found nothing" in sharp_bits.run("checkify", "nan", x=1.0, index=5).sentence
    thrown = sharp_bits.run("checkify", "thrown", x=1.0, index=5)
    assert thrown.outcome.error_type == "JaxRuntimeError"
    assert "for an out-of-bounds index" in thrown.sentence
    assert sharp_bits.run("checkify", "thrown", x=1.0, index=1).outcome.ok
    assert "raised nothing" in sharp_bits.run("checkify", "unchecked", x=-1.0, index=5).sentence


@pytest.mark.parametrize(
    ("variant", "calls", "batch", "plain", "debug"),
    [
        ("eager", 3, 2, 3, 3),
        ("jit", 3, 2, 1, 3),
        ("vmap", 3, 2, 3, 6),
        ("jit_vmap", 3, 2, 1, 6),
        ("jit_vmap", 2, 4, 1, 8),
    ],
)
def test_print_counts_come_from_the_captured_output(
    variant: str, calls: int, batch: int, plain: int, debug: int
) -> None:
    run = sharp_bits.run("printing", variant, calls=calls, batch=batch)
    assert _printing.count_lines(run.outcome.stdout)[:2] == (plain, debug)
    lines = "line" if plain == 1 else "lines"
    assert f"`print` printed {plain} {lines}, `jax.debug.print` {debug}." in run.sentence


@pytest.mark.parametrize("variant", ["jit", "jit_vmap", "vmap"])
def test_one_call_does_not_say_print_runs_once_per_call(variant: str) -> None:
    """With one call, jit's one trace printed once, and the page said "once per call" (jit
    prints once per trace, which the same page says with two calls)."""
    run = sharp_bits.run("printing", variant, calls=1, batch=5)  # shapes no other test traces
    assert "traced `show_both`." in run.sentence and "`show_both`, once" not in run.sentence
    twice = sharp_bits.run("printing", variant, calls=2, batch=1).sentence
    assert ("`show_both`, once per call." in twice) == (variant == "vmap")


def test_float64_is_truncated_with_a_warning_unless_x64_is_on() -> None:
    off = sharp_bits.run("x64", "default")
    assert "as float32, with 1 warning about a truncated dtype between them" in off.sentence
    assert any("truncated" in w for w in off.outcome.warnings)
    on = sharp_bits.run("x64", "x64")
    assert "as float64, with 0 warnings" in on.sentence
    assert "`jax_enable_x64` is off after the run" in on.sentence
    assert not jax.config.jax_enable_x64
    assert sharp_bits.run("x64", "overflow").outcome.error_type == "OverflowError"
    assert "returned -2147483648" in sharp_bits.run("x64", "wraps").sentence


@pytest.mark.parametrize(
    ("dtype", "plus_float", "plus_f32"),
    [
        ("float16", "float16", "float32"),
        ("float32", "float32", "float32"),
        ("int8", "float32", "float32"),
    ],
)
def test_python_scalars_are_weakly_typed(dtype: str, plus_float: str, plus_f32: str) -> None:
    run = sharp_bits.run("weak", "promotion", dtype=dtype)
    assert f"`x + 1.0` is {plus_float}" in run.sentence
    assert f"`x + jnp.float32(1.0)` is {plus_f32}" in run.sentence


def test_a_python_float_argument_shows_a_convert_in_the_jaxpr() -> None:
    run = sharp_bits.run("weak", "jaxpr", dtype="float32")
    assert "gives 3 equations, 1 of them `convert_element_type`" in run.sentence
    assert "jnp.float32(2.0) gives 2, 0 converting" in run.sentence
    assert "convert_element_type[new_dtype=float32 weak_type=False]" in run.outcome.value
    half = sharp_bits.run("weak", "jaxpr", dtype="float16")
    assert "jnp.float32(2.0) gives 3, 1 converting" in half.sentence


def test_the_weak_types_case_shows_its_surprise_with_the_default_dtype() -> None:
    """With float32 by default every row printed float32 and the gotcha never showed."""
    case = sharp_bits.find_case("weak")
    default = {p.name: p.default for p in case.params}
    from jaxplay.sharp_bits import _types

    rows = {k: str(v) for k, v in _types.promotion(default["dtype"]).items()}
    assert rows["x + 1.0"] == rows["x"] != rows["x + jnp.float32(1.0)"]


def test_the_checkify_sentence_leaves_jaxs_message_whole_at_its_end() -> None:
    """It read "…index 5.`; the result" (".;"): JAX's message now closes the sentence."""
    case = sharp_bits.find_case("checkify")
    for variant in case.variants:
        run = sharp_bits.run("checkify", variant.key)
        assert ".;" not in run.sentence and ".`;" not in run.sentence, run.sentence


def test_the_updates_intro_names_the_methods_that_copy_and_the_one_that_reads() -> None:
    """``set``, ``add``, ``multiply``, ``min`` and ``max`` return an updated copy of ``x`` (its
    shape, ``x`` itself unchanged); ``get`` returns the indexed value, not a copy of ``x``."""
    x = jax.numpy.arange(5.0)
    for method in ("set", "add", "multiply", "min", "max"):
        out = getattr(x.at[2], method)(-9.0 if method == "min" else 9.0)
        assert out.shape == x.shape and float(out[2]) != 2.0 and float(x[2]) == 2.0, method
    got = x.at[2].get()
    assert got.shape == () and float(got) == 2.0
    intro = next(case.intro for case in sharp_bits.CASES if case.key == "updates")
    assert "`get` reads" in intro and "`max` return an updated copy" in intro


def test_a_checked_function_compiles_once_for_every_x() -> None:
    """``checkify`` makes a new function each time it is called: jitted inside each call, every
    new x compiled again (102 ms, and 23 KB the server kept, each); jitted once per set of
    checks, one compiled program serves every x (JAX's own cache count)."""
    from jax.experimental import checkify

    from jaxplay.core import jax_private

    _nans.index_checked(0.25, 1)
    programs = jax_private.cache_size(_nans.checked(checkify.index_checks))
    for x in (0.5, -1.5, 1.75):
        _nans.index_checked(x, 1)
    assert jax_private.cache_size(_nans.checked(checkify.index_checks)) == programs >= 1


@pytest.mark.parametrize("variant", ["index", "nan", "thrown"])
def test_the_checkify_code_shown_runs_as_written(variant: str) -> None:
    """The shown code (as the Code Lab opens it) defines its helpers and imports: run, it
    reports what the page reports."""
    run = sharp_bits.run("checkify", variant, x=-1.0, index=1)
    namespace: dict[str, object] = {}
    raised = None
    try:
        exec(run.snippet, namespace)
    except Exception as err:  # the thrown variant raises, as the page says
        raised = type(err).__name__
    assert raised == run.outcome.error_type

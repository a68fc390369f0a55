"""What the sharp-bits page states about JAX, each with a check that asks JAX.

Every case's sentences and notes rest on a rule (out-of-bounds reads clamp, a Python float meets
an int8 array as a weak float32, ``debug_nans`` re-runs the function once...). The rules the
sentences use are data in the case modules (``_updates.OUT_OF_BOUNDS``, ``_types.CONVERTED``,
``_types.PLUS_FLOAT``); each check runs JAX on the inputs the page offers (every dtype choice,
an index in and out of range, eagerly and under ``jit``) and compares what JAX did with that
rule. Printed lines and warnings go through :func:`jaxplay.core.capture.run` (per-thread), and
JAX's flags only through thread-local context managers.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxplay.core import capture, claims, compilation, jax_private
from jaxplay.core.i18n import N_
from jaxplay.sharp_bits import _nans, _printing, _purity, _types, _updates

Verdict = claims.Verdict

# --- weak types --------------------------------------------------------------------------------


@claims.claim(
    "sharp_bits.weak_float_convert",
    N_(
        "In x * y with y a Python float argument, the jaxpr converts the float to x's dtype when x "
        "is floating, and converts x itself to a weakly typed float32 when x is an integer."
    ),
    cases=_types.DTYPES,
)
def _weak_float_convert(dtype: str) -> Verdict:
    jaxpr = jax.make_jaxpr(_types.multiply_add)(jnp.ones(3, dtype), 2.0)
    found = _types.converts(jaxpr)
    operand = _types.CONVERTED[_types.kind(dtype)]
    expected = [("y", dtype, False)] if operand == "y" else [("x", "float32", True)]
    return Verdict(found == expected, f"with x of {dtype} the jaxpr converts {found}")


@claims.claim(
    "sharp_bits.weak_same_kind",
    N_(
        "A weakly typed Python scalar takes the array's type unless it is of a higher kind: "
        "x + 1 keeps x's dtype, x + 1.0 keeps it for a floating x and is float32 for an "
        "integer x."
    ),
    cases=_types.DTYPES,
)
def _weak_same_kind(dtype: str) -> Verdict:
    got = {k: jnp.dtype(v).name for k, v in _types.promotion(dtype).items()}
    rule = _types.PLUS_FLOAT[_types.kind(dtype)]
    expected = dtype if rule == "x's dtype" else rule
    holds = got["x + 1.0"] == expected and got["x + 1"] == dtype
    wrong = [f"x of {dtype}: x + 1.0 is {got['x + 1.0']}, x + 1 is {got['x + 1']}"]
    # The case's intro states examples of its own ("an int8 array `+ 1.0` is float32"): each is
    # asked of JAX too, so a changed sentence is checked as written.
    examples = [
        (getattr(jnp, operand)(1), operand, said)
        for operand, said in _SCALAR_EXAMPLE.findall(_types.WEAK.intro)
    ] + [
        (jnp.ones(3, operand), f"an {operand} array", said)
        for operand, said in _ARRAY_EXAMPLE.findall(_types.WEAK.intro)
    ]
    for x, what, said in examples:
        if jnp.dtype((x + 1.0).dtype).name != said:
            holds = False
            wrong.append(f"the intro says {what} + 1.0 is {said}; JAX: {(x + 1.0).dtype}")
    return Verdict(holds and len(examples) == 2, "; ".join(wrong))


#: The intro's examples, asked of JAX as written: "`jnp.float16(1) + 1.0` stays float16",
#: "an int8 array `+ 1.0` is float32" -> (dtype, the dtype it says the sum has).
_SCALAR_EXAMPLE = re.compile(r"`jnp\.(\w+)\(1\) \+ 1\.0` stays (\w+)")
_ARRAY_EXAMPLE = re.compile(r"an (\w+) array `\+ 1\.0` is (\w+)")


@claims.claim(
    "sharp_bits.x64_truncates",
    N_(
        "With x64 off, float64 gives float32: with a warning when the dtype is asked for by "
        "name, without one for NumPy float64 data; under jax.enable_x64(True) both give float64 "
        "(this thread only)."
    ),
)
def _x64_truncates(_: None) -> Verdict:
    def names(dtypes: dict) -> str:
        return repr({k: str(d) for k, d in dtypes.items()})

    off = capture.run(_types.default_dtypes, describe=names)
    on = capture.run(_types.with_x64, describe=names)
    request, data = "'jnp.array(1.0, dtype=jnp.float64)': ", "'jnp.array(np.float64(1.0))': "
    # Each asked alone, so each warning is put down to the call that gave it.
    by_name = capture.run(lambda: jnp.array(1.0, dtype=jnp.float64))
    from_numpy = capture.run(lambda: jnp.array(np.float64(1.0)))
    warned = [any("truncated" in w for w in c.warnings) for c in (by_name, from_numpy)]
    holds = (
        all(what + "'float32'" in off.value for what in (request, data))
        and all(what + "'float64'" in on.value for what in (request, data))
        and warned == [True, False]
        and not jax.config.values["jax_enable_x64"]
    )
    return Verdict(
        holds,
        f"x64 off: {off.value} (warned by name, for NumPy data: {warned}); x64 on: {on.value}",
    )


@claims.claim(
    "sharp_bits.int32_wraps",
    N_(
        "jnp.int32(2**31 - 1) + 1 wraps around to -2**31 silently; jnp.array(2**40) raises "
        "OverflowError with x64 off."
    ),
)
def _int32_wraps(_: None) -> Verdict:
    wrapped = capture.run(_types.int32_wraps, describe=lambda v: str(int(v)))
    big = capture.run(_types.big_integer)
    holds = wrapped.value == str(-(2**31)) and not wrapped.warnings
    holds = holds and big.error_type == "OverflowError"
    return Verdict(holds, f"int32 max + 1 gave {wrapped.value}; 2**40 gave {big.error_type}")


# --- in-place updates and out-of-bounds indexing ----------------------------------------------


@claims.claim(
    "sharp_bits.immutable",
    N_("x[i] = v on a JAX array raises TypeError; .at[i].set leaves x as is."),
)
def _immutable(_: None) -> Verdict:
    assigned = capture.run(_updates.assign_in_place, 2, 1.0)
    x, y = _updates.at_set(2, 1.0)
    holds = assigned.error_type == "TypeError" and float(x[2]) == 2.0 and float(y[2]) == 1.0
    return Verdict(holds, f"x[2] = 1.0 gave {assigned.error_type or 'no error'}")


@claims.claim(
    "sharp_bits.repeated_add_accumulates",
    N_(
        "x.at[[i, i, i]].add(v) adds v three times (repeated indices accumulate), eagerly and "
        "under jit."
    ),
    cases=("eager", "jit"),
)
def _repeated_add(mode: str) -> Verdict:
    fn = _updates.at_add_repeated if mode == "eager" else jax.jit(_updates.at_add_repeated)
    _, y = fn(2, 1.5)
    return Verdict(float(y[2]) == 2.0 + 3 * 1.5, f"{mode}: x[2] went 2 → {float(y[2]):g}")


@claims.claim(
    "sharp_bits.at_copy_needs_ownership",
    N_(
        "Under jit, .at[i].set copies a plain argument first (a copy in the compiled HLO); an "
        "array made inside the function, or a donated argument, is updated in place (no copy)."
    ),
    cases=("argument", "donated", "inside"),
)
def _at_copy(case: str) -> Verdict:
    def update(x):
        return x.at[2].set(10.0)

    def inside(scale):
        return (jnp.arange(5.0) * scale).at[2].set(10.0)

    x = jnp.arange(5.0)
    if case == "inside":
        text = jax.jit(inside).lower(2.0).compile().as_text()
    else:
        donate = (0,) if case == "donated" else ()
        text = jax.jit(update, donate_argnums=donate).lower(x).compile().as_text()
    if text is None:
        raise RuntimeError("XLA gave no text of the compiled program to count copies in")
    copies = sum(" copy(" in line for line in text.splitlines())
    expected = 1 if case == "argument" else 0
    # The case's intro says which of the three is copied: the words are checked with the HLO.
    said = _AT_COPY_WORDS[case] in _updates.UPDATES.intro
    return Verdict(
        copies == expected and said,
        f"{case}: {copies} copy instruction(s) in the HLO; the intro "
        + ("says so" if said else f"does not say {_AT_COPY_WORDS[case]!r}"),
    )


#: What the In-place updates intro says of each case, checked beside the compiled program.
_AT_COPY_WORDS = {
    "argument": "a plain argument is copied first",
    "donated": "or a donated argument",
    "inside": "`x` made inside the function",
}


def observe_out_of_bounds(use: str, mode: str) -> str:
    """What JAX did with index 7 of a length-5 array (``use`` a key of ``OUT_OF_BOUNDS``):
    ``clamp``, ``drop``, ``fill``, ``raise`` or ``keep`` (in range after all)."""
    x = jnp.arange(5.0) * 10

    def read(x):
        return {
            "gather": lambda: x[7],
            "scatter": lambda: x.at[7].set(-1.0),
            "take": lambda: jnp.take(x, 7),
            "size-zero": lambda: jnp.zeros(0)[0],
            "static-checked": lambda: x[7],
        }[use]()

    run = jax.jit(read) if mode == "jit" else read
    checked = jax_private.check_static_indices(True) if use == "static-checked" else None
    if use == "static-checked" and checked is None:
        return "unknown (no jax_check_static_indices context here)"
    try:
        if checked is not None:
            with checked:
                got = np.asarray(run(x))
        else:
            got = np.asarray(run(x))
    except IndexError:
        return "raise"
    if use == "scatter":
        return "drop" if np.array_equal(got, np.asarray(x)) else "write"
    if np.isnan(got):
        return "fill"
    return "clamp" if float(got) == 40.0 else f"returned {float(got):g}"


def _rule_claim(use: str, key: str, statement: str) -> None:
    def check(mode: str) -> Verdict:
        seen = observe_out_of_bounds(use, mode)
        rule = _updates.OUT_OF_BOUNDS[use]
        return Verdict(seen == rule, f"{use} of index 7 of 5 ({mode}): JAX did {seen!r}")

    claims.claim(key, statement, cases=("eager", "jit"))(check)


_rule_claim(
    "gather",
    "sharp_bits.gather_clamps",
    "x[i] with a static index out of range clamps it into range, eagerly and under jit.",
)
_rule_claim(
    "scatter",
    "sharp_bits.scatter_drops",
    "x.at[i].set(v) drops a write out of range, eagerly and under jit.",
)
_rule_claim(
    "take",
    "sharp_bits.take_fills",
    "jnp.take defaults to mode='fill': NaN for an index out of range, not a clamped value.",
)
_rule_claim(
    "static-checked",
    "sharp_bits.static_indices_check",
    "With jax_check_static_indices on, a static index out of range raises IndexError.",
)


@claims.claim(
    "sharp_bits.size_zero_raises",
    "An integer index into a size-0 axis raises IndexError, eagerly and under jit (a static "
    "index or a traced one).",
    cases=("eager", "jit", "traced"),
)
def _size_zero_raises(mode: str) -> Verdict:
    """The intro's rule for a size-0 axis (:data:`_updates.OUT_OF_BOUNDS`) against JAX, for a
    static index eagerly and under jit, and for a traced one."""
    rule = _updates.OUT_OF_BOUNDS["size-zero"]
    if mode != "traced":
        seen = observe_out_of_bounds("size-zero", mode)
        return Verdict(seen == rule, f"jnp.zeros(0)[0] ({mode}): JAX did {seen!r}")
    try:
        got = jax.jit(lambda i: jnp.zeros(0)[i])(0)
        seen = f"returned {got!r}"
    except IndexError:
        seen = "raise"
    except Exception as err:  # another type is not what the sentence says
        seen = f"raised {type(err).__name__}"
    return Verdict(seen == rule, f"jnp.zeros(0)[i] with i traced: JAX did {seen!r}")


@claims.claim(
    "sharp_bits.take_along_axis_fills",
    N_("jnp.take_along_axis also defaults to filling an index out of range with NaN."),
)
def _take_along_axis(_: None) -> Verdict:
    got = float(jnp.take_along_axis(jnp.arange(5.0), jnp.array([7]), axis=0)[0])
    return Verdict(np.isnan(got), f"take_along_axis of index 7 of 5 gave {got:g}")


# --- NaNs --------------------------------------------------------------------------------------


def _scatter_modes(mode: str | None) -> list[str]:
    jaxpr = jax.make_jaxpr(lambda x: x.at[7].set(-1.0, mode=mode))(jnp.arange(5.0))
    return [str(e.params["mode"]) for e in jaxpr.eqns if e.primitive.name == "scatter"]


@claims.claim(
    "sharp_bits.updates_drop_by_default",
    N_(
        "An update without a mode (x.at[i].set(v)) is the same scatter as mode='drop' and "
        "mode='fill'; mode='clip' and mode='promise_in_bounds' make others."
    ),
)
def _updates_drop_by_default(_: None) -> Verdict:
    modes = {m: _scatter_modes(m) for m in (None, "drop", "fill", "clip", "promise_in_bounds")}
    default = modes[None]
    same = {m for m, seen in modes.items() if m is not None and seen == default}
    return Verdict(
        len(default) == 1 and same == {"drop", "fill"},
        "scatter modes in the jaxpr: "
        + ", ".join(f"{'none given' if m is None else repr(m)} {got}" for m, got in modes.items()),
    )


@claims.claim(
    "sharp_bits.where_nan_gradient",
    N_(
        "grad of jnp.where(x > 0, jnp.sqrt(x), 0.0) is NaN for x < 0 (0 × nan) and at 0 (0 × inf); "
        "the double where gives finite gradients there."
    ),
    cases=(-1.0, 0.0),
)
def _where_nan(x: float) -> Verdict:
    single = float(jax.grad(_nans.sqrt_or_zero)(x))
    double = float(jax.grad(_nans.sqrt_or_zero_safe)(x))
    return Verdict(
        np.isnan(single) and np.isfinite(double),
        f"at x = {x:g}: one where gave {single:g}, two gave {double:g}",
    )


def _lax_log_then_sqrt(v):
    return lax.sqrt(lax.log(v))


@claims.claim(
    "sharp_bits.debug_nans_reruns_once",
    N_(
        "With debug_nans, a jitted function whose output holds a NaN is re-run once, de-optimized; "
        "JAX prints one 'de-optimized' line for it and one more for each of jnp's own jitted "
        "functions (jnp.sqrt, jnp.log) that finds the NaN in the re-run; the error names the first "
        "operation that made a NaN."
    ),
    cases=(0.5, -1.0),
)
def _debug_nans(x: float) -> Verdict:
    calls = []

    def counted(v):
        calls.append(1)
        return _nans.log_then_sqrt(v)

    def with_check(fn):
        def run():
            with jax.debug_nans(True):
                return jax.jit(fn)(jnp.array([4.0, x]))

        return capture.run(run)

    jnp_run, lax_run = with_check(counted), with_check(_lax_log_then_sqrt)
    jnp_lines = jnp_run.stdout.count(_nans.DEOPTIMIZED)
    lax_lines = lax_run.stdout.count(_nans.DEOPTIMIZED)
    op = "sqrt" if x > 0 else "log"
    page = capture.run(_nans.with_debug_nans, x)
    sentence = _nans.explain_debug_nans("debug_nans", {"x": x}, page, None)
    holds = (
        "re-ran the function once" in sentence
        and "re-runs printed" not in sentence
        and page.stdout.count(_nans.DEOPTIMIZED) == jnp_lines
        and jnp_run.error_type == "FloatingPointError"
        and f"encountered in {op}" in jnp_run.message
        and len(calls) == 2  # traced once, re-run once
        and lax_lines == 1
        and jnp_lines == 2
        and not jax.config.values["jax_debug_nans"]
    )
    return Verdict(
        holds,
        f"x = {x:g}: the Python ran {len(calls)} times (one trace, then re-runs); "
        f"{jnp_lines} de-optimized lines with jnp ops, {lax_lines} with lax ops; "
        f"error: {jnp_run.message}; the page said: {sentence}",
    )


@claims.claim(
    "sharp_bits.checkify_reports",
    N_(
        "Under jit, an out-of-bounds read and a NaN raise nothing; checkify's index_checks and "
        "nan_checks report them in the error value."
    ),
)
def _checkify(_: None) -> Verdict:
    plain = capture.run(_nans.unchecked, -1.0, 5)
    index_error, _ = _nans.index_checked(1.0, 5)
    nan_error, _ = _nans.nan_checked(-1.0, 0)
    clean, _ = _nans.index_checked(1.0, 0)
    holds = (
        plain.ok
        and index_error is not None
        and "out-of-bounds" in index_error
        and nan_error is not None
        and "nan generated" in nan_error
        and clean is None
    )
    return Verdict(
        holds, f"unchecked: {plain.error_type or 'no error'}; {index_error}; {nan_error}"
    )


# --- printing and purity -----------------------------------------------------------------------


def _fresh_calls(transform: str, calls: int = 3, batch: int = 2) -> str:
    """What ``calls`` calls of a fresh copy of ``show_both`` under ``transform`` printed."""

    def run() -> None:
        fresh = compilation.fresh_function(_printing.show_both)
        f = {
            "eager": fresh,
            "jit": jax.jit(fresh),
            "vmap": jax.vmap(fresh),
            "jit_vmap": jax.jit(jax.vmap(fresh)),
        }[transform]
        xs = jnp.arange(float(batch))
        for _ in range(calls):
            f(xs)

    return capture.run(run).stdout


@claims.claim(
    "sharp_bits.print_at_trace",
    N_(
        "print runs on every eager call, but under jit only while tracing (once, showing a "
        "tracer); vmap alone traces on every call."
    ),
    cases=("eager", "jit", "vmap", "jit_vmap"),
)
def _print_at_trace(variant: str) -> Verdict:
    plain, _, tracers = _printing.count_lines(_fresh_calls(variant))
    expected = {"eager": (3, 0), "jit": (1, 1), "vmap": (3, 3), "jit_vmap": (1, 1)}[variant]
    return Verdict(
        (plain, tracers) == expected, f"{variant}: {plain} print lines, {tracers} with a tracer"
    )


@claims.claim(
    "sharp_bits.jit_reuses_trace",
    N_(
        "A new jax.jit wrapper of a function already traced for these shapes reuses the trace: its "
        "print does not run again."
    ),
)
def _jit_reuses_trace(_: None) -> Verdict:
    fresh = compilation.fresh_function(_printing.show_both)
    xs = jnp.arange(2.0)

    def twice() -> None:
        jax.jit(fresh)(xs)
        jax.jit(fresh)(xs)  # another wrapper, the same function

    plain, _debug, _tracers = _printing.count_lines(capture.run(twice).stdout)
    return Verdict(plain == 1, f"two jax.jit wrappers of one function printed {plain} lines")


@claims.claim(
    "sharp_bits.debug_print_every_call",
    N_("jax.debug.print prints on every call, one line per batch element under vmap."),
    cases=("eager", "jit", "vmap", "jit_vmap"),
)
def _debug_print(variant: str) -> Verdict:
    _, debug, _ = _printing.count_lines(_fresh_calls(variant))
    expected = 3 if variant in ("eager", "jit") else 6
    return Verdict(debug == expected, f"{variant}: {debug} debug.print lines over 3 calls of 2")


@claims.claim(
    "sharp_bits.side_effect_at_trace",
    N_("A Python side effect in a jitted function runs once, while tracing, not on every call."),
)
def _side_effect(_: None) -> Verdict:
    got = _purity.append_under_jit(3)
    return Verdict(got == {"eager appends": 3, "jit appends": 1}, f"appends: {got}")


@claims.claim(
    "sharp_bits.global_baked_in",
    N_(
        "jit reads a global once, at trace time, and bakes it in; a value passed as an argument is "
        "seen on every call, and a new value of the same type reuses the compiled program."
    ),
)
def _global_baked(_: None) -> Verdict:
    read = _purity.read_a_global(3)["f(1.0) at each call"]
    passed = _purity.pass_it_in(3)["f(1.0, scale) at each call"]

    @jax.jit
    def scaled(x, scale):
        return x * scale

    for scale in (1.0, 2.0, 3.0):
        scaled(jnp.float32(1.0), scale)
    programs = jax_private.cache_size(scaled)
    holds = read == [1.0, 1.0, 1.0] and passed == [1.0, 2.0, 3.0] and programs in (1, None)
    return Verdict(holds, f"global: {read}; argument: {passed}; programs: {programs}")

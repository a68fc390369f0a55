"""In-place updates and out-of-bounds indexing: JAX arrays are immutable, and an index out of
range usually does not raise.

``x[i] = v`` raises ``TypeError``: a JAX array cannot change. ``x.at[i].set(v)`` (and ``add``,
``min``, …) returns a new array instead. Under ``jit`` XLA does the update in place only when it
owns the buffer: for an array made inside the function, or a donated argument; a plain argument
is copied first (the compiled HLO starts with a ``copy``). A compiled program cannot stop to raise
for a traced index, so JAX defines what happens: ``x[i]`` and ``.at[i].get()`` clamp the index
into range, a write (scatter) is dropped, ``jnp.take`` and ``take_along_axis`` fill with NaN, and
``mode=`` chooses otherwise. Three exceptions raise ``IndexError``: any index into a size-0 axis
(eagerly and under ``jit``), and, with ``jax_check_static_indices`` on, a static index (a Python
int) out of range. NumPy raises ``IndexError`` for every index out of range.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxplay.core import capture, claims
from jaxplay.sharp_bits._case import Case, Param, Variant

#: Length of the demo array (its positions are 0 to SIZE - 1, or -SIZE to -1).
SIZE = 5


def assign_in_place(index, value):
    x = jnp.arange(5.0)
    x[index] = value
    return x


def at_set(index, value):
    x = jnp.arange(5.0)
    y = x.at[index].set(value)
    return x, y


def at_add(index, value):
    x = jnp.arange(5.0)
    y = x.at[index].add(value)
    return x, y


def at_add_repeated(index, value):
    x = jnp.arange(5.0)
    y = x.at[jnp.array([index, index, index])].add(value)
    return x, y


def at_min(index, value):
    x = jnp.arange(5.0)
    y = x.at[index].min(value)
    return x, y


def at_set_clip(index, value):
    x = jnp.arange(5.0)
    y = x.at[index].set(value, mode="clip")
    return x, y


def at_set_drop(index, value):
    x = jnp.arange(5.0)
    y = x.at[index].set(value, mode="drop")
    return x, y


#: What JAX does with an index out of range, by the way it is used (the page's rule, checked
#: against JAX eagerly and under ``jit`` by the ``sharp_bits`` claims of the same names).
OUT_OF_BOUNDS = {
    "gather": "clamp",  # x[i], x.at[i].get()
    "scatter": "drop",  # x.at[i].set(v)
    "take": "fill",  # jnp.take, jnp.take_along_axis: NaN for floats
    "size-zero": "raise",  # any index into a size-0 axis: IndexError
    "static-checked": "raise",  # a static index with jax_check_static_indices on
}


#: How the intro says each rule of :data:`OUT_OF_BOUNDS`.
_DOES = {
    "clamp": "**clamps** the index",
    "drop": "are **dropped**",
    "fill": "**fills** with NaN",
    "raise": "raises",
}


@claims.states(
    "sharp_bits.gather_clamps",
    "sharp_bits.scatter_drops",
    "sharp_bits.take_fills",
    "sharp_bits.size_zero_raises",
    "sharp_bits.static_indices_check",
)
def bounds_intro() -> str:
    """The out-of-bounds case's intro, written from :data:`OUT_OF_BOUNDS` (so the claims that
    check the table against JAX check these words)."""
    rule = {use: _DOES[what] for use, what in OUT_OF_BOUNDS.items()}
    raising = [use for use, what in OUT_OF_BOUNDS.items() if what == "raise"]
    when = {
        "size-zero": "for any index into a size-0 axis",
        "static-checked": "for a static index out of range when `jax_check_static_indices` is on",
    }
    return (
        "A compiled program cannot stop to raise an `IndexError`, so for an index out of range "
        f"JAX usually does not raise: `x[i]` {rule['gather']}, writes (scatters) "
        f"{rule['scatter']}, and `jnp.take` {rule['take']}. It does raise "
        + " and ".join(when[use] for use in raising)
        + ". `x = jnp.arange(5.0) * 10`, so each value tells its position."
    )


def in_bounds(index: int, size: int = SIZE) -> bool:
    """Whether NumPy accepts ``index`` for an array of ``size`` (negative ones count back)."""
    return -size <= index < size


def changes(x: Any, y: Any) -> list[tuple[int, float, float]]:
    """``(position, before, after)`` for each element where ``y`` differs from ``x``."""
    before, after = np.asarray(x), np.asarray(y)
    return [(int(i), float(before[i]), float(after[i])) for i in np.flatnonzero(before != after)]


@claims.states_nothing("lists the differences between two arrays JAX returned")
def describe_changes(x: Any, y: Any) -> str:
    found = changes(x, y)
    if not found:
        return "no element of the result differs from `x`"
    parts = [f"position {i}: {a:g} → {b:g}" for i, a, b in found]
    return "the result differs from `x` at " + "; ".join(parts)


@claims.states_nothing("where an index falls in x: NumPy's bounds, the visitor's number")
def _where(index: int) -> str:
    if in_bounds(index):
        return f"Index {index} is in bounds"
    return f"Index {index} is out of bounds (positions 0 to {SIZE - 1}, or {-SIZE} to -1)"


@claims.states("sharp_bits.immutable", "sharp_bits.repeated_add_accumulates")
def explain_updates(
    variant: str, params: Mapping[str, Any], outcome: capture.Outcome, value: Any
) -> str:
    index, new = params["index"], params["value"]
    if value is None:
        return f"`x[{index}] = {new:g}` raised {outcome.error_type}: a JAX array cannot change."
    x, y = value
    unchanged = bool(np.array_equal(np.asarray(x), np.arange(SIZE, dtype=np.float32)))
    sentence = f"{_where(index)}: {describe_changes(x, y)}"
    if variant == "add-repeated":
        found = changes(x, y)
        if found:
            i, a, b = found[0]
            sentence += f" (added {(b - a) / new:g} × {new:g}: repeated indices accumulate)"
    return sentence + ("; `x` itself is unchanged." if unchanged else "; `x` changed.")


def gather(index):
    x = jnp.arange(5.0) * 10
    return x[index]


def numpy_gather(index):
    x = np.arange(5.0) * 10
    return x[index]


def scatter(index):
    x = jnp.arange(5.0) * 10
    return x.at[index].set(-1.0)


def gather_fill(index):
    x = jnp.arange(5.0) * 10
    return x.at[index].get(mode="fill", fill_value=jnp.nan)


def take(index):
    x = jnp.arange(5.0) * 10
    return jnp.take(x, index)


def size_zero(index):
    x = jnp.zeros(0)
    return x[index]


@claims.states("sharp_bits.gather_clamps", "sharp_bits.scatter_drops", "sharp_bits.take_fills")
def explain_bounds(
    variant: str, params: Mapping[str, Any], outcome: capture.Outcome, value: Any
) -> str:
    index = params["index"]
    if value is None:
        if variant == "size-zero":
            return claims.qualify(
                "sharp_bits.size_zero_raises",
                f"`x[{index}]` on an array of size 0 raised {outcome.error_type}: JAX checks an "
                "index into a size-0 axis (there is no element to clamp to), eagerly and under "
                "`jit`.",
            )
        return f"{_where(index)}: NumPy raised {outcome.error_type}."
    if variant == "scatter":
        x = np.arange(SIZE, dtype=np.float32) * 10
        return f"{_where(index)}: {describe_changes(x, value)}" + (
            ": JAX dropped the out-of-bounds write." if not changes(x, value) else "."
        )
    got = float(np.asarray(value))
    if np.isnan(got):
        if variant == "take":
            return claims.qualify(
                "sharp_bits.take_fills",
                f"{_where(index)}: `jnp.take` returned nan: its default `mode` is 'fill', "
                "not clamping.",
            )
        return f"{_where(index)}: the read returned nan, the `fill_value`."
    position = int(got // 10)
    read = {"take": f"jnp.take(x, {index})", "fill": f"x.at[{index}].get(mode='fill')"}
    sentence = (
        f"{_where(index)}: `{read.get(variant, f'x[{index}]')}` returned {got:g}, the value at "
        f"position {position}"
    )
    if not in_bounds(index) and variant != "numpy":
        return claims.qualify(
            "sharp_bits.gather_clamps",
            sentence + ": JAX clamped the index into range instead of raising (with "
            "`jax_check_static_indices` on, this static index would raise `IndexError`).",
        )
    return sentence + "."


_OUT = "index out of bounds"

UPDATES = Case(
    key="updates",
    title="In-place updates",
    intro=(
        "JAX arrays are **immutable**: `x[i] = v` raises. The `.at[]` methods return an "
        "updated copy instead (`set`, `add`, `multiply`, `min`, `max`, `get`). Under `jit` XLA "
        "makes the copy disappear only when it owns `x`'s buffer: `x` made inside the function, "
        "or a donated argument (`donate_argnums`); a plain argument is copied first."
    ),
    params=(
        Param("index", "Index", 2, -8, 8),
        Param("value", "Value", 10.0, -10.0, 10.0, 0.5),
    ),
    variants=(
        Variant(
            "assign",
            "x[i] = v (as in NumPy)",
            assign_in_place,
            note="NumPy habits fail loudly here, which is the good kind of failure.",
            raises="TypeError",
        ),
        Variant("set", ".at[i].set(v)", at_set, note="A new array; `x` is untouched."),
        Variant("add", ".at[i].add(v)", at_add),
        Variant(
            "add-repeated",
            ".at[[i, i, i]].add(v)",
            at_add_repeated,
            note="Unlike NumPy's `x[idx] += v`, repeated indices accumulate in `.add`.",
        ),
        Variant("min", ".at[i].min(v)", at_min, note="Keeps the smaller of `x[i]` and `v`."),
        Variant(
            "clip",
            ".at[i].set(v, mode='clip')",
            at_set_clip,
            note="`mode='clip'` moves an out-of-bounds index to the nearest end.",
        ),
        Variant(
            "drop",
            ".at[i].set(v, mode='drop')",
            at_set_drop,
            note="`mode='drop'` ignores out-of-bounds updates (the default for scatters).",
        ),
    ),
    explain=explain_updates,
)

BOUNDS = Case(
    key="bounds",
    title="Out-of-bounds indexing",
    intro=bounds_intro(),
    params=(Param("index", "Index", 7, -12, 12),),
    variants=(
        Variant("gather", "x[i] (JAX)", gather, note="Out of bounds, the read is clamped."),
        Variant(
            "numpy",
            "x[i] (NumPy)",
            numpy_gather,
            note="NumPy checks every index and raises.",
            raises="IndexError",
            raises_when=lambda p: not in_bounds(p["index"]),
        ),
        Variant(
            "scatter", "x.at[i].set(-1.0)", scatter, note="Out of bounds, the write is dropped."
        ),
        Variant(
            "fill",
            "x.at[i].get(mode='fill', fill_value=nan)",
            gather_fill,
            note="Ask for a fill value to see out-of-bounds reads instead of clamped ones.",
        ),
        Variant(
            "take",
            "jnp.take(x, i)",
            take,
            note="`jnp.take` and `jnp.take_along_axis` default to `mode='fill'`: NaN out of "
            "bounds, not a clamped value.",
        ),
        Variant(
            "size-zero",
            "x[i] on a size-0 array",
            size_zero,
            note="With no element to clamp to, JAX raises, eagerly and under `jit`.",
            raises="IndexError",
        ),
    ),
    explain=explain_bounds,
    imports="import jax\nimport jax.numpy as jnp\nimport numpy as np\n",
)

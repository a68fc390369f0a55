"""In-place updates and out-of-bounds indexing: JAX arrays are immutable, and an index out of
range usually does not raise.

``x[i] = v`` raises ``TypeError``: a JAX array cannot change. ``x.at[i].set(v)`` (and ``add``,
``min``, …) returns a new array instead. Under ``jit`` XLA does the update in place only when it
owns the buffer: for an array made inside the function, or a donated argument; a plain argument
is copied first (the compiled HLO starts with a ``copy``). A compiled program cannot stop to raise
for a traced index, so JAX defines what happens: ``x[i]`` and ``.at[i].get()`` clamp the index
into range, a write (scatter) is dropped, ``jnp.take`` and ``take_along_axis`` fill with NaN, and
``mode=`` chooses otherwise. Three exceptions raise ``IndexError``: an integer index into a size-0
axis (eagerly and under ``jit``; an array of indices raises ``TypeError`` there), and, with
``jax_check_static_indices`` on, a static index (a Python int) out of range. NumPy raises
``IndexError`` for every index out of range.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxplay.core import capture, claims
from jaxplay.core.i18n import N_, _
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
    "size-zero": "raise",  # an integer index into a size-0 axis: IndexError
    "static-checked": "raise",  # a static index with jax_check_static_indices on
}


#: How the intro says each rule of :data:`OUT_OF_BOUNDS` (English; translated where written).
_DOES = {
    "clamp": N_("**clamps** the index"),
    "drop": N_("are **dropped**"),
    "fill": N_("**fills** with NaN"),
    "raise": N_("raises"),
}
#: When an index out of range does raise, by the rules of :data:`OUT_OF_BOUNDS` that raise.
_RAISES_WHEN = {
    "size-zero": N_("for an integer index into a size-0 axis"),
    "static-checked": N_("for a static index out of range when `jax_check_static_indices` is on"),
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
    check the table against JAX check these words), in the visitor's language (English at
    import time: :data:`BOUNDS`'s ``intro``)."""
    rule = {use: _(_DOES[what]) for use, what in OUT_OF_BOUNDS.items()}
    raising = [_(_RAISES_WHEN[use]) for use, what in OUT_OF_BOUNDS.items() if what == "raise"]
    when = raising[0] if raising else ""
    for later in raising[1:]:
        when = _("{earlier} and {later}").format(earlier=when, later=later)
    return _(
        "A compiled program cannot stop to raise an `IndexError`, so for an index out of range "
        "JAX usually does not raise: `x[i]` {gather}, writes (scatters) {scatter}, and "
        "`jnp.take` {take}. It does raise {when}. `x = jnp.arange(5.0) * 10`, so each value "
        "tells its position."
    ).format(gather=rule["gather"], scatter=rule["scatter"], take=rule["take"], when=when)


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
        return _("no element of the result differs from `x`")
    parts = [
        _("position {position}: {before} → {after}").format(
            position=i, before=f"{a:g}", after=f"{b:g}"
        )
        for i, a, b in found
    ]
    return _("the result differs from `x` at {positions}").format(positions=_("; ").join(parts))


@claims.states_nothing("where an index falls in x: NumPy's bounds, the visitor's number")
def _where(index: int) -> str:
    if in_bounds(index):
        return _("Index {index} is in bounds").format(index=index)
    return _("Index {index} is out of bounds (positions 0 to {last}, or {first} to -1)").format(
        index=index, last=SIZE - 1, first=-SIZE
    )


@claims.states("sharp_bits.immutable", "sharp_bits.repeated_add_accumulates")
def explain_updates(
    variant: str, params: Mapping[str, Any], outcome: capture.Outcome, value: Any
) -> str:
    index, new = params["index"], params["value"]
    if value is None:
        return _("`x[{index}] = {value}` raised {error}: a JAX array cannot change.").format(
            index=index, value=f"{new:g}", error=outcome.error_type
        )
    x, y = value
    unchanged = bool(np.array_equal(np.asarray(x), np.arange(SIZE, dtype=np.float32)))
    sentence = _("{where}: {changes}").format(where=_where(index), changes=describe_changes(x, y))
    if variant == "add-repeated":
        found = changes(x, y)
        if found:
            i, a, b = found[0]
            sentence += _(" (added {times} × {value}: repeated indices accumulate)").format(
                times=f"{(b - a) / new:g}", value=f"{new:g}"
            )
    return sentence + (_("; `x` itself is unchanged.") if unchanged else _("; `x` changed."))


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
                _(
                    "`x[{index}]` on an array of size 0 raised {error}: JAX checks an integer "
                    "index into a size-0 axis (there is no element to clamp to), eagerly and "
                    "under `jit`."
                ).format(index=index, error=outcome.error_type),
            )
        return _("{where}: NumPy raised {error}.").format(
            where=_where(index), error=outcome.error_type
        )
    if variant == "scatter":
        x = np.arange(SIZE, dtype=np.float32) * 10
        sentence = _("{where}: {changes}").format(
            where=_where(index), changes=describe_changes(x, value)
        )
        return sentence + (
            _(": JAX dropped the out-of-bounds write.") if not changes(x, value) else _(".")
        )
    got = float(np.asarray(value))
    if np.isnan(got):
        if variant == "take":
            return claims.qualify(
                "sharp_bits.take_fills",
                _(
                    "{where}: `jnp.take` returned nan: its default `mode` is 'fill', not clamping."
                ).format(where=_where(index)),
            )
        return _("{where}: the read returned nan, the `fill_value`.").format(where=_where(index))
    position = int(got // 10)
    read = {"take": f"jnp.take(x, {index})", "fill": f"x.at[{index}].get(mode='fill')"}
    sentence = _("{where}: `{read}` returned {value}, the value at position {position}").format(
        where=_where(index),
        read=read.get(variant, f"x[{index}]"),
        value=f"{got:g}",
        position=position,
    )
    if not in_bounds(index) and variant != "numpy":
        return claims.qualify(
            "sharp_bits.gather_clamps",
            sentence
            + _(
                ": JAX clamped the index into range instead of raising (with "
                "`jax_check_static_indices` on, this static index would raise `IndexError`)."
            ),
        )
    return sentence + _(".")


_OUT = "index out of bounds"

UPDATES = Case(
    key="updates",
    title=N_("In-place updates"),
    intro=N_(
        "JAX arrays are **immutable**: `x[i] = v` raises. The `.at[]` methods `set`, `add`, "
        "`multiply`, `min` and `max` return an updated copy instead (`get` reads, with the same "
        "index modes). Under `jit` XLA "
        "makes the copy disappear only when it owns `x`'s buffer: `x` made inside the function, "
        "or a donated argument (`donate_argnums`); a plain argument is copied first."
    ),
    params=(
        Param("index", N_("Index"), 2, -8, 8),
        Param("value", N_("Value"), 10.0, -10.0, 10.0, 0.5),
    ),
    variants=(
        Variant(
            "assign",
            N_("x[i] = v (as in NumPy)"),
            assign_in_place,
            note=N_("NumPy habits fail loudly here, which is the good kind of failure."),
            raises="TypeError",
        ),
        Variant("set", ".at[i].set(v)", at_set, note=N_("A new array; `x` is untouched.")),
        Variant("add", ".at[i].add(v)", at_add),
        Variant(
            "add-repeated",
            ".at[[i, i, i]].add(v)",
            at_add_repeated,
            note=N_("Unlike NumPy's `x[idx] += v`, repeated indices accumulate in `.add`."),
        ),
        Variant("min", ".at[i].min(v)", at_min, note=N_("Keeps the smaller of `x[i]` and `v`.")),
        Variant(
            "clip",
            ".at[i].set(v, mode='clip')",
            at_set_clip,
            note=N_("`mode='clip'` moves an out-of-bounds index to the nearest end."),
        ),
        Variant(
            "drop",
            ".at[i].set(v, mode='drop')",
            at_set_drop,
            note=N_(
                "`mode='drop'` ignores out-of-bounds updates. It is already what an update does "
                "without a mode (the same scatter in the jaxpr), so writing it only says so; "
                "`mode='promise_in_bounds'` is the one that promises every index is in range."
            ),
        ),
    ),
    explain=explain_updates,
)

BOUNDS = Case(
    key="bounds",
    title=N_("Out-of-bounds indexing"),
    intro=bounds_intro(),
    intro_text=bounds_intro,
    params=(Param("index", N_("Index"), 7, -12, 12),),
    variants=(
        Variant("gather", "x[i] (JAX)", gather, note=N_("Out of bounds, the read is clamped.")),
        Variant(
            "numpy",
            "x[i] (NumPy)",
            numpy_gather,
            note=N_("NumPy checks every index and raises."),
            raises="IndexError",
            raises_when=lambda p: not in_bounds(p["index"]),
        ),
        Variant(
            "scatter", "x.at[i].set(-1.0)", scatter, note=N_("Out of bounds, the write is dropped.")
        ),
        Variant(
            "fill",
            "x.at[i].get(mode='fill', fill_value=nan)",
            gather_fill,
            note=N_("Ask for a fill value to see out-of-bounds reads instead of clamped ones."),
        ),
        Variant(
            "take",
            "jnp.take(x, i)",
            take,
            note=N_(
                "`jnp.take` and `jnp.take_along_axis` default to `mode='fill'`: NaN out of "
                "bounds, not a clamped value."
            ),
        ),
        Variant(
            "size-zero",
            N_("x[i] on a size-0 array"),
            size_zero,
            note=N_("With no element to clamp to, JAX raises, eagerly and under `jit`."),
            raises="IndexError",
        ),
    ),
    explain=explain_bounds,
    imports="import jax\nimport jax.numpy as jnp\nimport numpy as np\n",
)

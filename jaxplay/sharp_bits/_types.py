"""Types: float64 off by default, integer overflow, type promotion and weak types.

JAX computes in 32 bits unless ``jax_enable_x64`` is on: float64 becomes float32, with a warning
when the dtype is asked for by name and silently for NumPy float64 data, and a Python integer too
big for int32 is refused. Here x64 is switched on
only through the ``jax.enable_x64(True)`` context manager, for the calling thread, so the server's
setting is untouched. A Python scalar is **weakly typed**: it takes the type of the array it meets
unless it is of a higher kind (``jnp.float16(1) + 1.0`` and ``+ 1`` stay float16, ``int8 + 1``
stays int8; an int8 array ``+ 1.0`` is float32). A NumPy or JAX scalar has a type of
its own. Passed as an argument to a traced function, a Python float is a weakly typed float32, and
the jaxpr shows the ``convert_element_type`` JAX adds: for a floating array it converts the float
to the array's dtype; for an integer array it converts the *array* to a weakly typed float32 and
uses the float as is (:data:`CONVERTED`, checked against the jaxpr by
``sharp_bits.weak_float_convert``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxplay.core import capture, claims, markdown
from jaxplay.core.i18n import N_, _, ngettext
from jaxplay.sharp_bits._case import Case, Param, Variant

DTYPES = ("float16", "bfloat16", "float32", "int8", "int32")

#: In ``x * y`` with ``y`` a Python float argument, which operand the jaxpr converts, by x's kind:
#: the float to x's dtype when x is floating; x itself to a weak float32 when x is an integer.
CONVERTED = {"floating": "y", "integer": "x"}
#: What ``x + 1.0`` (a weakly typed Python float) comes out as, by x's kind.
PLUS_FLOAT = {"floating": "x's dtype", "integer": "float32"}


@claims.states("sharp_bits.weak_float_convert")
def convert_note() -> str:
    """The jaxpr variant's note, written from :data:`CONVERTED` (so the claim that checks the
    table against the jaxpr checks these words), in the visitor's language (English at import
    time: the variant's ``note``)."""
    what = {
        "y": _("converts the float to x's dtype"),
        "x": _("converts x itself to a weakly typed float32 and uses the float as is"),
    }
    return _(
        "A Python float passed as an argument is traced as a weakly typed float32. With a "
        "floating x the jaxpr {floating}; with an integer x it {integer}."
    ).format(floating=what[CONVERTED["floating"]], integer=what[CONVERTED["integer"]])


def kind(dtype: Any) -> str:
    """``"floating"`` or ``"integer"``: the kind a weak scalar must share to take x's type."""
    return "floating" if jnp.issubdtype(jnp.dtype(dtype), jnp.floating) else "integer"


def default_dtypes():
    return {
        "jnp.array(1.0)": jnp.array(1.0).dtype,
        "jnp.array(np.float64(1.0))": jnp.array(np.float64(1.0)).dtype,
        "jnp.array(1.0, dtype=jnp.float64)": jnp.array(1.0, dtype=jnp.float64).dtype,
        "jnp.arange(3)": jnp.arange(3).dtype,
    }


def with_x64():
    with jax.enable_x64(True):  # this thread only
        return default_dtypes()


def big_integer():
    return jnp.array(2**40)


def int32_wraps():
    return jnp.int32(2**31 - 1) + 1


@claims.states("sharp_bits.x64_truncates", "sharp_bits.int32_wraps")
def explain_x64(
    variant: str, params: Mapping[str, Any], outcome: capture.Outcome, value: Any
) -> str:
    if value is None:
        return _("`jnp.array(2**40)` raised {error}: {message}").format(
            error=outcome.error_type, message=markdown.code(outcome.message.strip())
        )
    if variant == "wraps":
        return _(
            "`jnp.int32(2**31 - 1) + 1` returned {value}: a fixed-width integer wraps around "
            "silently (Python's own integers never overflow)."
        ).format(value=int(value))
    dtypes = {k: str(v) for k, v in value.items()}
    warned = sum("truncated" in w for w in outcome.warnings)
    sentence = ngettext(
        "`jnp.array(1.0, dtype=jnp.float64)` came out as {dtype} and "
        "`jnp.array(np.float64(1.0))` as {numpy_dtype}, with {n} warning about a truncated "
        "dtype between them; the defaults are {default_float} and {default_int}.",
        "`jnp.array(1.0, dtype=jnp.float64)` came out as {dtype} and "
        "`jnp.array(np.float64(1.0))` as {numpy_dtype}, with {n} warnings about a truncated "
        "dtype between them; the defaults are {default_float} and {default_int}.",
        warned,
    ).format(
        dtype=dtypes["jnp.array(1.0, dtype=jnp.float64)"],
        numpy_dtype=dtypes["jnp.array(np.float64(1.0))"],
        n=warned,
        default_float=dtypes["jnp.array(1.0)"],
        default_int=dtypes["jnp.arange(3)"],
    )
    return sentence + (
        _(" This server's global `jax_enable_x64` is on after the run.")
        if jax.config.values["jax_enable_x64"]
        else _(" This server's global `jax_enable_x64` is off after the run.")
    )


def promotion(dtype):
    x = jnp.ones(3, dtype)
    return {
        "x": x.dtype,
        "x + 1": (x + 1).dtype,
        "x + 1.0": (x + 1.0).dtype,
        "x + jnp.float32(1.0)": (x + jnp.float32(1.0)).dtype,
        "x + np.float64(1.0)": (x + np.float64(1.0)).dtype,
        "x + jnp.ones(3, jnp.float32)": (x + jnp.ones(3, jnp.float32)).dtype,
    }


def multiply_add(x, y):
    return x * y + 1


def jaxpr_with_python_float(dtype):
    x = jnp.ones(3, dtype)
    # y: a Python float, then a float32 array
    weak = jax.make_jaxpr(multiply_add)(x, 2.0)
    strong = jax.make_jaxpr(multiply_add)(x, jnp.float32(2.0))
    return {"y = 2.0": weak, "y = jnp.float32(2.0)": strong}


def count_converts(jaxpr: Any) -> tuple[int, int]:
    """Equations of a closed jaxpr, and how many of them are ``convert_element_type``."""
    eqns = jaxpr.jaxpr.eqns
    return len(eqns), sum(e.primitive.name == "convert_element_type" for e in eqns)


def converts(jaxpr: Any, names: tuple[str, ...] = ("x", "y")) -> list[tuple[str, str, bool]]:
    """Each ``convert_element_type`` of the jaxpr's inputs: ``(input name, new dtype, weak)``."""
    inputs = dict(zip(jaxpr.jaxpr.invars, names, strict=False))
    return [
        (inputs[e.invars[0]], jnp.dtype(e.params["new_dtype"]).name, bool(e.params["weak_type"]))
        for e in jaxpr.jaxpr.eqns
        if e.primitive.name == "convert_element_type" and e.invars[0] in inputs
    ]


@claims.states_nothing("writes out the converts the jaxpr JAX made holds")
def _convert_words(found: list[tuple[str, str, bool]]) -> str:
    if not found:
        return _("no input is converted")
    said = {"x": _("x (the array)"), "y": _("y (the Python float)")}
    return _("; ").join(
        (
            _("{input} is converted to a weakly typed {dtype}")
            if weak
            else _("{input} is converted to {dtype}")
        ).format(input=said[name], dtype=dtype)
        for name, dtype, weak in found
    )


@claims.states("sharp_bits.weak_float_convert", "sharp_bits.weak_same_kind")
def explain_weak(
    variant: str, params: Mapping[str, Any], outcome: capture.Outcome, value: Any
) -> str:
    dtype = params["dtype"]
    if value is None:
        return _("It raised {error}.").format(error=outcome.error_type)
    if variant == "jaxpr":
        weak, strong = value.values()
        (n_weak, c_weak), (n_strong, c_strong) = count_converts(weak), count_converts(strong)
        return claims.qualify(
            "sharp_bits.weak_float_convert",
            _(
                "With x of {dtype}: y = 2.0 (a Python float, a weakly typed float32 argument) "
                "gives {n_weak} equations, {c_weak} of them `convert_element_type`: "
                "{weak_converts}. y = jnp.float32(2.0) gives {n_strong}, {c_strong} converting: "
                "{strong_converts}."
            ).format(
                dtype=dtype,
                n_weak=n_weak,
                c_weak=c_weak,
                weak_converts=_convert_words(converts(weak)),
                n_strong=n_strong,
                c_strong=c_strong,
                strong_converts=_convert_words(converts(strong)),
            ),
        )
    got = {k: str(v) for k, v in value.items()}
    if got["x + 1.0"] == got["x"]:
        how = _("the weakly typed Python float took x's type: both are floating")
    else:
        how = _(
            "a weakly typed float takes x's type only within the same kind: an integer array "
            "and a Python float give {dtype}"
        ).format(dtype=got["x + 1.0"])
    return claims.qualify(
        "sharp_bits.weak_same_kind",
        _(
            "x is {x}: `x + 1.0` is {plus_float} ({how}), `x + jnp.float32(1.0)` is "
            "{plus_float32}, `x + np.float64(1.0)` is {plus_float64} and `x + 1` is {plus_int}."
        ).format(
            x=got["x"],
            plus_float=got["x + 1.0"],
            how=how,
            plus_float32=got["x + jnp.float32(1.0)"],
            plus_float64=got["x + np.float64(1.0)"],
            plus_int=got["x + 1"],
        ),
    )


X64 = Case(
    key="x64",
    title=N_("float64 & overflow"),
    intro=N_(
        "JAX uses 32-bit types unless x64 is enabled: float64 becomes float32, with a warning "
        "when the dtype is asked for by name (`dtype=jnp.float64`) and silently for NumPy "
        "float64 data, and a Python integer given no dtype must fit in int32."
    ),
    params=(),
    variants=(
        Variant("default", N_("x64 off (the default)"), default_dtypes),
        Variant(
            "x64",
            N_("with jax.enable_x64(True)"),
            with_x64,
            (default_dtypes,),
            note=N_("A context manager: this thread only, restored on exit."),
        ),
        Variant("overflow", "jnp.array(2**40)", big_integer, raises="OverflowError"),
        Variant("wraps", "jnp.int32(2**31 - 1) + 1", int32_wraps),
    ),
    explain=explain_x64,
    imports="import jax\nimport jax.numpy as jnp\nimport numpy as np\n",
)

WEAK = Case(
    key="weak",
    title=N_("Weak types"),
    intro=N_(
        "A Python scalar has no dtype of its own: it is **weakly typed** and takes the type of "
        "the array it meets unless it is of a higher kind (a float meeting integers), so "
        "`jnp.float16(1) + 1.0` stays float16, as does `+ 1`, and an int8 array `+ 1` stays "
        "int8, but an int8 array `+ 1.0` is float32. "
        "NumPy and JAX scalars are strongly typed and promote by JAX's type lattice."
    ),
    # float16, not float32: with float32 every row reads float32 and the gotcha never shows.
    params=(Param("dtype", N_("dtype of x"), "float16", options=DTYPES),),
    variants=(
        Variant("promotion", N_("What x + scalar becomes"), promotion),
        Variant(
            "jaxpr",
            N_("The convert a Python float makes"),
            jaxpr_with_python_float,
            (multiply_add,),
            note=convert_note(),
            note_text=convert_note,
        ),
    ),
    explain=explain_weak,
    imports="import jax\nimport jax.numpy as jnp\nimport numpy as np\n",
)

"""Types: float64 off by default, integer overflow, type promotion and weak types.

JAX computes in 32 bits unless ``jax_enable_x64`` is on: a request for float64 is truncated to
float32 with a warning, and a Python integer too big for int32 is refused. Here x64 is switched on
only through the ``jax.enable_x64(True)`` context manager, for the calling thread, so the server's
setting is untouched. A Python scalar is **weakly typed**: it takes the type of the array it meets
(``jnp.float16(1) + 1.0`` stays float16), while a NumPy or JAX scalar has a type of its own. Passed
as an argument to a traced function, a Python float is a weakly typed float32, and the jaxpr shows
the ``convert_element_type`` that strips the weak type before it meets a strongly typed array.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxplay.core import capture, markdown
from jaxplay.sharp_bits._case import Case, Param, Variant

DTYPES = ("float16", "bfloat16", "float32", "int8", "int32")


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


def explain_x64(
    variant: str, params: Mapping[str, Any], outcome: capture.Outcome, value: Any
) -> str:
    if value is None:
        return (
            f"`jnp.array(2**40)` raised {outcome.error_type}: "
            f"{markdown.code(outcome.message.strip())}"
        )
    if variant == "wraps":
        return (
            f"`jnp.int32(2**31 - 1) + 1` returned {int(value)}: a fixed-width integer wraps "
            "around silently (Python's own integers never overflow)."
        )
    dtypes = {k: str(v) for k, v in value.items()}
    warned = sum("truncated" in w for w in outcome.warnings)
    flag = "on" if jax.config.jax_enable_x64 else "off"
    return (
        f"`jnp.array(1.0, dtype=jnp.float64)` came out as "
        f"{dtypes['jnp.array(1.0, dtype=jnp.float64)']}, with {warned} warning"
        f"{'s' * (warned != 1)} about a truncated dtype; the defaults are "
        f"{dtypes['jnp.array(1.0)']} and {dtypes['jnp.arange(3)']}. This server's global "
        f"`jax_enable_x64` is {flag} after the run."
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


def explain_weak(
    variant: str, params: Mapping[str, Any], outcome: capture.Outcome, value: Any
) -> str:
    dtype = params["dtype"]
    if value is None:
        return f"It raised {outcome.error_type}."
    if variant == "jaxpr":
        (n_weak, c_weak), (n_strong, c_strong) = (count_converts(j) for j in value.values())
        return (
            f"With x of {dtype}: y = 2.0 (a Python float, a weakly typed float32 argument) "
            f"gives {n_weak} equations, {c_weak} of them `convert_element_type`; "
            f"y = jnp.float32(2.0) gives {n_strong}, {c_strong} converting."
        )
    got = {k: str(v) for k, v in value.items()}
    if got["x + 1.0"] == got["x"]:
        how = "the weakly typed Python float took x's type"
    else:
        how = f"an integer array and a Python float give {got['x + 1.0']}"
    return (
        f"x is {got['x']}: `x + 1.0` is {got['x + 1.0']} ({how}), "
        f"`x + jnp.float32(1.0)` is {got['x + jnp.float32(1.0)']}, "
        f"`x + np.float64(1.0)` is {got['x + np.float64(1.0)']} and `x + 1` is {got['x + 1']}."
    )


X64 = Case(
    key="x64",
    title="float64 & overflow",
    intro=(
        "JAX uses 32-bit types unless x64 is enabled: float64 requests are truncated to "
        "float32 with a warning, and Python integers must fit in int32."
    ),
    params=(),
    variants=(
        Variant("default", "x64 off (the default)", default_dtypes),
        Variant(
            "x64",
            "with jax.enable_x64(True)",
            with_x64,
            (default_dtypes,),
            note="A context manager: this thread only, restored on exit.",
        ),
        Variant("overflow", "jnp.array(2**40)", big_integer, raises="OverflowError"),
        Variant("wraps", "jnp.int32(2**31 - 1) + 1", int32_wraps),
    ),
    explain=explain_x64,
    imports="import jax\nimport jax.numpy as jnp\nimport numpy as np\n",
)

WEAK = Case(
    key="weak",
    title="Weak types",
    intro=(
        "A Python scalar has no dtype of its own: it is **weakly typed** and takes the type of "
        "the array it meets, so `jnp.float32(1) + 1.0` stays float32. NumPy and JAX scalars are "
        "strongly typed and promote by JAX's type lattice."
    ),
    params=(Param("dtype", "dtype of x", "float32", options=DTYPES),),
    variants=(
        Variant("promotion", "What x + scalar becomes", promotion),
        Variant(
            "jaxpr",
            "The convert a Python float makes",
            jaxpr_with_python_float,
            (multiply_add,),
            note="A Python float passed as an argument is traced as a weakly typed float32; "
            "the jaxpr converts it before it meets a strongly typed array.",
        ),
    ),
    explain=explain_weak,
    imports="import jax\nimport jax.numpy as jnp\nimport numpy as np\n",
)

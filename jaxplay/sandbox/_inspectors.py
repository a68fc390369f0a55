"""The one registry of inspectors: what the runner can tell about a function of the user's code.

An inspector takes ``(fn, args)`` — a function the user's code defined and example arguments
built from :class:`jaxplay.sandbox.ArgSpec` — and returns JSON data. Inspectors run *inside the
sandboxed worker* (the function is untrusted code), so the registry maps names to
``"module:function"`` strings that only the worker imports; the server only reads the names.
(The ``stages`` inspector is the tracing page's; named by a string, it adds no import of a topic
to the sandbox.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jaxplay.core import roofline
from jaxplay.core.i18n import N_

#: Inspector name -> "module:function" (resolved inside the worker only).
INSPECTORS: dict[str, str] = {
    "jaxpr": "jaxplay.sandbox._inspectors:jaxpr",
    "compare_jit": "jaxplay.sandbox._inspectors:compare_jit",
    "stages": "jaxplay.tracing._sandboxed:inspect_stages",
}

#: How the Code Lab labels each inspector (translated where shown, with ``_()``).
LABELS: dict[str, str] = {
    "jaxpr": N_("Show the jaxpr"),
    "compare_jit": N_("Time it eager vs jit"),
}

_MAX_TEXT = 200_000


def jaxpr(fn: Callable[..., Any], args: tuple[Any, ...]) -> str:
    """The text of ``jax.make_jaxpr(fn)(*args)``: the program JAX traced."""
    import jax

    text = str(jax.make_jaxpr(fn)(*args))
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "\n… (cut)"


def _timing_json(t: Any) -> dict[str, Any]:
    return {
        "median": float(t.median),
        "iqr": float(t.iqr),
        "min": float(t.min),
        "max": float(t.max),
        "samples": [float(x) for x in t.samples],
        "number": int(t.number),
        "describe": str(t.describe()),
    }


def compare_jit(fn: Callable[..., Any], args: tuple[Any, ...]) -> dict[str, Any]:
    """Steady-state time of ``fn`` eager and under ``jax.jit``, by :mod:`jaxplay.core.timing`.

    Eager and jitted samples are interleaved (``timing.compare_jit``). Returns JSON data:
    ``eager`` and ``jit`` (median, iqr, samples, ...), ``speedup`` (ratio of medians),
    ``describe`` and the ``device`` measured on.
    """
    import jax

    from jaxplay.core import timing

    result = timing.compare_jit(fn, *args, budget_s=1.0)
    eager, jitted = result.eager, result.jitted
    return {
        "eager": _timing_json(eager),
        "jit": _timing_json(jitted),
        "speedup": eager.median / jitted.median if jitted.median > 0 else None,
        "describe": str(result.describe()),
        "device": roofline.platform_label(jax.devices()[0].platform, jax.devices()[0].device_kind),
    }

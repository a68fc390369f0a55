"""The one registry of inspectors: what the runner can tell about a function of the user's code.

An inspector takes ``(fn, args)`` — a function the user's code defined and example arguments
built from :class:`jaxplay.runner.ArgSpec` — and returns JSON data. Inspectors run *inside the
sandboxed worker* (the function is untrusted code), so the registry maps names to
``"module:function"`` strings that only the worker imports; the server only reads the names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

#: Inspector name -> "module:function" (resolved inside the worker only).
INSPECTORS: dict[str, str] = {
    "jaxpr": "jaxplay.inspectors:jaxpr",
    "compare_jit": "jaxplay.inspectors:compare_jit",
    "stages": "jaxplay.staging:inspect_stages",
}

#: How the Code Lab labels each inspector.
LABELS: dict[str, str] = {
    "jaxpr": "Show the jaxpr",
    "compare_jit": "Time it eager vs jit",
}

_MAX_TEXT = 200_000


def jaxpr(fn: Callable[..., Any], args: tuple[Any, ...]) -> str:
    """The text of ``jax.make_jaxpr(fn)(*args)``: the program JAX traced."""
    import jax

    text = str(jax.make_jaxpr(fn)(*args))
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "\n… (cut)"


def _to_json(value: Any) -> Any:
    """Plain JSON data from a timing result (dataclasses, tuples, numpy scalars)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: _to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
        for prop in ("median", "min", "max", "iqr", "speedup"):
            if prop not in out and hasattr(value, prop):
                try:
                    out[prop] = _to_json(getattr(value, prop))
                except Exception:  # noqa: BLE001 - a property that does not apply
                    pass
        if hasattr(value, "describe"):
            try:
                out["describe"] = str(value.describe())
            except Exception:  # noqa: BLE001
                pass
        return out
    if isinstance(value, dict):
        return {str(k): _to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_json(v) for v in value]
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def compare_jit(fn: Callable[..., Any], args: tuple[Any, ...]) -> dict[str, Any]:
    """Steady-state time of ``fn`` eager and under ``jax.jit`` (via :mod:`jaxplay.timing`).

    Uses ``jaxplay.timing.compare_jit`` when it exists; otherwise measures both with
    ``timing.measure`` (warmed up, blocked, median of repeats). Returns JSON data with at least
    ``eager`` and ``jit`` timings (seconds) and the ``speedup`` of their medians.
    """
    import jax

    from jaxplay import timing

    helper = getattr(timing, "compare_jit", None)
    if helper is not None:
        data = _to_json(helper(fn, *args))
        if isinstance(data, dict):
            data.setdefault("source", "jaxplay.timing.compare_jit")
        return data if isinstance(data, dict) else {"result": data}
    eager = timing.measure(fn, *args, budget_s=0.5)
    jitted = timing.measure(jax.jit(fn), *args, budget_s=0.5)
    return {
        "eager": _to_json(eager),
        "jit": _to_json(jitted),
        "speedup": eager.median / jitted.median if jitted.median > 0 else None,
        "device": str(jax.devices()[0].device_kind),
        "source": "jaxplay.timing.measure",
    }

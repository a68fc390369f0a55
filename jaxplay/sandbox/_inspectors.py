"""The one registry of inspectors: what the runner can tell about a function of the user's code.

An inspector takes ``(fn, args)`` — a function the user's code defined and example arguments
built from :class:`jaxplay.sandbox.ArgSpec` — and returns a frozen dataclass, its result type.
Inspectors run *inside the sandboxed worker* (the function is untrusted code), so the registry
names each function and result type by a ``"module:name"`` string: only the worker imports the
function, only the server the result type, to decode what came back with
:mod:`jaxplay.core.codec` (that type and :class:`InspectionFailed`, nothing else). (The ``stages``
inspector is the tracing page's; named by strings, it adds no import of a topic to the sandbox.)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from jaxplay.core import codec, roofline, timing
from jaxplay.core.i18n import N_, _

#: The most values one inspection's result may decode into: a timing's 2 x 10,000 samples and
#: its texts fit many times over; 4 MB of ``[[]]`` that a run's code wrote (a second of the
#: server's interpreter, decoded before its type was checked) does not.
INSPECTION_VALUES = 100_000


@dataclass(frozen=True)
class Inspector:
    """One inspector: the function the worker calls and the type of what it returns.

    Attributes:
        function: ``"module:function"``, resolved inside the worker only.
        returns: ``"module:Class"``, the frozen dataclass it returns, resolved on the server.
        most_values: the most values its result may decode into (:func:`decode`).
    """

    function: str
    returns: str
    most_values: int = INSPECTION_VALUES


#: The most values a ``stages`` result may decode into (see :data:`INSPECTORS`).
STAGES_VALUES = 200_000

#: Inspector name -> its function and result type.
INSPECTORS: dict[str, Inspector] = {
    "jaxpr": Inspector(
        "jaxplay.sandbox._inspectors:jaxpr", "jaxplay.sandbox._inspectors:JaxprText"
    ),
    "compare_jit": Inspector(
        "jaxplay.sandbox._inspectors:compare_jit", "jaxplay.sandbox._inspectors:JitTiming"
    ),
    # Every stage's text of every variant with a source line for each of its lines: more (a
    # 200-step unrolled chain stages to about 150,000 values, near the 4 MB frame), and the
    # server re-caps them (jaxplay.tracing._staging) once decoded. A forged result of 1,000,000
    # values held the server's interpreter 1 to 1.9 s a run before this bound.
    "stages": Inspector(
        "jaxplay.tracing._sandboxed:inspect_stages",
        "jaxplay.tracing._sandboxed:StagedVariants",
        most_values=STAGES_VALUES,
    ),
}

#: How the Code Lab labels each inspector (translated where shown, with ``_()``).
LABELS: dict[str, str] = {
    "jaxpr": N_("Show the jaxpr"),
    "compare_jit": N_("Time it eager vs jit"),
}

_MAX_TEXT = 200_000


@dataclass(frozen=True)
class JaxprText:
    """What the ``jaxpr`` inspector returns: the program JAX traced, as text."""

    text: str


@dataclass(frozen=True)
class JitTiming:
    """What the ``compare_jit`` inspector returns: eager against jit, and the device measured on."""

    comparison: timing.JitComparison
    device: str
    #: The function was jitted where it is defined: the eager side ran its undecorated function.
    undecorated: bool = False


@dataclass(frozen=True)
class InspectionFailed:
    """An inspection that raised, or whose result the server refused.

    Attributes:
        error: why, in one line (the exception's type and message).
        exc_type: the exception's class name, when one was raised.
        line: the line of the user's code it points at, when known.
    """

    error: str
    exc_type: str | None = None
    line: int | None = None


def resolve(entry: str) -> Any:
    """What a ``"module:name"`` of :data:`INSPECTORS` names (our own table, never the visitor's)."""
    module_name, _, attr = entry.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def jaxpr(fn: Callable[..., Any], args: tuple[Any, ...]) -> JaxprText:
    """The text of ``jax.make_jaxpr(fn)(*args)``: the program JAX traced."""
    import jax

    text = str(jax.make_jaxpr(fn)(*args))
    return JaxprText(text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "\n… (cut)")


def compare_jit(fn: Callable[..., Any], args: tuple[Any, ...]) -> JitTiming:
    """Steady-state time of ``fn`` eager and under ``jax.jit``, by :mod:`jaxplay.core.timing`.

    Eager and jitted samples are interleaved (``timing.compare_jit``). A function jitted where
    it is defined (``name = jax.jit(...)``, which the Code Lab offers) is timed through its
    undecorated function: timing the jitted one "eagerly" ran the compiled program on both
    sides, and the page said jit gained nothing. Every jit layer the code put on is taken off
    (``jax.jit`` of a jitted function was timed as compiled against compiled), but not a jitted
    JAX function's own (eager code calls ``jnp.sin`` jitted); ``pmap`` is no jit.
    """
    import jax

    timed, undecorated = eager_side(fn)
    device = jax.devices()[0]
    return JitTiming(
        timing.compare_jit(timed, *args, budget_s=1.0),
        roofline.platform_label(device.platform, device.device_kind),
        undecorated,
    )


def eager_side(fn: Callable[..., Any]) -> tuple[Callable[..., Any], bool]:
    """What :func:`compare_jit` times eagerly for ``fn``: ``fn`` with every jit layer the code
    put on taken off, and whether there was one."""
    timed, undecorated = fn, False
    while _is_jit(timed):
        wrapped = timed.__wrapped__
        if undecorated and str(getattr(wrapped, "__module__", None) or "").startswith("jax"):
            break  # a jitted jnp function (jnp.sin is one) is how eager code calls it
        timed, undecorated = wrapped, True
    return timed, undecorated


def _is_jit(fn: Any) -> bool:
    """``jax.jit``'s wrapper (``pmap``'s has ``lower`` and ``__wrapped__`` too, not ``trace``)."""
    return all(hasattr(fn, name) for name in ("trace", "lower", "eval_shape")) and callable(
        getattr(fn, "__wrapped__", None)
    )


def decode(raw: Any, asked: Iterable[str]) -> dict[str, Any]:
    """Inspector results from a worker's JSON (an object keyed by inspector name), only for what
    was ``asked``, each decoded by :mod:`jaxplay.core.codec` as its inspector's result type or
    :class:`InspectionFailed`.

    A run's code can write a result frame of its own, or rewrite an inspector: results nobody
    asked for are dropped, and one that is not its inspector's type (a forged class, a field of
    the wrong type, too long or too deep) is an :class:`InspectionFailed` saying so.
    """
    if not isinstance(raw, dict):
        return {}
    out: dict[str, Any] = {}
    for name in asked:
        if name not in raw or name not in INSPECTORS:
            continue
        returns = resolve(INSPECTORS[name].returns)
        try:
            value = codec.decode(
                raw[name],
                codec.dataclass_types(returns) | {InspectionFailed},
                most_values=INSPECTORS[name].most_values,
            )
            if not isinstance(value, returns | InspectionFailed):
                raise ValueError(f"not a {returns.__name__}")
        except (ValueError, TypeError, RecursionError) as err:
            value = InspectionFailed(_("A malformed result: {error}").format(error=err))
        out[name] = value
    return out

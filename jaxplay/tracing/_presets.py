"""The functions the tracing page stages, as real Python code whose source lines JAX records.

Why real functions rather than strings: JAX attaches the *file and line* of the Python code that
produced every jaxpr equation, StableHLO op and HLO instruction. Defined here (or, for the
article's ``simple_function``, in :mod:`jaxplay.article`), each preset's lines are genuine lines of
a file, the page shows them with ``inspect``, and the source-line mapping is checked against what
JAX itself recorded, no ``exec`` involved.

Each :class:`Preset` says which arguments (shape, dtype) it is staged with by default; the page lets
the visitor change them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from jaxplay.article import simple_function
from jaxplay.core.i18n import N_
from jaxplay.tracing._inputs import WEAK_FLOAT32
from jaxplay.tracing._jaxpr_tree import SourceRef

# --- the presets (their source is shown on the page, line numbers included) ----------------------


def softmax(x):
    shifted = x - jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(shifted)
    return e / jnp.sum(e, axis=-1, keepdims=True)


def mlp_layer(x, w, b):
    h = x @ w + b
    return jnp.maximum(h, 0.0)


def cond_example(x):
    return lax.cond(
        x.sum() > 0,
        lambda v: jnp.sin(v) * 2,
        lambda v: jnp.cos(v) - 1,
        x,
    )


def while_example(x):
    def keep_going(state):
        i, v = state
        return (i < 10) & (jnp.abs(v).sum() < 100.0)

    def step(state):
        i, v = state
        return i + 1, v * 2.0

    _, result = lax.while_loop(keep_going, step, (0, x))
    return result


def scan_example(xs):
    def step(total, x):
        total = total + x
        return total, jnp.tanh(total)

    init = jnp.zeros(xs.shape[1:], xs.dtype)
    final, partials = lax.scan(step, init, xs)
    return final, partials


@jax.custom_vjp
def safe_function(x):
    return jnp.where(x > 0, x**2, jnp.sin(x))


def _safe_fwd(x):
    return safe_function(x), x


def _safe_bwd(x, g):
    return (g * jnp.where(x > 0, 2 * x, jnp.cos(x)),)


safe_function.defvjp(_safe_fwd, _safe_bwd)


def custom_vjp_example(x):
    y = jnp.log1p(jnp.abs(x))
    return safe_function(y) * 3


# --- the registry --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Preset:
    """A function the page can stage.

    Attributes:
        key: the stable id used in links (``softmax``).
        title: the name in the preset picker (marked for translation where it is prose).
        fn: the function.
        args: default ``(shape, dtype)`` of each positional argument.
        blurb: one line on what to look for in its stages (marked for translation, shown with
            ``_()``).
        shown: further functions whose source the page shows with it (helpers it calls).
    """

    key: str
    title: str
    fn: Callable[..., Any]
    args: tuple[tuple[tuple[int, ...], str], ...]
    blurb: str
    shown: tuple[Callable[..., Any], ...] = ()

    @property
    def arg_names(self) -> tuple[str, ...]:
        """The function's parameter names (``x``, ``w``, ``b``)."""
        return tuple(inspect.signature(self.fn).parameters)


PRESETS: tuple[Preset, ...] = (
    Preset(
        "seed",
        N_("x * y + 1 (the article's make_jaxpr example)"),
        simple_function,
        (((3,), "float32"), ((), WEAK_FLOAT32)),
        N_(
            "Staged as the article calls it, `make_jaxpr(simple_function)(jnp.ones(3), 2.0)`: y "
            "is a Python float. Change y's dtype to see what a weak type does to the jaxpr."
        ),
    ),
    Preset(
        "softmax",
        "softmax",
        softmax,
        (((4, 8), "float32"),),
        N_(
            "Reductions (max, sum) split the work: look for several fusions in the optimized HLO "
            "(with a last axis of size 1 XLA drops the reductions, and one fusion is left)."
        ),
    ),
    Preset(
        "mlp",
        N_("an MLP layer: relu(x @ w + b)"),
        mlp_layer,
        (((8, 16), "float32"), ((16, 32), "float32"), ((32,), "float32")),
        N_(
            "A dot_general, then the bias and the relu: see which ops XLA puts in the matmul's "
            "kernel and which in a loop fusion of their own."
        ),
    ),
    Preset(
        "cond",
        "lax.cond",
        cond_example,
        (((5,), "float32"),),
        N_(
            "Both branches are traced into sub-jaxprs; as `f` and under `jit`, only one runs, "
            "chosen on the device. Under `vmap` the predicate is batched: the cond becomes a "
            "select, and both branches run for every example."
        ),
    ),
    Preset(
        "while",
        "lax.while_loop",
        while_example,
        (((4,), "float32"),),
        N_("The loop stays a loop: a cond_jaxpr and a body_jaxpr, however many times it turns."),
    ),
    Preset(
        "scan",
        "lax.scan",
        scan_example,
        (((6, 3), "float32"),),
        N_("The body is traced once for a single step, whatever the length of the scanned axis."),
    ),
    Preset(
        "custom_vjp",
        N_("custom_vjp (the article's safe function)"),
        custom_vjp_example,
        (((5,), "float32"),),
        N_(
            "The custom_vjp function appears as one custom_vjp_call equation holding its own jaxpr."
        ),
        shown=(safe_function, _safe_fwd, _safe_bwd),
    ),
)


def find_preset(key: str) -> Preset:
    """The preset registered under ``key``; ``KeyError`` if none is."""
    for preset in PRESETS:
        if preset.key == key:
            return preset
    raise KeyError(key)


def preset_source(preset: Preset) -> tuple[str, int, int]:
    """The source the page shows for ``preset``: ``(text, first line, last line)`` in its file.

    The text runs from the first line of the earliest shown function to the last line of the latest
    one, so line numbers match the locations JAX records (which are lines of that file).
    """
    spans = []
    for fn in (preset.fn, *preset.shown):
        target = inspect.unwrap(getattr(fn, "fun", fn))
        lines, start = inspect.getsourcelines(target)
        spans.append((start, start + len(lines) - 1))
    first = min(s for s, _ in spans)
    last = max(e for _, e in spans)
    with open(source_file(preset), encoding="utf-8") as handle:
        all_lines = handle.read().splitlines()
    return "\n".join(all_lines[first - 1 : last]), first, last


def source_file(preset: Preset) -> str:
    """The path JAX records for the preset's code (the file name its code objects carry): this
    module's, or the article's section module for the article's own function."""
    return inspect.unwrap(getattr(preset.fn, "fun", preset.fn)).__code__.co_filename


def preset_ref(preset: Preset) -> SourceRef:
    """The source reference of the lines :func:`preset_source` shows."""
    _, first, last = preset_source(preset)
    return SourceRef(source_file(preset), first, last)

"""The pipeline builder as a page shows it: its boxes' choices and the sentences around a run.

Why apart from :mod:`._pipeline`: that module computes a pipeline (and decides where it runs);
this one says what the visitor chose and what came out, in the visitor's language, so the page
only places widgets and these sentences.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np

from jaxplay import sandbox
from jaxplay.core import claims, expr, markdown, words
from jaxplay.core.errors import FriendlyError
from jaxplay.core.i18n import N_, _, ngettext

from ._pipeline import (
    FUNCTIONS,
    INPUT_SHAPES,
    MAX_STACK,
    STACK_PRESETS,
    TRANSFORMS,
    PipelineResult,
    is_preset,
    plain_words,
)

#: An empty transform box: the stack skips it.
NO_TRANSFORM = "—"
#: The function choice that opens a box for the visitor's own formula.
TYPED_FORMULA = N_("type a formula")
#: What the builder's boxes offer: presets, transforms, functions and x's shapes.
PRESET_CHOICES: tuple[str, ...] = tuple(STACK_PRESETS)
SLOT_CHOICES: tuple[str, ...] = (NO_TRANSFORM, *TRANSFORMS)
FUNCTION_CHOICES: tuple[str, ...] = (*FUNCTIONS, TYPED_FORMULA)
SHAPE_CHOICES: tuple[str, ...] = tuple(INPUT_SHAPES)


#: The builder's settings by the names the address gives them (a shared link sets them): the
#: preset, the transform boxes (outermost first), f, x and the typed formula.
SLOT_KEYS = tuple(f"compose_t{i}" for i in range(MAX_STACK))
SETTING_KEYS = (
    "compose_preset",
    *SLOT_KEYS,
    "compose_function",
    "compose_shape",
    "compose_formula",
)


def preset_settings(name: str) -> dict[str, str]:
    """The settings a preset sets: its stack in the transform boxes (the rest empty), its f and
    its x. The first preset's are the widgets' defaults, so a link names only what differs.

    Example:
        >>> preset_settings("invalid: grad of a vector output")["compose_t1"]
        '—'
    """
    preset = STACK_PRESETS[name]
    boxes = (*preset.stack, *(NO_TRANSFORM,) * (MAX_STACK - len(preset.stack)))
    settings = dict(zip(SLOT_KEYS, boxes, strict=True))
    return {**settings, "compose_function": preset.function, "compose_shape": preset.shape}


#: The widgets' defaults: the first preset and its settings, so a link names only what differs.
DEFAULT_SETTINGS: Mapping[str, str] = MappingProxyType(
    {"compose_preset": next(iter(STACK_PRESETS)), **preset_settings(next(iter(STACK_PRESETS)))}
)


def stack_of(boxes: Sequence[str]) -> tuple[str, ...]:
    """The stack the boxes hold, outermost first: an empty box is skipped wherever it is.

    Example:
        >>> stack_of(("jit", "—", "grad", "—"))
        ('jit', 'grad')
    """
    return tuple(t for t in boxes if t != NO_TRANSFORM)


def slot_label(i: int) -> str:
    """The label of the ``i``-th transform box (0 is the outermost)."""
    return _("outermost") if i == 0 else _("then {n}").format(n=i + 1)


def formula_help() -> str:
    """What a typed formula may call, for the formula box's help."""
    return _("Allowed: {functions}").format(functions=", ".join(expr.allowed_functions()))


def stack_caption(stack: Sequence[str]) -> str:
    """What each transform of the stack does, outermost first (Markdown)."""
    said = [f"**{t}** {_(TRANSFORMS[t].does)}" for t in stack]
    return " · ".join(said) or _("No transform: f itself.")


@claims.states_nothing("the stack the visitor built and the sandbox's configured deadline")
def applying(stack: Sequence[str], source: str, shape: Sequence[int]) -> str:
    """What the page is doing while the pipeline runs, and where: a pipeline that is not a
    preset runs in a sandboxed worker, whose deadline the visitor is told up front."""
    doing = _("Applying {stack} to f").format(stack=" ∘ ".join(stack) or _("no transform"))
    if is_preset(stack, source, shape):
        return doing
    deadline = sandbox.RunnerConfig.from_env().limits.timeout_s
    return _("{doing} in a sandboxed worker (at most {seconds} s)").format(
        doing=doing, seconds=f"{deadline:g}"
    )


@claims.states_nothing("a limit's message, or what to try after a failed run")
def refusal(err: ValueError | sandbox.TaskFailed, stack: Sequence[str]) -> tuple[str, bool]:
    """Why the pipeline gave no result, in one sentence (plain text: it can quote the visitor's
    formula, so show it escaped), and whether it is a limit (to warn about) rather than a failed
    run: a ``ValueError`` found here, or raised in the worker once the stack was traced, names
    the limit the visitor went over; any other failure of the worker says what to try.
    """
    if not isinstance(err, sandbox.TaskFailed):
        return str(err), True
    if err.error.exc_type == "ValueError":
        return err.error.message, True
    hint = _("try fewer transforms (hessian counts twice) or a simpler formula")
    doing = ngettext(
        "Applying {n} transform to this formula",
        "Applying {n} transforms to this formula",
        len(stack),
    ).format(n=f"{len(stack):,}")
    return err.explain(doing, hint), False


@claims.states_nothing("restates JAX's own refusal, read from its message, in plain words")
def refused_sentence(error: FriendlyError) -> str:
    """JAX's refusal of the stack in plain words, in the visitor's language (Markdown)."""
    reason = markdown.escape(plain_words(error))
    return _("**JAX refuses:** {reason}").format(reason=reason)


@claims.states_nothing("this run's shapes, as JAX returned them")
def shapes_sentence(result: PipelineResult) -> str:
    """x's shape and the result's, before the values (Markdown)."""
    return _("x has shape `{x}`; the result has shape `{result}`:").format(
        x=result.input_shape, result=result.output_shape
    )


def values_text(result: PipelineResult) -> str:
    """The result's values as NumPy prints them (4 decimals, long arrays summarised); ``""``
    where JAX refused the stack and nothing was computed."""
    if result.values is None:
        return ""
    return np.array2string(result.values, precision=4, threshold=200)


@claims.states("compose.vmap_traces_f_once")
def pipeline_notes(result: PipelineResult, stack: Sequence[str]) -> list[str]:
    """What the run showed beside its values: how often ``vmap`` traced f, and how far the
    same stack without ``jit`` is from it (each note only where the stack has that transform).
    """
    notes = []
    if "vmap" in stack:
        shape = result.input_shape
        notes.append(
            _(
                "f's Python code ran {times} while the whole stack was traced, for x's "
                "{rows} rows: vmap traces once for one row and turns each operation into its "
                "batched form."
            ).format(times=words.times(result.traced_calls), rows=shape[0] if shape else 0)
        )
    if result.eager_max_abs_diff is not None:
        d = result.eager_max_abs_diff
        notes.append(
            _("The same stack without jit, run op by op, gives identical values.")
            if d == 0
            else _(
                "The same stack without jit, run op by op, gives values that differ by at "
                "most {diff}: XLA compiles the stack as one program and may rewrite it (a "
                "multiply and an add fused into one multiply-add, a sum reordered, "
                "`log(exp(x))` simplified to `x`), which rounds differently from running each "
                "operation on its own."
            ).format(diff=f"{d:.2g}")
        )
    return notes

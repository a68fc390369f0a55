"""The pipeline builder: any stack of transforms over a formula, run here (presets) or in a
sandboxed worker, with its result, jaxpr or JAX's reason in plain words.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxplay import sandbox
from jaxplay.core import claims, i18n, timing
from jaxplay.core.errors import FriendlyError, explain_error
from jaxplay.core.expr import ExprError, parse, shape_of
from jaxplay.core.i18n import N_, _

# --- the pipeline builder ------------------------------------------------------------------------


@dataclass(frozen=True)
class Transform:
    """One transform of the builder: how to apply it, and what it does in a few words (marked
    for the catalog: a page shows ``_(does)``)."""

    name: str
    apply: Callable[[Callable[..., Any]], Callable[..., Any]]
    does: str


TRANSFORMS: dict[str, Transform] = {
    t.name: t
    for t in (
        Transform("jit", jax.jit, N_("compiles the function below it with XLA into one program")),
        Transform(
            "vmap",
            jax.vmap,
            N_(
                "maps over axis 0 of its input (x, or one slice of x under an outer vmap): "
                "traces the function below it for one row and batches each operation (no call "
                "per row)"
            ),
        ),
        Transform(
            "grad", jax.grad, N_("gradient of a scalar-valued function: the shape of its input")
        ),
        Transform(
            "jacfwd",
            jax.jacfwd,
            N_("Jacobian by forward mode: out.shape + in.shape (in: its input)"),
        ),
        Transform(
            "jacrev",
            jax.jacrev,
            N_("Jacobian by reverse mode: out.shape + in.shape (in: its input)"),
        ),
        Transform("hessian", jax.hessian, "jacfwd(jacrev(f)): out.shape + in.shape + in.shape"),
        Transform(
            "checkpoint",
            jax.checkpoint,
            N_(
                "when reverse-mode differentiation (grad, jacrev, hessian) is above it, saves "
                "only the function's inputs and computes its intermediates again in the "
                "backward pass; where nothing uses the forward value (grad of a function "
                "checkpointed whole), JAX drops the forward pass, so nothing runs twice; alone, "
                "or under jacfwd (no backward pass), it changes nothing"
            ),
        ),
    )
}
MAX_STACK = 4
MAX_OUTPUT_ELEMENTS = 100_000

#: The builder's functions (label, marked for the catalog -> formula) and inputs (label -> shape).
FUNCTIONS: dict[str, str] = {
    N_("sum of sin² (vector → number)"): "jnp.sum(jnp.sin(x) ** 2)",
    N_("tanh, elementwise (vector → vector)"): "jnp.tanh(x)",
    N_("log-sum-exp (vector → number)"): "jax.nn.logsumexp(x)",
    N_("x³ − 2x (elementwise)"): "x**3 - 2*x",
}
INPUT_SHAPES: dict[str, tuple[int, ...]] = {
    N_("a number: shape ()"): (),
    N_("a vector: shape (3,)"): (3,),
    N_("a batch of 4 vectors: shape (4, 3)"): (4, 3),
}


@dataclass(frozen=True)
class StackPreset:
    """A ready-made stack: transforms (outermost first), a function and an input shape."""

    stack: tuple[str, ...]
    function: str
    shape: str


STACK_PRESETS: dict[str, StackPreset] = {
    N_("per-example gradients: jit(vmap(grad(f)))"): StackPreset(
        ("jit", "vmap", "grad"),
        "sum of sin² (vector → number)",
        "a batch of 4 vectors: shape (4, 3)",
    ),
    N_("Hessian two ways: jacfwd(jacrev(f))"): StackPreset(
        ("jacfwd", "jacrev"), "log-sum-exp (vector → number)", "a vector: shape (3,)"
    ),
    N_("Jacobian of an elementwise map: jit(jacrev(f))"): StackPreset(
        ("jit", "jacrev"), "tanh, elementwise (vector → vector)", "a vector: shape (3,)"
    ),
    N_("rematerialised gradient: grad(checkpoint(f))"): StackPreset(
        ("grad", "checkpoint"), "sum of sin² (vector → number)", "a vector: shape (3,)"
    ),
    N_("invalid: grad of a vector output"): StackPreset(
        ("grad",), "tanh, elementwise (vector → vector)", "a vector: shape (3,)"
    ),
    N_("invalid: vmap with nothing left to map"): StackPreset(
        ("vmap", "vmap", "grad"), "sum of sin² (vector → number)", "a vector: shape (3,)"
    ),
}

#: JAX's refusals in plain words: (pattern, a function of its groups that says it in the
#: visitor's language). :func:`compose` stores the English (its result is cached for everyone);
#: :func:`plain_words` says it again in the language of the page that shows it.
_COMPOSE_ERRORS: tuple[tuple[str, Callable[..., str]], ...] = (
    (
        r"Gradient only defined for scalar-output functions\. Output had shape: (\(.*?\))",
        lambda shape: _(
            "grad needs a function that returns a scalar (shape ()), but the function it "
            "differentiates returns shape {shape}. Use jacfwd or jacrev for a vector output, or "
            "reduce the output (e.g. jnp.sum) first; for one gradient per example, vmap goes "
            "outside grad and what grad differentiates returns one number per example."
        ).format(shape=shape),
    ),
    (
        r"Gradient only defined for scalar-output functions",
        lambda: _(
            "grad needs a function that returns a scalar (shape ()), but this one returns a "
            "tuple, list or dict of values (a pytree), not one array."
        ),
    ),
    (
        r"along axis (-?\d+), which implies that its rank should be at least (\d+), but is only "
        r"(\d+) \(its shape is (\(.*?\))\)",
        lambda axis, _rank, _ndim, shape: _(
            "vmap maps over axis {axis}, but the input it receives has shape {shape}: nothing is "
            "left to map. Each vmap peels one axis off x, so use fewer vmaps or a higher-rank "
            "input."
        ).format(axis=axis, shape=shape),
    ),
    (
        r"grad requires real-valued outputs",
        lambda: _("grad needs a real-valued output (not an integer or complex one)."),
    ),
)


@claims.states_nothing("restates JAX's own refusal, read from its message, in plain words")
def plain_words(error: FriendlyError) -> str:
    """``error``'s plain words in the running script's language (``error.plain`` is English)."""
    for pattern, plain in _COMPOSE_ERRORS:
        match = re.search(pattern, error.message, flags=re.S)
        if match:
            return plain(*match.groups())
    return _("JAX refused this combination; its message says why.")


def example_input(shape: tuple[int, ...]) -> np.ndarray:
    """Deterministic inputs of a shape (values between -1 and 1.2, none exactly 0)."""
    size = math.prod(shape)
    return np.linspace(-1.0, 1.2, max(size, 1), dtype=np.float32)[:size].reshape(shape)


def stack_code(stack: Sequence[str], source: str) -> str:
    """The composed call as code: ``f = lambda x: ...`` then ``jax.jit(jax.vmap(...)(f))(x)``."""
    call = "f"
    for name in reversed(stack):
        call = f"jax.{name}({call})"
    return f"f = lambda x: {source}\nresult = {call}(x)"


@dataclass(frozen=True)
class PipelineResult:
    """A transform stack applied to f at x: result and jaxpr, or JAX's reason in plain words.

    Attributes:
        traced_calls: how often f's Python code ran while the whole stack was traced once
            (``vmap`` traces it for one row, whatever the number of rows).
        eager_max_abs_diff: with ``jit`` in the stack, max |result − the same stack without
            ``jit``, run op by op| (XLA may fuse and reorder float operations); else ``None``.
    """

    code: str
    input_shape: tuple[int, ...]
    output_shape: tuple[int, ...] | None
    values: np.ndarray | None
    jaxpr: str | None
    error: FriendlyError | None
    traced_calls: int = 0
    eager_max_abs_diff: float | None = None


def _stacked(stack: Sequence[str], f: Callable[..., Any]) -> Callable[..., Any]:
    for name in reversed(stack):
        f = TRANSFORMS[name].apply(f)
    return f


def compose(stack: Sequence[str], source: str, shape: Sequence[int]) -> PipelineResult:
    """Apply ``stack`` (outermost first) to the formula ``source`` and call it at a fixed x.

    Raises:
        ExprError: the formula is not allowed.
        ValueError: an unknown transform, more than :data:`MAX_STACK` of them, or an output
            larger than :data:`MAX_OUTPUT_ELEMENTS` (the message names the limit).
    """
    stack, shape = tuple(stack), tuple(int(s) for s in shape)
    check_stack(stack)
    formula = parse(source, ("x",))
    calls = [0]

    def f(x: Any) -> Any:
        calls[0] += 1
        return formula(x)

    composed = _stacked(stack, f)
    x = example_input(shape)
    code = stack_code(stack, source)
    try:
        out = jax.eval_shape(composed, jax.ShapeDtypeStruct(x.shape, x.dtype))
    except (TypeError, ValueError, IndexError) as err:
        with i18n.speaking(i18n.DEFAULT):  # cached for every visitor: English, see plain_words
            error = explain_error(err, _COMPOSE_ERRORS)
        return PipelineResult(code, shape, None, None, None, error)
    traced = calls[0]
    size = math.prod(out.shape)
    if size > MAX_OUTPUT_ELEMENTS:
        raise ValueError(
            f"the result would have {size} elements; the limit is {MAX_OUTPUT_ELEMENTS}"
        )
    # Evaluated under jit: one compile instead of one per primitive; the values are the same up
    # to rounding, and where the stack says jit, that difference is measured.
    values = np.asarray(timing.block(jax.jit(composed)(x)))
    eager_diff = None
    if "jit" in stack:
        with jax.disable_jit():
            # A JAX array: with a NumPy x the formula's operators (x ** 3) would run in NumPy.
            eager = np.asarray(timing.block(_stacked(stack, formula)(jnp.asarray(x))))
        eager_diff = float(np.max(np.abs(values - eager), initial=0.0))
    jaxpr = str(jax.make_jaxpr(composed)(x))
    return PipelineResult(code, shape, tuple(values.shape), values, jaxpr, None, traced, eager_diff)


def check_stack(stack: Sequence[str]) -> None:
    """Refuse an unknown transform or a stack over :data:`MAX_STACK` (a ``ValueError``)."""
    if len(stack) > MAX_STACK:
        raise ValueError(f"at most {MAX_STACK} transforms can be stacked (got {len(stack)})")
    unknown = [s for s in stack if s not in TRANSFORMS]
    if unknown:
        raise ValueError(f"unknown transform(s) {unknown}; choose from {list(TRANSFORMS)}")


#: The presets' (stack, formula, shape): a fixed set whose cost is known, run in the server.
PRESET_PIPELINES: frozenset[tuple[tuple[str, ...], str, tuple[int, ...]]] = frozenset(
    (p.stack, FUNCTIONS[p.function], INPUT_SHAPES[p.shape]) for p in STACK_PRESETS.values()
)


def is_preset(stack: Sequence[str], source: str, shape: Sequence[int]) -> bool:
    """Whether this pipeline is one of :data:`STACK_PRESETS` (computed in the server)."""
    return (tuple(stack), source, tuple(shape)) in PRESET_PIPELINES


def pipeline(
    stack: Sequence[str], source: str, shape: Sequence[int], timeout_s: float | None = None
) -> PipelineResult:
    """:func:`compose`, checked here first, computed where its cost allows.

    Why (the hardening rule, chosen for this page): a stack of up to four transforms, a
    ``hessian`` counting as two, can differentiate a formula eight times, and what that costs is
    not known before it starts. Differentiating ``tanh`` nested 15 deep four times compiled for
    82 s (the formula language allows 38 deep in a sum), and even a preset formula,
    ``sum(sin(x)**2)`` at a vector of 3 under four ``hessian``, grew a process to 4 GB over 77 s
    and then crashed it inside XLA (a segmentation fault: in the server, the end of every
    visitor's session). So only the page's presets (a fixed set, each measured well under a
    second) run in the server and are cached; every other pipeline is checked here cheaply (the
    stack's length and names, the formula parsed within the language's limits and traced once at
    x's shape, so a bad formula gets its caret at once) and then built and run in a fresh
    sandboxed worker, under a run's deadline and memory limit. The warm pool answers in ~15 ms;
    the server thread only waits.

    Raises:
        ExprError: the formula is not allowed (found here, at once).
        ValueError: an unknown transform or too many (found here), or an over-large result.
        sandbox.TaskFailed: the worker ran past ``timeout_s`` (default: the run timeout), out of
            memory, was refused, or raised (``ValueError`` for an over-large result).
    """
    stack, shape = tuple(stack), tuple(int(s) for s in shape)
    check_stack(stack)
    formula = parse(source, ("x",))
    try:
        shape_of(formula, jax.ShapeDtypeStruct(shape, jnp.float32))
    except ExprError:
        raise
    except Exception:
        pass
    return sandbox.call(
        compose,
        isolate=not is_preset(stack, source, shape),
        returns=(PipelineResult, FriendlyError),
        timeout_s=timeout_s,
        stack=list(stack),
        source=source,
        shape=list(shape),
    )

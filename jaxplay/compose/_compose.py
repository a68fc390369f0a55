"""Composing transforms: the logic behind the compose page.

JAX's transforms are functions from functions to functions, so they stack: ``jit(vmap(grad(f)))``
is a compiled, batched gradient. Stacks can also be wrong in ways the article's own code shows:
its ``@jit @vmap`` per-sample gradient maps the parameters too, and its ``@jit`` around an HVP
that takes ``f`` as an argument cannot trace a function. This module builds any stack of
transforms over a formula and reports the result, its jaxpr or JAX's reason in plain words; runs
the article's composed examples as written and fixed; and measures (through
:mod:`jaxplay.core.timing`) when forward-mode beats reverse-mode Jacobians and what an HVP saves
over a full Hessian.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from jaxplay import sandbox
from jaxplay.article import (
    hvp,
    jac_forward,
    jac_reverse,
    optimized_hvp,
    per_sample_gradient,
)
from jaxplay.core import capture, roofline, timing
from jaxplay.core.capture import Outcome
from jaxplay.core.errors import FriendlyError, explain_error
from jaxplay.core.expr import ExprError, parse
from jaxplay.core.figures import (
    bar_ends,
    format_bytes,
    format_count,
    log_axis,
    seconds_axis,
    timing_line,
)
from jaxplay.core.inputs import normal_arrays

# --- the pipeline builder ------------------------------------------------------------------------


@dataclass(frozen=True)
class Transform:
    """One transform of the builder: how to apply it, and what it does in a few words."""

    name: str
    apply: Callable[[Callable[..., Any]], Callable[..., Any]]
    does: str


TRANSFORMS: dict[str, Transform] = {
    t.name: t
    for t in (
        Transform("jit", jax.jit, "compiles the function below it with XLA into one program"),
        Transform(
            "vmap",
            jax.vmap,
            "maps over axis 0 of x: traces the function below it for one row and batches each "
            "operation (no call per row)",
        ),
        Transform("grad", jax.grad, "gradient of a scalar-valued function: same shape as x"),
        Transform("jacfwd", jax.jacfwd, "Jacobian by forward mode: out.shape + x.shape"),
        Transform("jacrev", jax.jacrev, "Jacobian by reverse mode: out.shape + x.shape"),
        Transform("hessian", jax.hessian, "jacfwd(jacrev(f)): out.shape + x.shape + x.shape"),
        Transform("checkpoint", jax.checkpoint, "recomputes instead of storing residuals"),
    )
}
MAX_STACK = 4
MAX_OUTPUT_ELEMENTS = 100_000

FUNCTIONS: dict[str, str] = {
    "sum of sin² (vector → number)": "jnp.sum(jnp.sin(x) ** 2)",
    "tanh, elementwise (vector → vector)": "jnp.tanh(x)",
    "log-sum-exp (vector → number)": "jax.nn.logsumexp(x)",
    "x³ − 2x (elementwise)": "x**3 - 2*x",
}
INPUT_SHAPES: dict[str, tuple[int, ...]] = {
    "a number: shape ()": (),
    "a vector: shape (3,)": (3,),
    "a batch of 4 vectors: shape (4, 3)": (4, 3),
}


@dataclass(frozen=True)
class StackPreset:
    """A ready-made stack: transforms (outermost first), a function and an input shape."""

    stack: tuple[str, ...]
    function: str
    shape: str


STACK_PRESETS: dict[str, StackPreset] = {
    "per-example gradients: jit(vmap(grad(f)))": StackPreset(
        ("jit", "vmap", "grad"),
        "sum of sin² (vector → number)",
        "a batch of 4 vectors: shape (4, 3)",
    ),
    "Hessian two ways: jacfwd(jacrev(f))": StackPreset(
        ("jacfwd", "jacrev"), "log-sum-exp (vector → number)", "a vector: shape (3,)"
    ),
    "Jacobian of an elementwise map: jit(jacrev(f))": StackPreset(
        ("jit", "jacrev"), "tanh, elementwise (vector → vector)", "a vector: shape (3,)"
    ),
    "rematerialised gradient: grad(checkpoint(f))": StackPreset(
        ("grad", "checkpoint"), "sum of sin² (vector → number)", "a vector: shape (3,)"
    ),
    "invalid: grad of a vector output": StackPreset(
        ("grad",), "tanh, elementwise (vector → vector)", "a vector: shape (3,)"
    ),
    "invalid: vmap with nothing left to map": StackPreset(
        ("vmap", "vmap", "grad"), "sum of sin² (vector → number)", "a vector: shape (3,)"
    ),
}

_COMPOSE_ERRORS: tuple[tuple[str, str], ...] = (
    (
        r"Gradient only defined for scalar-output functions\. Output had shape: (\(.*?\))",
        "grad needs a function that returns one number, but the function it differentiates "
        "returns shape {0}. Use jacfwd or jacrev for a vector output, put vmap outside grad to "
        "get one gradient per example, or reduce the output (e.g. jnp.sum) first.",
    ),
    (
        r"Gradient only defined for scalar-output functions",
        "grad needs a function that returns one number, but this one returns several.",
    ),
    (
        r"along axis (-?\d+), which implies that its rank should be at least (\d+), but is only "
        r"(\d+) \(its shape is (\(.*?\))\)",
        "vmap maps over axis {0}, but the input it receives has shape {3}: nothing is left to "
        "map. Each vmap peels one axis off x, so use fewer vmaps or a higher-rank input.",
    ),
    (
        r"grad requires real-valued outputs",
        "grad needs a real-valued output (not an integer or complex one).",
    ),
)


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
        return PipelineResult(code, shape, None, None, None, explain_error(err, _COMPOSE_ERRORS))
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
            eager = np.asarray(timing.block(_stacked(stack, formula)(x)))
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
        jax.eval_shape(formula, jax.ShapeDtypeStruct(shape, jnp.float32))
    except ExprError:
        raise
    except Exception:  # noqa: BLE001, S110 - JAX's refusal: the worker reports it, in words
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


# --- per-sample gradients ------------------------------------------------------------------------


def loss_for_sample(p, xi, yi):
    """The article's per-sample squared error, at module level so ``grad`` can be composed."""
    pred = jnp.dot(p, xi)
    return (pred - yi) ** 2


#: The fix: map over samples only; every sample sees the same ``params``.
per_sample_grads = jax.jit(jax.vmap(jax.grad(loss_for_sample), in_axes=(None, 0, 0)))

MAX_SAMPLES, MAX_FEATURES = 64, 64


@dataclass(frozen=True)
class PerSample:
    """The article's per-sample gradient as written, and the fix, against a Python loop.

    ``vmap`` maps axis 0 of every argument, ``params`` too, so what the article's function does
    depends on the shapes: with one weight vector (D,) and B ≠ D samples the sizes disagree; with
    B = D each sample gets one *element* of the weights, its prediction is a vector and ``grad``
    refuses it; only 2-D parameters (B, D) run, each sample paired with its own row.

    Attributes:
        as_written: calling the article's function with one shared ``params`` (D,), B samples.
        square: the same with as many samples as weights (D samples): the other failure.
        rows_shape: the result's shape with parameters of shape (B, D), one random row each.
        rows_match_model0: whether that result equals the per-sample gradients of the first row's
            model (it does not: each sample saw another row); ``False`` is the silent error.
        tiled_shape: the result's shape with ``params`` copied per sample (B, D).
        tiled_matches_loop: whether that equals the loop (it does: every row is the model).
        fixed: ``vmap(grad(loss), in_axes=(None, 0, 0))(params, X, Y)``, shape (B, D).
        loop: the same gradients by a Python loop over samples.
    """

    params_shape: tuple[int, ...]
    x_shape: tuple[int, ...]
    y_shape: tuple[int, ...]
    as_written: Outcome
    square: Outcome
    rows_shape: tuple[int, ...]
    rows_match_model0: bool
    tiled_shape: tuple[int, ...]
    tiled_matches_loop: bool
    fixed: np.ndarray
    loop: np.ndarray

    @property
    def fixed_matches_loop(self) -> bool:
        return bool(np.allclose(self.fixed, self.loop, rtol=1e-5, atol=1e-5))


def _close(a: Any, b: Any) -> bool:
    return bool(np.allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5))


def per_sample(batch: int = 8, features: int = 3) -> PerSample:
    """Run both versions on a regression batch (seed 0) and a Python loop over the samples."""
    if not 1 <= batch <= MAX_SAMPLES or not 1 <= features <= MAX_FEATURES:
        raise ValueError(
            f"batch must be 1 to {MAX_SAMPLES} and features 1 to {MAX_FEATURES} "
            f"(got {batch}, {features})"
        )
    arrays = normal_arrays(0, (features,), (batch, features), (batch,), (batch, features))
    params, X, Y, rows = (jnp.asarray(a) for a in arrays)
    as_written = capture.run(
        per_sample_gradient,
        params,
        X,
        Y,
        code=f"per_sample_gradient(params, X, Y)  # params {params.shape}, X {X.shape}",
    )
    square = capture.run(
        per_sample_gradient,
        params,
        jnp.resize(X, (features, features)),
        jnp.resize(Y, (features,)),
        code=f"per_sample_gradient(params, X, Y)  # params ({features},), X ({features}, "
        f"{features}): as many samples as weights",
    )
    grad_one = jax.jit(jax.grad(loss_for_sample))
    loop = np.stack([np.asarray(grad_one(params, X[i], Y[i])) for i in range(batch)])
    tiled = np.asarray(per_sample_gradient(jnp.tile(params, (batch, 1)), X, Y))
    by_row = np.asarray(per_sample_gradient(rows, X, Y))
    return PerSample(
        params_shape=tuple(params.shape),
        x_shape=tuple(X.shape),
        y_shape=tuple(Y.shape),
        as_written=as_written,
        square=square,
        rows_shape=tuple(by_row.shape),
        rows_match_model0=_close(by_row, per_sample_grads(rows[0], X, Y)),
        tiled_shape=tuple(tiled.shape),
        tiled_matches_loop=_close(tiled, loop),
        fixed=np.asarray(per_sample_grads(params, X, Y)),
        loop=loop,
    )


# --- jacfwd vs jacrev ----------------------------------------------------------------------------


MAX_WIDTH = 2048
HIDDEN = 64
#: The other side of each sweep: the output width while the input widens, and vice versa.
NARROW = 4


def network(n_in: int, n_out: int, hidden: int = HIDDEN) -> tuple[tuple[Any, ...], Any]:
    """Parameters and an input for :func:`neural_network` (seed 0, scaled by 1/√fan-in)."""
    w1, b1, w2, b2, x = normal_arrays(
        0, (hidden, n_in), (hidden,), (n_out, hidden), (n_out,), (n_in,)
    )
    params = (w1 / math.sqrt(n_in), b1 * 0.1, w2 / math.sqrt(hidden), b2 * 0.1)
    return tuple(jnp.asarray(p) for p in params), jnp.asarray(x)


def jacobians_agree(n_in: int, n_out: int) -> tuple[tuple[int, ...], float]:
    """The Jacobian's shape and max |jacfwd − jacrev| for one network."""
    params, x = network(n_in, n_out)
    fwd, rev = jax.jit(jac_forward)(params, x), jax.jit(jac_reverse)(params, x)
    return tuple(fwd.shape), float(jnp.max(jnp.abs(fwd - rev)))


@dataclass(frozen=True)
class JacobianSweep:
    """jacfwd and jacrev timings as the input width grows (narrow output) and vice versa.

    ``timings[(sweep, mode)]`` holds one :class:`~jaxplay.core.timing.Timing` per width, where
    sweep is ``"wide input"`` (n_out = ``narrow``) or ``"wide output"`` (n_in = ``narrow``).
    """

    widths: tuple[int, ...]
    narrow: int
    hidden: int
    timings: dict[tuple[str, str], tuple[timing.Timing, ...]]
    max_abs_diff: float
    device: str

    def faster(self, sweep: str, i: int) -> tuple[str, float]:
        """Which mode was faster at the i-th width of a sweep, and by what factor."""
        fwd = self.timings[(sweep, "jacfwd")][i].median
        rev = self.timings[(sweep, "jacrev")][i].median
        return ("jacfwd", rev / fwd) if fwd < rev else ("jacrev", fwd / rev)


SWEEPS = ("wide input", "wide output")
MODES = ("jacfwd", "jacrev")


def check_widths(widths: Sequence[int], limit: int = MAX_WIDTH) -> tuple[int, ...]:
    """Sorted distinct widths, refusing any outside 1..``limit`` (the message names the limit)."""
    sizes = tuple(sorted({int(w) for w in widths}))
    if not sizes:
        raise ValueError("choose at least one width")
    if sizes[0] < 1 or sizes[-1] > limit:
        raise ValueError(f"widths must be 1 to {limit} (got {sizes[-1]})")
    return sizes


@dataclass(frozen=True)
class JacobianPoint:
    """Both modes timed at one width of one sweep, and how far apart their Jacobians are."""

    sweep: str
    width: int
    jacfwd: timing.Timing
    jacrev: timing.Timing
    max_abs_diff: float


def jacobian_point(
    sweep: str, width: int, narrow: int = NARROW, hidden: int = HIDDEN, budget_s: float = 0.2
) -> JacobianPoint:
    """Time ``jit(jacfwd)`` and ``jit(jacrev)`` of the network w.r.t. x at one width.

    ``sweep`` is ``"wide input"`` (n_in = width, n_out = ``narrow``) or ``"wide output"``. One
    point per call, so a page can draw its progress between points (and cache each one).
    """
    if sweep not in SWEEPS:
        raise ValueError(f"unknown sweep {sweep!r}; choose one of {list(SWEEPS)}")
    (w,) = check_widths([width])
    n_in, n_out = (w, narrow) if sweep == SWEEPS[0] else (narrow, w)
    params, x = network(n_in, n_out, hidden)
    fwd, rev = jax.jit(jac_forward), jax.jit(jac_reverse)
    diff = float(jnp.max(jnp.abs(fwd(params, x) - rev(params, x))))
    return JacobianPoint(
        sweep,
        w,
        timing.measure(fwd, params, x, budget_s=budget_s, min_repeats=3),
        timing.measure(rev, params, x, budget_s=budget_s, min_repeats=3),
        diff,
    )


def jacobian_sweep(
    points: Sequence[JacobianPoint], narrow: int = NARROW, hidden: int = HIDDEN
) -> JacobianSweep:
    """The points of both sweeps (every width of one in the other too) as one sweep."""
    widths = tuple(sorted({p.width for p in points}))
    by = {(p.sweep, p.width): p for p in points}
    timings = {(s, m): tuple(getattr(by[(s, w)], m) for w in widths) for s in SWEEPS for m in MODES}
    worst = max((p.max_abs_diff for p in points), default=0.0)
    return JacobianSweep(widths, narrow, hidden, timings, worst, roofline.device_label())


def time_jacobians(
    widths: Sequence[int],
    narrow: int = NARROW,
    hidden: int = HIDDEN,
    budget_s: float = 0.2,
) -> JacobianSweep:
    """Time ``jit(jacfwd)`` and ``jit(jacrev)`` of the network w.r.t. x with ``timing.measure``.

    jacfwd pushes one tangent per *input* dimension, jacrev pulls one cotangent per *output*
    dimension, so a wide input favours jacrev and a wide output favours jacfwd.
    """
    sizes = check_widths(widths)
    points = [jacobian_point(sweep, w, narrow, hidden, budget_s) for sweep in SWEEPS for w in sizes]
    return jacobian_sweep(points, narrow, hidden)


def jacobian_figure(sweep: JacobianSweep) -> go.Figure:
    """Two panels (wide input, wide output), a line per mode: median time against width."""
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(
            f"wide input (n_out = {sweep.narrow})",
            f"wide output (n_in = {sweep.narrow})",
        ),
    )
    colors = {"jacfwd": "#1f77b4", "jacrev": "#d62728"}
    for col, name in enumerate(SWEEPS, start=1):
        for mode in MODES:
            ts = sweep.timings[(name, mode)]
            fig.add_trace(
                timing_line(
                    sweep.widths,
                    ts,
                    mode,
                    legendgroup=mode,
                    showlegend=col == 1,
                    line={"color": colors[mode]},
                ),
                1,
                col,
            )
    for col, title in ((1, "n_in (input width)"), (2, "n_out (output width)")):
        fig.update_xaxes(log_axis(title, sweep.widths, format_count), row=1, col=col)
    fig.update_yaxes(seconds_axis("time per Jacobian (median, quartiles)", bar_ends(*fig.data)))
    fig.update_layout(
        title=(
            f"jit(jacfwd) vs jit(jacrev) of the two-layer network (hidden {sweep.hidden}), "
            f"measured on {sweep.device}"
        ),
        margin={"t": 80, "b": 40},
    )
    return fig


# --- Hessian-vector products ---------------------------------------------------------------------


def hvp_test_function(x):
    """A non-quadratic scalar function of a vector: its Hessian is dense and x-dependent."""
    return jnp.sum(jnp.tanh(x) ** 2) + 0.5 * jnp.sum(x) ** 2


def hessian_times(f, x, v):
    """The explicit way: build the whole n×n Hessian, then multiply."""
    return jax.hessian(f)(x) @ v


MAX_HVP_DIM = 4096


def hvp_inputs(n: int) -> tuple[Any, Any]:
    """A point x and a direction v in R^n (seed 0)."""
    if not 1 <= n <= MAX_HVP_DIM:
        raise ValueError(f"the dimension must be 1 to {MAX_HVP_DIM} (got {n})")
    x, v = normal_arrays(0, (n,), (n,))
    return jnp.asarray(x), jnp.asarray(v)


@dataclass(frozen=True)
class JitHvp:
    """``jit`` of an HVP that takes ``f`` as an argument: as written, and two fixes."""

    as_written: Outcome
    static_argnums: np.ndarray
    closure: np.ndarray
    eager: np.ndarray

    @property
    def fixes_agree(self) -> bool:
        return bool(
            np.allclose(self.static_argnums, self.eager, rtol=1e-5, atol=1e-5)
            and np.allclose(self.closure, self.eager, rtol=1e-5, atol=1e-5)
        )


def jit_hvp(n: int = 5) -> JitHvp:
    """Run the article's ``optimized_hvp(f, x, v)`` (it raises) and the two ways that work.

    ``jit`` turns every argument into an abstract array to trace; a function is not an array.
    Either mark ``f`` static (``static_argnums=0``: it becomes part of the cache key, and each new
    function compiles anew) or close over it so the jitted function only takes arrays.
    """
    x, v = hvp_inputs(n)
    f = hvp_test_function
    as_written = capture.run(
        optimized_hvp,
        f,
        x,
        v,
        code="optimized_hvp(f, x, v)  # @jit def optimized_hvp(f, primals, tangents)",
    )
    static = jax.jit(hvp, static_argnums=0)(f, x, v)
    closure = jax.jit(lambda x, v: hvp(f, x, v))(x, v)
    return JitHvp(as_written, np.asarray(static), np.asarray(closure), np.asarray(hvp(f, x, v)))


def hvp_agreement(n: int) -> float:
    """max |hvp(f, x, v) − hessian(f)(x) @ v| at dimension n."""
    x, v = hvp_inputs(n)
    a = jax.jit(lambda x, v: hvp(hvp_test_function, x, v))(x, v)
    b = jax.jit(lambda x, v: hessian_times(hvp_test_function, x, v))(x, v)
    return float(jnp.max(jnp.abs(a - b)) / max(1.0, float(jnp.max(jnp.abs(b)))))


@dataclass(frozen=True)
class HvpSweep:
    """Time and compiled memory of three ways to H·v as the dimension grows.

    Attributes:
        timings: method -> one :class:`~jaxplay.core.timing.Timing` per dimension.
        memory: ``method -> bytes`` per dimension, of temporaries plus output that XLA reserves
            for the compiled function (``compiled.memory_analysis()``), or None where the
            backend does not report it.
        max_rel_diff: the largest relative difference of any method from the full Hessian's.
    """

    dims: tuple[int, ...]
    timings: dict[str, tuple[timing.Timing, ...]]
    memory: dict[str, tuple[int | None, ...]]
    max_rel_diff: float
    device: str

    def fastest(self, i: int) -> tuple[str, float]:
        """The fastest method at the i-th dimension, and how many times slower the slowest was."""
        medians = {m: self.timings[m][i].median for m in self.timings}
        best = min(medians, key=medians.__getitem__)
        return best, max(medians.values()) / medians[best]


def forward_over_reverse_hvp(f, x, v):
    """H v as the directional derivative of the gradient: ``jvp(grad(f), (x,), (v,))``."""
    return jax.jvp(jax.grad(f), (x,), (v,))[1]


#: The three ways to H·v, by name: forward-over-reverse, the article's reverse-over-reverse, and
#: the full Hessian (``hessian`` is itself ``jacfwd(jacrev(f))``) times v.
HVP_METHODS = (
    "jvp(grad(f)): forward over reverse",
    "the article's hvp: reverse over reverse",
    "hessian(f)(x) @ v",
)
HVP_FUNCTIONS: dict[str, Callable[..., Any]] = dict(
    zip(HVP_METHODS, (forward_over_reverse_hvp, hvp, hessian_times), strict=True)
)


def compiled_bytes(fn: Callable[..., Any], *args: Any) -> int | None:
    """Temporary + output bytes of ``fn`` compiled for ``args`` (None if not reported)."""
    try:
        analysis = fn.lower(*args).compile().memory_analysis()
    except (AttributeError, NotImplementedError, RuntimeError):
        return None
    if analysis is None:
        return None
    temp = getattr(analysis, "temp_size_in_bytes", None)
    out = getattr(analysis, "output_size_in_bytes", None)
    if temp is None or out is None:
        return None
    return int(temp) + int(out)


@dataclass(frozen=True)
class HvpPoint:
    """One method at one dimension: its time, compiled memory and distance from the Hessian's."""

    method: str
    n: int
    time: timing.Timing
    memory: int | None
    rel_diff: float


def hvp_point(method: str, n: int, budget_s: float = 0.2) -> HvpPoint:
    """Time one way to H·v (jitted, closing over f) at dimension n, and read its memory.

    One point per call, so a page can draw its progress between points (and cache each one).
    """
    if method not in HVP_FUNCTIONS:
        raise ValueError(f"unknown method {method!r}; choose one of {list(HVP_METHODS)}")
    (n,) = check_widths([n], MAX_HVP_DIM)
    x, v = hvp_inputs(n)
    f, way = hvp_test_function, HVP_FUNCTIONS[method]
    fn = jax.jit(lambda x, v: way(f, x, v))
    reference = np.asarray(jax.jit(lambda x, v: hessian_times(f, x, v))(x, v))
    got = np.asarray(fn(x, v))
    rel = float(np.max(np.abs(got - reference)) / max(1.0, float(np.max(np.abs(reference)))))
    return HvpPoint(
        method,
        n,
        timing.measure(fn, x, v, budget_s=budget_s, min_repeats=3),
        compiled_bytes(fn, x, v),
        rel,
    )


def hvp_sweep(points: Sequence[HvpPoint]) -> HvpSweep:
    """The points of every method at every dimension as one sweep."""
    dims = tuple(sorted({p.n for p in points}))
    by = {(p.method, p.n): p for p in points}
    return HvpSweep(
        dims,
        {m: tuple(by[(m, n)].time for n in dims) for m in HVP_METHODS},
        {m: tuple(by[(m, n)].memory for n in dims) for m in HVP_METHODS},
        max((p.rel_diff for p in points), default=0.0),
        roofline.device_label(),
    )


def time_hvp(dims: Sequence[int], budget_s: float = 0.2) -> HvpSweep:
    """Time every method of :data:`HVP_METHODS` at each dimension, and read their memory."""
    sizes = check_widths(dims, MAX_HVP_DIM)
    return hvp_sweep([hvp_point(m, n, budget_s) for n in sizes for m in HVP_METHODS])


def hvp_figure(sweep: HvpSweep) -> go.Figure:
    """Two panels against the dimension n: median time, and compiled working memory."""
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("time per call", "XLA temp + output memory")
    )
    colors = dict(zip(HVP_METHODS, ("#ff7f0e", "#2ca02c", "#9467bd"), strict=True))
    for name in HVP_METHODS:
        ts = sweep.timings[name]
        fig.add_trace(
            timing_line(sweep.dims, ts, name, legendgroup=name, line={"color": colors[name]}),
            1,
            1,
        )
        fig.add_trace(
            go.Scatter(
                x=list(sweep.dims),
                y=[float("nan") if m is None else m for m in sweep.memory[name]],
                mode="lines+markers",
                name=name,
                legendgroup=name,
                showlegend=False,
                line={"color": colors[name]},
            ),
            1,
            2,
        )
    times, memory = fig.data[0::2], fig.data[1::2]
    fig.update_xaxes(log_axis("dimension n", sweep.dims, format_count))
    fig.update_yaxes(
        seconds_axis("time per call (median, quartiles)", bar_ends(*times)), row=1, col=1
    )
    fig.update_yaxes(log_axis("bytes", bar_ends(*memory), format_bytes, base=4), row=1, col=2)
    fig.update_layout(
        title=f"Three ways to H·v, jitted, measured on {sweep.device}",
        margin={"t": 80, "b": 40},
    )
    return fig

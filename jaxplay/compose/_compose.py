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
from jaxplay.core.expr import parse
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
        Transform("jit", jax.jit, "compiles the function below it with XLA; values unchanged"),
        Transform("vmap", jax.vmap, "maps over axis 0 of x: one call per row, batched"),
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
    """A transform stack applied to f at x: result and jaxpr, or JAX's reason in plain words."""

    code: str
    input_shape: tuple[int, ...]
    output_shape: tuple[int, ...] | None
    values: np.ndarray | None
    jaxpr: str | None
    error: FriendlyError | None


def compose(stack: Sequence[str], source: str, shape: tuple[int, ...]) -> PipelineResult:
    """Apply ``stack`` (outermost first) to the formula ``source`` and call it at a fixed x.

    Raises:
        ExprError: the formula is not allowed.
        ValueError: an unknown transform, more than :data:`MAX_STACK` of them, or an output
            larger than :data:`MAX_OUTPUT_ELEMENTS` (the message names the limit).
    """
    stack = tuple(stack)
    if len(stack) > MAX_STACK:
        raise ValueError(f"at most {MAX_STACK} transforms can be stacked (got {len(stack)})")
    unknown = [s for s in stack if s not in TRANSFORMS]
    if unknown:
        raise ValueError(f"unknown transform(s) {unknown}; choose from {list(TRANSFORMS)}")
    f: Callable[..., Any] = parse(source, ("x",))
    for name in reversed(stack):
        f = TRANSFORMS[name].apply(f)
    x = example_input(shape)
    code = stack_code(stack, source)
    try:
        out = jax.eval_shape(f, jax.ShapeDtypeStruct(x.shape, x.dtype))
    except (TypeError, ValueError) as err:
        return PipelineResult(code, shape, None, None, None, explain_error(err, _COMPOSE_ERRORS))
    size = math.prod(out.shape)
    if size > MAX_OUTPUT_ELEMENTS:
        raise ValueError(
            f"the result would have {size} elements; the limit is {MAX_OUTPUT_ELEMENTS}"
        )
    # Evaluated under jit: one compile instead of one per primitive; the values are the same.
    values = np.asarray(timing.block(jax.jit(f)(x)))
    jaxpr = str(jax.make_jaxpr(f)(x))
    return PipelineResult(code, shape, tuple(values.shape), values, jaxpr, None)


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

    Attributes:
        as_written: calling the article's function with one shared ``params`` (D,).
        tiled_shape: the article's function only runs if params are copied per sample (B, D);
            the shape of that call's result.
        tiled_matches_loop: whether the tiled call then equals the loop.
        fixed: ``vmap(grad(loss), in_axes=(None, 0, 0))(params, X, Y)``, shape (B, D).
        loop: the same gradients by a Python loop over samples.
    """

    params_shape: tuple[int, ...]
    x_shape: tuple[int, ...]
    y_shape: tuple[int, ...]
    as_written: Outcome
    tiled_shape: tuple[int, ...]
    tiled_matches_loop: bool
    fixed: np.ndarray
    loop: np.ndarray

    @property
    def fixed_matches_loop(self) -> bool:
        return bool(np.allclose(self.fixed, self.loop, rtol=1e-5, atol=1e-5))


def per_sample(batch: int = 8, features: int = 3) -> PerSample:
    """Run both versions on a regression batch (seed 0) and a Python loop over the samples."""
    if not 1 <= batch <= MAX_SAMPLES or not 1 <= features <= MAX_FEATURES:
        raise ValueError(
            f"batch must be 1 to {MAX_SAMPLES} and features 1 to {MAX_FEATURES} "
            f"(got {batch}, {features})"
        )
    arrays = normal_arrays(0, (features,), (batch, features), (batch,))
    params, X, Y = (jnp.asarray(a) for a in arrays)
    as_written = capture.run(
        per_sample_gradient,
        params,
        X,
        Y,
        code="per_sample_gradient(params, X, Y)  # params: one shared vector",
    )
    grad_one = jax.jit(jax.grad(loss_for_sample))
    loop = np.stack([np.asarray(grad_one(params, X[i], Y[i])) for i in range(batch)])
    tiled = np.asarray(per_sample_gradient(jnp.tile(params, (batch, 1)), X, Y))
    return PerSample(
        params_shape=tuple(params.shape),
        x_shape=tuple(X.shape),
        y_shape=tuple(Y.shape),
        as_written=as_written,
        tiled_shape=tuple(tiled.shape),
        tiled_matches_loop=bool(np.allclose(tiled, loop, rtol=1e-5, atol=1e-5)),
        fixed=np.asarray(per_sample_grads(params, X, Y)),
        loop=loop,
    )


# --- jacfwd vs jacrev ----------------------------------------------------------------------------


MAX_WIDTH = 2048
HIDDEN = 64


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


def time_jacobians(
    widths: Sequence[int],
    narrow: int = 4,
    hidden: int = HIDDEN,
    budget_s: float = 0.2,
    on_progress: Callable[[float, str], None] | None = None,
) -> JacobianSweep:
    """Time ``jit(jacfwd)`` and ``jit(jacrev)`` of the network w.r.t. x with ``timing.measure``.

    jacfwd pushes one tangent per *input* dimension, jacrev pulls one cotangent per *output*
    dimension, so a wide input favours jacrev and a wide output favours jacfwd.
    """
    sizes = check_widths(widths)
    fns = {"jacfwd": jax.jit(jac_forward), "jacrev": jax.jit(jac_reverse)}
    out: dict[tuple[str, str], list[timing.Timing]] = {(s, m): [] for s in SWEEPS for m in MODES}
    worst = 0.0
    steps = len(sizes) * 4
    step = 0
    for sweep in SWEEPS:
        for w in sizes:
            n_in, n_out = (w, narrow) if sweep == SWEEPS[0] else (narrow, w)
            params, x = network(n_in, n_out, hidden)
            a, b = fns["jacfwd"](params, x), fns["jacrev"](params, x)
            worst = max(worst, float(jnp.max(jnp.abs(a - b))))
            for mode in MODES:
                if on_progress is not None:
                    on_progress(step / steps, f"{mode}, {sweep}: n_in={n_in}, n_out={n_out}")
                step += 1
                t = timing.measure(fns[mode], params, x, budget_s=budget_s, min_repeats=3)
                out[(sweep, mode)].append(t)
    if on_progress is not None:
        on_progress(1.0, "done")
    return JacobianSweep(
        sizes, narrow, hidden, {k: tuple(v) for k, v in out.items()}, worst, roofline.device_label()
    )


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
    """Time and compiled memory of ``hvp`` and ``hessian(f)(x) @ v`` as the dimension grows.

    Attributes:
        memory: ``(name, n) -> bytes`` of temporaries plus output that XLA reserves for the
            compiled function (``compiled.memory_analysis()``), or None where the backend does
            not report it.
    """

    dims: tuple[int, ...]
    timings: dict[str, tuple[timing.Timing, ...]]
    memory: dict[str, tuple[int | None, ...]]
    max_rel_diff: float
    device: str


HVP_METHODS = ("hvp (grad of grad·v)", "hessian(f)(x) @ v")


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


def time_hvp(
    dims: Sequence[int],
    budget_s: float = 0.2,
    on_progress: Callable[[float, str], None] | None = None,
) -> HvpSweep:
    """Time both ways (jitted, closing over f) at each dimension, and read their memory."""
    sizes = check_widths(dims, MAX_HVP_DIM)
    f = hvp_test_function
    fns = {
        HVP_METHODS[0]: jax.jit(lambda x, v: hvp(f, x, v)),
        HVP_METHODS[1]: jax.jit(lambda x, v: hessian_times(f, x, v)),
    }
    times: dict[str, list[timing.Timing]] = {m: [] for m in HVP_METHODS}
    memory: dict[str, list[int | None]] = {m: [] for m in HVP_METHODS}
    worst = 0.0
    for i, n in enumerate(sizes):
        x, v = hvp_inputs(n)
        a, b = (np.asarray(fn(x, v)) for fn in fns.values())
        worst = max(worst, float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b))))))
        for j, (name, fn) in enumerate(fns.items()):
            if on_progress is not None:
                on_progress((2 * i + j) / (2 * len(sizes)), f"{name}, n={n}")
            times[name].append(timing.measure(fn, x, v, budget_s=budget_s, min_repeats=3))
            memory[name].append(compiled_bytes(fn, x, v))
    if on_progress is not None:
        on_progress(1.0, "done")
    return HvpSweep(
        sizes,
        {k: tuple(v) for k, v in times.items()},
        {k: tuple(v) for k, v in memory.items()},
        worst,
        roofline.device_label(),
    )


def hvp_figure(sweep: HvpSweep) -> go.Figure:
    """Two panels against the dimension n: median time, and compiled working memory."""
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("time per call", "XLA temp + output memory")
    )
    colors = dict(zip(HVP_METHODS, ("#2ca02c", "#9467bd"), strict=True))
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
        title=f"Hessian-vector product vs full Hessian, jitted, measured on {sweep.device}",
        margin={"t": 80, "b": 40},
    )
    return fig

"""Hessian-vector products three ways (forward over reverse, the article's reverse over reverse,
the full Hessian), the article's ``jit`` of an HVP that takes ``f``, timed as ``n`` grows.
"""

from __future__ import annotations

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
    optimized_hvp,
)
from jaxplay.core import capture, claims, markdown, roofline, timing, words
from jaxplay.core.capture import Outcome
from jaxplay.core.figures import (
    bar_ends,
    format_bytes,
    format_count,
    log_axis,
    seconds_axis,
    timing_line,
    traces,
)
from jaxplay.core.i18n import N_, _, ngettext
from jaxplay.core.inputs import normal_arrays

from ._jacobians import check_widths

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

    def fastest(self, i: int) -> tuple[str, float, bool]:
        """The fastest method at the i-th dimension by median, how many times slower the slowest
        was, and whether it beat every other beyond both spreads (quartile ranges apart)."""
        at = {m: self.timings[m][i] for m in self.timings}
        best = min(at, key=lambda m: at[m].median)
        clear = all(at[best].clearly_faster_than(t) for m, t in at.items() if m != best)
        return best, max(t.median for t in at.values()) / at[best].median, clear


def forward_over_reverse_hvp(f, x, v):
    """H v as the directional derivative of the gradient: ``jvp(grad(f), (x,), (v,))``."""
    return jax.jvp(jax.grad(f), (x,), (v,))[1]


#: The three ways to H·v, by name: forward-over-reverse, the article's reverse-over-reverse, and
#: the full Hessian (``hessian`` is itself ``jacfwd(jacrev(f))``) times v.
HVP_METHODS = (
    N_("jvp(grad(f)): forward over reverse"),
    N_("the article's hvp: reverse over reverse"),
    "hessian(f)(x) @ v",
)
#: The three ways in words, for a page to show before it times them (Markdown).
HVP_WAYS = N_(
    "Three ways to H·v: **forward over reverse**, `jvp(grad(f), (x,), (v,))` (one "
    "forward pass through the gradient); the article's **reverse over reverse**, "
    "`grad(lambda x: vdot(grad(f)(x), v))`; and the **full Hessian** times v."
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
        rows=1, cols=2, subplot_titles=(_("time per call"), _("XLA temp + output memory"))
    )
    colors = dict(zip(HVP_METHODS, ("#ff7f0e", "#2ca02c", "#9467bd"), strict=True))
    for name in HVP_METHODS:
        ts = sweep.timings[name]
        fig.add_trace(
            timing_line(sweep.dims, ts, _(name), legendgroup=name, line={"color": colors[name]}),
            1,
            1,
        )
        fig.add_trace(
            go.Scatter(
                x=list(sweep.dims),
                y=[float("nan") if m is None else m for m in sweep.memory[name]],
                mode="lines+markers",
                name=_(name),
                legendgroup=name,
                showlegend=False,
                line={"color": colors[name]},
            ),
            1,
            2,
        )
    times, memory = traces(fig)[0::2], traces(fig)[1::2]
    fig.update_xaxes(log_axis(_("dimension n"), sweep.dims, format_count))
    fig.update_yaxes(
        seconds_axis(_("time per call (median, quartiles)"), bar_ends(*times)), row=1, col=1
    )
    fig.update_yaxes(log_axis(_("bytes"), bar_ends(*memory), format_bytes, base=4), row=1, col=2)
    fig.update_layout(
        title=_("Three ways to H·v, jitted, measured on {device}").format(device=sweep.device),
        margin={"t": 80, "b": 40},
    )
    return fig


# --- what the page offers and says ---------------------------------------------------------------

#: The dimensions a visitor can pick, and those picked at first.
DIM_CHOICES: tuple[int, ...] = (16, 64, 256, 1024, 2048, MAX_HVP_DIM)
DEFAULT_DIMS: tuple[int, ...] = (16, 256, 1024)
#: The dimension at which the page compares hvp with the full Hessian's H·v.
AGREEMENT_N = 100


@claims.states("compose.jit_of_hvp_taking_f_raises")
def as_written_sentence(made: JitHvp) -> str:
    """The article's ``jit`` of an hvp taking ``f``, and the error it raises (Markdown)."""
    return _("**As written:** {error}").format(error=markdown.code(made.as_written.headline))


@claims.states("compose.jit_of_hvp_taking_f_raises", "compose.hvp_ways_agree")
def jit_hvp_why(made: JitHvp, agreement: float) -> str:
    """Why ``jit`` refuses ``f``, the two fixes and whether they agree, and how far hvp is from
    the full Hessian's H·v at :data:`AGREEMENT_N` (``agreement``, from :func:`hvp_agreement`)."""
    return _(
        "**Why:** `jit` traces every argument as an array; a function is not one. **Fix:** "
        "`jit(hvp, static_argnums=0)` (f becomes part of the cache key) or a closure "
        "`jit(lambda x, v: hvp(f, x, v))`. Both equal the un-jitted hvp: **{agree}**. hvp "
        "vs `hessian(f)(x) @ v` at n={n}: relative difference {diff}."
    ).format(
        agree=_("yes") if made.fixes_agree else _("no"), n=AGREEMENT_N, diff=f"{agreement:.1g}"
    )


def hvp_steps(dims: Sequence[int]) -> list[tuple[str, int]]:
    """The points to time, one :func:`hvp_point` each: every method at a dimension, then the
    next dimension (the order the progress bar shows)."""
    return [(m, n) for n in dims for m in HVP_METHODS]


def hvp_step_label(step: tuple[str, int]) -> str:
    """The point being timed, for the progress bar."""
    return f"{_(step[0])}, n={step[1]}"


@claims.states_nothing("a progress box's titles")
def hvp_progress(k: int) -> tuple[str, str]:
    """The progress box's title while ``k`` dimensions are timed, and once they are."""
    running = ngettext(
        "Timing three ways to H·v at {n} dimension",
        "Timing three ways to H·v at {n} dimensions",
        k,
    ).format(n=f"{k:,}")
    done = ngettext(
        "Timed three ways at {n} dimension", "Timed three ways at {n} dimensions", k
    ).format(n=f"{k:,}")
    return running, done


@claims.states_nothing("this run's measured times and differences")
def hvp_summary(sweep: HvpSweep) -> str:
    """The largest dimension's times, the fastest way, and how far the ways are apart."""
    last = len(sweep.dims) - 1
    best, spread, clear = sweep.fastest(last)
    return (
        _(
            "At n={n}: {times}. Fastest: {best}, {spread}× faster than the slowest. Largest "
            "relative difference from the full Hessian's H·v: {diff}."
        )
        if clear
        else _(
            "At n={n}: {times}. No clear fastest: {best} has the lowest median, but its "
            "quartile range overlaps another's. Largest relative difference from the full "
            "Hessian's H·v: {diff}."
        )
    ).format(
        n=sweep.dims[last],
        times=_("; ").join(
            _("{method}: {time}").format(
                method=_(m), time=timing.format_seconds(sweep.timings[m][last].median)
            )
            for m in HVP_METHODS
        ),
        best=_(best),
        spread=words.factor(spread),
        diff=f"{sweep.max_rel_diff:.1g}",
    )

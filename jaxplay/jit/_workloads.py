"""The jit page's workloads: the article's functions, their inputs and limits.

Why a module of its own: the page must time exactly what it shows. Every function the page offers
lives here as real source (so ``inspect.getsource`` shows what ran), every input is built here
from plain values (preset name, formula text, shape, dtype), and the numbers come from
:mod:`jaxplay.core.timing`. The page only passes widget values in and draws what comes back.

The presets follow the seed article: its ``naive_softmax`` on ``jnp.ones((10000, 1000))``, its
``unoptimized_chain`` of elementwise ops (the article breaks off after ``y = jnp.sin(x)``; the rest
of the chain is ours and says so), a ``tanh`` layer (a matmul, so compute rather than memory can
be the limit), and any formula of ``x`` typed into the safe expression box
(:mod:`jaxplay.core.expr`).
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxplay import sandbox
from jaxplay.article import naive_softmax
from jaxplay.core import budget, expr, i18n, timing
from jaxplay.core.errors import InputError
from jaxplay.core.i18n import N_, _

log = logging.getLogger(__name__)

#: Largest input the page times, in elements of ``x`` (the article's 10000×1000 is 10 million).
MAX_ELEMENTS = 16_000_000
#: Longest one call may be predicted to take (sorts, scans and loops priced by what they cost
#: here): a measurement is cut at its time budget, but only between calls, so a call longer than
#: that budget must be refused before it runs.
MAX_CALL_S = 2.0
#: What one call may cost: its work (LAPACK calls counted by their operation counts), its
#: predicted time and the memory it holds at once when run op by op, as the eager side of every
#: comparison runs it.
BUDGET = budget.Budget(max_flops=40e9, max_peak_bytes=512 * 2**20, max_seconds=MAX_CALL_S)
#: Dtypes a visitor may pick (float64 needs ``jax_enable_x64``, which this server leaves off).
DTYPES: tuple[str, ...] = ("float32", "bfloat16", "float16")


class SizeError(InputError):
    """An input the page refuses to time; the message names the limit."""


# --- the functions (their source is what the page shows) ----------------------------------------


def unoptimized_chain(x):
    """未优化的操作链"""
    y = jnp.sin(x)
    # The article's text stops here; the rest of the chain is ours.
    y = jnp.cos(y) * 2.0
    y = y * y + 1.0
    return jnp.exp(-y)


def tanh_layer(x, W, b):
    return jnp.tanh(x @ W + b)


@dataclass(frozen=True)
class Preset:
    """A function the page can time.

    Attributes:
        key: stable name for widgets and links.
        label: what the visitor picks from.
        story: one sentence on what it shows about jit.
        function: the Python function, or ``None`` for the typed formula.
        origin: where it comes from (the article, or ours).

    ``label``, ``story`` and ``origin`` are English, marked with ``N_``: the page translates them.
    """

    key: str
    label: str
    story: str
    function: Callable[..., Any] | None
    origin: str


PRESETS: dict[str, Preset] = {
    p.key: p
    for p in (
        Preset(
            "softmax",
            N_("Seed: naive softmax"),
            N_("exp(x) divided by the sum of exp(x) over each row, as the article writes it."),
            naive_softmax,
            N_("the article, section 1"),
        ),
        Preset(
            "chain",
            N_("Seed: unoptimized chain"),
            N_("A chain of elementwise ops, each of which writes a whole array when run eagerly."),
            unoptimized_chain,
            N_("the article, section 8 (cut off after its first line; completed here)"),
        ),
        Preset(
            "layer",
            N_("tanh layer"),
            N_("A matmul then an elementwise tail: compute, rather than memory, can be the limit."),
            tanh_layer,
            N_("ours"),
        ),
        Preset(
            "formula",
            N_("Your formula"),
            N_("Any formula of x in the safe expression language."),
            None,
            N_("you"),
        ),
    )
}
DEFAULT_FORMULA = "jnp.sin(x) ** 2 + jnp.cos(x) ** 2"


@dataclass(frozen=True)
class Workload:
    """What to time: plain values only, so it can key a cache and be put in a link.

    Attributes:
        preset: a key of :data:`PRESETS`.
        rows, cols: the shape of ``x``.
        dtype: one of :data:`DTYPES`.
        formula: the formula text (used when ``preset == "formula"``).
    """

    preset: str
    rows: int
    cols: int
    dtype: str = "float32"
    formula: str = DEFAULT_FORMULA

    @property
    def elements(self) -> int:
        return self.rows * self.cols


#: The page's default view: the article's softmax at the article's size.
DEFAULT_WORKLOAD = Workload("softmax", 10_000, 1_000, "float32")

#: How a check gets a workload's :class:`~jaxplay.core.budget.Footprint` and result size:
#: :func:`footprint` (traced here) or :func:`footprint_in_worker`.
Tracer = Callable[[str, int, int, str, str], tuple[budget.Footprint, int]]


def check(workload: Workload, trace: Tracer | None = None) -> None:
    """Refuse what the page will not time, naming the limit.

    Everything here is decided before anything runs, from plain values and the program traced
    on abstract inputs (``trace``: :func:`footprint` here by default, or the server's
    :func:`footprint_in_worker`): the measurement lock is never held by work whose cost was not
    bounded first. Why a static budget rather than a sandboxed worker: this page exists to time
    JAX *on this server's device*; the budget is cheap to check (a formula is at most a few
    hundred parts, traced once without data) and covers every intermediate and every LAPACK
    call, not just the result.

    Raises:
        SizeError: too many elements, too much work or memory per call, an unknown preset or
            dtype.
        expr.ExprError: the formula is not allowed (with its column).
        TypeError: the formula does not fit this shape (e.g. ``x @ x`` on a non-square ``x``).
    """
    if workload.preset not in PRESETS:
        raise SizeError(_("unknown function {name}").format(name=repr(workload.preset)))
    if workload.dtype not in DTYPES:
        raise SizeError(not_offered(workload.dtype))
    if workload.rows < 1 or workload.cols < 1:
        raise SizeError(_("both dimensions must be at least 1"))
    if workload.elements > MAX_ELEMENTS:
        raise SizeError(
            _(
                "x would have {elements} elements; the limit is {limit} (the machine is shared: "
                "keep one measurement under a few seconds)"
            ).format(elements=f"{workload.elements:,}", limit=f"{MAX_ELEMENTS:,}")
        )
    if workload.preset == "formula":
        expr.parse(workload.formula, ("x",))
    fp, out_elements = (trace or footprint)(
        workload.preset, workload.rows, workload.cols, workload.dtype, workload.formula
    )
    if out_elements > MAX_ELEMENTS:
        raise SizeError(
            _("the formula's result would have {elements} elements; the limit is {limit}").format(
                elements=f"{out_elements:,}", limit=f"{MAX_ELEMENTS:,}"
            )
        )
    problems = BUDGET.violations(fp)
    if problems:
        raise SizeError(
            _("{problems} (make rows or cols smaller)").format(problems=_("; ").join(problems))
        )


def not_offered(dtype: str) -> str:
    """The refusal of a dtype the page does not offer, naming those it does."""
    return _("dtype {dtype} is not offered; pick one of {dtypes}").format(
        dtype=repr(dtype), dtypes=", ".join(DTYPES)
    )


@functools.lru_cache(maxsize=64)
def footprint(
    preset: str, rows: int, cols: int, dtype: str, formula: str
) -> tuple[budget.Footprint, int]:
    """The :class:`~jaxplay.core.budget.Footprint` of one call, and the result's element count.

    Traced on ``jax.ShapeDtypeStruct`` inputs: nothing is allocated or computed, so a formula
    that would need 17 GB is refused in a few milliseconds.

    Raises:
        expr.ExprError: the formula is not allowed.
        TypeError: the formula does not fit this shape.
    """
    import jax

    workload = Workload(preset, rows, cols, dtype, formula)
    specs = [jax.ShapeDtypeStruct((rows, cols), jnp.dtype(dtype))]
    if preset == "layer":
        specs += [
            jax.ShapeDtypeStruct((cols, cols), jnp.dtype(dtype)),
            jax.ShapeDtypeStruct((cols,), jnp.dtype(dtype)),
        ]
    fn = function_of(workload)
    closed = jax.make_jaxpr(fn)(*specs)
    out_elements = sum(math.prod(v.aval.shape) for v in closed.jaxpr.outvars)
    return budget.footprint(closed), out_elements


@dataclass(frozen=True)
class Traced:
    """A workload's trace as the compute worker reports it (:func:`trace`): one call's
    footprint and the result's element count, or the exception the trace raised.

    Why an exception is data here: raised, it would come back as a type name and a message and
    end the worker (a script sending failing formulas would have the pool start one each time);
    and the formula language's refusal needs its column (the page draws a caret under it) in
    the visitor's language.

    Attributes:
        footprint: ``None`` when the trace raised.
        out_elements: the result's element count.
        exc_type, message: the exception's class name and message ("" when none).
        line, col: where an :class:`~jaxplay.core.expr.ExprError` points.
    """

    footprint: budget.Footprint | None = None
    out_elements: int = 0
    exc_type: str = ""
    message: str = ""
    line: int = 1
    col: int | None = None


def trace(preset: str, rows: int, cols: int, dtype: str, formula: str, language: str) -> Traced:
    """:func:`footprint` in the compute worker, speaking ``language`` (the formula language's
    refusals: a ``decimals`` that is not a whole number, ...); what it raises, as data."""
    with i18n.speaking(language):
        try:
            fp, out_elements = footprint(preset, rows, cols, dtype, formula)
        except expr.ExprError as refused:
            return Traced(
                exc_type="ExprError", message=refused.message, line=refused.line, col=refused.col
            )
        except MemoryError:  # the worker's own limit, not the shape's refusal: not kept
            raise
        except Exception as raised:  # JAX's refusal of this shape, as the trace here raises it
            message = str(raised)[:MAX_MESSAGE_CHARS]
            return Traced(exc_type=type(raised).__name__, message=message)
    return Traced(fp, out_elements)


#: Wall-clock and CPU seconds a workload's trace may take in the compute worker (a formula of
#: at most a few hundred parts traces in milliseconds).
TRACE_TIMEOUT_S = 10.0
#: Longest message of a trace's exception that comes back (JAX's are a few lines).
MAX_MESSAGE_CHARS = 20_000
#: Python's exceptions a trace raises for a formula that does not fit its shape (JAX's
#: ``TypeError`` for ``x @ x``, ``ValueError`` for an axis out of range, ...), raised again in
#: the server as the trace there would have raised them; any other (JAX's own classes, such as
#: ``ConcretizationTypeError``) comes as :class:`jaxplay.sandbox.TaskFailed` with its class
#: name, shown as the same ``Type: message``.
RAISED: dict[str, type[Exception]] = {
    kind.__name__: kind
    for kind in (
        TypeError,
        ValueError,
        IndexError,
        ArithmeticError,
        OverflowError,
        ZeroDivisionError,
        NotImplementedError,  # JAX's refusal of an operation it does not lower for this dtype
    )
}
#: One check's trace in the compute worker at a time: a script sending new shapes waits here,
#: and takes at most one of the pool's workers.
_TRACING = threading.Lock()


def footprint_in_worker(
    preset: str, rows: int, cols: int, dtype: str, formula: str
) -> tuple[budget.Footprint, int]:
    """:func:`footprint` as the server checks a workload: traced in the compute worker
    (:func:`jaxplay.sandbox.compute`), unless it is a preset at the page's own sizes (a few
    programs, known). Where no worker can start it is traced here, as without one (the log says
    so).

    Why: JAX keeps what tracing makes at a new shape in process-wide caches (the jaxprs of the
    ``jnp`` functions a program calls, 0.03 to 0.1 MB a shape), and a workload refused after
    its trace costs nothing else: a script sending 6,000 new shapes of a formula that fails at
    its last step grew the server by 557 MB. The compute worker is the server's own (no
    visitor's Code Lab run, no bubblewrap needed: our function, on values :func:`check` has
    checked), and it starts over when it has grown. The trace needs neither the measurement
    lock nor the visitor's throttle (it times nothing, in milliseconds), so a refusal comes at
    once, even while another visitor's measurement runs.

    Raises:
        expr.ExprError: the formula is not allowed (in the visitor's language, with its column).
        TypeError, ValueError, ...: (:data:`RAISED`) the formula does not fit this shape.
        sandbox.TaskFailed: the trace raised another exception, failed, or ran out of time.
    """
    known = (rows, cols) == (DEFAULT_WORKLOAD.rows, DEFAULT_WORKLOAD.cols)
    if known and (preset != "formula" or formula == DEFAULT_FORMULA):
        return footprint(preset, rows, cols, dtype, formula)
    try:
        traced = _traced(preset, rows, cols, dtype, formula, i18n.current())
    except _NoWorker as none:
        log.warning("jaxplay: no compute worker (%s); tracing in the server", none)
        return footprint(preset, rows, cols, dtype, formula)
    if traced.footprint is not None:
        return traced.footprint, traced.out_elements
    # A worker's answer, bounded before use: its message's length, and a place inside the
    # formula (a caret is drawn that many spaces in).
    message = traced.message[:MAX_MESSAGE_CHARS]
    if traced.exc_type == "ExprError":
        line = traced.line if 1 <= traced.line <= formula.count("\n") + 1 else 1
        col = traced.col if traced.col is not None and 1 <= traced.col <= len(formula) + 1 else None
        raise expr.ExprError(message, line, col)
    if traced.exc_type in RAISED:
        raise RAISED[traced.exc_type](message)
    raise sandbox.TaskFailed(
        sandbox.RunError(kind="exception", message=message, exc_type=traced.exc_type[:80])
    )


@functools.lru_cache(maxsize=64)
def _traced(preset: str, rows: int, cols: int, dtype: str, formula: str, language: str) -> Traced:
    """:func:`trace` in the compute worker, kept: a refusal too, since a page that shows one
    runs again at every widget change. Where no worker could start it raises
    :class:`_NoWorker` (not kept: the next check asks again)."""
    with _TRACING:
        try:
            return sandbox.compute(
                trace,
                timeout_s=TRACE_TIMEOUT_S,
                cpu_s=TRACE_TIMEOUT_S,
                preset=preset,
                rows=rows,
                cols=cols,
                dtype=dtype,
                formula=formula,
                language=language,
            )
        except sandbox.TaskFailed as failed:
            if failed.error.kind != "refused":
                raise
            raise _NoWorker(failed.error.message) from None


class _NoWorker(Exception):
    """No compute worker could start for a check's trace (the message says why)."""


def function_of(workload: Workload) -> Callable[..., Any]:
    """The Python function to time (the parsed formula for the formula preset)."""
    preset = PRESETS[workload.preset]
    if preset.function is not None:
        return preset.function
    return expr.parse(workload.formula, ("x",))


def inputs(workload: Workload) -> tuple[Any, ...]:
    """The arguments, drawn by NumPy from a fixed seed: uniform in [0.5, 1.5] so log and sqrt
    stay finite (:func:`jaxplay.jit.timing_code` shows these lines).

    NumPy, not ``jax.random``: JAX compiles its random program for every new shape and draws
    with threefry, slow on a CPU. For the article's 10,000 x 1,000 float32 that was 0.58 CPU-s
    against NumPy's 0.11 on two cores (``benchmarks/jit_page_cost.py``), 0.39-0.48 against
    0.08-0.10 on one, paid by every visitor's new size inside the measurement lock before
    anything is timed (the development VM, 2026-12-06). The inputs are not what the page times.

    Returned computed (blocked) on the device: a transfer still running when a stopwatch starts
    would be timed as part of whatever comes next (a draw once made the first call of the
    article's softmax look five times slower than the compile).
    """
    rng = np.random.default_rng(0)
    dtype = workload.dtype
    x = jnp.asarray(rng.uniform(0.5, 1.5, (workload.rows, workload.cols)), dtype)
    if workload.preset != "layer":
        return timing.block((x,))
    scale = 1.0 / math.sqrt(workload.cols)
    w = jnp.asarray(rng.uniform(-scale, scale, (workload.cols, workload.cols)), dtype)
    b = jnp.asarray(rng.uniform(-0.1, 0.1, (workload.cols,)), dtype)
    return timing.block((x, w, b))


def function_source(workload: Workload) -> str:
    """The code of the function being timed, as the page shows it."""
    preset = PRESETS[workload.preset]
    if preset.function is not None:
        return inspect.getsource(preset.function)
    return (
        "# parsed by jaxplay.core.expr (no eval): an ordinary function of x\n"
        f"f = expr.parse({workload.formula!r}, ('x',))\n"
    )

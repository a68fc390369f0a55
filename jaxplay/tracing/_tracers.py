"""What a function sees while JAX traces it, the mistakes that follow, and what tracing costs.

Why a module of its own: ``jit``, ``grad`` and ``vmap`` run the Python function once with *tracers*
standing in for arrays, record what it does, and never run the Python again for inputs of the same
shape, dtype and static values. Every classic JAX surprise follows from that: a Python ``if`` on a
traced value, a tracer saved in a list, a ``print`` that runs once, a side effect that happens at
trace time only, a function that recompiles on every call, a Python loop whose jaxpr grows with its
length. Each is shown here by *running* it: the outputs and error messages are JAX's own.

- :func:`trace_views` — a function printing what it receives under each transform.
- :data:`PITFALLS` — the common errors, run through :func:`jaxplay.core.capture.run`: their real
  messages and their fixes.
- :data:`SCENARIOS` and :func:`run_recompilation_lab` — compilations logged with JAX's
  explanation of every cache miss, and the jitted function's cache size after each call.
- :func:`loop_growth` — equation counts of a Python loop vs ``fori_loop``/``scan`` by length.

Long: four short demos of one mechanism (trace once, reuse the result), each its functions, its
data and the table the page shows; they share the capture of what JAX printed and raised.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxplay.article import dynamic_control_flow
from jaxplay.core import capture, compilation, i18n, jax_private, jaxprs
from jaxplay.core.capture import Outcome
from jaxplay.core.figures import format_count, log_axis
from jaxplay.core.i18n import N_

from ._inputs import parse_shape

# Bound, not imported: the demo functions below write ``_, kept = ...`` and ``for _ in ...``
# (their code is shown and run as written), which would shadow an imported ``_`` (ruff F402);
# locally it is harmless.
_ = i18n._

# --- what a function sees -----------------------------------------------------------------------


def peek(x):
    print(f"type: {type(x).__name__}  shape: {x.shape}  dtype: {x.dtype}")
    print(f"repr: {x!r}")
    return x * 2


@dataclass(frozen=True)
class TraceView:
    """``peek`` called one way, and what it printed."""

    how: str
    outcome: Outcome


def _fresh_peek() -> Callable[[Any], Any]:
    # jit caches traces by function identity: a fresh wrapper is traced (and prints) every time.
    return compilation.fresh_function(peek)


#: The ways ``peek`` is called, as ``(code shown, call)``; ``x`` is ``jnp.arange(3.0)``.
TRACE_CALLS: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("peek(x)", lambda x: _fresh_peek()(x)),
    ("jax.jit(peek)(x)", lambda x: jax.jit(_fresh_peek())(x)),
    (
        "jax.grad(lambda x: peek(x).sum())(x)",
        lambda x: jax.grad(lambda v: _fresh_peek()(v).sum())(x),
    ),
    ("jax.vmap(peek)(jnp.stack([x, x]))", lambda x: jax.vmap(_fresh_peek())(jnp.stack([x, x]))),
    ("jax.make_jaxpr(peek)(x)", lambda x: jax.make_jaxpr(_fresh_peek())(x)),
)


def trace_views() -> tuple[TraceView, ...]:
    """``peek`` under no transform, ``jit``, ``grad``, ``vmap`` and ``make_jaxpr``: its prints."""
    x = jnp.arange(3.0)
    return tuple(TraceView(how, capture.run(call, x)) for how, call in TRACE_CALLS)


# --- pitfalls -----------------------------------------------------------------------------------


def python_if_under_jit():
    def relu(x):
        if x > 0:
            return x
        return 0.0 * x

    return jax.jit(relu)(jnp.float32(3.0))


def fix_if_with_static_argnums():
    def relu(x):
        if x > 0:
            return x
        return 0.0 * x

    # x is now a compile-time constant: one compilation per distinct value.
    return jax.jit(relu, static_argnums=0)(3.0)


def fix_if_with_lax_cond():
    def relu(x):
        return lax.cond(x > 0, lambda v: v, lambda v: 0.0 * v, x)

    return jax.jit(relu)(jnp.float32(3.0))


def traced_size():
    def first_n(x, n):
        return jnp.arange(n) * x

    return jax.jit(first_n)(2.0, 5)


def fix_size_with_static_argnums():
    def first_n(x, n):
        return jnp.arange(n) * x

    return jax.jit(first_n, static_argnums=1)(2.0, 5)


def leaked_tracer():
    saved = []

    def remember(x):
        saved.append(x)  # a tracer escapes the trace
        return x * 2

    jax.jit(remember)(1.0)
    return saved[0] + 1


def fix_leak_by_returning():
    def remember(x):
        return x * 2, x  # return what you want to keep

    _, kept = jax.jit(remember)(1.0)
    return kept + 1


def print_vs_debug_print():
    def noisy(x):
        print("print sees:", x)
        jax.debug.print("jax.debug.print sees: {}", x)
        return x * 2

    f = jax.jit(noisy)
    return [float(f(v)) for v in (1.0, 2.0, 3.0)]


def impure_counter():
    counter = 0

    def impure_function(x):
        nonlocal counter
        counter += 1  # a side effect: runs while tracing, not on every call
        return x * 2

    jitted_impure = jax.jit(impure_function)
    jitted_impure(jnp.ones(5))
    jitted_impure(jnp.ones(5))
    return counter


def fix_counter_as_state():
    def pure_function(x, counter):
        return x * 2, counter + 1  # state goes in and comes out

    f = jax.jit(pure_function)
    counter = 0
    _, counter = f(jnp.ones(5), counter)
    _, counter = f(jnp.ones(5), counter)
    return int(counter)


def article_partial_import():
    from jax import partial  # the article's line: jax no longer re-exports functools.partial  # pyright: ignore[reportAttributeAccessIssue]

    return partial


def fix_partial_import():
    from functools import partial

    return partial


#: A type checker's pragma at a line's end (the article's failing import carries one).
_PRAGMA = re.compile(r"  # pyright: ignore\[\w+\]")


@dataclass(frozen=True)
class Pitfall:
    """A mistake made visible: the code, what goes wrong (run for real), why, and the fixes.

    Attributes:
        key: a stable id (``if``).
        title: the heading (marked for translation, like ``why`` and ``fix_note``).
        broken: the code that goes wrong (raises, or does something surprising).
        fixes: code that does what was meant.
        expected_error: the exception type ``broken`` raises, or ``None`` if it runs and
            surprises instead (the test suite checks both).
        why: what happened, in two sentences.
        fix_note: what the fixes change.
    """

    key: str
    title: str
    broken: Callable[[], Any]
    fixes: tuple[Callable[[], Any], ...]
    expected_error: str | None
    why: str
    fix_note: str

    @property
    def broken_source(self) -> str:
        """The code as the page shows it, without the type checker's pragma that lets the
        article's failing import stand as written."""
        return _PRAGMA.sub("", inspect.getsource(self.broken))

    @property
    def fix_sources(self) -> tuple[str, ...]:
        return tuple(inspect.getsource(f) for f in self.fixes)


PITFALLS: tuple[Pitfall, ...] = (
    Pitfall(
        "if",
        N_("A Python `if` on a traced value"),
        python_if_under_jit,
        (fix_if_with_static_argnums, fix_if_with_lax_cond),
        "TracerBoolConversionError",
        N_(
            "Under `jit`, `x` is a tracer: an abstract `f32[]` with no value yet, so `x > 0` is "
            "a traced boolean and Python's `if` cannot pick a branch."
        ),
        N_(
            "Make `x` static (`static_argnums`: a compilation per value), or keep the choice in "
            "the program with `lax.cond` (both branches compiled, one runs) or `jnp.where`."
        ),
    ),
    Pitfall(
        "shape",
        N_("A shape that depends on a traced value"),
        traced_size,
        (fix_size_with_static_argnums,),
        "ConcretizationTypeError",
        N_(
            "Array shapes are fixed at trace time. `jnp.arange(n)` needs a concrete `n`, but "
            "under `jit` every argument is traced unless marked static."
        ),
        N_("Mark `n` static: each distinct `n` compiles its own program with its own shapes."),
    ),
    Pitfall(
        "leak",
        N_("A tracer leaked out of a transform"),
        leaked_tracer,
        (fix_leak_by_returning,),
        "UnexpectedTracerError",
        N_(
            "Saving an intermediate in an outer list keeps the tracer alive after tracing ended; "
            "using it later is an error, because it never had a value."
        ),
        N_("Transformed functions must be pure: return what you need instead of storing it."),
    ),
    Pitfall(
        "print",
        N_("`print` vs `jax.debug.print`"),
        print_vs_debug_print,
        (),
        None,
        N_(
            "`print` runs while tracing: once, and it shows a tracer. `jax.debug.print` is "
            "staged into the program and prints the real value on every call."
        ),
        N_("Use `jax.debug.print` (or `jax.debug.callback`) to see values inside `jit`."),
    ),
    Pitfall(
        "counter",
        N_("A side effect runs at trace time only (the article's counter)"),
        impure_counter,
        (fix_counter_as_state,),
        None,
        N_(
            "The counter is incremented while tracing; the second call reuses the compiled "
            "program, which knows nothing of Python's counter. After two calls it is 1, not 2. "
            "(The article uses a `global`; a local `nonlocal` counter behaves the same.)"
        ),
        N_("Thread state through the function: pass it in, return the new value."),
    ),
    Pitfall(
        "partial",
        N_("The article's `from jax import partial`"),
        article_partial_import,
        (fix_partial_import,),
        "ImportError",
        N_("Old JAX re-exported `functools.partial`; current JAX does not."),
        N_("Import it from `functools`: `@partial(jax.jit, static_argnums=(1,))` works as before."),
    ),
)


@dataclass(frozen=True)
class ErrorHint:
    """What an error of one type means for any function that raises it (not one pitfall's
    story: the staged function may be anyone's), and the usual fixes; marked for translation."""

    title: str
    why: str
    fix: str


#: Exception type (as the staged error's text begins) -> what it means for any code. The
#: subclasses of ``ConcretizationTypeError`` come first: each says more than its base.
ERROR_HINTS: dict[str, ErrorHint] = {
    "TracerBoolConversionError": ErrorHint(
        N_("A Python branch on a traced value"),
        N_(
            "Python needed `True` or `False` from a traced array (an `if`, a `while`, `and`, "
            "`or`, `bool()`): while JAX traces, the array has a shape and a dtype, not a value."
        ),
        N_(
            "Branch with `jnp.where` or `lax.cond`, or make that argument static "
            "(`static_argnums`) if its value decides the program."
        ),
    ),
    "TracerIntegerConversionError": ErrorHint(
        N_("A Python integer from a traced value"),
        N_(
            "Python needed an index from a traced array (`range(n)`, an index into a Python "
            "list, `operator.index`): while JAX traces, the array has no value."
        ),
        N_("Loop with `lax.fori_loop`, or make that argument static (`static_argnums`)."),
    ),
    "TracerArrayConversionError": ErrorHint(
        N_("A NumPy array from a traced value"),
        N_(
            "NumPy (`np.asarray`, an `np.` function) needed the array's values, and a traced "
            "array has none."
        ),
        N_("Use `jnp` instead of `np` inside the function."),
    ),
    "ConcretizationTypeError": ErrorHint(
        N_("A concrete value from a traced array"),
        N_(
            "JAX needed a concrete value (for `float()` or `int()`, a shape such as "
            "`jnp.arange(n)`'s, the size of `jnp.nonzero`'s result) from an array it only "
            "traces here."
        ),
        N_(
            "Make that argument static (`static_argnums`); for `jnp.nonzero`, `jnp.unique` or "
            "a one-argument `jnp.where`, give the result's `size=`."
        ),
    ),
    "UnexpectedTracerError": ErrorHint(
        N_("A tracer that escaped"),
        N_(
            "A traced value was kept outside the function (a global, a list, an attribute) "
            "and used after its transform ended."
        ),
        N_("Return the value instead of storing it."),
    ),
}


def error_hint(error: str) -> ErrorHint | None:
    """The hint for a staged error's text (``"<Type>: message"``), if its type has one."""
    kind = error.split(":", 1)[0].strip()
    return ERROR_HINTS.get(kind)


def find_pitfall(key: str) -> Pitfall:
    """The pitfall registered under ``key``; ``KeyError`` if none is."""
    for pitfall in PITFALLS:
        if pitfall.key == key:
            return pitfall
    raise KeyError(key)


# --- the recompilation lab ----------------------------------------------------------------------


def define_function():
    """The article's ``dynamic_control_flow`` as a new function object: a new, empty jit cache."""
    return compilation.fresh_function(dynamic_control_flow)


#: Values the static ``use_tanh`` argument can take in the lab (a list is not hashable).
STATIC_VALUES: dict[str, Any] = {
    "True": True,
    "False": False,
    "1": 1,
    "2": 2,
    "[1, 2] (a list)": [1, 2],
}
#: dtypes the lab's array argument can take.
LAB_DTYPES: tuple[str, ...] = ("float32", "int32", "float16", "bfloat16")
#: Most calls in one lab run.
MAX_LAB_CALLS = 12
#: Largest x of one lab call: the lesson is recompilation, not size, and every call allocates x.
MAX_LAB_ELEMENTS = 1 << 20


@dataclass(frozen=True)
class LabCall:
    """One call ``f(jnp.ones(shape, dtype), use_tanh)``; ``static`` is a key of STATIC_VALUES."""

    shape: tuple[int, ...]
    dtype: str
    static: str


#: Longest shape text in one lab row ("1024, 1024" is 10 characters).
MAX_SHAPE_TEXT = 40


def lab_calls(rows: Sequence[Sequence[object]]) -> tuple[LabCall, ...]:
    """The lab's calls from the rows of its table (shape text, dtype, ``use_tanh``).

    The rows are the client's: a data editor's edits arrive as JSON, whatever its column types
    say. So the row count and every cell are checked before anything is parsed, and a dtype or
    static value must be one the lab offers. Raises ``ValueError`` with a message fit to show.
    """
    if len(rows) > MAX_LAB_CALLS:
        raise ValueError(
            _("{n} calls is over the limit of {limit} per run").format(
                n=len(rows), limit=MAX_LAB_CALLS
            )
        )
    calls: list[LabCall] = []
    for i, row in enumerate(rows, start=1):
        cells = [*list(row)[:3], None, None, None][:3]
        shape_text, dtype, static = ("" if cell is None else str(cell) for cell in cells)
        if len(shape_text) > MAX_SHAPE_TEXT:
            raise ValueError(
                _(
                    "call {i}: the shape is {n} characters long; the lab takes at most {limit}"
                ).format(i=i, n=f"{len(shape_text):,}", limit=MAX_SHAPE_TEXT)
            )
        dtype, static = dtype or "float32", static or "True"
        if dtype not in LAB_DTYPES:
            raise ValueError(
                _("call {i}: x dtype is one of {dtypes}").format(i=i, dtypes=", ".join(LAB_DTYPES))
            )
        if static not in STATIC_VALUES:
            raise ValueError(
                _("call {i}: use_tanh is one of {values}").format(
                    i=i, values=", ".join(STATIC_VALUES)
                )
            )
        try:
            shape = parse_shape(shape_text)
        except ValueError as err:
            raise ValueError(_("call {i}: {reason}").format(i=i, reason=err)) from None
        if math.prod(shape) > MAX_LAB_ELEMENTS:
            raise ValueError(
                _(
                    "call {i}: x has {n} elements; the lab takes at most {limit} (it is about "
                    "recompiling, not size)"
                ).format(i=i, n=f"{math.prod(shape):,}", limit=f"{MAX_LAB_ELEMENTS:,}")
            )
        calls.append(LabCall(shape, dtype, static))
    return tuple(calls)


@dataclass(frozen=True)
class LabRow:
    """What one call did: compiled or not, JAX's reason, the cache size after it."""

    call: int
    arguments: str
    compiled: bool
    explanation: str
    cache_size: int | None
    compilations: int
    error: str | None


@dataclass(frozen=True)
class LabRun:
    """A sequence of calls and JAX's full compile log for them."""

    rows: tuple[LabRow, ...]
    log: str
    redefine: bool

    @property
    def compilations(self) -> int:
        return sum(r.compiled for r in self.rows)

    def table(self) -> dict[str, list[object]]:
        """The calls as table columns: arguments, what happened (compiled, cache hit, error),
        the cache's size and the compilations so far (headers and results in the visitor's
        language)."""
        return {
            _("call"): [r.call for r in self.rows],
            _("arguments"): [r.arguments for r in self.rows],
            _("result"): [
                _("error") if r.error else _("compiled") if r.compiled else _("cache hit")
                for r in self.rows
            ],
            _("cache size"): [r.cache_size for r in self.rows],
            _("compilations so far"): [r.compilations for r in self.rows],
        }


@dataclass(frozen=True)
class Scenario:
    """A preset sequence of calls for the lab, and what it teaches (``title`` and ``lesson``
    marked for translation, shown with ``_()``)."""

    key: str
    title: str
    calls: tuple[LabCall, ...]
    redefine: bool
    lesson: str

    def editor_columns(self) -> dict[str, list[object]]:
        """The calls as the lab's editable table: x's shape (as typed), dtype and the static
        argument."""
        return {
            "x shape": [", ".join(map(str, c.shape)) for c in self.calls],
            "x dtype": [c.dtype for c in self.calls],
            "use_tanh": [c.static for c in self.calls],
        }


_F5 = ((5,), "float32")
SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "article",
        N_("The article's three calls"),
        (LabCall(*_F5, "True"), LabCall(*_F5, "False"), LabCall(*_F5, "True")),
        False,
        N_("Two compilations, then a cache hit: the cache size is 2 after three calls."),
    ),
    Scenario(
        "shape",
        N_("Change the shape"),
        (
            LabCall((5,), "float32", "True"),
            LabCall((6,), "float32", "True"),
            LabCall((5,), "float32", "True"),
        ),
        False,
        N_("Shapes are part of the cache key: a new shape compiles, an old one is reused."),
    ),
    Scenario(
        "dtype",
        N_("Change the dtype"),
        (
            LabCall((5,), "float32", "True"),
            LabCall((5,), "int32", "True"),
            LabCall((5,), "float32", "True"),
        ),
        False,
        N_("So are dtypes: int32 inputs get their own program."),
    ),
    Scenario(
        "static",
        N_("Change the static value"),
        (LabCall(*_F5, "True"), LabCall(*_F5, "2"), LabCall(*_F5, "1"), LabCall(*_F5, "True")),
        False,
        N_(
            "Every distinct static value is its own compilation: even 1 and True, equal in "
            "Python, get separate cache entries."
        ),
    ),
    Scenario(
        "unhashable",
        N_("Pass an unhashable static argument"),
        (LabCall(*_F5, "True"), LabCall(*_F5, "[1, 2] (a list)")),
        False,
        N_(
            "Static arguments are dictionary keys of the cache: a list cannot be one (use a tuple)."
        ),
    ),
    Scenario(
        "redefine",
        N_("Redefine the function before each call"),
        (LabCall(*_F5, "True"), LabCall(*_F5, "True"), LabCall(*_F5, "True")),
        True,
        N_(
            "The cache belongs to the function object: a function defined anew (a lambda or a "
            "def inside a loop) compiles on every call, and JAX says so."
        ),
    ),
)


def run_recompilation_lab(calls: tuple[LabCall, ...], *, redefine: bool = False) -> LabRun:
    """Run the calls through ``jax.jit(dynamic_control_flow, static_argnums=1)``, logging compiles.

    The function is defined afresh for each lab run (a page rerun must not find it compiled),
    and for each call too when ``redefine`` is set. Inputs are NumPy arrays so that making them
    compiles nothing; only the lab function's own log entries are kept. A server runs this in
    its compute worker (``sandbox.timed``): a table of new shapes is a dozen compiles, about
    1 CPU-s, and JAX kept something of each for the process.
    """
    if len(calls) > MAX_LAB_CALLS:
        raise ValueError(f"{len(calls)} calls is over the limit of {MAX_LAB_CALLS} per run")
    for i, call in enumerate(calls, start=1):
        if math.prod(call.shape) > MAX_LAB_ELEMENTS:
            raise ValueError(
                f"call {i}: x has {math.prod(call.shape):,} elements, over the lab's limit of "
                f"{MAX_LAB_ELEMENTS:,}"
            )
    jitted = jax.jit(define_function(), static_argnums=1)
    rows: list[LabRow] = []
    messages: list[str] = []
    total = 0
    for i, call in enumerate(calls, start=1):
        if redefine:
            jitted = jax.jit(define_function(), static_argnums=1)
        x = np.ones(call.shape, dtype=jnp.dtype(call.dtype))
        static = STATIC_VALUES[call.static]
        error = None
        with compilation.capture_compiles() as log:
            try:
                jitted(x, static)
            except Exception as err:  # an unhashable static argument: JAX's message is the lesson
                error = f"{type(err).__name__}: {err}"
        events = log.for_function("dynamic_control_flow")
        compiled = any(e.kind == "compiling" for e in events)
        total += compiled
        messages.extend(e.message for e in events)
        rows.append(
            LabRow(
                call=i,
                arguments=f"x: {call.dtype}{list(call.shape)}, use_tanh={static!r}",
                compiled=compiled,
                explanation="\n".join(e.explanation for e in events if e.kind == "cache miss"),
                cache_size=jax_private.cache_size(jitted),
                compilations=total,
                error=error,
            )
        )
    return LabRun(tuple(rows), "\n".join(messages), redefine)


# --- Python loops vs lax loops ------------------------------------------------------------------


def python_loop(x, n):
    for _ in range(n):
        x = jnp.sin(x) + 1.0
    return x


def fori_loop_version(x, n):
    return lax.fori_loop(0, n, lambda i, v: jnp.sin(v) + 1.0, x)


def scan_version(x, n):
    final, _ = lax.scan(lambda v, _: (jnp.sin(v) + 1.0, None), x, length=n)
    return final


#: The loop styles compared, by label (marked for translation: shown with ``_()``).
LOOPS: dict[str, Callable[[Any, int], Any]] = {
    N_("Python for loop"): python_loop,
    "lax.fori_loop": fori_loop_version,
    "lax.scan": scan_version,
}
#: Longest loop the growth chart traces (an unrolled loop of n steps has 2n equations).
MAX_LOOP_LENGTH = 1024


@dataclass(frozen=True)
class GrowthRow:
    """The jaxpr of one loop style at one length."""

    loop: str
    length: int
    equations: int
    top_level: int


def loop_growth(lengths: Sequence[int]) -> tuple[GrowthRow, ...]:
    """Equation counts of each loop style's jaxpr at each length (``n`` is static)."""
    rows = []
    x = jax.ShapeDtypeStruct((8,), jnp.float32)
    for n in lengths:
        if not 1 <= n <= MAX_LOOP_LENGTH:
            raise ValueError(f"loop length {n} is outside 1..{MAX_LOOP_LENGTH}")
        for label, fn in LOOPS.items():
            closed = jax.make_jaxpr(fn, static_argnums=1)(x, n)
            rows.append(
                GrowthRow(
                    label, n, sum(1 for _ in jaxprs.equations(closed)), len(closed.jaxpr.eqns)
                )
            )
    return tuple(rows)


def loop_growth_figure(rows: Sequence[GrowthRow]) -> Any:
    """Equations against loop length, one line per loop style (log-log), its words in the
    visitor's language."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for label in LOOPS:
        mine = [r for r in rows if r.loop == label]
        fig.add_trace(
            go.Scatter(
                x=[r.length for r in mine],
                y=[r.equations for r in mine],
                mode="lines+markers",
                name=_(label),
            )
        )
    fig.update_layout(
        xaxis=log_axis(_("loop length n"), [r.length for r in rows], format_count),
        yaxis=log_axis(
            _("jaxpr equations (loop bodies included)"),
            [r.equations for r in rows],
            format_count,
        ),
        height=360,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        legend={"orientation": "h", "y": 1.12},
    )
    return fig

"""Compile-cache tools: the ahead-of-time stages, the jit cache, and JAX's own compile log.

Why a module of its own: several pages need to see what ``jax.jit`` does beneath a call. The jit
page times each stage and reads XLA's cost and memory estimates; the memory and fusion pages show
the StableHLO and optimized HLO; the tracing page counts recompilations and shows *why* each one
happened. They all go through this one compile path, so a number or a text on one page is the same
as on another.

- :func:`compile_aot` runs ``jax.jit(f).trace(...).lower().compile()`` once, timing each stage
  and keeping the jaxpr, StableHLO and HLO texts plus ``cost_analysis()`` and
  ``memory_analysis()``, each of which a backend may not provide (then a note, not an error).
- :func:`capture_compiles` turns on ``jax_log_compiles`` and ``jax_explain_cache_misses`` for the
  calling thread only and collects what JAX logs into structured :class:`CompileEvent` entries.
"""

from __future__ import annotations

import enum
import functools
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

#: ``cost_analysis()`` keys kept (XLA also reports per-operand ones such as ``bytes accessed0{}``).
COST_KEYS: tuple[str, ...] = ("flops", "transcendentals", "bytes accessed")
#: ``memory_analysis()`` attributes kept, under shorter names.
MEMORY_FIELDS: dict[str, str] = {
    "argument": "argument_size_in_bytes",
    "output": "output_size_in_bytes",
    "temp": "temp_size_in_bytes",
    "alias": "alias_size_in_bytes",
    "generated code": "generated_code_size_in_bytes",
}


def fresh_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A new function object that calls ``fn``: JAX's trace and compile caches have never seen it.

    JAX caches tracing and compilation by function identity, across ``jax.jit`` wrappers. Timing
    the stages of a function the server compiled before would show cache hits (microseconds), not
    what a fresh process pays; a fresh wrapper measures the real cost every time.
    """

    @functools.wraps(fn)
    def fresh(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return fresh


def dynamic_args(args: Sequence[Any], static_argnums: Sequence[int]) -> tuple[Any, ...]:
    """The arguments a ``Compiled`` object takes: static ones were baked in at trace time."""
    static = {i % len(args) for i in static_argnums} if args else set()
    return tuple(a for i, a in enumerate(args) if i not in static)


class Step(enum.StrEnum):
    """The steps of compiling and timing a function that a caller is told of (``on_stage``)
    as each starts. A page names them in its own words from this one list, so a misspelt step is
    an error where the code is read, not a ``KeyError`` in front of a visitor."""

    TRACING = "tracing"
    LOWERING = "lowering"
    COMPILING = "compiling"
    FIRST_CALL = "first call"
    STEADY_CALLS = "steady calls"
    WARMING_UP = "warming up"
    SAMPLING = "sampling"


@dataclass(frozen=True, eq=False)
class AotCompilation:
    """One pass through JAX's ahead-of-time stages, timed, with everything they can tell.

    Attributes:
        compiled: the ``jax.stages.Compiled`` executable (call it with :attr:`call_args`).
        call_args: the dynamic arguments (static ones are part of the executable).
        trace_s, lower_s, compile_s: wall seconds of ``.trace()``, ``.lower()``, ``.compile()``.
        jaxpr_text: the traced jaxpr.
        stablehlo_text: the lowered module (StableHLO), before XLA's optimizations.
        hlo_text: the optimized HLO XLA compiled (fusions are visible here).
        cost: ``flops``, ``transcendentals``, ``bytes accessed`` from ``cost_analysis()``, or None.
        memory: argument/output/temp/alias/generated-code bytes from ``memory_analysis()``, or None.
        notes: why something is missing (a backend without cost or memory analysis).
    """

    compiled: Any
    call_args: tuple[Any, ...]
    trace_s: float
    lower_s: float
    compile_s: float
    jaxpr_text: str
    stablehlo_text: str
    hlo_text: str
    cost: dict[str, float] | None
    memory: dict[str, int] | None
    notes: tuple[str, ...] = ()


def compile_aot(
    fn: Callable[..., Any],
    *args: Any,
    static_argnums: Sequence[int] = (),
    fresh: bool = True,
    on_stage: Callable[[Step], None] | None = None,
) -> AotCompilation:
    """Trace, lower and compile ``fn`` for ``args`` through the AOT API, timing each stage.

    Arguments:
        fn: a Python function (not yet jitted).
        args: example arguments (arrays or ``jax.ShapeDtypeStruct``; static ones as plain values).
        static_argnums: positions of arguments that are compile-time constants.
        fresh: wrap ``fn`` in :func:`fresh_function` so the stages are really run, not cache hits.
        on_stage: told :class:`Step` ``TRACING``, ``LOWERING`` and ``COMPILING`` as each starts (a
            page shows it); it must not raise for work in progress to be timed correctly.

    Returns:
        An :class:`AotCompilation`; its ``compiled`` executable is ready to call.
    """
    import jax

    def stage(step: Step) -> float:
        if on_stage is not None:
            on_stage(step)
        return time.perf_counter()

    target = fresh_function(fn) if fresh else fn
    jitted = jax.jit(target, static_argnums=tuple(static_argnums))
    start = stage(Step.TRACING)
    traced = jitted.trace(*args)
    traced_at = time.perf_counter()
    lowered_from = stage(Step.LOWERING)
    lowered = traced.lower()
    lowered_at = time.perf_counter()
    compiled_from = stage(Step.COMPILING)
    compiled = lowered.compile()
    compiled_at = time.perf_counter()
    notes: list[str] = []
    cost = _cost(compiled, notes)
    memory = _memory(compiled, notes)
    return AotCompilation(
        compiled=compiled,
        call_args=dynamic_args(args, static_argnums),
        trace_s=traced_at - start,
        lower_s=lowered_at - lowered_from,
        compile_s=compiled_at - compiled_from,
        jaxpr_text=str(traced.jaxpr),
        stablehlo_text=_text(lowered, notes, "StableHLO"),
        hlo_text=_text(compiled, notes, "compiled HLO"),
        cost=cost,
        memory=memory,
        notes=tuple(notes),
    )


def _text(stage: Any, notes: list[str], what: str) -> str:
    try:
        return str(stage.as_text())
    except Exception as err:  # a backend may not render its module as text
        notes.append(f"{what} text unavailable: {type(err).__name__}: {err}")
        return ""


def _cost(compiled: Any, notes: list[str]) -> dict[str, float] | None:
    """``cost_analysis()`` reduced to :data:`COST_KEYS` (older JAX returned a list of dicts)."""
    try:
        raw = compiled.cost_analysis()
    except Exception as err:
        notes.append(f"cost_analysis() is not available here: {type(err).__name__}: {err}")
        return None
    if isinstance(raw, (list, tuple)):
        raw = raw[0] if raw else None
    if not raw:
        notes.append("cost_analysis() returned nothing on this backend")
        return None
    cost = {k: float(raw[k]) for k in COST_KEYS if k in raw}
    if not cost:
        notes.append("cost_analysis() has no flops or bytes figures on this backend")
        return None
    return cost


def _memory(compiled: Any, notes: list[str]) -> dict[str, int] | None:
    """``memory_analysis()`` as a plain dict of byte counts."""
    try:
        stats = compiled.memory_analysis()
    except Exception as err:
        notes.append(f"memory_analysis() is not available here: {type(err).__name__}: {err}")
        return None
    if stats is None:
        notes.append("memory_analysis() returned nothing on this backend")
        return None
    memory = {
        name: int(getattr(stats, attr))
        for name, attr in MEMORY_FIELDS.items()
        if hasattr(stats, attr)
    }
    return memory or None


# --- JAX's compile log ------------------------------------------------------------------------

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "cache miss",
        re.compile(
            r"^TRACING CACHE MISS.*?(?:\n\s+for (\S+) defined|\n\s+never seen function:\n\s+(\S+))",
            re.S,
        ),
    ),
    ("compiling", re.compile(r"^Compiling (?:jit\()?([^)\s]+)\)? ")),
    ("traced", re.compile(r"^Finished tracing (?:jit\()?([^)\s]+)\)? ")),
    ("lowered", re.compile(r"^Finished jaxpr to MLIR module conversion (?:jit\()?([^)\s]+)\)? ")),
    ("compiled", re.compile(r"^Finished XLA compilation of (?:jit\()?([^)\s]+)\)? ")),
)


@dataclass(frozen=True)
class CompileEvent:
    """One message JAX logged while compiling.

    Attributes:
        kind: ``"cache miss"`` (with JAX's explanation), ``"compiling"``, ``"traced"``,
            ``"lowered"``, ``"compiled"``, or ``"other"``.
        function: the function's name as JAX reports it (``"dcf"``, ``"convert_element_type"``).
        message: the full message.
        explanation: for a cache miss, JAX's reason (the message without its first line).
    """

    kind: str
    function: str
    message: str
    explanation: str = ""


def parse_event(message: str) -> CompileEvent:
    """Classify one ``jax`` logger message into a :class:`CompileEvent`."""
    for kind, pattern in _PATTERNS:
        match = pattern.search(message)
        if match:
            name = next((g for g in match.groups() if g), "")
            explanation = ""
            if kind == "cache miss":
                explanation = "\n".join(line.strip() for line in message.splitlines()[1:])
            return CompileEvent(kind, name, message, explanation)
    return CompileEvent("other", "", message)


@dataclass
class CompileLog:
    """What JAX logged during a :func:`capture_compiles` block (filled in as it runs)."""

    events: list[CompileEvent] = field(default_factory=list)

    def for_function(self, name: str) -> list[CompileEvent]:
        """Events about the function named ``name`` (leaving out helper primitives' compiles)."""
        return [e for e in self.events if e.function == name]

    @property
    def cache_misses(self) -> list[CompileEvent]:
        return [e for e in self.events if e.kind == "cache miss"]

    @property
    def compiles(self) -> list[CompileEvent]:
        return [e for e in self.events if e.kind == "compiling"]

    def text(self) -> str:
        """All messages, one block each, as JAX wrote them."""
        return "\n".join(e.message for e in self.events)


class _ThreadHandler(logging.Handler):
    """Collects records emitted by one thread: other visitors' compiles stay out of this log."""

    def __init__(self, log: CompileLog, thread_id: int) -> None:
        super().__init__(level=logging.DEBUG)
        self._log = log
        self._thread_id = thread_id

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread != self._thread_id:
            return
        try:
            message = record.getMessage()
        except Exception:  # a malformed record must not break the page that compiles
            message = str(record.msg)
        self._log.events.append(parse_event(message))


_LOGGER_LOCK = threading.Lock()


@contextmanager
def capture_compiles(explain_cache_misses: bool = True) -> Iterator[CompileLog]:
    """Collect JAX's compile log and cache-miss explanations for code run inside the block.

    ``jax.log_compiles`` and ``jax.explain_cache_misses`` are used as JAX's thread-local config
    contexts, and the handler keeps only records from this thread, so on a Streamlit server (one
    thread per session) concurrent visitors neither see each other's compiles nor leave the flags
    on for one another. The handler is removed and the flags restored even if the block raises.

    Example:
        >>> with capture_compiles() as log:  # doctest: +SKIP
        ...     f(x)
        >>> [e.explanation for e in log.cache_misses]  # doctest: +SKIP
    """
    import jax

    log = CompileLog()
    handler = _ThreadHandler(log, threading.get_ident())
    logger = logging.getLogger("jax")
    with _LOGGER_LOCK:
        logger.addHandler(handler)
    try:
        with jax.log_compiles(True), jax.explain_cache_misses(explain_cache_misses):
            yield log
    finally:
        with _LOGGER_LOCK:
            logger.removeHandler(handler)

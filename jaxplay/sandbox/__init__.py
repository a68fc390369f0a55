"""Run untrusted JAX code: a pool of warm, single-use, sandboxed worker processes.

Why: the Code Lab lets anyone type code, on a workshop's one shared machine. User code never runs
in the Streamlit server (one process for every visitor: a crash there ends every session, and
code there can reach other sessions and the server's secrets). Each run gets a fresh worker
process, started by exec (never forked from a process where JAX runs), inside bubblewrap when it
is installed, with limits on time, CPU, memory, files, processes and output; the worker is killed
with everything it started after its one job. The job goes to the worker and its results come
back over pipes of their own, as typed JSON (:mod:`jaxplay.core.codec`), and are checked field
by field (the worker is untrusted).

This ``__init__`` is the package's whole public API. Its parts: ``_pool`` (the workers and the
queue), ``_process`` (the bubblewrap and plain-process adapters), ``_protocol`` (framing on the
result pipe), ``_worker`` (the worker's entry point, ``python -m jaxplay.sandbox._worker``),
``_limits`` (the resource limits a worker sets on itself), ``_results`` (requests, limits, the
job, results and their strict decoding) and ``_inspectors`` (what the worker can tell about a
function of the user's code, and the types it answers in).
The settings it reads are in :mod:`jaxplay.hosting.settings`.

Example::

    from jaxplay import sandbox
    result = sandbox.run_code("import jax.numpy as jnp\nx = jnp.arange(4.0)\nx.sum()")
    result.ok, result.value_repr, result.arrays[0].shape   # True, 'Array(6., dtype=float32)', (4,)
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import dataclasses
import inspect
import logging
import math
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from jaxplay.core import measure_lock, words
from jaxplay.core.errors import InputError
from jaxplay.core.i18n import _
from jaxplay.sandbox._config import MAX_SOURCE_CHARS as MAX_SOURCE_CHARS
from jaxplay.sandbox._config import RunnerConfig as RunnerConfig
from jaxplay.sandbox._config import worker_environment as worker_environment
from jaxplay.sandbox._inspectors import INSPECTORS as INSPECTORS
from jaxplay.sandbox._inspectors import LABELS as LABELS
from jaxplay.sandbox._inspectors import InspectionFailed as InspectionFailed
from jaxplay.sandbox._inspectors import JaxprText as JaxprText
from jaxplay.sandbox._inspectors import JitTiming as JitTiming
from jaxplay.sandbox._pool import Refused as Refused
from jaxplay.sandbox._pool import WorkerPool as WorkerPool
from jaxplay.sandbox._process import BWRAP as BWRAP
from jaxplay.sandbox._process import bwrap_usable as bwrap_usable
from jaxplay.sandbox._results import MAX_ARG_ELEMENTS as MAX_ARG_ELEMENTS
from jaxplay.sandbox._results import MAX_AXES as MAX_AXES
from jaxplay.sandbox._results import MAX_STATS_ELEMENTS as MAX_STATS_ELEMENTS
from jaxplay.sandbox._results import ArgSpec as ArgSpec
from jaxplay.sandbox._results import ArraySummary as ArraySummary
from jaxplay.sandbox._results import InspectRequest as InspectRequest
from jaxplay.sandbox._results import Limits as Limits
from jaxplay.sandbox._results import RunError as RunError
from jaxplay.sandbox._results import RunResult as RunResult
from jaxplay.sandbox._results import Task as Task

#: Whose runs these are, for the per-visitor rules when a caller names no visitor: ``app.py``
#: sets it at the start of every script run (Streamlit runs each in a thread of its own, so it
#: never leaks to another visitor). A context value rather than an argument because sandboxed
#: formulas are called from cached functions, whose arguments are their cache key.
current_visitor: ContextVar[str | None] = ContextVar("jaxplay_visitor", default=None)

log = logging.getLogger(__name__)

_shared_pool: WorkerPool | None = None
_pool_lock = threading.Lock()


def get_pool() -> WorkerPool:
    """The process-wide pool (created on first use from the environment's settings).

    Creating it starts warming spares in background threads; it never blocks on JAX. The pool
    is shut down (every worker killed, cgroups removed) when the interpreter exits.
    """
    global _shared_pool
    with _pool_lock:
        if _shared_pool is None:
            _shared_pool = WorkerPool(RunnerConfig.from_env())
            atexit.register(shutdown)
        pool = _shared_pool
    pool.warm()
    return pool


def warm_up() -> None:
    """Start warming the pool in the background (returns at once); call early, e.g. from a page."""
    get_pool()


def shutdown() -> None:
    """Stop the process-wide pool; a later :func:`get_pool` makes a new one."""
    global _shared_pool
    with _pool_lock:
        pool, _shared_pool = _shared_pool, None
    if pool is not None:
        pool.shutdown()


def status() -> dict[str, Any]:
    """The pool's state for display: sandbox, spares ready, runs running and queued."""
    return get_pool().status()


def current_status() -> dict[str, Any] | None:
    """The pool's :func:`status` if a pool exists, else ``None``; never starts one.

    For chrome drawn on every page (the sidebar's queue lengths): asking must not start sandbox
    workers for visitors who never open the Code Lab.
    """
    with _pool_lock:
        pool = _shared_pool
    return None if pool is None else pool.status()


def refusal() -> str | None:
    """Why this server refuses to run code (public without bubblewrap), or ``None``."""
    return get_pool().refusal()


def run_code(
    source: str,
    *,
    timeout_s: float | None = None,
    inspect: InspectRequest | None = None,
    visitor: str | None = None,
    on_queue: Callable[[int], None] | None = None,
) -> RunResult:
    """Run ``source`` in a fresh sandboxed worker and return what it did.

    Arguments:
        source: Python code; a final expression's value is reported like a notebook cell's.
        timeout_s: wall-clock limit (default: the configured 10 s).
        inspect: a function of the code to inspect afterwards (its jaxpr, eager vs jit, ...).
        visitor: an id for the caller (e.g. the Streamlit session); one visitor has at most one
            run in flight, a second waits for the first, and in public mode a visitor's runs
            are rate-limited. Default: :data:`current_visitor`, which ``app.py``
            sets for every script run, so no page's runs escape the limit.
        on_queue: called in the caller's thread with the caller's 1-based queue position each
            time it changes while all workers are busy.

    Returns:
        A :class:`RunResult`; it never raises for anything the code does.
    """
    if visitor is None:
        visitor = current_visitor.get()
    return get_pool().run(
        source, timeout_s=timeout_s, inspect=inspect, visitor=visitor, on_queue=on_queue
    )


def run_task(
    target: str,
    *,
    timeout_s: float | None = None,
    visitor: str | None = None,
    on_queue: Callable[[int], None] | None = None,
    **kwargs: Any,
) -> RunResult:
    """Call one of jaxplay's own functions in a fresh sandboxed worker, under a run's limits.

    For work a visitor sizes that cannot be bounded before it starts (compiling a typed
    formula's fourth derivative): the server waits for the worker instead of doing it. The
    warm pool answers in milliseconds, so a page can afford this for every such input.

    Arguments:
        target: ``"jaxplay.<module>:<function>"``; called as ``function(**kwargs)`` and
            returning what :mod:`jaxplay.core.codec` encodes, which comes back, encoded, as
            ``result.task`` (:func:`call` decodes it).
        timeout_s, visitor, on_queue: as for :func:`run_code`.
        kwargs: plain JSON values.

    Returns:
        A :class:`RunResult`: ``ok`` and ``task``, or the ``error`` (the function's exception
        with its message, a timeout, a memory kill, a refusal).
    """
    if visitor is None:
        visitor = current_visitor.get()
    return get_pool().run(
        "",
        timeout_s=timeout_s,
        visitor=visitor,
        on_queue=on_queue,
        task=Task(target, dict(kwargs)),
    )


def reserve(
    visitor: str | None = None, on_queue: Callable[[int], None] | None = None
) -> contextlib.AbstractContextManager[None]:
    """Hold a Code Lab run's place for work that starts its own processes; see
    :meth:`WorkerPool.reserve` (raises :class:`Refused` with the reason)."""
    if visitor is None:
        visitor = current_visitor.get()
    return get_pool().reserve(visitor, on_queue)


class TaskFailed(Exception):
    """A function called with :func:`call` in a worker failed; ``error`` says how.

    ``error.kind`` is ``"timeout"`` (it ran past its deadline), ``"memory"``, ``"refused"``
    (rate limit, server busy, no sandbox), or ``"exception"`` with the function's own
    ``exc_type`` and message.
    """

    def __init__(self, error: RunError, timeout_s: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        #: The deadline the run had (seconds), for a message that names it.
        self.timeout_s = timeout_s

    def explain(self, doing: str, hint: str = "") -> str:
        """One plain-text sentence for a page: ``doing`` ("Differentiating this formula to
        order 4") failed, how, and ``hint`` (what to try) where a smaller input could help.

        In the visitor's language (``doing`` and ``hint`` come in it already; the runner's own
        words in ``error.message`` were written in it too, JAX's stay as JAX wrote them). The
        text can quote the visitor's input (an exception's message): show it escaped
        (:func:`jaxplay.core.markdown.escape`) or in a code block.
        """
        error = self.error
        said = error.message.rstrip(".。").replace("The code ", "it ")
        if error.kind == "timeout" and "CPU" not in error.message and self.timeout_s is not None:
            text = _("{doing} took longer than {seconds} s and was stopped").format(
                doing=doing, seconds=f"{self.timeout_s:g}"
            )
        elif error.kind == "timeout":
            text = _("{doing} was stopped: {reason}").format(doing=doing, reason=said)
        elif error.kind == "memory":
            text = _("{doing} needed more memory than one run may use and was stopped").format(
                doing=doing
            )
        elif error.kind == "refused":
            return _("{doing} was refused: {reason}").format(doing=doing, reason=error.message)
        elif error.kind == "exception":
            raised = f"{error.exc_type or 'Exception'}: {error.message}"
            return _("{doing} failed: {reason}").format(doing=doing, reason=raised)
        else:
            text = _("{doing} failed: {reason}").format(doing=doing, reason=said)
        if hint:
            return _("{text} — {hint}.").format(text=text, hint=hint)
        return _("{text}.").format(text=text)


def call(
    function: Callable[..., Any],
    /,
    *,
    isolate: bool,
    returns: tuple[type, ...] = (),
    timeout_s: float | None = None,
    **kwargs: Any,
) -> Any:
    """``function(**kwargs)``: here, or in a sandboxed worker with a deadline when ``isolate``.

    The caller decides per input: a preset whose cost is known runs here (and can be cached);
    a visitor's formula whose cost depends on what they typed runs in a worker, so the server
    only waits. The function must be a module-level function of jaxplay taking JSON values;
    its result (dataclasses of numbers, strings, tuples and arrays) comes back through
    :mod:`jaxplay.core.codec`, and only the dataclasses in ``returns`` are accepted.

    Raises:
        TaskFailed: the worker's run failed (timeout, memory, refusal, or the function raised).
    """
    if not isolate:
        return function(**kwargs)
    result = run_task(_target(function), timeout_s=timeout_s, **kwargs)
    deadline = get_pool().config.limits.timeout_s if timeout_s is None else timeout_s
    return _decoded(result, returns, deadline)


def compute(
    function: Callable[..., Any],
    /,
    *,
    timeout_s: float,
    cpu_s: float,
    on_stage: Callable[[str, float | None], None] | None = None,
    **kwargs: Any,
) -> Any:
    """``function(**kwargs)`` in the compute worker: the server's own timed work, not a
    visitor's.

    Why: a measurement's stopwatch loops are Python, and in a server thread they hold the
    interpreter lock every other visitor's page needs. In a worker (a process of the pool, on
    the cores of this server process) the server only waits, and renders meanwhile. The caller
    holds the measurement lock around it (:func:`jaxplay.core.measure_lock.exclusive`), so the
    worker measures on cores no other timing uses; work that times nothing and takes
    milliseconds (the jit page's check of a new shape) holds a lock of its own instead.

    The worker is kept for the next job (up to ``MAX_COMPUTE_JOBS``, and while it has not grown
    by half a run's memory allowance), so what it compiled stays compiled, as it would in the
    server: a fresh process per measurement cost 28% more CPU (docs/benchmarks.md,
    *Measuring in a compute worker*). A job that fails ends it. Only our own functions, on
    input the server checked, run in it; a visitor's code never does.

    Unlike :func:`call` it is nobody's run: no visitor's Code Lab limits (their runs a minute,
    one at a time) count it, and it runs without bubblewrap where there is none (our function,
    on input the server checked). Nor does it wait behind visitors' runs for one of the pool's
    slots: the lock its caller holds is its queue (``computing`` in
    :func:`status` counts it).

    Arguments:
        function: a module-level function of jaxplay, annotated: its arguments travel through
            :mod:`jaxplay.core.codec` and are read back as their annotations say, and its result
            may hold only the dataclasses its return annotation names. With ``on_stage`` it
            also takes ``progress`` (a :class:`jaxplay.core.measure_lock.Progress`). It samples
            for as long as it would here (:data:`jaxplay.core.timing.BUDGET_SCALE` goes along).
        timeout_s, cpu_s: this job's wall-clock and CPU (all threads) limits.
        on_stage: called in this thread with each stage the function tells, checked to be a
            short text and a fraction from 0 to 1 (the caller checks it is one of its own).

    Raises:
        TaskFailed: the worker failed (deadline, memory, no worker could start) or the
            function raised (``error.exc_type`` names its exception).
    """
    import json
    import typing

    from jaxplay.core import codec, timing
    from jaxplay.sandbox import _protocol

    annotation = typing.get_type_hints(function).get("return")
    returns = codec.dataclass_types(annotation)
    pool = get_pool()
    limits = dataclasses.replace(
        pool.config.limits,
        timeout_s=timeout_s,
        cpu_s=cpu_s,
        result_bytes=_protocol.MAX_MESSAGE_BYTES,
    )
    task = Task(
        _target(function),
        {name: json.dumps(codec.encode(value)) for name, value in kwargs.items()},
        progress=on_stage is not None,
        encoded=True,
        budget_scale=timing.BUDGET_SCALE,
    )
    result = pool.run("", task=task, on_stage=on_stage, limits=limits, trusted=True)
    value = _decoded(result, tuple(returns), timeout_s)
    if isinstance(annotation, type) and not isinstance(value, annotation):
        wrong = _("A malformed result: {error}").format(error=type(value).__name__)
        raise TaskFailed(RunError(kind="crashed", message=wrong))
    return value


#: Wall-clock seconds one of a page's timed computations may take in the compute worker (each
#: is bounded before it starts: a sweep's point, a variant); its CPU limit is this on every core
#: the process may use.
TIMED_TIMEOUT_S = 60.0


def timed(
    function: Callable[..., Any],
    /,
    *args: Any,
    turn: measure_lock.Turn | None = None,
    **kwargs: Any,
) -> Any:
    """``function(*args, **kwargs)`` where ``JAXPLAY_MEASURE_IN`` says: in the compute worker
    (:func:`compute`, the arguments bound to their names), this process's measurement lock held
    around it, or here as it is.

    For a page's timed computation (a sweep's point, a memory variant): the page's cached
    function calls this with the jaxplay function it would have called, and the box's
    :class:`jaxplay.core.measure_lock.Turn` as ``turn``. Only a computation takes the turn (a
    cached result never gets here), and every computation of the box measures in it.

    Where no worker can start (the pool refuses: none started, or it is shut down) the
    function runs here, as it would without one, and the server's log says so.

    Raises:
        TaskFailed: in the worker, the function raised (``error.exc_type``) or the worker
            failed; here, whatever the function raises.
    """
    from jaxplay.hosting import settings

    with turn or contextlib.nullcontext(), measure_lock.exclusive():
        if settings.measure_in() != "worker":
            return function(*args, **kwargs)
        named = inspect.signature(function).bind(*args, **kwargs).arguments
        cpu_s = TIMED_TIMEOUT_S * len(measure_lock.usable_cores())
        try:
            return compute(function, timeout_s=TIMED_TIMEOUT_S, cpu_s=cpu_s, **named)
        except TaskFailed as failed:
            if failed.error.kind != "refused":  # the function, or its run, failed
                raise
            why = failed.error.message
        # No worker could start here (or the pool is shut down): timed here, as without one.
        log.warning("jaxplay: no compute worker (%s); timing in the server", why)
        return function(*args, **kwargs)


_roofs: Any = None
_roofs_lock = threading.Lock()


def machine_reference(
    before: Callable[[], None] | None = None, turn: measure_lock.Turn | None = None
) -> Any:
    """This machine's roofs (:class:`jaxplay.core.roofline.MachineReference`) for every page,
    measured once per server process where ``JAXPLAY_MEASURE_IN`` says: in the compute worker
    (this process's measurement lock held), or here
    (:func:`jaxplay.core.roofline.machine_reference`).

    ``before`` is called first when they are about to be measured (a page's stage); they are
    then kept, so every page compares against the same roofs. ``turn``: the page box's, taken
    only if they are measured here (as :func:`timed` takes it).
    """
    global _roofs
    from jaxplay.core import roofline
    from jaxplay.hosting import settings

    in_worker = settings.measure_in() == "worker"
    known = _roofs if in_worker else (roofline.machine_reference() if roofline.measured() else None)
    if known is not None:
        return known
    # The measurement lock first, then this one: the order a measurement that holds the lock
    # already (the jit page's) takes them in, so neither waits for the other.
    with turn or contextlib.nullcontext(), measure_lock.exclusive(), _roofs_lock:
        if not in_worker:
            if before is not None and not roofline.measured():
                before()
            return roofline.machine_reference()
        if _roofs is None:
            if before is not None:
                before()
            cpu_s = TIMED_TIMEOUT_S * len(measure_lock.usable_cores())
            try:
                roofs = compute(roofline.machine_reference, timeout_s=TIMED_TIMEOUT_S, cpu_s=cpu_s)
            except TaskFailed as failed:
                if failed.error.kind != "refused":
                    raise
                roofs = roofline.machine_reference()  # no worker could start: measured here
            if not isinstance(roofs, roofline.MachineReference):
                raise TaskFailed(RunError(kind="crashed", message=_("No roofs came back.")))
            _roofs = roofs
        return _roofs


def _target(function: Callable[..., Any]) -> str:
    return f"{function.__module__}:{function.__qualname__}"


def _decoded(result: RunResult, returns: tuple[type, ...], timeout_s: float) -> Any:
    """A task's value, decoded to ``returns``; :class:`TaskFailed` for a failed run or a
    malformed value."""
    from jaxplay.core import codec

    if not result.ok or result.error is not None:
        error = result.error or RunError(kind="crashed", message=_("No result."))
        raise TaskFailed(error, timeout_s=timeout_s)
    try:
        return codec.decode(result.task, returns)
    except (ValueError, TypeError) as err:
        malformed = _("A malformed result: {error}").format(error=err)
        raise TaskFailed(RunError(kind="crashed", message=malformed)) from None


def defined_functions(source: str) -> list[str]:
    """Names of the functions ``source`` defines at top level (``def`` or ``name = lambda``).

    Parsed, never run: the Code Lab offers these for inspection. Unparsable code gives ``[]``.
    """
    try:
        return [name for name, _ in function_arities(source)]
    except (SyntaxError, ValueError):
        return []


#: Transforms that return a function taking the arguments of the one they are given, by the
#: last part of their name (``jax.jit``, ``jit``, ``jax.grad`` …): ``f = jit(g)`` takes ``g``'s.
#: Any other call of a function (``getattr(g, "_cache_size")``, a bound method that takes none)
#: is no function we can count.
SAME_ARGUMENTS = frozenset(
    {"jit", "grad", "value_and_grad", "vmap", "checkpoint", "remat", "jacfwd", "jacrev"}
    | {"hessian", "custom_jvp", "custom_vjp", "named_call", "pmap"}
)


def function_arities(source: str) -> tuple[tuple[str, int], ...]:
    """The functions ``source`` defines at top level, each with the positional arguments it needs:
    a ``def``, ``f = lambda ...``, or ``f = T(g, ...)`` of a function ``g`` defined above or a
    lambda, where ``T`` is a transform of :data:`SAME_ARGUMENTS`, such as ``jax.jit(g)`` or
    ``jax.jit(jax.grad(g))`` (counted from ``g``), or ``partial(g, a)`` (one fewer). An
    assignment of anything else (``x = jnp.ones(3)``, ``key = jax.random.key(0)``,
    ``n = getattr(g, "_cache_size")``) is no function. The one reading of a visitor's
    functions: the Code Lab offers them for inspection, the Tracing page stages one.

    Parsed with ``ast``, never run. Raises ``SyntaxError`` (``ValueError`` for a null byte) for
    code that does not parse, so a page can say where; code nested too deeply for Python's parser
    (``-`` 3,000 times before a number raised ``RecursionError``, ``2**`` 3,000 times
    ``MemoryError``: an error page for whoever opened a shared link to it) is a ``SyntaxError``
    that says so.
    """
    try:
        tree = ast.parse(source)
    except (RecursionError, MemoryError):
        raise SyntaxError(
            _("the code is nested too deeply to read"), ("<code>", 1, 1, "")
        ) from None

    def needed(args: ast.arguments) -> int:
        return len([*args.posonlyargs, *args.args]) - len(args.defaults)

    counts: dict[str, int] = {}

    def called(func: ast.expr) -> str:
        """The last part of a called name: ``jax.jit`` → ``jit``."""
        if isinstance(func, ast.Attribute):
            return func.attr
        return func.id if isinstance(func, ast.Name) else ""

    def arity(value: ast.expr, depth: int = 0) -> int | None:
        """The arguments the function ``value`` needs, or ``None`` if it is none we can tell."""
        if isinstance(value, ast.Lambda):
            return needed(value.args)
        if isinstance(value, ast.Name):
            return counts.get(value.id)
        if not (isinstance(value, ast.Call) and value.args and depth < 16):
            return None
        inner = arity(value.args[0], depth + 1)
        name = called(value.func)
        if name in SAME_ARGUMENTS:
            return inner  # a transform of a function
        if name == "partial" and inner is not None and len(value.args) - 1 <= inner:
            return inner - (len(value.args) - 1)  # its first arguments given
        return None

    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            counts[node.name] = needed(node.args)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda | ast.Call):
            count = arity(node.value)
            if count is not None:
                counts.update((t.id, count) for t in node.targets if isinstance(t, ast.Name))
    return tuple(counts.items())


def parse_arg_specs(text: str, dtype: str = "float32") -> tuple[ArgSpec, ...]:
    """Example-argument shapes from text such as ``"(3,), (4, 4), ()"`` (one per argument).

    A bare ``3`` means ``(3,)``; an empty string means no arguments. Raises
    :class:`~jaxplay.core.errors.InputError` (a ``ValueError``) with a readable message, and the
    column for a syntax error, for anything else (read with ``ast.literal_eval``, never run).
    """
    text = text.strip()
    if not text:
        return ()
    try:
        value = ast.literal_eval(f"[{text}]")
    # TypeError: a set or dict literal holding a list (`{[]}`) is unhashable; the rest, what a
    # huge or deep literal raises. Each is the visitor's text, so each gets the message.
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError) as err:
        offset = getattr(err, "offset", None)  # in "[text]": one more than in the text
        line = getattr(err, "lineno", None) or 1
        raise InputError(
            _("Could not read these as shapes; write them like (3,), (4, 4) or ().")
            + words.ascii_hint(text),
            text=text,
            line=line,
            col=max(1, offset - (1 if line == 1 else 0)) if offset else None,
        ) from err
    specs = []
    for item in value:
        shape = (item,) if isinstance(item, int) else item
        if not isinstance(shape, tuple) or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape
        ):
            raise InputError(
                _("{item} is not a shape: use a tuple of sizes such as (3, 4).").format(
                    item=repr(item)
                ),
                text=text,
            )
        if len(shape) > MAX_AXES or math.prod(shape) > MAX_ARG_ELEMENTS:
            raise InputError(
                _(
                    "{item} is too large for an example argument: at most {axes} axes and "
                    "{elements} elements."
                ).format(item=repr(item)[:80], axes=MAX_AXES, elements=f"{MAX_ARG_ELEMENTS:,}"),
                text=text,
            )
        specs.append(ArgSpec(shape=shape, dtype=dtype))
    return tuple(specs)

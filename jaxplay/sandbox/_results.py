"""The runner's data: requests, limits and results, and their strict decoding from worker JSON.

A worker is untrusted once user code has run in it, so everything it reports is checked field by
field here: wrong types become defaults, strings are capped, unknown error kinds become
``crashed``. The server never evaluates anything a worker sends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jaxplay.hosting import settings

#: Every way a run can fail, as ``RunError.kind`` reports it.
ERROR_KINDS: tuple[str, ...] = (
    "syntax",
    "exception",
    "timeout",
    "memory",
    "output_limit",
    "crashed",
    "exit",
    "refused",
)

_MAX_TEXT = 20_000
_MAX_ARRAYS = 32
#: A preview's most rows (and numbers a row) of a matrix, and numbers of a vector: the worker
#: sends a 16x16 corner or the first 256 values (``_arrays.summarize_array``).
PREVIEW_ROWS = 16
PREVIEW_VALUES = 256
#: The largest array whose min, max and mean the worker computes (a pass over every element).
MAX_STATS_ELEMENTS = 5_000_000
#: The most elements of an inspected function's example argument, and the most axes (NumPy's).
MAX_ARG_ELEMENTS = 10_000_000
MAX_AXES = 64
#: Longest ``repr`` of a run's last value (the worker cuts it there too).
MAX_REPR = 10_000


@dataclass(frozen=True)
class ArgSpec:
    """An example argument for an inspected function: its shape and dtype.

    The worker fills it deterministically (standard normal values for floating dtypes, a ramp
    for integers, ``True`` for booleans), so the same request always inspects the same input.
    """

    shape: tuple[int, ...]
    dtype: str = "float32"


@dataclass(frozen=True)
class InspectRequest:
    """Ask the worker to inspect one function of the user's code after it ran.

    Attributes:
        function: the name of a callable the code defined at top level.
        args: example arguments, one :class:`ArgSpec` per positional parameter.
        inspectors: names from :data:`jaxplay.sandbox.INSPECTORS` to apply.
    """

    function: str
    args: tuple[ArgSpec, ...]
    inspectors: tuple[str, ...]


@dataclass(frozen=True)
class Task:
    """One of jaxplay's own functions, to call in a worker on a visitor's input.

    Why: some work a visitor asks for cannot be bounded before it starts — differentiating a
    typed formula to order four, or a stack of transforms, compiles for seconds or minutes
    depending on the formula. In the server that would hold the interpreter lock for everyone;
    in a worker it runs under the run's deadline and memory limits, and the server only waits.

    Attributes:
        target: ``"jaxplay.<module>:<function>"``; the function takes ``kwargs`` and returns
            a value the worker encodes with :mod:`jaxplay.core.codec` (the caller decodes it).
        kwargs: plain JSON values (the visitor's formula, sizes, ...).
        progress: the function also takes ``progress``, a
            :class:`jaxplay.core.measure_lock.Progress` the worker makes: each stage it tells
            travels to the server as a ``stage`` frame before the result (the server's own
            timed work, :func:`jaxplay.sandbox.compute`, shows its stages while they happen).
        encoded: each of ``kwargs`` is JSON text of :func:`jaxplay.core.codec.encode`, decoded
            in the worker to the type the function's annotation names (a dataclass argument
            such as a workload).
        budget_scale: :data:`jaxplay.core.timing.BUDGET_SCALE` to set first (the server's, so
            a measurement samples as long as it would there); ``None`` leaves it.
    """

    target: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    progress: bool = False
    encoded: bool = False
    budget_scale: float | None = None


@dataclass(frozen=True)
class Limits:
    """What one run may use. Defaults are what a workshop on one shared machine wants.

    Attributes:
        timeout_s: wall-clock time for the run (user code, summaries and inspections).
        cpu_s: CPU seconds over all threads (a jitted loop on many threads hits this first).
        memory_mb: address space the code may add on top of the warmed worker (CPU only: on a
            GPU, CUDA reserves far more address space than it uses, so no limit is set there).
        file_mb: largest file the code may write.
        open_files: open file descriptors.
        processes: processes and threads the code may add (cgroup ``pids.max`` where available,
            ``RLIMIT_NPROC`` otherwise).
        output_bytes: stdout and stderr together; more ends the run with ``output_limit``.
        scratch_mb: size of each in-memory file system of a run (``/tmp`` and ``/dev/shm``
            under bubblewrap); a full one ends the run with ``memory``.
        result_bytes: what the server reads back on the result channel (results, previews,
            inspections); more ends the run with ``output_limit``.
    """

    timeout_s: float = settings.DEFAULT_RUN_TIMEOUT_S
    cpu_s: float = settings.DEFAULT_RUN_CPU_S
    memory_mb: int = settings.DEFAULT_RUN_MEMORY_MB
    file_mb: int = 16
    open_files: int = 256
    processes: int = 64
    output_bytes: int = 1024 * 1024
    scratch_mb: int = 64
    result_bytes: int = 4 * 1024 * 1024


@dataclass(frozen=True)
class Job:
    """What the server sends a worker, encoded by :mod:`jaxplay.core.codec`: the code to run (or
    the task to call), what to inspect after it, and the limits the worker sets on itself first.
    """

    source: str
    limits: Limits
    inspect: InspectRequest | None = None
    task: Task | None = None
    #: Another job follows on the same pipe after this one's result (a task only: the server's
    #: compute worker, :func:`jaxplay.sandbox.compute`, is kept for its next measurement).
    more: bool = False


@dataclass(frozen=True)
class ArraySummary:
    """One array variable the code left behind, summarised for display.

    ``preview`` holds at most a 16x16 corner (2-D) or the first 256 values (1-D), as nested
    lists of numbers (complex values as strings); ``min``/``max``/``mean`` are ``None`` where
    they do not apply (empty, non-numeric).
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    min: float | None
    max: float | None
    mean: float | None
    preview: Any


@dataclass(frozen=True)
class RunError:
    """Why a run failed.

    Attributes:
        kind: one of :data:`ERROR_KINDS`.
        message: one readable line or paragraph (the exception's ``str``, or the runner's words).
        exc_type: the exception class name (``"KeyReuseError"``), ``None`` when none was raised.
        line: the line of the user's code it points at (1-based), when known.
        traceback: the traceback trimmed to the user's own frames.
    """

    kind: str
    message: str
    exc_type: str | None = None
    line: int | None = None
    traceback: str = ""


@dataclass(frozen=True)
class RunResult:
    """Everything a run produced.

    Attributes:
        ok: the code ran to the end without an error.
        stdout, stderr: what it printed (decoded leniently; capped).
        truncated: the output was cut at the limit (``error`` says so when that ended the run).
        value_repr: ``repr`` of the last expression, as a notebook shows it; ``None`` if none.
        arrays: the array variables at the end of the run.
        duration_s: wall time of the user's code inside the worker (or until it was stopped).
        error: why it failed, ``None`` if ``ok``.
        inspections: inspector name -> its result (the inspector's result type, or an
            :class:`~jaxplay.sandbox.InspectionFailed` saying why there is none).
        queued_s: time spent waiting for a free worker before the run started.
        task: what a :class:`Task` returned, as :mod:`jaxplay.core.codec` encoded it (JSON
            data; :func:`jaxplay.sandbox.call` decodes it), ``None`` for code runs.
    """

    ok: bool
    stdout: str = ""
    stderr: str = ""
    truncated: bool = False
    value_repr: str | None = None
    arrays: tuple[ArraySummary, ...] = ()
    duration_s: float = 0.0
    error: RunError | None = None
    inspections: dict[str, Any] = field(default_factory=dict)
    queued_s: float = 0.0
    task: Any = None


def refused(message: str) -> RunResult:
    """A result for a run that was never started."""
    return RunResult(ok=False, error=RunError(kind="refused", message=message))


def _text(value: Any, default: str = "", limit: int = _MAX_TEXT) -> str:
    if not isinstance(value, str):
        return default
    return value if len(value) <= limit else value[:limit] + "\n… (cut)"


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _opt_float(value: Any) -> float | None:
    """A float, or ``None`` for anything else (an integer of 400 digits included: a forged
    result's ``float()`` raised OverflowError in the page)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def duration(value: Any, default: float) -> float:
    """A run's reported duration in seconds if it is a finite, non-negative number, else
    ``default`` (the time the server measured)."""
    seconds = _opt_float(value)
    return seconds if seconds is not None and 0 <= seconds < float("inf") else default


def _preview(value: Any) -> Any:
    """What the worker sends (:data:`PREVIEW_ROWS` rows of as many numbers, or
    :data:`PREVIEW_VALUES` numbers, or one), and no more: a forged frame's 256 rows of 256 held
    a server 1.3 s and some 40 MB a run, 0.75 s every rerun after."""
    if isinstance(value, list) and value and all(isinstance(row, list) for row in value):
        return [[_scalar(v) for v in row[:PREVIEW_ROWS]] for row in value[:PREVIEW_ROWS]]
    if isinstance(value, list):
        return [_scalar(v) for v in value[:PREVIEW_VALUES]]
    return _scalar(value)


def _scalar(value: Any) -> Any:
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return value[:64]
    return None


def decode_arrays(raw: Any) -> tuple[ArraySummary, ...]:
    """Array summaries from worker JSON (malformed entries are dropped)."""
    if not isinstance(raw, list):
        return ()
    out = []
    for item in raw[:_MAX_ARRAYS]:
        if not isinstance(item, dict):
            continue
        shape = item.get("shape")
        # No array has more axes than NumPy's 64: a longer shape is forged, not cut to show.
        if (
            not isinstance(shape, list)
            or len(shape) > MAX_AXES
            or not all(_opt_int(s) is not None for s in shape)
        ):
            continue
        out.append(
            ArraySummary(
                name=_text(item.get("name"), "?", 200),
                shape=tuple(shape),
                dtype=_text(item.get("dtype"), "?", 64),
                min=_opt_float(item.get("min")),
                max=_opt_float(item.get("max")),
                mean=_opt_float(item.get("mean")),
                preview=_preview(item.get("preview")),
            )
        )
    return tuple(out)


def decode_error(raw: Any) -> RunError | None:
    """A :class:`RunError` from worker JSON; unknown kinds become ``crashed``."""
    if not isinstance(raw, dict):
        return None
    kind = raw.get("kind")
    if kind not in ERROR_KINDS or kind in ("timeout", "output_limit", "refused"):
        # Only the server decides about its own limits; a worker cannot claim them.
        kind = "crashed"
    return RunError(
        kind=kind,
        message=_text(raw.get("message"), ""),
        exc_type=_text(raw.get("exc_type"), "", 200) or None,
        line=_opt_int(raw.get("line")),
        traceback=_text(raw.get("traceback"), ""),
    )


def decode_repr(raw: Any) -> str | None:
    """The ``repr`` of the last expression, capped as the worker should have (``None`` if none)."""
    return _text(raw, limit=MAX_REPR) if isinstance(raw, str) else None

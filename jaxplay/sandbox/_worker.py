"""The sandboxed worker: warm JAX up, wait for one job, run it, report, exit.

Started by the pool as ``python -m jaxplay.sandbox._worker --job-fd J --result-fd R --out-fd O
--err-fd E`` in a fresh interpreter (never forked from a process where JAX is running: that
deadlocks). Until the job arrives it is trusted code; it applies the job's resource limits to
itself *before* compiling the user's code (:mod:`jaxplay.sandbox._limits`) and never serves a
second job of a visitor's, so nothing one visitor does can leak into another's run. Only the
server's compute worker takes job after job: our own functions, on values the server chose. The
job (a :class:`~jaxplay.sandbox._results.Job`) arrives and the result goes back over pipes of
their own, as JSON; inspections and a task's value are encoded by :mod:`jaxplay.core.codec`. User
output goes to fd 1 and 2, which the server reads separately.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import contextlib
import errno
import importlib
import io
import json
import linecache
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from jaxplay.sandbox import _protocol as protocol
from jaxplay.sandbox._arrays import summarize_namespace, wait_for_arrays
from jaxplay.sandbox._limits import allow_job, apply_limits, statm, vm_bytes
from jaxplay.sandbox._results import (
    MAX_ARG_ELEMENTS,
    ArgSpec,
    InspectRequest,
    Job,
    Limits,
    Task,
)

#: The file name user code runs under (tracebacks keep only frames from it).
USER_FILE = "<code-lab>"
_MAX_REPR = 10_000


#: The event JAX records when it loads a program from its persistent compilation cache.
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"


def first_computation() -> None:
    """What every worker computes before its job, to pay a process's one-off costs (its first
    dispatch and lowering); the fork server's zygote has it compiled once (see
    :func:`jaxplay.sandbox._zygote.fill_warm_up_cache`)."""
    import jax.numpy as jnp

    jnp.ones(3).sum().block_until_ready()


def _warm_up(after: dict[str, Any] | None = None) -> dict[str, Any]:
    """Import JAX, start its backend and run :func:`first_computation`, so a run pays none of it.

    ``after``: JAX settings to set once it is done (the fork server's run loads the computation
    from its zygote's read-only cache, then puts back the settings the zygote changed for it:
    the visitor's code then compiles everything itself, as in a fresh process, and its first
    compile also pays XLA's one-off start, as a fresh process's does). A further jitted function
    here would only add a compile no run shares (measured: a run's first ``jax.jit`` costs the
    same after one as without).
    """
    import jax
    import numpy  # noqa: F401

    hits: list[str] = []

    def listen(event: str, **_: Any) -> None:
        if event == CACHE_HIT_EVENT:
            hits.append(event)

    jax.monitoring.register_event_listener(listen)
    try:
        first_computation()
    finally:
        jax.monitoring.unregister_event_listener(listen)
    if after:
        from jax.experimental.compilation_cache import compilation_cache

        for name, value in after.items():
            jax.config.update(name, value)
        compilation_cache.reset_cache()
    return {
        "backend": jax.default_backend(),
        "devices": len(jax.devices()),
        "jax": jax.__version__,
        "warm_up_cache_hits": len(hits),
    }


def _user_traceback(exc: BaseException) -> tuple[str, int | None]:
    """The traceback cut down to frames of the user's code, and the innermost user line."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == USER_FILE]
    line = frames[-1].lineno if frames else None
    text = "".join(traceback.format_list(frames)) if frames else ""
    head = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    if frames:
        text = "Traceback (most recent call last):\n" + text
    return (text + head)[:20_000], line


def _is_memory_error(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return True  # /tmp and /dev/shm are sized tmpfs: a full one is the run's memory limit
    text = str(exc)
    return "RESOURCE_EXHAUSTED" in text or "Out of memory" in text or "bad_alloc" in text


def _error(exc: BaseException) -> dict[str, Any]:
    tb, line = _user_traceback(exc)
    name = type(exc).__name__
    if isinstance(exc, SystemExit):
        code = exc.code
        return {
            "kind": "exit",
            "message": f"The code called sys.exit({code!r}); the run ended there.",
            "exc_type": name,
            "line": line,
            "traceback": tb,
        }
    kind = "memory" if _is_memory_error(exc) else "exception"
    message = str(exc) or f"{name} was raised."
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        message = (
            f"{message}: files in /tmp and /dev/shm live in memory, and the run filled the "
            "space it has there (the run's memory limit)."
        )
    elif kind == "memory":
        message = f"Out of memory: {message or name} (the run's memory limit was reached)."
    return {
        "kind": kind,
        "message": message[:20_000],
        "exc_type": name,
        "line": line,
        "traceback": tb,
    }


def run_source(source: str, namespace: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    """Run ``source`` in ``namespace`` like a notebook cell: the value of a final expression
    is returned. Returns ``(value, error)``; ``error`` is the JSON error or ``None``."""
    from jaxplay.core.errors import python_lines  # lines as Python numbers them

    linecache.cache[USER_FILE] = (len(source), None, python_lines(source, True), USER_FILE)
    try:
        tree = ast.parse(source, USER_FILE, "exec")
        last = None
        if tree.body and isinstance(final := tree.body[-1], ast.Expr):
            tree.body.pop()
            last = ast.Expression(final.value)
        body = compile(tree, USER_FILE, "exec")
        tail = compile(last, USER_FILE, "eval") if last is not None else None
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:  # too deep to parse
        line = getattr(exc, "lineno", None)
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return None, {
            "kind": "syntax",
            "message": getattr(exc, "msg", None) or str(exc) or "nested too deeply to parse",
            "exc_type": type(exc).__name__,
            "line": line if isinstance(line, int) else None,
            "traceback": detail,
        }
    pid = os.getpid()
    try:
        exec(body, namespace)
        value = eval(tail, namespace) if tail is not None else None
    except BaseException as exc:
        _leave_if_forked(pid)
        return None, _error(exc)
    _leave_if_forked(pid)
    return value, None


def _leave_if_forked(pid: int) -> None:
    """A child the user's code forked must not go on to report a result as the worker."""
    if os.getpid() != pid:
        os._exit(0)


def _safe_repr(value: Any) -> str | None:
    if value is None:
        return None
    try:
        text = repr(value)
    except BaseException as exc:
        text = f"<repr failed: {type(exc).__name__}: {exc}>"
    return text if len(text) <= _MAX_REPR else text[:_MAX_REPR] + " …"


def example_argument(shape: list[int], dtype: str, index: int) -> Any:
    """A deterministic example argument: normal values for floats, a ramp for ints."""
    import jax.numpy as jnp
    import numpy as np

    dt = np.dtype(jnp.dtype(dtype))
    size = int(np.prod(shape)) if shape else 1
    if size > MAX_ARG_ELEMENTS:
        raise ValueError(f"example argument of {size} elements exceeds {MAX_ARG_ELEMENTS}")
    rng = np.random.default_rng(index)
    if dt.kind == "b":
        data = np.ones(shape, dtype=bool)
    elif dt.kind in "iu":
        data = (np.arange(size) % 7).reshape(shape)
    elif dt.kind == "c":
        data = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    else:
        data = rng.standard_normal(shape)
    return jnp.asarray(data, dtype=dt)


Inspector = Callable[[Any, tuple[Any, ...]], Any]


def resolve_inspectors(request: InspectRequest | None) -> dict[str, Inspector | str]:
    """The requested inspectors as the callables they name, bound *before* the user's code runs.

    Resolved by name afterwards, user code could rebind the module attribute (say
    ``jaxplay.tracing._sandboxed.inspect_stages``) and forge what the server is shown. Bound
    here, the worker calls the function our code defined. (User code can still reach into
    that function's module or JAX itself, so the server re-caps and checks every result it
    decodes as well: see ``_inspectors.decode`` and the checks of each topic.)
    An unknown or broken name maps to its error message.
    """
    from jaxplay.sandbox._inspectors import INSPECTORS, resolve

    resolved: dict[str, Inspector | str] = {}
    for name in request.inspectors if request is not None else ():
        if name not in INSPECTORS:
            resolved[name] = f"Unknown inspector {name!r}."
            continue
        try:
            resolved[name] = resolve(INSPECTORS[name].function)
        except Exception as exc:
            resolved[name] = f"The inspector {name!r} could not be loaded: {exc}"
    return resolved


def run_inspections(
    request: InspectRequest,
    namespace: dict[str, Any],
    resolved: dict[str, Inspector | str] | None = None,
) -> dict[str, Any]:
    """Apply the requested inspectors (``resolved``: bound before the user's code ran, see
    :func:`resolve_inspectors`) to a function the user's code defined; each result (or an
    :class:`~jaxplay.sandbox.InspectionFailed`) encoded by :mod:`jaxplay.core.codec`."""
    from jaxplay.core import codec
    from jaxplay.sandbox._inspectors import InspectionFailed

    if resolved is None:
        resolved = resolve_inspectors(request)
    name = request.function
    fn = namespace.get(name)
    names = request.inspectors
    if not callable(fn):
        failed = InspectionFailed(f"The code defines no function named {name!r}.")
        return {n: codec.encode(failed) for n in names}
    try:
        args = tuple(
            example_argument(list(a.shape), a.dtype, i) for i, a in enumerate(request.args)
        )
    except Exception as exc:
        return {n: codec.encode(InspectionFailed(f"Bad example argument: {exc}")) for n in names}
    out: dict[str, Any] = {}
    for inspector in names:
        bound = resolved.get(inspector, f"Unknown inspector {inspector!r}.")
        if isinstance(bound, str):
            out[inspector] = codec.encode(InspectionFailed(bound))
            continue
        try:
            out[inspector] = codec.encode(bound(fn, args))
        except BaseException as exc:
            _tb, line = _user_traceback(exc)
            failed = InspectionFailed(
                f"{type(exc).__name__}: {exc}"[:20_000], type(exc).__name__, line
            )
            out[inspector] = codec.encode(failed)
    return out


class StageFrames:
    """The :class:`jaxplay.core.measure_lock.Progress` of a task that asked for one: each stage
    goes to the server as a ``stage`` frame on the result pipe, between the task's stopwatches.

    Nobody waits in a worker (it measures alone, on the cores the server holds for it), so a
    queue place or a throttle never happens here.
    """

    visitor = None

    def __init__(self, result_fd: int) -> None:
        self.result_fd = result_fd

    def stage(self, stage: str, fraction: float | None) -> None:
        _send(self.result_fd, {"type": "stage", "stage": stage, "fraction": fraction})

    def queued(self, ahead: int) -> None:
        pass

    def throttled(self, wait_s: float) -> None:
        pass


def run_task(task: Task, result_fd: int | None = None) -> tuple[Any, dict[str, Any] | None]:
    """Call one of jaxplay's functions (``"jaxplay.x:f"``) with the task's keyword arguments,
    and a :class:`StageFrames` writing to ``result_fd`` as ``progress`` when it asks for one.

    Returns its result encoded by :mod:`jaxplay.core.codec`, or an error for what it raised
    (its own message: the function is ours, the input the visitor's).
    """
    target = task.target
    module_name, _, name = target.partition(":")
    if not module_name.startswith("jaxplay.") or not name.isidentifier():
        return None, {"kind": "exception", "message": f"Not a task: {target!r}."}
    try:
        from jaxplay.core import codec, timing

        function = getattr(importlib.import_module(module_name), name)
        kwargs = _arguments(function, task) if task.encoded else dict(task.kwargs)
        if task.progress and result_fd is not None:
            kwargs["progress"] = StageFrames(result_fd)
        if task.budget_scale is not None:
            timing.BUDGET_SCALE = float(task.budget_scale)
        value = codec.encode(function(**kwargs))
        json.dumps(value)  # fails here, with a message, rather than in _send
    except BaseException as exc:
        error = _error(exc)
        error["traceback"] = ""
        return None, error
    return value, None


def _arguments(function: Any, task: Task) -> dict[str, Any]:
    """An encoded task's arguments, each decoded to the dataclasses its parameter's annotation
    names (and nothing else)."""
    import typing

    from jaxplay.core import codec

    hints = typing.get_type_hints(function)
    return {
        name: codec.decode(json.loads(text), codec.dataclass_types(hints.get(name, Any)))
        for name, text in task.kwargs.items()
    }


def _redirect_output(out_fd: int, err_fd: int) -> None:
    """Point fd 0 at /dev/null (``input()`` gets EOF) and fd 1/2 at the server's output pipes."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    os.close(out_fd)
    os.close(err_fd)
    # Fresh text streams on the new fds: line-buffered, so what was printed before a timeout
    # kill is not lost in a buffer.
    sys.stdout, sys.stderr = (
        io.TextIOWrapper(
            io.BufferedWriter(io.FileIO(fd, "w", closefd=False)),
            encoding="utf-8",
            errors="backslashreplace",
            line_buffering=True,
        )
        for fd in (1, 2)
    )


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        # The user may have closed or replaced it.
        with contextlib.suppress(BaseException):
            stream.flush()


def _send(result_fd: int, message: dict[str, Any]) -> None:
    data = protocol.encode(message)
    if len(data) > protocol.MAX_MESSAGE_BYTES:
        message = {**message, "arrays": [], "inspections": {"error": "results too large"}}
        data = protocol.encode(message)
    view = memoryview(data)
    while view:
        view = view[os.write(result_fd, view) :]


def _die_with_parent() -> None:
    """Ask the kernel to SIGKILL this worker when the server's spawning thread ends.

    bwrap does this itself (``--die-with-parent``); the process sandbox relies on this so a
    run that is sleeping when the server dies does not live on as an orphan.
    """
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(0)


def read_job(fd: int) -> Job | None:
    """The job the server sent (``None`` at end of file), decoded by :mod:`jaxplay.core.codec`:
    its frame size is capped before it is parsed, and only a :class:`Job` of its own parts is
    accepted."""
    from jaxplay.core import codec

    raw = protocol.read_message(fd)
    if raw is None:
        return None
    job = codec.decode(raw, (Job, Limits, InspectRequest, ArgSpec, Task))
    if not isinstance(job, Job):
        raise protocol.ProtocolError("the job is not a Job")
    return job


def main(argv: list[str] | None = None, after_warm_up: dict[str, Any] | None = None) -> None:
    """A worker: warm up, say ready, run one job, send its result, exit.

    ``after_warm_up``: JAX settings to put back after the warm-up (a forked run's, see
    :func:`_warm_up`).
    """
    _die_with_parent()
    parser = argparse.ArgumentParser()
    for name in ("--job-fd", "--result-fd", "--out-fd", "--err-fd"):
        parser.add_argument(name, type=int, required=True)
    opts = parser.parse_args(argv)
    info = _warm_up(after_warm_up)
    info["vm_bytes"] = vm_bytes()
    info["rss_bytes"] = statm(1)
    protocol.write_message(opts.result_fd, {"type": "ready", **info})
    job = read_job(opts.job_fd)
    if job is None:
        os._exit(0)
    more = job.more and job.task is not None and not job.source
    if not more:
        os.close(opts.job_fd)
    # Inspectors are bound now, while only our code has run (see resolve_inspectors).
    inspectors = resolve_inspectors(job.inspect)
    apply_limits(job.limits, info["backend"], kept=more)
    _redirect_output(opts.out_fd, opts.err_fd)
    while job.task is not None:
        start = time.perf_counter()
        value, error = run_task(job.task, opts.result_fd)
        _flush()
        _send(
            opts.result_fd,
            {
                "type": "result",
                "duration_s": time.perf_counter() - start,
                "error": error,
                "task": value,
                "vm_bytes": vm_bytes(),
            },
        )
        if not more:
            os._exit(0)
        # The server's compute worker: the next task comes on the same pipe (its end: exit).
        following = read_job(opts.job_fd)
        if following is None or following.task is None or following.source:
            os._exit(0)
        job = following
        more = job.more
        allow_job(job.limits, info["backend"])
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    start = time.perf_counter()
    value, error = run_source(job.source, namespace)
    if error is None:
        failed = wait_for_arrays(value, namespace)
        error = _error(failed) if failed is not None else None
    duration = time.perf_counter() - start
    _flush()
    message: dict[str, Any] = {"type": "result", "duration_s": duration, "error": error}
    try:
        message["value_repr"] = _safe_repr(value)
        message["arrays"] = summarize_namespace(namespace)
        if job.inspect is not None and error is None:
            message["inspections"] = run_inspections(job.inspect, namespace, inspectors)
    except BaseException as exc:
        message.setdefault("value_repr", None)
        message.setdefault("arrays", [])
        message["inspections"] = {"error": f"{type(exc).__name__}: {exc}"}
    _flush()
    _send(opts.result_fd, message)
    # No interpreter teardown: user code may have left threads or atexit hooks behind.
    os._exit(0)


if __name__ == "__main__":
    main()

"""The one way to run a piece of code and keep what it printed, returned or raised.

Why: pages show what code *does*: the value it returns, the real exception JAX raises, and what it
prints (``print`` at trace time, ``jax.debug.print`` at run time). Printed text goes to
``sys.stdout``, which is one object for the whole server; swapping it for a buffer
(``contextlib.redirect_stdout``) in one visitor's thread would also swallow every other visitor's
prints meanwhile. Instead a proxy is installed as ``sys.stdout`` once, and each write goes to the
buffer of the capture active in the *writing thread's* context, or to the real stdout when there is
none: concurrent captures each keep only their own prints, and other threads print as usual.

``jax.debug.print`` is a host callback. On CPU, JAX runs it in the calling thread for a small
computation but on one of XLA's own threads for a large one (the calling thread waits meanwhile;
on a GPU it is always XLA's thread). Such a thread carries no Python context, so its output goes to
the capture that owns callback output: captures take turns (one lock, :data:`_TURN`), which makes
the owner unambiguous. Captures are short (a demo's few calls), so the turns are brief. Nothing
runs a measurement inside a capture: the measurement lock (:mod:`jaxplay.core.measure_lock`) may be
held around a capture, never taken inside one, so the two locks cannot wait on each other.

- :func:`printed` — a context manager collecting what the block prints.
- :func:`run` — call a function, return an :class:`Outcome`: its value or its exception, what it
  printed and the warnings it emitted. The article's code "as written" runs through it.
"""

from __future__ import annotations

import inspect
import io
import sys
import textwrap
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from jaxplay.core.timing import block

#: One capture at a time owns the output of threads Python did not start (XLA's callback
#: threads); re-entrant, so a capture may nest inside another in the same thread.
_TURN = threading.RLock()
_INSTALL = threading.Lock()
_active: ContextVar[Printed | None] = ContextVar("jaxplay_capture", default=None)
_owner: Printed | None = None


class Printed:
    """The text a :func:`printed` block wrote to ``sys.stdout`` (read :attr:`text` after it)."""

    def __init__(self) -> None:
        self._buffer = io.StringIO()

    def write(self, text: str) -> None:
        self._buffer.write(text)

    @property
    def text(self) -> str:
        return self._buffer.getvalue()


def _foreign_thread() -> bool:
    """Whether the calling thread was started outside Python's ``threading`` (by XLA)."""
    return isinstance(threading.current_thread(), threading._DummyThread)


class _Router:
    """``sys.stdout`` while jaxplay runs: each write goes to its capture, or to the real stdout."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def _target(self) -> Any:
        capture = _active.get()
        if capture is None and _foreign_thread():
            capture = _owner
        return self.real if capture is None else capture

    def write(self, text: str) -> int:
        self._target().write(text)
        return len(text)

    def flush(self) -> None:
        self.real.flush()

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno, buffer, ...
        return getattr(self.real, name)


def _install() -> None:
    """Put the router in front of ``sys.stdout`` (again, if someone replaced it since)."""
    with _INSTALL:
        if not isinstance(sys.stdout, _Router):
            sys.stdout = _Router(sys.stdout)


@contextmanager
def printed() -> Iterator[Printed]:
    """Collect what the block prints: this thread's prints and JAX's callbacks' (debug prints).

    Prints of other threads are not collected (they reach the real stdout). The block should wait
    for its JAX effects (``jax.effects_barrier()``) before it ends, so that every debug print has
    happened inside it; :func:`run` does.
    """
    global _owner
    _install()
    capture = Printed()
    with _TURN:
        token, previous = _active.set(capture), _owner
        _owner = capture
        try:
            yield capture
        finally:
            _owner = previous
            _active.reset(token)


@contextmanager
def _warnings_of_this_thread() -> Iterator[list[str]]:
    """Record the warnings this thread emits (every one, even repeats); others pass through."""
    caught: list[str] = []
    me = threading.get_ident()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        passed_on = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if threading.get_ident() == me:
                caught.append(f"{category.__name__}: {message}")
            else:
                passed_on(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield caught


@dataclass(frozen=True)
class Outcome:
    """What running a piece of code did.

    Attributes:
        code: the code that ran, as shown (its source, or the text given for it).
        value: text of what it returned ("" when it raised).
        error_type: the exception's class name, or ``None`` when it returned.
        message: the exception's full message, as JAX or Python wrote it ("" when it returned).
        raised_at: the line of ``code`` the exception came from, when it is known.
        stdout: what it printed (``print`` and ``jax.debug.print``).
        warnings: the warnings it emitted, as ``"Category: message"``.
    """

    code: str = ""
    value: str = ""
    error_type: str | None = None
    message: str = ""
    raised_at: str | None = None
    stdout: str = ""
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """It returned (raised nothing)."""
        return self.error_type is None

    @property
    def headline(self) -> str:
        """``TypeError: the message`` on one line, cut at 300 characters (arrays print long)."""
        if self.ok:
            return "ran without an error"
        first = " ".join(self.message.split())
        if len(first) > 300:
            first = first[:300] + " …"
        return f"{self.error_type}: {first}"

    @property
    def detail(self) -> str:
        """The message, and the line of the code it came from when known."""
        return self.message + (f" (at `{self.raised_at}`)" if self.raised_at else "")


def _source(fn: Callable[..., Any]) -> tuple[str, str | None]:
    """``fn``'s source (dedented) and file, or ``("", None)`` where Python cannot find it."""
    try:
        return textwrap.dedent(inspect.getsource(fn)), inspect.getsourcefile(fn)
    except (OSError, TypeError):
        return "", None


def _line_in(file: str | None, err: BaseException) -> str | None:
    """The innermost line of ``file`` in the traceback of ``err``."""
    if file is None:
        return None
    lines = [f.line for f in traceback.extract_tb(err.__traceback__) if f.filename == file]
    return lines[-1] if lines and lines[-1] else None


def run(
    fn: Callable[..., Any],
    *args: Any,
    code: str | None = None,
    describe: Callable[[Any], str] = repr,
) -> Outcome:
    """Call ``fn(*args)`` and record what it did; it never raises what ``fn`` raises.

    Arguments:
        fn: the code to run (the article's code as written, a pitfall, a demo).
        args: its arguments.
        code: the code to show for it (default: ``fn``'s own source).
        describe: how to write the returned value as text (default ``repr``).

    Returns:
        An :class:`Outcome`. The result is waited for (``block_until_ready`` on every array, then
        ``jax.effects_barrier()``), so an error JAX reports late and every debug print are in it.
        Only exceptions are caught, never reinterpreted: their type and message are JAX's own.
    """
    import jax

    shown, file = _source(fn)
    shown = shown if code is None else code
    with printed() as out, _warnings_of_this_thread() as caught:
        try:
            value = block(fn(*args))
            jax.effects_barrier()
        except Exception as err:  # the error *is* the result to show
            jax.effects_barrier()
            return Outcome(
                code=shown,
                error_type=type(err).__name__,
                message=str(err),
                raised_at=_line_in(file, err),
                stdout=out.text,
                warnings=tuple(caught),
            )
    return Outcome(code=shown, value=describe(value), stdout=out.text, warnings=tuple(caught))

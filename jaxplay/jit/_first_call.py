"""What the first call of a compiled function includes, measured on fresh executables.

Why a module of its own: the stage chart shows the first call beside the compile, and a learner
asks why it differs from a steady call. Rather than list causes from memory, this compiles the
same function afresh a few times and calls each new executable twice, timing for each call

- how long until the call *returned* to Python (the host's part: JAX's dispatch path, argument
  checks, placing the work on the device's queue), and
- how long until its result was *ready* (the device's work on top), and
- whether the result was already ready when the call returned (``is_ready()``): on the CPU
  backend a call can run the whole program before it returns, and then the time before
  returning holds the device's work too.

It also counts the Python function calls JAX makes while a call is dispatched (``sys.setprofile``
on one more fresh executable, so the counting does not slow the timed calls): the first call of
an executable goes through JAX's Python dispatch path, later ones do not. The page states only
these measured figures.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from jaxplay.core import claims, compilation, i18n, timing
from jaxplay.core.i18n import ngettext

# Bound, not imported: functions below loop with ``for _ in ...`` (their code is shown and run as
# written), which would shadow an imported ``_`` (ruff F402); locally it is harmless.
_ = i18n._


@dataclass(frozen=True)
class CallSplit:
    """One blocked call: seconds until it returned, until its result was ready, and whether it
    was already ready when the call returned."""

    returned_s: float
    ready_s: float
    ready_at_return: bool = False


@dataclass(frozen=True)
class FirstCall:
    """First and second calls of freshly compiled executables of one function.

    Attributes:
        first: each executable's first call.
        second: each executable's second call (same arguments).
        python_calls: Python function calls made during (first call, second call) of one more
            fresh executable.
        python_files: the JAX source files those first-call Python calls ran in, most first,
            as (file, calls).
    """

    first: tuple[CallSplit, ...]
    second: tuple[CallSplit, ...]
    python_calls: tuple[int, int]
    python_files: tuple[tuple[str, int], ...]

    @staticmethod
    def _median(calls: Sequence[CallSplit], part: str) -> float:
        return float(statistics.median(getattr(c, part) for c in calls))

    @property
    def first_ready_s(self) -> float:
        return self._median(self.first, "ready_s")

    @property
    def first_returned_s(self) -> float:
        return self._median(self.first, "returned_s")

    @property
    def second_ready_s(self) -> float:
        return self._median(self.second, "ready_s")

    @property
    def second_returned_s(self) -> float:
        return self._median(self.second, "returned_s")


def _split(call: Callable[[], Any]) -> CallSplit:
    import jax

    start = time.perf_counter()
    result = call()
    returned = time.perf_counter()
    ready = all(leaf.is_ready() for leaf in jax.tree_util.tree_leaves(result))
    timing.block(result)
    return CallSplit(returned - start, time.perf_counter() - start, ready)


def _python_calls(call: Callable[[], Any]) -> tuple[int, Counter[str]]:
    """Python function calls made (in this thread) while ``call`` runs, and their files."""
    files: Counter[str] = Counter()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            path = PurePath(frame.f_code.co_filename)
            parts = path.parts
            where = "/".join(parts[parts.index("jax") :]) if "jax" in parts else path.name
            files[where] += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        result = call()
    finally:
        sys.setprofile(previous)
    timing.block(result)
    return sum(files.values()), files


def first_call_anatomy(
    fn: Callable[..., Any], *args: Any, executables: int = 3, lock: bool = True
) -> FirstCall:
    """Compile ``fn`` afresh ``executables`` times; time each new executable's first two calls.

    Arguments:
        fn: a Python function (not yet jitted).
        args: its arguments (arrays; waited for before anything is timed).
        executables: fresh compiles to time (one more is compiled to count Python calls).
        lock: hold the measurement lock (:mod:`jaxplay.core.measure_lock`).
    """
    from jaxplay.core import measure_lock

    def run() -> FirstCall:
        timing.block(args)
        first, second = [], []
        for _ in range(max(1, executables)):
            aot = compilation.compile_aot(fn, *args)
            first.append(_split(lambda aot=aot: aot.compiled(*aot.call_args)))
            second.append(_split(lambda aot=aot: aot.compiled(*aot.call_args)))
        aot = compilation.compile_aot(fn, *args)
        n_first, files = _python_calls(lambda: aot.compiled(*aot.call_args))
        n_second, _ = _python_calls(lambda: aot.compiled(*aot.call_args))
        return FirstCall(
            tuple(first), tuple(second), (n_first, n_second), tuple(files.most_common(3))
        )

    if not lock:
        return run()
    with measure_lock.exclusive():
        return run()


@claims.states("jit.first_call_ready_at_return")
def first_call_sentence(anatomy: FirstCall, first_s: float, steady_s: float) -> str:
    """Why the first call costs what it does, in Markdown, from the measured figures only."""
    a, fmt = anatomy, timing.format_seconds
    n = len(a.first)
    extra = a.first_ready_s - a.second_ready_s
    extra_host = a.first_returned_s - a.second_returned_s
    # Said of the fresh executables, not the page's first call: another measurement.
    theirs = _(
        "the fresh executables' first-call extra {extra} (over their own second call)"
    ).format(extra=fmt(extra))
    text = ngettext(
        "**What the first call includes.** Here the first call took {first} and a steady call "
        "{steady} (the page's measurement). To take it apart, a second measurement: {n} more "
        "executable of the same function was compiled afresh and called twice: the first call "
        "took {first_ready}, {first_returned} of it before the call returned to Python; the "
        "second took {second_ready}, {second_returned} before returning.",
        "**What the first call includes.** Here the first call took {first} and a steady call "
        "{steady} (the page's measurement). To take it apart, a second measurement: {n} more "
        "executables of the same function were compiled afresh and each called twice (medians): "
        "the first call took {first_ready}, {first_returned} of it before the call returned to "
        "Python; the second took {second_ready}, {second_returned} before returning.",
        n,
    ).format(
        first=fmt(first_s),
        steady=fmt(steady_s),
        n=f"{n:,}",
        first_ready=fmt(a.first_ready_s),
        first_returned=fmt(a.first_returned_s),
        second_ready=fmt(a.second_ready_s),
        second_returned=fmt(a.second_returned_s),
    )
    ready_at_return = sum(c.ready_at_return for c in a.first)
    if extra > 0 and extra_host >= 0.5 * extra and ready_at_return:
        text += claims.qualify(
            "jit.first_call_ready_at_return",
            ngettext(
                " So most of {theirs} passes before the call returns. But {ready} of the {n} "
                "first call returned a result that was already ready (`is_ready()`): this "
                "backend ran the program before returning, so that time holds the device's work "
                "too, and these times cannot split host from device.",
                " So most of {theirs} passes before the call returns. But {ready} of the {n} "
                "first calls returned a result that was already ready (`is_ready()`): this "
                "backend ran the program before returning, so that time holds the device's work "
                "too, and these times cannot split host from device.",
                n,
            ).format(theirs=theirs, ready=ready_at_return, n=f"{n:,}"),
        )
    elif extra > 0 and extra_host >= 0.5 * extra:
        text += claims.qualify(
            "jit.first_call_ready_at_return",
            _(
                " So most of {theirs} is spent on the host before the call returns: no first "
                "call's result was ready when it returned (`is_ready()`), so the device's work "
                "came after."
            ).format(theirs=theirs),
        )
    elif extra > 0:
        text += _(" So most of {theirs} comes after the call returned.").format(theirs=theirs)
    else:
        text += _(" Here the first call costs no more than the second.")
    calls_first, calls_second = a.python_calls
    if a.python_files:
        where = ", ".join(f"`{file}` ({count})" for file, count in a.python_files)
        text += _(
            " While a fresh executable's first call was dispatched, Python ran **{first} "
            "function calls** (most in {where}); during its second call, {second}"
        ).format(first=calls_first, where=where, second=calls_second) + (
            _(": later calls skip JAX's Python dispatch path.")
            if calls_second * 10 < calls_first
            else _(".")
        )
    return text

"""The Code Lab page: what a sandboxed run produced, made readable.

Why a module of its own: :mod:`jaxplay.sandbox` runs the code and returns plain results; the Code
Lab shows them. The shaping for display (a failure with its title and the failing line marked in
the source, a table of the arrays the code left behind, heatmaps of their corners, the inspections
offered and those still to run, the eager-vs-jit inspection in words, the limits of a run in one
line) is the page's topic, tested here, not the sandbox's API.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from jaxplay import sandbox
from jaxplay.core import claims, markdown, untrusted
from jaxplay.core.errors import python_lines
from jaxplay.core.figures import plain
from jaxplay.core.i18n import N_, _, ngettext
from jaxplay.core.timing import format_seconds
from jaxplay.sandbox import ArraySummary, InspectRequest, JitTiming, RunError, RunResult

#: What the page calls each way a run can fail (``RunError.kind``; translated where shown).
FAILURES: dict[str, str] = {
    "syntax": N_("The code is not valid Python."),
    "exception": N_("The code raised an exception."),
    "timeout": N_("Stopped: the run hit its time limit."),
    "memory": N_("Stopped: the run hit its memory limit."),
    "output_limit": N_("Stopped: the run printed too much."),
    "crashed": N_("The Python process running the code crashed."),
    "exit": N_("The code ended its own process."),
    "refused": N_("The code was not run."),
}

#: The inspections the page offers, in the registry's order: those with a label.
OFFERED: tuple[str, ...] = tuple(name for name in sandbox.INSPECTORS if name in sandbox.LABELS)


def inspector_label(name: str) -> str:
    """An inspector's label in the visitor's language (its name if it has none)."""
    return _(sandbox.LABELS[name]) if name in sandbox.LABELS else name


@claims.states_nothing("how the Code Lab reads the visitor's code, not JAX's behaviour")
def no_function_reason(source: str) -> str:
    """Why the Function box offers nothing for ``source``: it does not parse (with the line),
    or it defines no function the box can read (Markdown, in the visitor's language)."""
    try:
        sandbox.function_arities(source)
    except (SyntaxError, ValueError) as err:
        line = getattr(err, "lineno", None)
        return (
            _("the code does not parse (line {line}), so its functions cannot be read").format(
                line=line
            )
            if isinstance(line, int)
            else _("the code does not parse, so its functions cannot be read")
        )
    return _(
        "the code defines no function at its top level (a `def name(...)`, `name = lambda ...`, "
        "or `name = jax.jit(g)` of a function `g` defined above it, not indented)"
    )


def inspect_request(
    function: str, shapes: str, dtype: str, chosen: Sequence[str]
) -> InspectRequest:
    """What to inspect after the run: ``chosen`` inspections of ``function``, on example
    arguments of the ``shapes`` typed (see :func:`jaxplay.sandbox.parse_arg_specs`, which raises
    :class:`~jaxplay.core.errors.InputError` for text it cannot read)."""
    return InspectRequest(function, sandbox.parse_arg_specs(shapes, dtype), tuple(chosen))


@claims.states_nothing("this run's own duration, or that it failed")
def run_summary(result: RunResult) -> str:
    """The run's status line once it ended: how long the code took (the worker times the code
    alone, not the inspections run after it), or that it failed."""
    if not result.ok:
        return _("The run failed")
    took = format_seconds(result.duration_s)  # a 4 ms run was "0.00 s"
    if result.inspections:
        return _("Your code ran in {took} (the inspections after it not counted)").format(took=took)
    return _("Ran in {took}").format(took=took)


@claims.states_nothing("where this server runs code, not JAX's behaviour")
def running_label(isolated: bool) -> str:
    """The spinner's words while a run lasts: a sandbox only where the server has one."""
    return _("Running in a fresh sandbox…") if isolated else _("Running in a fresh process…")


def error_line(shown: tuple[str, RunResult] | None, source: str) -> int | None:
    """The line the shown run (``(code that ran, result)``) failed on, while ``source`` is still
    the code that ran; ``None`` otherwise."""
    if shown is None or shown[0] != source or shown[1].error is None:
        return None
    return shown[1].error.line


@dataclass(frozen=True)
class Failure:
    """A failed run ready to show.

    Attributes:
        title: what kind of failure, in one sentence.
        message: the exception's type and message, or the runner's words.
        marked: the lines around the failing one, numbered and marked (``None`` if unknown).
        traceback: the traceback cut down to the code's own frames (``""`` if none).
    """

    title: str
    message: str
    marked: str | None
    traceback: str


def failure(error: RunError, source: str) -> Failure:
    """How the page shows ``error`` of a run of ``source``."""
    return Failure(
        title=_(FAILURES[error.kind]) if error.kind in FAILURES else error.kind,
        message=f"{error.exc_type}: {error.message}" if error.exc_type else error.message,
        marked=mark_line(source, error.line),
        traceback=error.traceback,
    )


@claims.states_nothing("which inspections the visitor chose after the shown run")
def waiting_note(request: InspectRequest | None, result: RunResult) -> str | None:
    """Which of the inspections asked for now the shown run did not do (they were chosen after
    it), in one sentence; ``None`` when it did them all."""
    waiting = [n for n in (request.inspectors if request else ()) if n not in result.inspections]
    if not waiting:
        return None
    inspections = _(", ").join(inspector_label(n) for n in waiting)
    if result.error is not None:  # the worker inspects only code that ran to its end
        return _(
            "{inspections}: shown after a **Run** in which the code runs without an error."
        ).format(inspections=inspections)
    return _("{inspections}: shown after the next **Run** of this code.").format(
        inspections=inspections
    )


def array_table(arrays: tuple[ArraySummary, ...]) -> list[dict[str, Any]]:
    """One row per array for a table: name, shape, dtype, min, max, mean, first values (the
    column names in the visitor's language, ``dtype`` as is).

    The statistics are text: a table's number column shows NaN and a missing value alike (both
    become Arrow's null), and an array holding NaN is what a visitor most needs to see. A
    statistic the worker did not compute (complex values, or an array too large to summarise)
    is :data:`NO_STATISTIC`, explained by :func:`array_table_note`.
    """
    name, shape, low, high, mean = _("name"), _("shape"), _("min"), _("max"), _("mean")
    first = _("first values")
    return [
        {
            name: a.name,
            shape: str(a.shape),
            "dtype": a.dtype,
            low: _statistic(a.min),
            high: _statistic(a.max),
            mean: _statistic(a.mean),
            first: _first_values(a),
        }
        for a in arrays
    ]


#: What the arrays table shows for a statistic the worker did not compute.
NO_STATISTIC = "—"


def _statistic(value: float | None) -> str:
    if value is None:
        return NO_STATISTIC
    return "NaN" if math.isnan(value) else f"{value:.6g}"


@claims.states_nothing("what the Code Lab's own worker summarises, not JAX's behaviour")
def array_table_note(arrays: tuple[ArraySummary, ...]) -> str | None:
    """Why rows of :func:`array_table` have no statistics, when some have none: one reason per
    kind of row (a typed PRNG key, an empty array, complex values, a large array)."""
    reasons: dict[str, None] = {}
    for a in arrays:
        if None not in (a.min, a.max, a.mean):
            continue
        size = math.prod(a.shape)
        if a.dtype.startswith("key<"):
            reasons[_("typed PRNG keys: `jax.random.key_data` gives their numbers")] = None
        elif size == 0:
            reasons[_("empty arrays")] = None
        elif a.dtype.startswith("complex"):
            reasons[_("complex values")] = None
        elif size > sandbox.MAX_STATS_ELEMENTS:
            reasons[
                _("more than {most} elements to summarise").format(
                    most=f"{sandbox.MAX_STATS_ELEMENTS:,}"
                )
            ] = None
        else:
            reasons[_("values the worker did not report")] = None
    if not reasons:
        return None
    return _("{mark}: not computed ({reasons}).").format(
        mark=NO_STATISTIC, reasons=_("; ").join(reasons)
    )


def _first_values(summary: ArraySummary, count: int = 6) -> str:
    matrix = preview_matrix(summary)
    if matrix is not None:
        flat: list[str] = [f"{v:.4g}" for row in matrix for v in row]
    else:  # complex values come as the worker's text, one per value (capped in decoding)
        preview = summary.preview
        rows = preview if isinstance(preview, list) else [preview]
        flat = [
            v
            for row in rows
            for v in (row if isinstance(row, list) else [row])
            if isinstance(v, str)
        ]
        if not flat:
            return ""
    total = 1
    for s in summary.shape:
        total *= s
    return ", ".join(flat[:count]) + (", …" if total > count else "")


def preview_matrix(summary: ArraySummary) -> list[list[float]] | None:
    """The array's preview as a 2-D list of numbers (a row for 1-D), ``None`` if not numeric."""
    preview = summary.preview
    if isinstance(preview, bool | int | float):
        preview = [[preview]]
    elif isinstance(preview, list) and preview and not isinstance(preview[0], list):
        preview = [preview]
    if not isinstance(preview, list) or not preview:
        return None
    rows = []
    for row in preview:
        if not isinstance(row, list) or not all(
            isinstance(v, int | float) and not isinstance(v, str) for v in row
        ):
            return None
        try:
            rows.append([float(v) for v in row])
        except OverflowError:  # an integer too large for a float: a forged result's
            return None
    return rows


def preview_figure(summary: ArraySummary) -> go.Figure | None:
    """A heatmap of the array's preview corner (``None`` if it has no numeric preview)."""
    matrix = preview_matrix(summary)
    if matrix is None:
        return None
    shown = f"{len(matrix)}x{len(matrix[0]) if matrix else 0}"
    fig = go.Figure(go.Heatmap(z=matrix, colorscale="Viridis"))
    fig.update_layout(
        # Every part is the visitor's (a name in their code, and what their worker reported).
        title=_("{array} (first {shown} values)").format(
            array=plain(f"{summary.name}: {summary.dtype}{list(summary.shape)}"), shown=shown
        ),
        height=260,
        margin={"l": 30, "r": 10, "t": 40, "b": 30},
        yaxis={"autorange": "reversed"},
    )
    return fig


def heatmaps(arrays: tuple[ArraySummary, ...], most: int = 4) -> list[tuple[str, go.Figure]]:
    """``(name, heatmap)`` of each of the first ``most`` arrays that has two dimensions or more
    and a numeric preview."""
    shown = []
    for summary in arrays[:most]:
        fig = preview_figure(summary)
        if fig is not None and len(summary.shape) >= 2:
            shown.append((summary.name, fig))
    return shown


def mark_line(source: str, line: int | None, context: int = 2) -> str | None:
    """The lines around ``line`` of ``source``, numbered, with the line itself marked ``→``.

    ``None`` when the line is unknown or outside the source.
    """
    lines = python_lines(source)  # as Python numbers them: not at a form feed or U+2028
    if line is None or not 1 <= line <= len(lines):
        return None
    start, stop = max(1, line - context), min(len(lines), line + context)
    width = len(str(stop))
    return "\n".join(
        f"{'→' if n == line else ' '} {n:>{width}} | {lines[n - 1]}" for n in range(start, stop + 1)
    )


@dataclass(frozen=True)
class TimingSummary:
    """A ``compare_jit`` inspection ready to show: three metrics and what was measured.

    Attributes:
        metrics: ``(label, value)`` for eager's median, jit's median and the speed-up.
        caption: how and where it was measured.
    """

    metrics: tuple[tuple[str, str], ...]
    caption: str


@claims.states_nothing("our own timing harness's medians, measured in the sandbox")
def timing_summary(timing: JitTiming, isolated: bool) -> TimingSummary:
    """What a ``compare_jit`` inspection shows: medians, speed-up and what was measured, and
    where (``isolated``: the server's runs are sandboxed)."""
    eager, jitted = timing.comparison.eager, timing.comparison.jitted
    speedup = eager.median / jitted.median if jitted.median > 0 else None
    undecorated = (
        " "
        + _(
            "The function is jitted where it is defined: eager is its undecorated function, jit "
            "the same function under `jax.jit`."
        )
        if timing.undecorated
        else ""
    )
    return TimingSummary(
        metrics=(
            (_("Eager (median)"), format_seconds(eager.median)),
            (_("jit (median)"), format_seconds(jitted.median)),
            (_("Speed-up"), f"{speedup:.3g}×" if speedup is not None else _("n/a")),
        ),
        caption=_timing_caption(timing, isolated, speedup is not None) + undecorated,
    )


@claims.states_nothing("where our own harness measured, and how many samples it took")
def _timing_caption(timing: JitTiming, isolated: bool, timed: bool) -> str:
    """Where and how a ``compare_jit`` inspection measured: warmed up only where its samples
    came after the warm-up (a function slower than the budget gets none), and cut where the
    budget ended the sampling."""
    # The worker's word, which visitor code can forge: text, not Markdown.
    device = markdown.escape(untrusted.text(timing.device, 80)) or _("its default device")
    where = (
        _("Measured inside the sandbox on {device}")
        if isolated
        else _("Measured in the run's own process on {device} (this server has no sandbox)")
    ).format(device=device)
    eager = timing.comparison.eager
    n = len(eager.samples)
    if n == 0:
        how = _(
            "the time budget ran out before a sample was taken (each side first runs twice to "
            "warm up), so there is no time to show: try smaller inputs"
        )
    else:
        how = ngettext(
            "warmed up, blocked on every result, median of {n} sample per side (speed-up "
            "{describe})",
            "warmed up, blocked on every result, median of {n} samples per side (speed-up "
            "{describe})",
            n,
        ).format(n=n, describe=timing.comparison.describe() if timed else _("n/a")) + (
            _(", cut at the time budget") if eager.cut else ""
        )
    noise = (
        _("The sandbox shares the machine with other visitors, so expect noise.")
        if isolated
        else _("Other visitors' runs share the machine, so expect noise.")
    )
    return _("{where}: {how}. {noise}").format(where=where, how=how, noise=noise)


@claims.states_nothing("the sandbox's own isolation, not JAX's behaviour")
def intro(pool: sandbox.WorkerPool | None = None) -> str:
    """The page's first sentence: what a run is, and what it can reach, which depends on the
    sandbox this server has (a server outside public mode may run code as a plain process)."""
    pool = pool or sandbox.get_pool()
    if pool.isolated:
        return _(
            "Type any JAX code and run it. Each run gets a fresh, sandboxed Python process with "
            "time, memory and output limits; nothing you run can reach other visitors or the "
            "server."
        )
    return _(
        "Type any JAX code and run it. Each run gets a fresh Python process with time, memory "
        "and output limits, but this server has no sandbox: a run can read the server's files "
        "and use its network (a public server refuses to run code this way)."
    )


@claims.states_nothing("the sandbox's own limits and isolation, not JAX's behaviour")
def describe_limits(pool: sandbox.WorkerPool | None = None) -> str:
    """One line for the page: the sandbox in use, the limits of a run and what enforces them.

    ``pool`` defaults to the server's (:func:`jaxplay.sandbox.get_pool`). Under bubblewrap a
    run's ``/tmp`` and ``/dev/shm`` are in-memory file systems of ``scratch_mb`` each; whether the
    kernel also holds each run to its memory and process limits depends on the host's cgroups
    (v1, a delegated v2 subtree, or none: then address-space and process rlimits alone). Each
    run's process is forked from the fork server's zygote or, without it, a fresh interpreter
    (:meth:`jaxplay.sandbox.WorkerPool.worker_kind`).
    """
    pool = pool or sandbox.get_pool()
    limits = pool.config.limits
    isolation = _("bubblewrap sandbox") if pool.isolated else _("plain process (no isolation)")
    parts = [
        isolation,
        pool.worker_kind(),
        f"{limits.timeout_s:g} s",
        f"{limits.cpu_s:g} CPU s",
        _("{gb} GB memory (CPU)").format(gb=f"{limits.memory_mb / 1024:.3g}"),
        _("{kib} KiB output").format(kib=limits.output_bytes // 1024),
        _("{n} processes").format(n=limits.processes),
    ]
    if pool.isolated:
        parts.append(
            _("{mb} MB each for the in-memory /tmp and /dev/shm").format(mb=limits.scratch_mb)
        )
    if pool.cgroups.available or pool.isolated:
        parts.append(_("enforced by: {how}").format(how=pool.cgroups.describe()))
    else:
        parts.append(_("enforced by: no cgroups here: address-space and process rlimits"))
    if pool.isolated:
        parts.append(_("no network, no server files"))
    return " · ".join(parts)

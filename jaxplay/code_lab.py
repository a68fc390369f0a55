"""The Code Lab page: what a sandboxed run produced, made readable.

Why a module of its own: :mod:`jaxplay.sandbox` runs the code and returns plain results; the Code
Lab shows them. The shaping for display (a table of the arrays the code left behind, a heatmap of
an array's corner, the failing line marked in the source, the eager-vs-jit inspection in words,
the limits of a run in one line) is the page's topic, tested here, not the sandbox's API.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from jaxplay import sandbox
from jaxplay.core import claims
from jaxplay.core.figures import plain
from jaxplay.core.i18n import _
from jaxplay.core.timing import format_seconds
from jaxplay.sandbox import ArraySummary, JitTiming


def array_table(arrays: tuple[ArraySummary, ...]) -> list[dict[str, Any]]:
    """One row per array for a table: name, shape, dtype, min, max, mean, first values (the
    column names in the visitor's language, ``dtype`` as is)."""
    name, shape, low, high, mean = _("name"), _("shape"), _("min"), _("max"), _("mean")
    first = _("first values")
    return [
        {
            name: a.name,
            shape: str(a.shape),
            "dtype": a.dtype,
            low: a.min,
            high: a.max,
            mean: a.mean,
            first: _first_values(a),
        }
        for a in arrays
    ]


def _first_values(summary: ArraySummary, count: int = 6) -> str:
    matrix = preview_matrix(summary)
    if matrix is None:
        return ""
    flat = [v for row in matrix for v in row]
    text = ", ".join(f"{v:.4g}" for v in flat[:count])
    total = 1
    for s in summary.shape:
        total *= s
    return text + (", …" if total > count else "")


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
        rows.append([float(v) for v in row])
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


def mark_line(source: str, line: int | None, context: int = 2) -> str | None:
    """The lines around ``line`` of ``source``, numbered, with the line itself marked ``→``.

    ``None`` when the line is unknown or outside the source.
    """
    lines = source.splitlines()
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
def timing_summary(timing: JitTiming) -> TimingSummary:
    """What a ``compare_jit`` inspection shows: medians, speed-up and what was measured."""
    eager, jitted = timing.comparison.eager, timing.comparison.jitted
    speedup = eager.median / jitted.median if jitted.median > 0 else None
    return TimingSummary(
        metrics=(
            (_("Eager (median)"), format_seconds(eager.median)),
            (_("jit (median)"), format_seconds(jitted.median)),
            (_("Speed-up"), f"{speedup:.3g}×" if speedup is not None else _("n/a")),
        ),
        caption=_(
            "Measured inside the sandbox on {device}: warmed up, blocked on every result, "
            "median of {samples} samples per side (speed-up {describe}). The sandbox shares the "
            "machine with other visitors, so expect noise."
        ).format(
            device=timing.device or _("its default device"),
            samples=len(eager.samples),
            describe=timing.comparison.describe() if speedup is not None else _("n/a"),
        ),
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

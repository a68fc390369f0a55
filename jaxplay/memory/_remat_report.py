"""Checkpointing results told: the residuals in words, what XLA did with each variant, tables
and the memory-against-time chart.

Why a module of its own: :mod:`jaxplay.memory._remat` measures (residuals, compiled memory, times);
this turns its :class:`~jaxplay.memory._remat.RematResult` values into what the page shows, every
number in a sentence taken from them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxplay.core import claims
from jaxplay.core.figures import quartile_bars, timing_values
from jaxplay.core.timing import format_seconds
from jaxplay.core.words import count
from jaxplay.memory._remat import Model, RematResult


@claims.states("memory.checkpoint_saves_fewer_residuals")
def residual_story(result: RematResult) -> str:
    """The saved residuals in one sentence, counted from what JAX reported (Markdown)."""
    if not result.residuals:
        return "Nothing is saved for the backward pass."
    producers: dict[str, int] = {}
    for r in result.residuals:
        what = f"{r.producer} ({r.origin})" if r.origin in ("argument", "named") else r.producer
        producers[what] = producers.get(what, 0) + 1
    listed = ", ".join(f"{n} × `{p}`" for p, n in producers.items())
    text = f"{count(len(result.residuals), 'saved residual')}, by producer: {listed}."
    if result.roles:
        uses = ", ".join(f"{n} × {role}" for role, n in result.roles.items())
        text += f" What the gradient reads them as: {uses}."
    return text


@claims.states("memory.checkpoint_lowers_to_barriers", "memory.checkpoint_saves_fewer_residuals")
def remat_story(
    results: Sequence[RematResult], model: Model, loop: str, platform: str
) -> list[str]:
    """What the compiled programs did with each checkpointing variant, read from the programs
    (Markdown, one paragraph per variant). ``results[0]`` is the reference, no checkpoint.

    The numbers are the variants' own: temp memory from ``memory_analysis()``, optimization
    barriers and the model's elementwise op (:attr:`Model.op`) counted in the lowered StableHLO
    and in the compiled HLO. In an unrolled loop every recomputed op is a separate op, so the
    counts show whether XLA kept a recomputation; a ``lax.scan`` compiles one loop body, so there
    the temp memory tells.
    """
    ref = results[0] if results else None
    if ref is None or ref.temp_bytes is None:
        return []
    op, paras = f"`{model.op}`", []
    ref_mib = f"{ref.temp_bytes / 2**20:.3g} MiB"
    for r in results[1:]:
        if r.temp_bytes is None:
            continue
        mib = f"{r.temp_bytes / 2**20:.3g} MiB"
        head = f"**{r.variant.label}**: temp memory {ref_mib} → {mib} (`memory_analysis()`)"
        barriers = (
            f"{count(r.barriers[1], 'optimization barrier')} of JAX's {r.barriers[0]} remain in "
            "the compiled program"
        )
        if loop == "scan":
            saved = f"it saves {count(len(r.residuals), 'residual')} against {len(ref.residuals)}"
            if r.temp_bytes < ref.temp_bytes:
                paras.append(
                    f"{head}: {saved} and recomputes the rest in the backward loop, which XLA "
                    f"cannot merge across loop iterations ({barriers})."
                )
            else:
                paras.append(f"{head}: {saved}, and the temp memory did not drop ({barriers}).")
            continue
        lowered_ops, compiled_ops = count(r.ops[0], f"{op} op"), count(r.ops[1], f"{op} op")
        lowered = (
            f"JAX's lowered program recomputes ({lowered_ops} against {ref.ops[0]})"
            if r.ops[0] > ref.ops[0]
            else f"JAX's lowered program has {lowered_ops}, as many as without checkpoint"
        )
        if r.temp_bytes == ref.temp_bytes and r.barriers[1] == 0 and r.ops[1] == ref.ops[1]:
            paras.append(
                f"{head}: {lowered}, behind {count(r.barriers[0], 'optimization barrier')}. "
                f"XLA:{platform.upper()} removed every barrier and merged any recomputation back "
                f"into the forward pass: the compiled program has {compiled_ops}, the same as "
                "without checkpoint, so the temp memory is the same. A `lax.scan` loop (Loop "
                "above) keeps the recomputation apart."
            )
        else:
            change = "dropped" if r.temp_bytes < ref.temp_bytes else "did not drop"
            paras.append(
                f"{head}: {lowered}; {barriers}, the compiled program has {compiled_ops} "
                f"against {ref.ops[1]} without checkpoint, and the temp memory {change}."
            )
    return paras


def gradient_error(result: RematResult, reference: RematResult) -> float | None:
    """Largest difference between two variants' gradients, relative to the reference's largest
    magnitude (None if either was not run)."""
    if result.gradient is None or reference.gradient is None:
        return None
    scale = max((float(np.max(np.abs(g))) for g in reference.gradient), default=0.0) or 1.0
    diff = max(
        (
            float(np.max(np.abs(a - b)))
            for a, b in zip(result.gradient, reference.gradient, strict=True)
        ),
        default=0.0,
    )
    return diff / scale


def summary_rows(results: Sequence[RematResult]) -> list[dict[str, Any]]:
    """One table row per variant: residual count and bytes, compiled memory, time (median and
    half the interquartile range), and the largest relative difference from the reference's
    gradient over the sampled entries (:data:`GRADIENT_SAMPLE` per leaf)."""
    reference = results[0] if results else None
    rows = []
    for r in results:
        error = gradient_error(r, reference) if reference is not None else None
        memory = r.memory or {}
        rows.append(
            {
                "variant": r.variant.short,
                "saved residuals": len(r.residuals),
                "residual MiB": r.residual_bytes / 2**20,
                "temp MiB": memory.get("temp", float("nan")) / 2**20,
                "argument MiB": memory.get("argument", float("nan")) / 2**20,
                "output MiB": memory.get("output", float("nan")) / 2**20,
                "peak MiB": float("nan") if r.peak_bytes is None else r.peak_bytes / 2**20,
                "gradient time": "not run" if r.time is None else format_seconds(r.time.median),
                "± IQR/2": "" if r.time is None else format_seconds(r.time.iqr / 2),
                "gradient vs no checkpoint": "not run" if error is None else f"{error:.1e}",
            }
        )
    return rows


#: Columns said in the caption instead when every variant has the same value.
CONSTANT_COLUMNS = ("argument MiB", "output MiB")


@dataclass(frozen=True)
class SummaryTable:
    """The summary as the page shows it: the rows without the columns that say nothing here
    (no value on this backend, peak memory on a CPU), and the ones every variant shares,
    said once in ``constants`` (``"argument MiB: 1.5 for every variant"``) so the table fits."""

    rows: list[dict[str, Any]]
    constants: str


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def summary_table(results: Sequence[RematResult]) -> SummaryTable:
    """:func:`summary_rows`, shaped for the page (see :class:`SummaryTable`)."""
    rows = summary_rows(results)
    columns = list(rows[0]) if rows else []
    empty = {c for c in columns if all(_missing(row[c]) for row in rows)}
    same = [
        c
        for c in CONSTANT_COLUMNS
        if c in columns and c not in empty and len({repr(row[c]) for row in rows}) == 1
    ]
    constants = "; ".join(f"{c}: {rows[0][c]:.3g} for every variant" for c in same)
    dropped = empty | set(same)
    return SummaryTable(
        [{c: v for c, v in row.items() if c not in dropped} for row in rows], constants
    )


def residual_rows(result: RematResult) -> list[dict[str, Any]]:
    """The residual table of one variant: shape, dtype, bytes, what made it, source line."""
    return [
        {
            "shape": str(r.shape),
            "dtype": r.dtype,
            "bytes": r.bytes,
            "saved because": r.origin,
            "producer": r.producer,
            "source line": r.source or "",
        }
        for r in result.residuals
    ]


def memory_time_figure(results: Sequence[RematResult], device: str) -> Any:
    """Compiled temp memory against gradient time, one point per variant that was run.

    The x error bars are the interquartile range of the timing samples.
    """
    import plotly.graph_objects as go

    timed = [r for r in results if r.time is not None and r.temp_bytes is not None]
    fig = go.Figure()
    for r in timed:
        assert r.time is not None and r.temp_bytes is not None
        medians, lows, highs = timing_values([r.time], scale=1e3)
        fig.add_trace(
            go.Scatter(
                x=medians,
                y=[r.temp_bytes / 2**20],
                mode="markers+text",
                text=[r.variant.short],
                textposition="top center",
                name=r.variant.label,
                error_x=quartile_bars(medians, lows, highs),
                marker={"size": 12},
            )
        )
    fig.update_layout(
        title=f"Memory against time: jitted gradient per variant on {device}",
        xaxis_title="gradient time per call, ms (median; bars: IQR)",
        yaxis_title="compiled temp memory, MiB (memory_analysis)",
        yaxis_rangemode="tozero",
        xaxis_rangemode="tozero",
        showlegend=False,
        height=420,
        margin={"t": 60, "b": 50, "l": 60, "r": 20},
    )
    return fig

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
from jaxplay.core.i18n import N_, _, ngettext
from jaxplay.core.timing import format_seconds
from jaxplay.memory._remat import GRADIENT_SAMPLE, Model, RematResult, Variant

#: Why a residual is saved (:attr:`~jaxplay.memory._residuals.Residual.origin`), in words: the
#: origins are English in a cached result; a table or sentence shows them with ``_``.
ORIGINS = (
    N_("argument"),
    N_("output"),
    N_("named"),
    N_("constant"),
    N_("literal"),
    N_("jitted"),
    N_("other"),
)


def _role(role: str) -> str:
    """A residual's role (:data:`~jaxplay.memory._remat.ROLES`) in the visitor's language."""
    other = "other: "  # then the primitives reading it (see residual_roles)
    if role.startswith(other):
        return _("other: {primitives}").format(primitives=role[len(other) :])
    return _(role)


def _residuals(n: int) -> str:
    """``"3 residuals"`` in the visitor's language."""
    return ngettext("{n} residual", "{n} residuals", n).format(n=f"{n:,}")


def _barriers(n: int) -> str:
    """``"2 optimization barriers"`` in the visitor's language."""
    return ngettext("{n} optimization barrier", "{n} optimization barriers", n).format(n=f"{n:,}")


def _ops(n: int, op: str) -> str:
    """``"5 `sine` ops"`` in the visitor's language."""
    return ngettext("{n} {op} op", "{n} {op} ops", n).format(n=f"{n:,}", op=op)


@claims.states("memory.checkpoint_saves_fewer_residuals")
def variant_explanation(variant: Variant, model: Model) -> str:
    """The variant's explanation with the model's ``checkpoint_name`` filled in (in the visitor's
    language)."""
    return _(variant.explanation).replace("NAME", repr(model.name))


@claims.states("memory.checkpoint_saves_fewer_residuals")
def residual_story(result: RematResult) -> str:
    """The saved residuals in one sentence, counted from what JAX reported (Markdown)."""
    if not result.residuals:
        return _("Nothing is saved for the backward pass.")
    producers: dict[str, int] = {}
    for r in result.residuals:
        named = r.origin in ("argument", "named")
        what = f"{r.producer} ({_(r.origin)})" if named else r.producer
        producers[what] = producers.get(what, 0) + 1
    listed = _(", ").join(f"{n} × `{p}`" for p, n in producers.items())
    n = len(result.residuals)
    text = ngettext(
        "{n} saved residual, by producer: {listed}.",
        "{n} saved residuals, by producer: {listed}.",
        n,
    ).format(n=f"{n:,}", listed=listed)
    if result.roles:
        uses = _(", ").join(f"{n} × {_role(role)}" for role, n in result.roles.items())
        # The space between the sentences is the translation's (Chinese puts none).
        text += _(" What the gradient reads them as: {uses}.").format(uses=uses)
    return text


@claims.states(
    "memory.checkpoint_lowers_to_barriers",
    "memory.checkpoint_saves_fewer_residuals",
    "memory.checkpoint_under_grad_drops_the_forward_pass",
)
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
        head = _("**{variant}**: temp memory {before} → {after} (`memory_analysis()`)").format(
            variant=_(r.variant.label), before=ref_mib, after=mib
        )
        barriers = ngettext(
            "{n} optimization barrier of JAX's {total} remain in the compiled program",
            "{n} optimization barriers of JAX's {total} remain in the compiled program",
            r.barriers[1],
        ).format(n=f"{r.barriers[1]:,}", total=r.barriers[0])
        if loop == "scan":
            saved = dict(saved=_residuals(len(r.residuals)), reference=len(ref.residuals))
            if r.temp_bytes < ref.temp_bytes and len(r.residuals) < len(ref.residuals):
                said = _(
                    "{head}: it saves {saved} against {reference} and recomputes the rest in the "
                    "backward loop, which XLA cannot merge across loop iterations ({barriers})."
                )
            elif r.temp_bytes < ref.temp_bytes:
                said = _(
                    "{head}: it saves {saved} against {reference}, so the count does not show "
                    "the saving: its residuals, below, show which values it keeps, and the temp "
                    "memory dropped ({barriers})."
                )
            elif r.temp_bytes > ref.temp_bytes:
                said = _(
                    "{head}: it saves {saved} against {reference}, and the temp memory grew "
                    "({barriers})."
                )
            else:
                said = _(
                    "{head}: it saves {saved} against {reference}, and the temp memory did not "
                    "drop ({barriers})."
                )
            paras.append(said.format(head=head, barriers=barriers, **saved))
            continue
        lowered_ops, compiled_ops = _ops(r.ops[0], op), _ops(r.ops[1], op)
        lowered = (
            _("JAX's lowered program recomputes ({ops} against {reference})")
            if r.ops[0] > ref.ops[0]
            else _("JAX's lowered program has {ops}, as many as without checkpoint")
        ).format(ops=lowered_ops, reference=ref.ops[0])
        same = r.temp_bytes == ref.temp_bytes and r.ops[1] == ref.ops[1]
        if same and r.ops[0] == ref.ops[0]:
            said = (
                _(
                    "{head}: {lowered}, behind {barriers}: no extra {op}. `grad` uses no value "
                    "of the forward pass, so JAX leaves out the forward pass outside the "
                    "checkpoint, and the checkpoint's rerun in the backward pass is the only "
                    "forward pass. The compiled program has {compiled}, the same as without "
                    "checkpoint, and the temp memory is the same."
                )
                if r.variant.scope == "layer"  # checkpointed whole: nothing of it runs before
                else _(
                    "{head}: {lowered}, behind {barriers}: no extra {op} (other ops may still "
                    "be recomputed: only {op} is counted here). The compiled program has "
                    "{compiled}, the same as without checkpoint, and the temp memory is the same."
                )
            )
            paras.append(
                said.format(
                    head=head,
                    lowered=lowered,
                    barriers=_barriers(r.barriers[0]),
                    op=op,
                    compiled=compiled_ops,
                )
            )
        elif same and r.barriers[1] == 0:
            paras.append(
                _(
                    "{head}: {lowered}, behind {barriers}. XLA:{platform} removed every barrier "
                    "and merged the recomputation back into the forward pass: the compiled "
                    "program has {compiled}, the same as without checkpoint, so the temp memory "
                    "is the same. A `lax.scan` loop (Loop above) keeps the recomputation apart."
                ).format(
                    head=head,
                    lowered=lowered,
                    barriers=_barriers(r.barriers[0]),
                    platform=platform.upper(),
                    compiled=compiled_ops,
                )
            )
        else:
            if r.temp_bytes < ref.temp_bytes:
                said = _(
                    "{head}: {lowered}; {barriers}, the compiled program has {compiled} against "
                    "{reference} without checkpoint, and the temp memory dropped."
                )
            elif r.temp_bytes > ref.temp_bytes:
                said = _(
                    "{head}: {lowered}; {barriers}, the compiled program has {compiled} against "
                    "{reference} without checkpoint, and the temp memory grew."
                )
            else:
                said = _(
                    "{head}: {lowered}; {barriers}, the compiled program has {compiled} against "
                    "{reference} without checkpoint, and the temp memory did not drop."
                )
            paras.append(
                said.format(
                    head=head,
                    lowered=lowered,
                    barriers=barriers,
                    compiled=compiled_ops,
                    reference=ref.ops[1],
                )
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
        not_run = _("not run")
        rows.append(
            {
                "variant": _(r.variant.short),
                "saved residuals": len(r.residuals),
                "residual MiB": r.residual_bytes / 2**20,
                "temp MiB": memory.get("temp", float("nan")) / 2**20,
                "argument MiB": memory.get("argument", float("nan")) / 2**20,
                "output MiB": memory.get("output", float("nan")) / 2**20,
                "peak MiB": float("nan") if r.peak_bytes is None else r.peak_bytes / 2**20,
                "gradient time": not_run if r.time is None else format_seconds(r.time.median),
                "± IQR/2": "" if r.time is None else format_seconds(r.time.iqr / 2),
                "gradient vs no checkpoint": not_run if error is None else f"{error:.1e}",
            }
        )
    return rows


#: Columns said in the caption instead when every variant has the same value (marked with
#: ``N_``: the caption names them with ``_``).
CONSTANT_COLUMNS = (N_("argument MiB"), N_("output MiB"))


@dataclass(frozen=True)
class SummaryTable:
    """The summary as the page shows it: the rows without the columns that say nothing here
    (no value on this backend, peak memory on a CPU), and the ones every variant shares,
    said once in ``constants`` (``"argument MiB: 1.5 for every variant"``, in the visitor's
    language) so the table fits."""

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
    constants = _("; ").join(
        _("{column}: {value} for every variant").format(column=_(c), value=f"{rows[0][c]:.3g}")
        for c in same
    )
    dropped = empty | set(same)
    return SummaryTable(
        [{c: v for c, v in row.items() if c not in dropped} for row in rows], constants
    )


def residual_rows(result: RematResult) -> list[dict[str, Any]]:
    """The residual table of one variant: shape, dtype, bytes, what made it, source line (the
    headers and the origins in the visitor's language)."""
    shape, size, because = _("shape"), _("bytes"), _("saved because")
    producer, line = _("producer"), _("source line")
    return [
        {
            shape: str(r.shape),
            "dtype": r.dtype,
            size: r.bytes,
            because: _(r.origin),
            producer: r.producer,
            line: r.source or "",
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
                text=[_(r.variant.short)],
                textposition="top center",
                name=_(r.variant.label),
                error_x=quartile_bars(medians, lows, highs),
                marker={"size": 12},
            )
        )
    fig.update_layout(
        title=_("Memory against time: jitted gradient per variant on {device}").format(
            device=device
        ),
        xaxis_title=_("gradient time per call, ms (median; bars: IQR)"),
        yaxis_title=_("compiled temp memory, MiB (memory_analysis)"),
        yaxis_rangemode="tozero",
        xaxis_rangemode="tozero",
        showlegend=False,
        height=420,
        margin={"t": 60, "b": 50, "l": 60, "r": 20},
    )
    return fig


@dataclass(frozen=True)
class SummaryColumn:
    """How one column of :func:`summary_table` is shown (the rows keep their English keys).

    Attributes:
        label: the header, in the visitor's language (short: nine columns share the width).
        number: whether it holds numbers (else text).
        format: a number column's printf-style format, or None for the default.
        help: the header's tooltip, in the visitor's language, or None.
        pinned: whether it stays in view when the table scrolls sideways (None: the default).
    """

    label: str
    number: bool
    format: str | None = None
    help: str | None = None
    pinned: bool | None = None


@claims.states_nothing("column headers and help")
def summary_columns() -> dict[str, SummaryColumn]:
    """Each summary column's header, format and help, by its key in :func:`summary_rows`."""
    mib = "%.3g"
    return {
        "variant": SummaryColumn(_("variant"), number=False, pinned=True),
        "saved residuals": SummaryColumn(
            _("saved"), number=True, help=_("Residuals JAX saves for the backward pass")
        ),
        "residual MiB": SummaryColumn(_("saved MiB"), number=True, format=mib),
        "temp MiB": SummaryColumn(
            _("temp MiB"),
            number=True,
            format=mib,
            help=_("XLA's memory_analysis() of the gradient"),
        ),
        "argument MiB": SummaryColumn(_("argument MiB"), number=True, format=mib),
        "output MiB": SummaryColumn(_("output MiB"), number=True, format=mib),
        "peak MiB": SummaryColumn(_("peak MiB"), number=True, format=mib),
        "gradient time": SummaryColumn(_("time"), number=False, help=_("Median of the samples")),
        "gradient vs no checkpoint": SummaryColumn(
            _("Δ grad"),
            number=False,
            help=_("Largest difference from no checkpoint's gradient, relative"),
        ),
    }


@claims.states_nothing("names the sources of the table's numbers, each read from JAX or XLA")
def summary_caption(table: SummaryTable) -> str:
    """Where the summary's numbers come from (Markdown), with the values every variant shares
    (:attr:`SummaryTable.constants`) when the table left their columns out."""
    if table.constants:
        caption = _(
            "Saved residuals are JAX's plan, before XLA keeps one buffer for equal values (a "
            "tagged value and its source, an array and its transpose) and leaves arguments in "
            "their own buffers; temp MiB is the scratch memory XLA's compiled program needs "
            "(`memory_analysis()`), where the residuals that are not arguments live beside "
            "other buffers ({constants}). The gradients are compared on up to {sample} evenly "
            "spaced entries of each leaf."
        )
    else:
        caption = _(
            "Saved residuals are JAX's plan, before XLA keeps one buffer for equal values (a "
            "tagged value and its source, an array and its transpose) and leaves arguments in "
            "their own buffers; temp MiB is the scratch memory XLA's compiled program needs "
            "(`memory_analysis()`), where the residuals that are not arguments live beside "
            "other buffers. The gradients are compared on up to {sample} evenly spaced entries "
            "of each leaf."
        )
    return caption.format(constants=table.constants, sample=f"{GRADIENT_SAMPLE:,}")


@claims.states_nothing("says what this device reported about its memory, or that it reported none")
def peak_caption(results: Sequence[RematResult], platform: str) -> str:
    """What the peak memory column means here: a high-water mark, or nothing on a platform whose
    ``device.memory_stats()`` is None (the table then leaves the column out)."""
    if results[0].peak_bytes is None:
        return _(
            "Peak device memory: {platform} reports none (`device.memory_stats()` is None)."
        ).format(platform=platform)
    return _("Peak MiB is the device's high-water mark so far: it only ever grows.")


def residuals_heading(result: RematResult) -> str:
    """The heading over one variant's residuals: its name and how many it saves."""
    n = len(result.residuals)
    saved = ngettext("{n} saved residual", "{n} saved residuals", n).format(n=f"{n:,}")
    return _("{variant}: {saved}").format(variant=_(result.variant.label), saved=saved)

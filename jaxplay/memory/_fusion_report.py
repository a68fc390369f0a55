"""The op chain's results as the page shows them: the preset a chain is, the metrics, the tables
with their headers in the visitor's language, and the captions under the chart.

Why a module of its own: :mod:`jaxplay.memory._fusion` runs the chain and reads the program;
this shapes its :class:`~jaxplay.memory._fusion.ChainReport` into what the page places, every
number taken from it (``jaxplay`` has no pandas: a table is its cells and the labels of its rows,
which the page hands to ``pandas.DataFrame``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jaxplay.core import claims
from jaxplay.core.i18n import N_, _
from jaxplay.memory._fusion import (
    CHAIN_PRESETS,
    COMPARED,
    ChainReport,
    eager_vs_jit_rows,
    fusion_rows,
    recomputed_primitives,
)

#: The preset box's choice for a chain that is no preset (English, marked with ``N_``).
OWN_CHAIN = N_("(your own chain)")
#: The presets the box offers, then :data:`OWN_CHAIN`.
PRESET_CHOICES: tuple[str, ...] = (*CHAIN_PRESETS, OWN_CHAIN)
#: The chain the page opens with: the first preset's (the article's, completed).
DEFAULT_CHAIN: tuple[str, ...] = next(iter(CHAIN_PRESETS.values()))


def preset_of(ops: Sequence[str]) -> str:
    """The preset whose chain ``ops`` is, else :data:`OWN_CHAIN`. Why derived from the chain: a
    link carries the chain, so the preset it shows follows from it and a link reproduces both."""
    matching = [name for name, chain in CHAIN_PRESETS.items() if list(chain) == list(ops)]
    return matching[0] if matching else OWN_CHAIN


def preset_chain(name: str) -> list[str] | None:
    """The chain of the preset ``name``, for the chain box; None for :data:`OWN_CHAIN` (the
    visitor's chain stays as it is)."""
    return list(CHAIN_PRESETS[name]) if name in CHAIN_PRESETS else None


def chain_metrics(report: ChainReport) -> tuple[tuple[str, str], ...]:
    """The two short metrics above the table, as ``(label, value)``: jit's speedup and this
    device's copy bandwidth (the roof of the chart)."""
    return (
        (_("jit speedup"), f"{report.comparison.speedup:.2f}×"),
        (_("copy bandwidth here"), f"{report.reference.copy_bandwidth_gbps:.3g} GB/s"),
    )


def eager_vs_jit_table(report: ChainReport) -> tuple[dict[str, list[str]], list[str]]:
    """Eager against jit (:func:`~jaxplay.memory._fusion.eager_vs_jit_rows`): the cells by
    column, ``eager`` in the visitor's language (``jit`` is code), and the rows' labels
    (:data:`~jaxplay.memory._fusion.COMPARED`, translated): ``DataFrame(columns, index=labels)``."""
    columns = {
        (_("eager") if name == "eager" else name): cells
        for name, cells in eager_vs_jit_rows(report).items()
    }
    return columns, [_(row) for row in COMPARED]


def fusion_table(report: ChainReport) -> tuple[list[dict[str, Any]], str]:
    """What XLA fused, one row per kernel, the headers in the visitor's language, and the header
    of the column that labels the rows (the kernel): ``DataFrame(rows).set_index(index)``."""
    headers = {
        "kernel": _("kernel"),
        "kind": _("kind"),
        "JAX ops inside": _("JAX ops inside"),
        "HLO ops inside": _("HLO ops inside"),
        "output": _("output"),
        "source lines": _("source lines"),
    }
    rows = [{headers[k]: v for k, v in row.items()} for row in fusion_rows(report.fusions)]
    return rows, headers["kernel"]


@claims.states("memory.eager_dispatches_from_trace", "memory.fusion_bytes_are_xlas")
def bytes_caption(report: ChainReport) -> str:
    """Where the chart's bytes and bandwidths come from (Markdown), with how each was timed."""
    return _(
        "Eager bytes: every operation's inputs read and output written (an upper bound: one "
        "dispatched program can hold several); jit bytes: XLA's "
        "`cost_analysis()`; GB/s: bytes / blocked median time. Eager: {eager}. jit: {jit}. "
        "Roof: {roof}."
    ).format(
        eager=report.comparison.eager.describe(),
        jit=report.comparison.jitted.describe(),
        roof=report.reference.method_text,
    )


@claims.states_nothing("names the ops this program's kernels repeat, read from its own HLO")
def recomputed_caption(report: ChainReport) -> str | None:
    """The JAX ops found in more than one kernel, and why XLA does that (Markdown); None when
    every op is in one kernel only."""
    again = recomputed_primitives(report.fusions, report.lowered_ops)
    if not again:
        return None
    return _(
        "In more kernels than the program XLA was given has of them: {ops}. XLA recomputes "
        "these cheap ops where they are needed rather than write them to memory once and read "
        "them back."
    ).format(ops=_(", ").join(again))


@claims.states_nothing("says what the table's column is read from, the HLO's own metadata")
def named_caption(report: ChainReport) -> str | None:
    """What *JAX ops inside* is: the JAX operation each remaining HLO op came from (its
    ``op_name``). XLA simplifies too: in the cheap-ops chain ``sqrt(|y·y|)`` became ``|y|``, an
    ``abs`` named ``sqrt``, so an op can be listed under another's name, or not at all."""
    if not report.fusions:
        return None
    return _(
        "*JAX ops inside* names the JAX operation each HLO op that remains came from (its "
        "`op_name`): where XLA also simplified the chain, an op can be listed under another "
        "op's name, or not at all (the HLO ops beside it are what runs)."
    )


def unfused_caption(report: ChainReport) -> str | None:
    """The kernels outside any fusion, with their HLO opcodes (Markdown); None if there are none."""
    if not report.unfused:
        return None
    outside = _(", ").join(f"`{o.name}` ({o.opcode})" for o in report.unfused)
    return _("Outside any fusion: {kernels}").format(kernels=outside)


def fusion_captions(report: ChainReport) -> list[str]:
    """The captions under the fusion table, in order, those that have something to say."""
    found = (named_caption(report), recomputed_caption(report), unfused_caption(report))
    return [caption for caption in found if caption]

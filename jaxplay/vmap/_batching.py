"""The article's Python loop against ``vmap`` and ``jit(vmap)``, timed at each batch size.

Why: vmap's promise is speed without rewriting the function; the harness of
:mod:`jaxplay.core.timing` measures the article's loop, its ``vmap`` and ``jit(vmap)`` on the
article's arrays, after checking that the three give the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
import plotly.graph_objects as go

from jaxplay.article import (
    manual_batch_process,
    process_single_example,
)
from jaxplay.core import claims, roofline, timing
from jaxplay.core.figures import bar_ends, format_count, log_axis, seconds_axis, timing_line, traces
from jaxplay.core.i18n import N_, _, ngettext

MAX_TIMING_BATCH = 1024
TIMING_D_IN, TIMING_D_OUT = 784, 256
#: The methods' names: keys of the timings (English); the chart's legend shows them with ``_``.
METHODS = (N_("Python loop"), "vmap", "jit(vmap)")
#: The batch sizes the page offers, and those it starts with: from one example to the largest
#: timed, spaced by four so the chart's log axis shows where vmap overtakes the loop.
BATCH_SIZE_CHOICES = (1, 4, 16, 64, 256, MAX_TIMING_BATCH)
DEFAULT_BATCH_SIZES = (1, 16, 256)


@dataclass(frozen=True)
class BatchPoint:
    """The three ways of batching timed at one batch size.

    Attributes:
        batch: the batch size.
        timings: per-call time of each method of :data:`METHODS`.
        agree: the three gave the same numbers (checked before timing).
    """

    batch: int
    timings: dict[str, timing.Timing]
    agree: bool


@dataclass(frozen=True)
class BatchTiming:
    """Per-call times of the three ways of batching, for each batch size."""

    batch_sizes: tuple[int, ...]
    d_in: int
    d_out: int
    timings: dict[str, tuple[timing.Timing, ...]]
    device: str
    agree: bool
    #: The batch sizes at which the three did not give the same numbers.
    disagree_at: tuple[int, ...] = ()


def check_batch_sizes(batch_sizes: Sequence[int], limit: int = MAX_TIMING_BATCH) -> tuple[int, ...]:
    """Sorted distinct sizes, refusing any outside 1..``limit`` (the message names the limit)."""
    sizes = tuple(sorted({int(n) for n in batch_sizes}))
    if not sizes:
        raise ValueError(_("choose at least one batch size"))
    if sizes[0] < 1 or sizes[-1] > limit:
        message = _("batch sizes must be 1 to {limit} (got {got})")
        raise ValueError(message.format(limit=limit, got=sizes[-1]))
    return sizes


def time_batch(
    n: int, d_in: int = TIMING_D_IN, d_out: int = TIMING_D_OUT, budget_s: float = 0.3
) -> BatchPoint:
    """Time the article's loop, ``vmap`` and ``jit(vmap)`` at batch size ``n`` with ``measure``.

    The arrays are the article's (``X (n, 784)``, ``W (256, 784)``, ``b (256,)``, key 42). Before
    timing, the three results are checked to agree, so the chart compares equal work.

    Raises:
        ValueError: ``n`` outside 1..:data:`MAX_TIMING_BATCH`.
    """
    (n,) = check_batch_sizes([n])
    key = jax.random.key(42)
    params = (jax.random.normal(key, (d_out, d_in)), jax.random.normal(key, (d_out,)))
    batched = jax.vmap(process_single_example, in_axes=(0, None))
    methods: dict[str, Callable[..., Any]] = {
        METHODS[0]: manual_batch_process,
        METHODS[1]: batched,
        METHODS[2]: jax.jit(batched),
    }
    X = jax.random.normal(key, (n, d_in))
    outs = [np.asarray(fn(X, params)) for fn in methods.values()]
    agree = all(np.allclose(outs[0], o, rtol=1e-3, atol=1e-2) for o in outs[1:])
    timings = {
        name: timing.measure(fn, X, params, budget_s=budget_s, min_repeats=3)
        for name, fn in methods.items()
    }
    return BatchPoint(n, timings, bool(agree))


@claims.states_nothing("a progress box's titles")
def timing_labels(n: int) -> tuple[str, str]:
    """What a sweep of ``n`` batch sizes says while it runs and once it is done (in the visitor's
    language): the page times one size per cached call and shows the progress between them."""
    running = ngettext(
        "Timing the loop, vmap and jit(vmap) at {n} batch size…",
        "Timing the loop, vmap and jit(vmap) at {n} batch sizes…",
        n,
    ).format(n=f"{n:,}")
    done = ngettext("{n} batch size timed", "{n} batch sizes timed", n).format(n=f"{n:,}")
    return running, done


def point_label(batch: int) -> str:
    """The progress's name of one batch size being timed (in the visitor's language)."""
    return _("batch {n}").format(n=batch)


def combine(
    points: Sequence[BatchPoint], d_in: int = TIMING_D_IN, d_out: int = TIMING_D_OUT
) -> BatchTiming:
    """The points of one sweep (one per batch size, in order) as a :class:`BatchTiming`."""
    return BatchTiming(
        tuple(p.batch for p in points),
        d_in,
        d_out,
        {m: tuple(p.timings[m] for p in points) for m in METHODS},
        roofline.device_label(),
        all(p.agree for p in points),
        tuple(p.batch for p in points if not p.agree),
    )


def batching_figure(bt: BatchTiming) -> go.Figure:
    """Median time per batch (bars: quartiles) against batch size, one line per method."""
    fig = go.Figure()
    for name in METHODS:
        fig.add_trace(timing_line(bt.batch_sizes, bt.timings[name], _(name)))
    fig.update_layout(
        title=_(
            "process_single_example on a batch (D={d_in}, H={d_out}): median time per call, "
            "measured on {device}"
        ).format(d_in=bt.d_in, d_out=bt.d_out, device=bt.device),
        xaxis=log_axis(_("batch size"), bt.batch_sizes, format_count),
        yaxis=seconds_axis(_("time per call (median, bars: quartiles)"), bar_ends(*traces(fig))),
        margin={"t": 60, "b": 40},
    )
    return fig


@claims.states_nothing("reports this sweep's own check that the three gave the same numbers")
def batching_caption(bt: BatchTiming) -> str:
    """The chart's caption (Markdown): the sizes timed, and whether the three agreed there.

    Why it names the sizes: a disagreement is worth more than the times, so the caption then
    lists only the sizes where the three differed.
    """
    if bt.agree:
        caption = _(
            "D={d_in}, H={d_out}; the three agree at batch {sizes} (within `np.allclose`, "
            "rtol=1e-3, atol=1e-2). Each point is `timing.measure`: warmed up, blocked, median "
            "of repeated samples."
        )
    else:
        caption = _(
            "D={d_in}, H={d_out}; the three **differ** at batch {sizes}. Each point is "
            "`timing.measure`: warmed up, blocked, median of repeated samples."
        )
    sizes = bt.batch_sizes if bt.agree else bt.disagree_at
    return caption.format(d_in=bt.d_in, d_out=bt.d_out, sizes=_(", ").join(map(str, sizes)))

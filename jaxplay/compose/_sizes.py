"""The page's two timed sweeps as data: the sizes a visitor picks, the points to time, the
progress words, the figure and the sentences a finished sweep supports.

Why a table: ``jacfwd`` against ``jacrev`` and the three ways to H·v are measured the same way
(pick sizes, press Measure, time one cached point at a time with a progress bar, draw the sweep),
so the page has one way to do it and each tab names only what differs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import plotly.graph_objects as go

from jaxplay.core.i18n import N_

from . import _hvp, _jacobians

P = TypeVar("P")
S = TypeVar("S")


@dataclass(frozen=True)
class SizeSweep(Generic[P, S]):
    """A sweep over sizes the visitor picks, timed one point (``P``) at a time into ``S``.

    Attributes:
        label: the sizes' box label (marked for the catalog: a page shows ``_(label)``).
        choices: the sizes offered; default: those picked at first.
        steps: the points to time for the picked sizes, in order, each ``(name, size)``.
        step_label: the point being timed, for the progress bar.
        progress: the progress box's title while ``n`` sizes are timed, and once they are.
        collect: the timed points as one sweep.
        figure: the sweep's chart.
        sentences: what the sweep shows, in words (Markdown).
    """

    label: str
    choices: tuple[int, ...]
    default: tuple[int, ...]
    steps: Callable[[Sequence[int]], list[tuple[str, int]]]
    step_label: Callable[[tuple[str, int]], str]
    progress: Callable[[int], tuple[str, str]]
    collect: Callable[[Sequence[P]], S]
    figure: Callable[[S], go.Figure]
    sentences: Callable[[S], list[str]]


JACOBIAN_SIZES: SizeSweep[_jacobians.JacobianPoint, _jacobians.JacobianSweep] = SizeSweep(
    N_("Widths"),
    _jacobians.WIDTH_CHOICES,
    _jacobians.DEFAULT_WIDTHS,
    _jacobians.jacobian_steps,
    _jacobians.jacobian_step_label,
    _jacobians.jacobian_progress,
    _jacobians.jacobian_sweep,
    _jacobians.jacobian_figure,
    _jacobians.jacobian_verdicts,
)
HVP_SIZES: SizeSweep[_hvp.HvpPoint, _hvp.HvpSweep] = SizeSweep(
    N_("Dimensions n"),
    _hvp.DIM_CHOICES,
    _hvp.DEFAULT_DIMS,
    _hvp.hvp_steps,
    _hvp.hvp_step_label,
    _hvp.hvp_progress,
    _hvp.hvp_sweep,
    _hvp.hvp_figure,
    lambda sweep: [_hvp.hvp_summary(sweep)],
)

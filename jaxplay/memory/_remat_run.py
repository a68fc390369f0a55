"""A checkpointing run as the page drives it: which variants run, and what the page says before
and while they do.

Why a module: the variants are analysed one cached call at a time, the progress drawn between
them by the page; the words for each step, the button and the limit on what is run and timed
belong with the rule that no checkpoint always runs first (every other variant's gradient is
compared with it), not in the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jaxplay.core import claims
from jaxplay.core.i18n import _, ngettext
from jaxplay.memory._remat import VARIANTS, check_size, run_limit
from jaxplay.memory._run_cost import AUTO_RUN_S, run_cost, run_cost_note


def _variants(n: int) -> str:
    """``"3 variants"`` in the visitor's language."""
    return ngettext("{n} variant", "{n} variants", n).format(n=f"{n:,}")


def variants_to_run(chosen: Sequence[str]) -> tuple[str, ...]:
    """The variants a run analyses, in order, each once: no checkpoint first whatever the visitor
    chose (its gradient is the reference the others are compared with), then the others chosen."""
    return tuple(dict.fromkeys(("none", *chosen)))


@claims.states_nothing("our own limit on the sizes run and timed on this platform")
def compiled_only_note(size: int, platform: str) -> str:
    """Why a size above the platform's limit shows no times and no gradient check."""
    return _(
        "Size {size} is above {limit}, the largest run and timed on {platform}: compiled "
        "and analysed only (no times, no gradient check)."
    ).format(size=size, limit=run_limit(platform), platform=platform)


def run_label(n: int) -> str:
    """The button that runs ``n`` variants too heavy to run as the page opens."""
    return _("Run and time {variants}").format(variants=_variants(n))


def step_label(i: int, n: int, key: str) -> str:
    """The progress while the ``i``-th of ``n`` variants (``key`` of :data:`VARIANTS`) runs."""
    return _("Variant {i}/{n}: {variant}…").format(i=i, n=n, variant=_(VARIANTS[key].label))


def analysed_label(n: int, device: str) -> str:
    """The progress once the ``n`` variants are analysed on ``device``."""
    return _("{variants} analysed on {device}").format(variants=_variants(n), device=device)


@dataclass(frozen=True)
class RunPlan:
    """What a checkpointing run will do with the visitor's settings, decided before any runs.

    Attributes:
        problem: why the settings cannot be analysed (a size or depth outside the limits), as
            the page says it (Markdown), or None; nothing else is decided then.
        keys: the variants to analyse, no checkpoint first (:func:`variants_to_run`).
        run: whether the gradients are run and timed (else compiled and analysed only).
        compiled_only: the note saying they are not, or None when they are.
        settings: the model, variants, loop, size and depth: what a press of the button is for.
        wait: why the run waits for the visitor's button (predicted to take longer than
            :data:`~jaxplay.memory._run_cost.AUTO_RUN_S`), or None when it runs at once.
        button: the button's label.
    """

    problem: str | None
    keys: tuple[str, ...]
    run: bool
    compiled_only: str | None
    settings: tuple[str, tuple[str, ...], str, int, int]
    wait: str | None
    button: str


def plan_run(
    model_key: str, chosen: Sequence[str], loop: str, size: int, depth: int, platform: str
) -> RunPlan:
    """The run the visitor's settings ask for: which variants, whether timed, whether it waits.

    Why decided here, before anything runs: a link may ask for the largest size and depth, and
    heavy work waits for the visitor's button; a size above the platform's run limit is compiled
    and analysed only (nothing that size is allocated).
    """
    keys = variants_to_run(chosen)
    settings = (model_key, keys, loop, size, depth)
    reason = check_size(size, depth)
    problem = None if reason is None else _("**Not analysed:** {reason}").format(reason=reason)
    run = problem is None and size <= run_limit(platform)
    compiled_only = None if run or problem else compiled_only_note(size, platform)
    cost = run_cost(*settings) if run else 0.0
    wait = run_cost_note(cost, len(keys)) if cost > AUTO_RUN_S else None
    return RunPlan(problem, keys, run, compiled_only, settings, wait, run_label(len(keys)))

"""What running and timing the checkpointing variants will cost, predicted before anything runs.

Why a module of its own: a link can ask the memory page for its largest size and depth, and the
page used to run and time every variant as it opened (one such link held the measurement lock
13.6 s). Each variant's gradient is traced on abstract shapes and priced by
:mod:`jaxplay.core.budget`'s measured per-op costs; the page runs by itself only what fits in
:data:`AUTO_RUN_S` and waits for the visitor's button above it.
"""

from __future__ import annotations

import functools

import jax

from jaxplay.core import budget, claims
from jaxplay.core.i18n import ngettext
from jaxplay.memory._remat import MODELS, build_loss, check_size

#: Gradient calls one run-and-timed variant makes (:func:`analyse_variant`: the first call, a
#: warm-up, at least one autorange batch, at least five samples, and the gradient compared).
CALLS_PER_VARIANT = 10
#: Predicted seconds of work the page may run as it opens (the default view: about one and a
#: half); heavier settings, such as a link to the largest size and depth, wait for a button.
AUTO_RUN_S = 3.0


@functools.lru_cache(maxsize=64)
def variant_call_s(model_key: str, variant_key: str, loop: str, size: int, depth: int) -> float:
    """Predicted seconds of one call of a variant's gradient (:mod:`jaxplay.core.budget`'s
    measured per-op costs), traced on abstract shapes: nothing is allocated or run."""
    model = MODELS[model_key]
    loss = build_loss(model_key, variant_key, loop, depth)
    shapes = jax.eval_shape(lambda: model.inputs(size, depth))
    return budget.trace_footprint(jax.grad(loss, argnums=model.argnums), *shapes).seconds


def run_cost(
    model_key: str, variant_keys: tuple[str, ...], loop: str, size: int, depth: int
) -> float:
    """Predicted seconds to run and time every variant in ``variant_keys`` (before any runs).

    Raises:
        ValueError: size or depth outside the limits (:func:`check_size`).
    """
    problem = check_size(size, depth)
    if problem:
        raise ValueError(problem)
    calls = sum(variant_call_s(model_key, k, loop, size, depth) for k in variant_keys)
    return CALLS_PER_VARIANT * calls


@claims.states_nothing("our own prediction of what running costs")
def run_cost_note(seconds: float, variants: int) -> str:
    """Why the page waits for the button before running (Markdown)."""
    return ngettext(
        "Running and timing {n} variant at these settings is predicted to take about "
        "**{duration}** of the shared machine (more than the {limit} s the page runs by itself "
        "as it opens): press the button to run them.",
        "Running and timing {n} variants at these settings is predicted to take about "
        "**{duration}** of the shared machine (more than the {limit} s the page runs by itself "
        "as it opens): press the button to run them.",
        variants,
    ).format(n=f"{variants:,}", duration=budget.format_duration(seconds), limit=f"{AUTO_RUN_S:g}")

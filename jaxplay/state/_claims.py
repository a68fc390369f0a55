"""What the Stateful computations page states about JAX, each with a check that asks JAX.

Each check trains the page's own loop for a few steps (the smallest sizes the page offers, its
default optimizer) and compares with what JAX did: the programs the jitted step holds
(:func:`jaxplay.core.jax_private.cache_size`), the losses it returned, and the exception JAX
raises when the trained parameters are used afterwards.
"""

from __future__ import annotations

from jaxplay.core import claims
from jaxplay.core.i18n import N_
from jaxplay.state import _runs

Verdict = claims.Verdict

#: A short run: enough steps to see whether the loss moves, cheap enough to check at start-up.
SMALL = _runs.Setup(seed=0, steps=3, hidden=2, optimizer="adam", lr=0.03)


def _observed(run: _runs.TrainingRun) -> str:
    after = run.after.error_type or f"loss {run.after.value}"
    return (
        f"{run.loop}: {run.compiles} program(s), {run.distinct_losses} distinct losses over "
        f"{len(run.losses)} steps, afterwards {after}"
    )


@claims.claim(
    "state.threaded_learns",
    N_(
        "With the state threaded through the jitted step, jit compiles the step once and every "
        "step computes on the current state (the loss changes every step)."
    ),
)
def _threaded(_: None) -> Verdict:
    run = _runs.train("threaded", SMALL)
    holds = (
        run.compiles in (1, None)
        and run.distinct_losses == SMALL.steps
        and run.finite
        and run.after.ok
    )
    return Verdict(holds, _observed(run))


@claims.claim(
    "state.globals_baked_in",
    N_(
        "A jitted step that reads its state from globals reads them once, while tracing: it "
        "compiles once and returns the same loss every step."
    ),
)
def _globals(_: None) -> Verdict:
    run = _runs.train("globals", SMALL)
    holds = run.compiles in (1, None) and run.distinct_losses == 1 and run.after.ok
    return Verdict(holds, _observed(run))


@claims.claim(
    "state.self_keeps_tracers",
    N_(
        "A jitted method that assigns to self stores tracers there on its first call and never "
        "writes again: the loss stays put, and using self.params afterwards raises "
        "UnexpectedTracerError."
    ),
)
def _self(_: None) -> Verdict:
    run = _runs.train("self", SMALL)
    holds = (
        run.compiles in (1, None)
        and run.distinct_losses == 1
        and run.after.error_type == "UnexpectedTracerError"
    )
    return Verdict(holds, _observed(run))

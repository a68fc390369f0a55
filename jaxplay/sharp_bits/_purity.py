"""Pure functions and hidden state under ``jit``: Python runs while tracing, not on each call.

``jit`` runs a function's Python once per new input signature, with tracers, and records the array
operations; later calls run that record. A Python side effect (appending to a list) therefore
happens at trace time only, and a global the function reads is read once and baked into the
program as a constant. The server cannot use real module globals (every visitor shares them), so
each function keeps its "global" in a local dict of its own: the behaviour is the same, and the
Code Lab snippet is the same code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp

from jaxplay.core import capture, claims, i18n, words
from jaxplay.core.i18n import N_, ngettext
from jaxplay.sharp_bits._case import Case, Param, Variant

# Bound, not imported: the demo functions below loop with ``for _ in ...`` (their code is shown
# and run as written), which would shadow an imported ``_`` (ruff F402); locally it is harmless.
_ = i18n._


def append_under_jit(calls):
    log = []

    def f(x):
        log.append("ran")  # a Python side effect
        return x * 2

    for i in range(calls):
        f(jnp.float32(i))
    eager = len(log)
    log.clear()
    jitted = jax.jit(f)
    for i in range(calls):
        jitted(jnp.float32(i))
    return {"eager appends": eager, "jit appends": len(log)}


def read_a_global(calls):
    state = {"scale": 1.0}  # stands for a module-level global

    @jax.jit
    def f(x):
        return x * state["scale"]

    scales, outputs = [], []
    for _ in range(calls):
        scales.append(state["scale"])
        outputs.append(float(f(jnp.float32(1.0))))
        state["scale"] += 1.0  # changed between calls
    return {"scale at each call": scales, "f(1.0) at each call": outputs}


def pass_it_in(calls):
    @jax.jit
    def f(x, scale):
        return x * scale

    scales, outputs = [], []
    scale = 1.0
    for _ in range(calls):
        scales.append(scale)
        outputs.append(float(f(jnp.float32(1.0), scale)))
        scale += 1.0
    return {"scale at each call": scales, "f(1.0, scale) at each call": outputs}


@claims.states("sharp_bits.side_effect_at_trace", "sharp_bits.global_baked_in")
def explain(variant: str, params: Mapping[str, Any], outcome: capture.Outcome, value: Any) -> str:
    calls = params["calls"]
    if value is None:
        return _("It raised {error}.").format(error=outcome.error_type)
    if variant == "side-effect":
        eager, jitted = value["eager appends"], value["jit appends"]
        sentence = _(
            "Called {calls} each way: the `append` ran {eager} eagerly and {jitted} under `jit`"
        ).format(calls=words.times(calls), eager=words.times(eager), jitted=words.times(jitted))
        return sentence + (
            _(": only while `jit` traced `f`. The compiled program has no Python in it.")
            if jitted < eager
            else _(".")
        )
    scales, outputs = list(value.values())
    distinct = len(set(outputs))
    head = _(
        "The scale went {first} → {last} over {calls}, and `f` returned {values} ({outputs})"
    ).format(
        first=f"{scales[0]:g}",
        last=f"{scales[-1]:g}",
        calls=ngettext("{n} call", "{n} calls", calls).format(n=calls),
        values=ngettext("{n} different value", "{n} different values", distinct).format(n=distinct),
        outputs=", ".join(f"{o:g}" for o in outputs),
    )
    if calls == 1:
        return head + _(": with one call nothing has changed yet; add calls.")
    if distinct == 1:
        return head + _(
            ": `jit` read the global once, while tracing, and baked it in as a constant."
        )
    return head + _(": the scale is an argument, traced, so every call sees its current value.")


CASE = Case(
    key="purity",
    title=N_("Pure functions"),
    intro=N_(
        "`jit` runs your Python **once** per new input signature (shapes, dtypes, static "
        "values), with tracers, and compiles the array operations it saw. Anything else the "
        "Python does (a side effect, reading a global) happens at trace time only. Functions "
        "under `jit` should be **pure**: everything in through arguments, everything out "
        "through the return value."
    ),
    params=(Param("calls", N_("Calls"), 3, 1, 8),),
    variants=(
        Variant(
            "side-effect",
            N_("A side effect (list.append)"),
            append_under_jit,
            note=N_("The compiled program is array operations only; the `append` is not in it."),
        ),
        Variant(
            "global",
            N_("Reading a global that changes"),
            read_a_global,
            note=N_(
                "The global is not an argument, so `jit` has no reason to trace again when it "
                "changes: the old value stays baked into the program."
            ),
        ),
        Variant(
            "argument",
            N_("Pass the state in (pure)"),
            pass_it_in,
            note=N_(
                "The fix: pass what changes as an argument. A new value of the same type "
                "reuses the compiled program."
            ),
        ),
    ),
    explain=explain,
)

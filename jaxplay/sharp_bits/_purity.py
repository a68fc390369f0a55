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

from jaxplay.core import capture, claims, words
from jaxplay.sharp_bits._case import Case, Param, Variant


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
        return f"It raised {outcome.error_type}."
    if variant == "side-effect":
        eager, jitted = value["eager appends"], value["jit appends"]
        return (
            f"Called {words.times(calls)} each way: the `append` ran {words.times(eager)} "
            f"eagerly and {words.times(jitted)} under `jit`"
            + (
                ": only while `jit` traced `f`. The compiled program has no Python in it."
                if jitted < eager
                else "."
            )
        )
    scales, outputs = list(value.values())
    distinct = len(set(outputs))
    head = (
        f"The scale went {scales[0]:g} → {scales[-1]:g} over {calls} call"
        f"{'s' * (calls != 1)}, and `f` returned {distinct} different value"
        f"{'s' * (distinct != 1)} ({', '.join(f'{o:g}' for o in outputs)})"
    )
    if calls == 1:
        return head + ": with one call nothing has changed yet; add calls."
    if distinct == 1:
        return head + ": `jit` read the global once, while tracing, and baked it in as a constant."
    return head + ": the scale is an argument, traced, so every call sees its current value."


CASE = Case(
    key="purity",
    title="Pure functions",
    intro=(
        "`jit` runs your Python **once** per new input signature (shapes, dtypes, static "
        "values), with tracers, and compiles the array operations it saw. Anything else the "
        "Python does (a side effect, reading a global) happens at trace time only. Functions "
        "under `jit` should be **pure**: everything in through arguments, everything out "
        "through the return value."
    ),
    params=(Param("calls", "Calls", 3, 1, 8),),
    variants=(
        Variant(
            "side-effect",
            "A side effect (list.append)",
            append_under_jit,
            note="The compiled program is array operations only; the `append` is not in it.",
        ),
        Variant(
            "global",
            "Reading a global that changes",
            read_a_global,
            note="The global is not an argument, so `jit` has no reason to trace again when it "
            "changes: the old value stays baked into the program.",
        ),
        Variant(
            "argument",
            "Pass the state in (pure)",
            pass_it_in,
            note="The fix: pass what changes as an argument. A new value of the same type "
            "reuses the compiled program.",
        ),
    ),
    explain=explain,
)

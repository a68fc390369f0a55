"""``print`` vs ``jax.debug.print`` under ``jit`` and ``vmap``: what each prints, and how often.

Python's ``print`` runs when Python runs: every call eagerly, but only while tracing under a
transform, and then it prints a tracer, not a value. ``jax.debug.print`` is part of the computation:
it prints the values on every call, one line per batch element under ``vmap``. The counts on the
page are the lines each really printed (captured by :mod:`jaxplay.core.capture`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp

from jaxplay.core import capture, claims, i18n
from jaxplay.core.i18n import N_, ngettext
from jaxplay.sharp_bits._case import Case, Param, Variant

# Bound, not imported: the demo functions below loop with ``for _ in ...`` (their code is shown
# and run as written), which would shadow an imported ``_`` (ruff F402); locally it is harmless.
_ = i18n._


def show_both(x):
    print("print:", x)
    jax.debug.print("debug.print: {}", x)
    return x * 2


def call_eagerly(calls, batch):
    xs = jnp.arange(float(batch))
    for _ in range(calls):
        show_both(xs)


def call_jitted(calls, batch):
    f = jax.jit(show_both)
    xs = jnp.arange(float(batch))
    for _ in range(calls):
        f(xs)


def call_vmapped(calls, batch):
    f = jax.vmap(show_both)
    xs = jnp.arange(float(batch))
    for _ in range(calls):
        f(xs)


def call_jit_of_vmap(calls, batch):
    f = jax.jit(jax.vmap(show_both))
    xs = jnp.arange(float(batch))
    for _ in range(calls):
        f(xs)


def count_lines(printed: str) -> tuple[int, int, int]:
    """Lines from ``print``, lines from ``jax.debug.print``, and ``print`` lines showing a
    tracer."""
    lines = printed.splitlines()
    plain = [line for line in lines if line.startswith("print:")]
    debug = [line for line in lines if line.startswith("debug.print:")]
    return len(plain), len(debug), sum("Tracer" in line for line in plain)


@claims.states(
    "sharp_bits.print_at_trace",
    "sharp_bits.debug_print_every_call",
    "sharp_bits.jit_reuses_trace",
)
def explain(variant: str, params: Mapping[str, Any], outcome: capture.Outcome, value: Any) -> str:
    calls, batch = params["calls"], params["batch"]
    plain, debug, tracers = count_lines(outcome.stdout)
    sentence = _(
        "Over {calls} on {values}: `print` printed {lines}, `jax.debug.print` {debug}."
    ).format(
        calls=ngettext("{n} call", "{n} calls", calls).format(n=calls),
        values=ngettext("{n} value", "{n} values", batch).format(n=batch),
        lines=ngettext("{n} line", "{n} lines", plain).format(n=plain),
        debug=debug,
    )
    if tracers:
        sentence += (
            _(
                " All of the `print` lines show a tracer, not numbers: `print` ran while the "
                "transform traced `show_both`"
            )
            if tracers == plain
            else _(
                " {n} of the `print` lines show a tracer, not numbers: `print` ran while the "
                "transform traced `show_both`"
            ).format(n=tracers)
        ) + (
            _(", once for all calls (jit reuses the trace).")
            if plain < calls
            # One call cannot tell once per trace from once per call.
            else _(", once per call.")
            if calls > 1
            else _(".")
        )
    elif plain == 0:
        sentence += claims.qualify(
            "sharp_bits.jit_reuses_trace",
            _(
                " `print` printed nothing: this server had already traced `show_both` for these "
                "shapes (an earlier run), and `jit` reuses a trace across `jax.jit` wrappers of "
                "the same function. In a fresh process it prints once, while tracing."
            ),
        )
    else:
        sentence += _(" Eagerly both run on every call and both print the values.")
    if debug == calls * batch and batch > 1:
        sentence += _(
            " `jax.debug.print` printed {n} lines per call, one per batch element."
        ).format(n=batch)
    elif debug == calls:
        sentence += _(" `jax.debug.print` printed once per call.")
    return sentence


PARAMS = (Param("calls", N_("Calls"), 2, 1, 4), Param("batch", N_("Batch size"), 3, 1, 5))

CASE = Case(
    key="printing",
    title=N_("print vs debug.print"),
    intro=N_(
        "Under a transform, Python's `print` runs only while JAX traces the function, and "
        "prints a tracer. `jax.debug.print` is part of the compiled computation: it prints "
        "the values, on every call."
    ),
    params=PARAMS,
    variants=(
        Variant("eager", N_("eager"), call_eagerly, (show_both,)),
        Variant("jit", "jit", call_jitted, (show_both,)),
        Variant("vmap", "vmap", call_vmapped, (show_both,)),
        Variant(
            "jit_vmap",
            "jit(vmap)",
            call_jit_of_vmap,
            (show_both,),
            note=N_("`vmap` alone traces on every call; under `jit` the trace is cached."),
        ),
    ),
    explain=explain,
)

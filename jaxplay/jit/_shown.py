"""What the jit page shows beside a measurement: the code that made it, with its values filled
in, and who measured it when.

Why apart from :mod:`jaxplay.jit._measurement`: that module measures; this one only words and
writes out what it did, from the measurement's own constants, so a changed budget changes the
code shown.
"""

from __future__ import annotations

import time

from jaxplay.core import claims, timing
from jaxplay.core.i18n import _
from jaxplay.jit._measurement import (
    ARTICLE_LOOPS,
    COMPARE_BUDGET_S,
    FIRST_CALL_EXECUTABLES,
    PROFILE_BUDGET_S,
    Measurement,
    Race,
)
from jaxplay.jit._shared import SharedResult
from jaxplay.jit._workloads import PRESETS, Workload


def _effective(budget_s: float) -> str:
    """A sampling budget as this process spends it: ``JAXPLAY_MEASURE_SCALE`` multiplies every
    budget inside :mod:`timing`, so the code shown names the product, the call that reproduces
    the measurement in a Python where the scale is 1."""
    return f"{budget_s * timing.BUDGET_SCALE:g}"


def _input_lines(workload: Workload) -> tuple[list[str], str]:
    """The lines that draw ``workload``'s inputs (as :func:`jaxplay.jit.inputs` does), and the
    names of the arguments they make."""
    shape = (workload.rows, workload.cols)
    dtype = f"jnp.{workload.dtype}"
    lines = [
        "rng = np.random.default_rng(0)",
        f"x = jnp.asarray(rng.uniform(0.5, 1.5, {shape}), {dtype})",
    ]
    if workload.preset != "layer":
        return lines, "x"
    c = workload.cols
    lines += [
        f"W = jnp.asarray(rng.uniform(-1/√{c}, 1/√{c}, ({c}, {c})), {dtype})",
        f"b = jnp.asarray(rng.uniform(-0.1, 0.1, ({c},)), {dtype})",
    ]
    return lines, "x, W, b"


@claims.states_nothing("code that measures: not a statement")
def _calls(workload: Workload, calls: list[str]) -> str:
    """The input lines, then ``calls`` (each with ``{f}`` and ``{args}`` to fill in)."""
    preset = PRESETS[workload.preset]
    name = preset.function.__name__ if preset.function is not None else "f"
    lines, args = _input_lines(workload)
    lines.append(
        f"timing.block([{args}])  # copied to the device asynchronously: wait before timing"
    )
    lines += [call.format(f=name, args=args) for call in calls]
    return "\n".join(lines)


@claims.states_nothing("code that measures: not a statement")
def timing_code(workload: Workload, executables: int = FIRST_CALL_EXECUTABLES) -> str:
    """The calls :func:`measure` made for ``workload``, with its values filled in:
    ``executables`` is how many fresh executables the first-call anatomy timed (1 where a steady
    call takes 50 ms or more; 0 where none was timed, and the line is left out)."""
    budget = _effective(PROFILE_BUDGET_S)
    calls = [f"profile = timing.profile_jit({{f}}, {{args}}, budget_s={budget})"]
    if executables:
        calls.append(f"anatomy = first_call_anatomy({{f}}, {{args}}, executables={executables})")
    return _calls(workload, calls)


@claims.states_nothing("code that measures: not a statement")
def race_code(workload: Workload) -> str:
    """The calls :func:`race` made for ``workload``, with its values filled in."""
    budget = _effective(COMPARE_BUDGET_S)
    return _calls(
        workload,
        [
            f"comparison = timing.compare_jit({{f}}, {{args}}, budget_s={budget})",
            f"article = article_timing({{f}}, {{args}}, loops={ARTICLE_LOOPS})",
        ],
    )


@claims.states_nothing("who measured what and when: our own record")
def provenance(
    result: SharedResult[Measurement] | SharedResult[Race],
    viewer: str | None = None,
    now: float | None = None,
) -> str:
    """Where the shown measurement comes from, for a caption (every figure from ``result``).

    ``viewer`` is the visitor looking at it: "for you" when they started the measurement.
    """
    ago = max(0.0, (time.time() if now is None else now) - result.finished)
    if ago < 120:
        when = _("{n} s ago").format(n=f"{ago:.0f}")
    else:
        when = _("{n} min ago").format(n=f"{ago / 60:.0f}")
    if viewer is not None and result.visitor == viewer:
        owner = _("you")
    elif result.owner == "a visitor":
        owner = _("another visitor")
    else:
        owner = _(result.owner)  # one of the owners marked with N_ (page, start-up)
    m = result.value
    again = (
        ""
        if result.number <= 1
        else _(" (measurement {n} of these settings)").format(n=result.number)
    )
    return _(
        "Measured {when} for {owner} on {device}, in {seconds} s{again}. Everyone who opens "
        "these settings sees this measurement; **Measure again** measures anew, and what it "
        "measures replaces this one for everyone."
    ).format(when=when, owner=owner, device=m.device, seconds=f"{m.seconds:.1f}", again=again)

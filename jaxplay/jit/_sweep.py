"""The jit page's size sweep: eager against jit, compile included, from one row to the workload's.

Why a module of its own: the sweep's verdict names a winner and a crossing only where the run
can tell the two apart beyond their spreads (:func:`ahead`), and that rule, the crossings read
off the curves and the break-even count belong together, apart from the workloads they time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from jaxplay.core import claims, compilation, measure_lock, timing
from jaxplay.core.i18n import _, ngettext
from jaxplay.jit._workloads import Workload, check, function_of, inputs


@dataclass(frozen=True)
class SweepPoint:
    """Eager and jit at one size.

    Attributes:
        rows: rows of ``x`` (columns are the workload's).
        elements: elements of ``x``.
        comparison: interleaved eager/jit steady-state timings.
        compile_s: trace + lower + compile of a fresh jit at this size.
    """

    rows: int
    elements: int
    comparison: timing.JitComparison
    compile_s: float

    def amortized_jit_s(self, calls: int) -> float:
        """Per-call time of jit over ``calls`` calls when the compile is paid in the first."""
        return (self.compile_s + calls * self.comparison.jitted.median) / calls


def sweep_rows(workload: Workload, points: int = 7) -> tuple[int, ...]:
    """Rows from 1 to the workload's, evenly spaced on a log scale (distinct, ascending)."""
    top = max(1, workload.rows)
    values = np.unique(np.round(np.geomspace(1, top, num=max(2, points))).astype(int))
    return tuple(int(v) for v in values)


def sweep_point(workload: Workload, budget_s: float = 0.1) -> SweepPoint:
    """Measure one size of the sweep (eager vs jit interleaved, and a fresh compile)."""
    check(workload)
    fn = function_of(workload)
    args = inputs(workload)
    with measure_lock.exclusive():
        aot = compilation.compile_aot(fn, *args)
        comparison = timing.compare_jit(fn, *args, budget_s=budget_s, warmup=1, min_repeats=3)
    return SweepPoint(
        workload.rows, workload.elements, comparison, aot.trace_s + aot.lower_s + aot.compile_s
    )


def _log_crossings(xs: list[float], diff: list[float]) -> list[tuple[float, bool]]:
    """Every x where ``diff`` changes sign, interpolated on log-log axes, and whether it turns
    negative there."""
    found = []
    for i in range(1, len(xs)):
        a, b = diff[i - 1], diff[i]
        if (a < 0) != (b < 0):
            t = a / (a - b)
            x = math.exp(math.log(xs[i - 1]) + t * (math.log(xs[i]) - math.log(xs[i - 1])))
            found.append((float(x), b < 0))
    return found


def crossings(
    points: list[SweepPoint] | tuple[SweepPoint, ...], calls: int
) -> list[tuple[float, bool]]:
    """Every size (elements) where jit, compile included and spread over ``calls`` calls, and
    eager change places, smallest first, each with whether jit is ahead above it.

    Per call in steady state jit is rarely slower than eager; the price is the compile. Over a
    fixed number of calls (the article's loop makes 10) eager tends to win at small sizes, where
    the compile cannot be earned back, and jit at large ones; a measured run may cross more than
    once, or the other way.
    """
    ordered = sorted(points, key=lambda p: p.elements)
    xs = [float(p.elements) for p in ordered]
    diff = [
        math.log(p.amortized_jit_s(calls)) - math.log(p.comparison.eager.median) for p in ordered
    ]
    return _log_crossings(xs, diff)


def crossover(points: list[SweepPoint] | tuple[SweepPoint, ...], calls: int) -> float | None:
    """Elements where jit, compile included, overtakes eager for good: the one crossing of the
    sweep, when there is one, jit is ahead above it and every size is clearly one side's
    (:func:`ahead`); ``None`` otherwise."""
    found = crossings(points, calls)
    clear = all(ahead(p, calls) is not None for p in points)
    return found[0][0] if clear and len(found) == 1 and found[0][1] else None


def ahead(point: SweepPoint, calls: int) -> str | None:
    """Which is clearly faster at this size over ``calls`` calls, jit's compile included:
    ``"jit"`` where jit's third quartile plus its compile per call is below eager's first
    quartile, ``"eager"`` the other way round, ``None`` where the two overlap (a winner named
    from medians alone flips between runs)."""
    eager, jitted = point.comparison.eager, point.comparison.jitted
    per_call = point.compile_s / calls
    if per_call + jitted.q3 < eager.q1:
        return "jit"
    if eager.q3 < per_call + jitted.q1:
        return "eager"
    return None


def about_size(x: float) -> str:
    """A size read off the interpolated curves, to the three figures it deserves: 46,100."""
    digits = 2 - math.floor(math.log10(x)) if x > 0 else 0
    return f"{round(x, digits):,.0f}"


def break_even_calls(point: SweepPoint) -> float | None:
    """Calls after which jit's compile has paid for itself at this size; ``None`` where jit is
    not clearly faster per call (their quartile ranges overlap, or eager is faster): a saving
    within the noise would be divided into the compile as if it were sure."""
    eager, jitted = point.comparison.eager, point.comparison.jitted
    if not jitted.clearly_faster_than(eager):
        return None
    return point.compile_s / (eager.median - jitted.median)


# --- the page's explanations (claims the tests check) -------------------------------------------


@claims.states("jit.eager_compiles_per_new_shape")
def sweep_verdict(points: list[SweepPoint] | tuple[SweepPoint, ...], calls: int) -> str:
    """Where jit, compile included, starts to beat eager, and when it pays at the largest size.

    A winner is named only where the two are apart beyond their spreads (:func:`ahead`), and a
    crossing only where every size is: elsewhere the sentence says how many sizes the run
    could not tell apart, not a size read off medians."""
    if not points:
        return _("Nothing was swept.")
    over = ngettext("Over {calls} call", "Over {calls} calls", calls).format(calls=f"{calls:,}")
    sides = [ahead(p, calls) for p in points]
    found = crossings(points, calls)
    if sides.count(None) == len(sides):
        verdict = _(
            "{over}, jit with its compile and eager overlap in their quartile ranges at every "
            "size: this run does not say which is faster."
        ).format(over=over)
    elif None in sides:
        verdict = _(
            "{over}, jit with its compile is clearly ahead at {jit} and eager at {eager} of the "
            "{n} sizes; at the other {level} their quartile ranges overlap, so this run does not "
            "say where one overtakes the other."
        ).format(
            over=over,
            jit=sides.count("jit"),
            eager=sides.count("eager"),
            n=len(points),
            level=sides.count(None),
        )
    elif len(found) == 1:
        verdict = (
            _(
                "{over}, jit with its compile overtakes eager at about **{elements} elements**: "
                "below that the compile is not earned back, above it jit wins."
            )
            if found[0][1]
            else _(
                "{over}, eager overtakes jit with its compile at about **{elements} elements**: "
                "below that jit wins, above it eager does."
            )
        ).format(over=over, elements=about_size(found[0][0]))
    elif found:
        verdict = _(
            "{over} the curves cross {n} times, at about {elements} elements: neither wins over "
            "the whole range."
        ).format(over=over, n=len(found), elements=_(", ").join(about_size(x) for x, _up in found))
    elif len(points) == 1:
        verdict = (
            _("{over}, jit with its compile wins at this size.")
            if sides[0] == "jit"
            else _("{over}, eager wins at this size.")
        ).format(over=over)
    else:
        verdict = (
            _(
                "{over} the curves do not cross in this range: jit wins at every size. Try "
                "fewer calls or a wider range of sizes."
            )
            if sides[0] == "jit"
            else _(
                "{over} the curves do not cross in this range: eager wins at every size. Try "
                "more calls or a wider range of sizes."
            )
        ).format(over=over)
    # What the comparison leaves out, said every time: it is jit's compile against a warm eager.
    verdict += claims.qualify(
        "jit.eager_compiles_per_new_shape",
        _(
            " Eager is timed warm: eager JAX also compiles a small program for each call it "
            "dispatches (one per `jnp` function; a library function that is not jitted, such as "
            "`jax.nn.gelu`, dispatches each of its operations) the first time it meets a shape "
            "(kept after), a cost this comparison leaves out."
        ),
    )
    largest = max(points, key=lambda p: p.elements)
    needed = break_even_calls(largest)
    if needed is None:
        eager, jitted = largest.comparison.eager, largest.comparison.jitted
        return verdict + (
            _(" At {elements} elements jit is slower per call: its compile never pays for itself.")
            if eager.clearly_faster_than(jitted)
            else _(
                " At {elements} elements jit and eager are not clearly apart per call (their "
                "quartile ranges overlap): no number of calls is sure to pay for the compile."
            )
        ).format(elements=f"{largest.elements:,}")
    n = math.ceil(needed)
    return verdict + ngettext(
        " At {elements} elements the compile pays for itself after about **{n} call**.",
        " At {elements} elements the compile pays for itself after about **{n} calls**.",
        n,
    ).format(elements=f"{largest.elements:,}", n=f"{n:,}")

"""Where the grad page differentiates: its presets in the server, a typed formula in a worker.

Why (the hardening rule, chosen for this page): no visitor input may hold the server's GIL for
more than about a second, and the cost of differentiating a typed formula cannot be known before
it starts. The formula language bounds the formula's *size* (at most 200 parts, small integers,
no big lists), but not what nested ``grad`` makes of it: ``tanh`` nested 45 deep, 92 characters,
took over 300 s to compile to order 4 (15 deep: 82 s), and a static budget of nodes × order that
refused it would also refuse formulas that are fine, or pass others XLA chokes on. So:

- a typed formula is first checked here, cheaply: parsed (bounded by the language's limits) and
  traced once at a number (``jax.eval_shape``, no compile), so a bad formula gets its error with
  the caret at once;
- then it is differentiated in a fresh sandboxed worker (:func:`jaxplay.sandbox.call` with
  ``isolate=True``) under a run's deadline and memory limit; the warm pool answers in ~15 ms, so
  isolation costs the worker's compile only, and the server thread just waits (no GIL held). A
  run past its deadline ends as ``sandbox.TaskFailed`` (kind ``timeout``), which the page shows;
- the presets (:data:`PRESETS`, at most order 4) are a fixed, known set whose cost is measured
  (well under a second each), so they are computed in the server and cached for every visitor.
"""

from __future__ import annotations

from dataclasses import dataclass

from jaxplay import sandbox
from jaxplay.grad._checks import (
    GradCheck,
    ModesAtPoint,
    OrderCheck,
    check_derivatives,
    check_point,
    modes_at_point,
)
from jaxplay.grad._curves import (
    PRESETS,
    DerivativeCurves,
    Kink,
    check_grid,
    check_order,
    derivative_curves,
    scalar_function,
)


def is_preset(source: str) -> bool:
    """Whether ``source`` is one of the page's preset formulas (computed in the server)."""
    return source in PRESETS.values()


@dataclass(frozen=True)
class PointChecks:
    """The Check and modes tabs' numbers at x₀: autodiff vs finite differences, four ways."""

    check: GradCheck
    modes: ModesAtPoint


def point_checks(source: str, x0: float, order: int) -> PointChecks:
    """:func:`check_derivatives` and :func:`modes_at_point` at ``x0``, in one call (one worker)."""
    return PointChecks(check_derivatives(source, x0, order), modes_at_point(source, x0))


def curves(
    source: str, order: int, lo: float, hi: float, points: int, timeout_s: float | None = None
) -> DerivativeCurves:
    """:func:`derivative_curves`, checked here first, computed where its cost allows.

    Raises:
        ExprError: the formula is not allowed or not a scalar function (found here, at once).
        ValueError: order, range or number of points outside the limits.
        sandbox.TaskFailed: a typed formula's worker ran past ``timeout_s`` (default: the run
            timeout), out of memory, was refused, or the differentiation raised.
    """
    check_order(order)
    check_grid(lo, hi, points)
    scalar_function(source)
    return sandbox.call(
        derivative_curves,
        isolate=not is_preset(source),
        returns=(DerivativeCurves, Kink),
        timeout_s=timeout_s,
        source=source,
        order=order,
        lo=lo,
        hi=hi,
        points=points,
    )


def checks(source: str, x0: float, order: int, timeout_s: float | None = None) -> PointChecks:
    """:func:`point_checks`, checked here first, computed where its cost allows (see
    :func:`curves`; the same errors)."""
    check_order(order, low=1)
    check_point(x0)
    scalar_function(source)
    return sandbox.call(
        point_checks,
        isolate=not is_preset(source),
        returns=(PointChecks, GradCheck, OrderCheck, ModesAtPoint),
        timeout_s=timeout_s,
        source=source,
        x0=x0,
        order=order,
    )

"""``custom_jvp`` beside the article's ``custom_vjp``: the same rule, and what each allows.

Why: the article shows ``custom_vjp``, a rule for reverse mode only. JAX's other way to give a
derivative, ``custom_jvp``, states the rule in forward mode; reverse mode then comes for free
(JAX transposes the linear tangent rule), and so do ``jvp``, ``jacfwd``, ``hessian`` and
``linearize``. A ``custom_vjp`` function has no forward-mode rule: every forward-mode transform
of it raises ``TypeError: can't apply forward-mode autodiff (jvp) to a custom_vjp function``.
Here both are run through the same transforms at a point, and each cell is the value or the
exception JAX really raised.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from jaxplay.article import my_special_op
from jaxplay.core import capture
from jaxplay.core.capture import Outcome
from jaxplay.core.i18n import _
from jaxplay.grad._curves import MAX_ABS_X


@jax.custom_jvp
def special_op_jvp(x):
    """The article's ``my_special_op`` forward, with its derivative given as a JVP rule."""
    return jnp.where(x > 0, x**2, jnp.sin(x))


@special_op_jvp.defjvp
def special_op_jvp_rule(primals, tangents):
    """Forward mode: the output and its tangent, ``f′(x) · t`` (linear in ``t``)."""
    (x,), (t,) = primals, tangents
    return special_op_jvp(x), jnp.where(x > 0, 2 * x, jnp.cos(x)) * t


#: The transforms tried on both functions: (the call as the page shows it, how to make it).
TRANSFORM_CALLS: tuple[tuple[str, Callable[[Callable[..., Any], Any], Any]], ...] = (
    ("grad(f)(x)", lambda f, x: jax.grad(f)(x)),
    ("jax.jvp(f, (x,), (1.0,))[1]", lambda f, x: jax.jvp(f, (x,), (jnp.ones_like(x),))[1]),
    ("jacfwd(f)(x)", lambda f, x: jax.jacfwd(f)(x)),
    ("jacrev(f)(x)", lambda f, x: jax.jacrev(f)(x)),
    ("hessian(f)(x)", lambda f, x: jax.hessian(f)(x)),
    ("grad(grad(f))(x)", lambda f, x: jax.grad(jax.grad(f))(x)),
    ("jax.linearize(f, x)[1](1.0)", lambda f, x: jax.linearize(f, x)[1](jnp.ones_like(x))),
)


@dataclass(frozen=True)
class RuleRow:
    """One transform applied to the ``custom_jvp`` and to the ``custom_vjp`` function."""

    call: str
    custom_jvp: Outcome
    custom_vjp: Outcome


@dataclass(frozen=True)
class CustomRules:
    """Every transform of :data:`TRANSFORM_CALLS` on both functions at ``x``."""

    x: float
    rows: tuple[RuleRow, ...]

    def table(self) -> list[dict[str, object]]:
        """One row per transform: what each function returned, or what it raised."""
        raises = _("raises {error}")
        return [
            {
                _("transform"): r.call,
                "custom_jvp": r.custom_jvp.value or raises.format(error=r.custom_jvp.error_type),
                _("custom_vjp (article's)"): r.custom_vjp.value
                or raises.format(error=r.custom_vjp.error_type),
            }
            for r in self.rows
        ]

    @property
    def vjp_refusals(self) -> tuple[str, ...]:
        """The calls the ``custom_vjp`` function refused (JAX raised)."""
        return tuple(r.call for r in self.rows if not r.custom_vjp.ok)

    @property
    def jvp_refusals(self) -> tuple[str, ...]:
        """The calls the ``custom_jvp`` function refused (none, where the rule is right)."""
        return tuple(r.call for r in self.rows if not r.custom_jvp.ok)

    @property
    def agree(self) -> tuple[str, ...]:
        """The calls both functions answer, with the same value."""
        return tuple(
            r.call
            for r in self.rows
            if r.custom_jvp.ok and r.custom_vjp.ok and r.custom_jvp.value == r.custom_vjp.value
        )


def _number(value: Any) -> str:
    return f"{float(value):.6g}"


def custom_rules(x: float) -> CustomRules:
    """Run every transform on :func:`special_op_jvp` and the article's ``my_special_op``."""
    if not math.isfinite(x) or abs(x) > MAX_ABS_X:
        raise ValueError(f"x must be a number with |x| ≤ {MAX_ABS_X:g} (got {x})")
    point = jnp.float32(x)
    rows = []
    for call, make in TRANSFORM_CALLS:
        outcomes = [
            capture.run(lambda f=f, make=make: make(f, point), code=call, describe=_number)
            for f in (special_op_jvp, my_special_op)
        ]
        rows.append(RuleRow(call, *outcomes))
    return CustomRules(float(x), tuple(rows))

"""``jax.linearize``: evaluate f once, then apply its Jacobian to as many tangents as you like.

Why: ``jax.jvp(f, (x,), (v,))`` runs f's forward pass again with every tangent ``v``.
``jax.linearize(f, x)`` runs it once, keeps what the derivative needs (the residuals: ``cos x``,
``1 − tanh²`` …) and returns a function of the tangent alone, whose jaxpr holds only linear
operations. Here both are traced for one function and their equations counted, and the results
compared: what the page says about them is read from the jaxprs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxplay.core.inputs import normal_arrays
from jaxplay.core.jaxprs import count_primitives

MAX_LINEARIZE_N = 4096
#: Primitives that are not linear in their input (what jvp re-evaluates each time).
NONLINEAR = frozenset({"sin", "cos", "tanh", "exp", "log", "logistic", "pow", "sqrt", "rsqrt"})


def linearize_example(x: Any) -> Any:
    """The function linearized: elementwise ``tanh(sin(x) · x)``, R^n → R^n."""
    return jnp.tanh(jnp.sin(x) * x)


@dataclass(frozen=True)
class Linearized:
    """``jax.linearize`` against ``jax.jvp`` for :func:`linearize_example` at one x.

    Attributes:
        n: the input size.
        max_abs_diff: max |f_jvp(v) − jvp(f, (x,), (v,))[1]|.
        jvp_primitives, linear_primitives: how often each primitive occurs in the jaxpr of
            ``jvp(f)`` (a function of x and v) and of the linearized ``f_jvp`` (of v alone).
        residuals: arrays ``linearize`` kept from the forward pass, and their bytes.
        jvp_jaxpr, linear_jaxpr: both jaxprs as text.
    """

    n: int
    max_abs_diff: float
    jvp_primitives: dict[str, int]
    linear_primitives: dict[str, int]
    residuals: int
    residual_bytes: int
    jvp_jaxpr: str
    linear_jaxpr: str

    @staticmethod
    def nonlinear(primitives: dict[str, int]) -> dict[str, int]:
        return {p: c for p, c in sorted(primitives.items()) if p in NONLINEAR}


def linearize_vs_jvp(n: int = 1000) -> Linearized:
    """Linearize :func:`linearize_example` at a random x (seed 0) and compare with ``jvp``."""
    if not 1 <= n <= MAX_LINEARIZE_N:
        raise ValueError(f"n must be 1 to {MAX_LINEARIZE_N} (got {n})")
    x, v = (jnp.asarray(a) for a in normal_arrays(0, (n,), (n,)))
    f = linearize_example
    _, f_jvp = jax.linearize(f, x)
    jvp_tangent = jax.jit(lambda x, v: jax.jvp(f, (x,), (v,))[1])
    diff = float(jnp.max(jnp.abs(f_jvp(v) - jvp_tangent(x, v))))
    linear = jax.make_jaxpr(f_jvp)(v)
    full = jax.make_jaxpr(lambda x, v: jax.jvp(f, (x,), (v,)))(x, v)
    consts = [np.asarray(c) for c in linear.consts]
    return Linearized(
        n=n,
        max_abs_diff=diff,
        jvp_primitives=count_primitives(full),
        linear_primitives=count_primitives(linear),
        residuals=len(linear.jaxpr.constvars),
        residual_bytes=sum(c.nbytes for c in consts),
        jvp_jaxpr=str(full),
        linear_jaxpr=str(linear),
    )

"""The grad page's statements about JAX, each checked against JAX itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

from jaxplay.article import my_special_op, my_special_op_bwd
from jaxplay.core import claims
from jaxplay.core.claims import Verdict
from jaxplay.core.i18n import N_
from jaxplay.grad import _curves, _custom_jvp

#: The transforms that need a forward-mode (JVP) rule: a ``custom_vjp`` function refuses them.
FORWARD = ("jax.jvp(f, (x,), (1.0,))[1]", "jacfwd(f)(x)", "hessian(f)(x)", "jax.linearize")


@claims.claim(
    "grad.custom_jvp_serves_every_transform",
    N_(
        "A `custom_jvp` rule serves every transform (JAX transposes it for reverse mode); a "
        "`custom_vjp` rule serves reverse mode only: forward-mode transforms of it raise."
    ),
    cases=(0.5,),
)
def _custom_rules(x: float) -> Verdict:
    rules = _custom_jvp.custom_rules(x)
    forward = {c for c in rules.vjp_refusals if c.startswith(FORWARD)}
    expected = {r.call for r in rules.rows if r.call.startswith(FORWARD)}
    holds = not rules.jvp_refusals and forward == expected == set(rules.vjp_refusals)
    return Verdict(
        holds,
        f"custom_jvp refused {rules.jvp_refusals}; custom_vjp refused {rules.vjp_refusals}",
    )


#: The article's op as a plain function (what its ``custom_vjp`` wraps).
_PLAIN: Callable[[Any], Any] = vars(my_special_op)["__wrapped__"]


def _plain_rule_op() -> Callable[[float], Any]:
    """The article's op and backward rule, with a forward rule that calls its plain function
    (the article's ``my_special_op_fwd`` calls the custom_vjp function itself)."""
    op = jax.custom_vjp(_PLAIN)
    op.defvjp(lambda x: (_PLAIN(x), (x,)), my_special_op_bwd)
    return op


@claims.claim(
    "grad.hessian_of_custom_vjp",
    N_(
        "hessian of a custom_vjp function works when its forward rule is plain jnp (jacfwd "
        "differentiates the backward rule) and raises when the forward rule calls the custom_vjp "
        "function itself, as the article's does; jacfwd of it raises either way."
    ),
    cases=(0.5, -0.5),
)
def _hessian_of_custom_vjp(x: float) -> Verdict:
    def outcome(f: object) -> str:
        try:
            return f"{float(f(x)):.4g}"  # type: ignore[operator]
        except TypeError:
            return "TypeError"

    plain = _plain_rule_op()
    exact = f"{float(jax.hessian(_PLAIN)(x)):.4g}"  # autodiff of the plain function
    seen = {
        "hessian, plain rule": outcome(jax.hessian(plain)),
        "hessian, article's rule": outcome(jax.hessian(my_special_op)),
        "jacfwd, plain rule": outcome(jax.jacfwd(plain)),
    }
    holds = seen == {
        "hessian, plain rule": exact,
        "hessian, article's rule": "TypeError",
        "jacfwd, plain rule": "TypeError",
    }
    return Verdict(holds, f"at x = {x:g}: {seen}; autodiff's hessian {exact}")


@claims.claim(
    "grad.stop_gradient_cuts_the_path",
    N_(
        "`stop_gradient` makes its argument a constant for differentiation: d/dx of "
        "`stop_gradient(x) * x` is x, not 2x."
    ),
    cases=(0.5, 3.0),
)
def _stop_gradient(x: float) -> Verdict:
    import jax

    got = float(jax.grad(lambda v: jax.lax.stop_gradient(v) * v)(x))
    return Verdict(abs(got - x) < 1e-6, f"JAX gave {got} at x = {x}")


#: Kinks of functions the formula box offers: (formula, where, how JAX's derivative there
#: relates to the two sides'). ``where`` and ``relu`` differentiate the branch they took;
#: ``maximum``, ``minimum`` and ``clip`` at a tie give each side half.
KINKS = (
    ("jnp.where(x > 0, x, 0.0)", 0.0, "one side"),
    ("jax.nn.relu(x)", 0.0, "one side"),
    ("jnp.abs(x)", 0.0, "one side"),
    ("jnp.maximum(x, 0.0)", 0.0, "the average"),
    ("jnp.minimum(x, 1.0)", 1.0, "the average"),
    ("jnp.clip(x, -1.0, 1.0)", 1.0, "the average"),
)


@claims.claim(
    "grad.a_kink_gets_one_side_or_the_average",
    N_(
        "At a kink, `grad` gives one side's derivative for `where`, `relu` and `abs`, and the "
        "average of the two sides' for `maximum`, `minimum` and `clip` at a tie."
    ),
    cases=KINKS,
)
def _kinks(case: tuple[str, float, str]) -> Verdict:
    import jax

    formula, x0, rule = case
    d = jax.grad(_curves.scalar_function(formula))  # as the formula box parses it
    at, left, right = float(d(x0)), float(d(x0 - 0.25)), float(d(x0 + 0.25))
    expected = {left, right} if rule == "one side" else {(left + right) / 2}
    return Verdict(
        left != right and at in expected,
        f"grad of {formula} at {x0} is {at}; the sides' are {left} and {right}",
    )

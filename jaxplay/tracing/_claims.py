"""The tracing page's statements about JAX, each checked against the jaxpr JAX staged."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp

from jaxplay.core import claims, jaxprs
from jaxplay.core.claims import Verdict
from jaxplay.core.i18n import N_
from jaxplay.tracing import _inputs, _presets, _staging

W = _inputs.WEAK_FLOAT32
#: (x's dtype, y's dtype) for the seed ``x * y + 1``: each branch of the jaxpr story (a weak
#: float meeting a float, an int, itself; a strong dtype promoted), every kind the page offers.
PAIRS = (
    ("float32", W),
    ("bfloat16", W),
    ("int8", W),
    ("int32", "float32"),
    ("float32", "bfloat16"),
    ("uint8", "int8"),
    ("bool", "float16"),
    ("bfloat16", "float16"),
    ("int8", "uint8"),
    (W, W),
)


@claims.claim(
    "tracing.story_names_the_conversions",
    N_(
        "The jaxpr story names exactly the arguments the staged jaxpr converts, and the dtype it "
        "converts them to: a Python float takes the array's dtype only within the same kind (with "
        "an integer array, the array is converted to a weak float32); an argument is said to take "
        "the other operand's type only where the other has that type."
    ),
    cases=PAIRS,
)
def _conversions(pair: tuple[str, str]) -> Verdict:
    preset = _presets.find_preset("seed")
    args = [_inputs.InputSpec((3,), pair[0]), _inputs.InputSpec((), pair[1])]
    staged = _staging.stage(preset.fn, args)
    text = _staging.jaxpr_story(staged, args, preset.arg_names)
    names = {atom.name: preset.arg_names[i] for i, atom in enumerate(staged.jaxpr.invars)}
    converted = {}
    for eqn in staged.jaxpr.eqns:
        if eqn.primitive == "convert_element_type" and eqn.inputs:
            name = names.get(eqn.inputs[0].name)
            found = re.search(r"new_dtype=(\w+)", eqn.params)
            if name and found:
                converted[name] = found.group(1)
    said = set(re.findall(r"`(\w+)`(?: \(\w+\))? (?:is converted|is weakly typed)", text))
    wrong = [f"{n} → {d}" for n, d in converted.items() if f"`{n}`" not in text or d not in text]
    # "The other operand's type" only where the target is the other argument's dtype (a weak
    # float's is float32), and "no argument has that type" where it is neither's.
    others = [_others_type(pair[1 - preset.arg_names.index(n)], d) for n, d in converted.items()]
    other_said = "the other operand's type" in text or "the other operand's dtype" in text
    neither_said = "no argument has that type" in text
    # "The smallest type on its promotion lattice that holds them all": JAX's own join of the
    # two dtypes (jnp.promote_types), which the jaxpr converted both to.
    joined = W in pair or all(d == str(jnp.promote_types(*pair)) for d in converted.values())
    holds = (
        not wrong
        and said == set(converted)
        and other_said == any(others)
        and neither_said == (not all(others))
        and joined
    )
    return Verdict(holds, f"the jaxpr converts {converted}; the story: {text!r}")


def _others_type(other: str, target: str) -> bool:
    return target == other or (other == W and target == "float32")


#: A function of one argument that converts it, and the dtype given: a cast to another type,
#: and an op that takes only floats (each staged as a visitor's Code Lab function is).
CASTS = {
    "astype int8 of float32": (lambda x: x.astype(jnp.int8), "float32"),
    "sin of int32": (jnp.sin, "int32"),
}


@claims.claim(
    "tracing.story_tells_a_cast_from_a_promotion",
    N_(
        "Where the jaxpr converts an argument that meets no other operand (a cast, or an "
        "operation that takes another type), the jaxpr story names the conversion and does not "
        "call it a promotion."
    ),
    cases=tuple(CASTS),
)
def _casts(case: str) -> Verdict:
    fn, dtype = CASTS[case]
    args = [_inputs.InputSpec((3,), dtype)]
    staged = _staging.stage(fn, args)
    text = _staging.jaxpr_story(staged, args, ("x",))
    converts = jaxprs.count_primitives(jax.make_jaxpr(fn)(jnp.ones(3, dtype))).get(
        "convert_element_type", 0
    )
    holds = converts == 1 and "`x`" in text and "promotes" not in text
    return Verdict(holds, f"{case}: {converts} convert_element_type; the story: {text!r}")


@claims.claim(
    "tracing.cond_under_vmap_runs_both_branches",
    N_(
        "The lax.cond preset stages a cond (one branch runs) as written and under jit; under vmap "
        "its batched predicate leaves no cond: both branches are computed and a select picks."
    ),
    cases=("f", "jit", "vmap"),
)
def _cond_branches(variant: str) -> Verdict:
    fn = _presets.find_preset("cond").fn
    staged = {"f": fn, "jit": jax.jit(fn), "vmap": jax.vmap(fn)}[variant]
    x = jnp.ones((2, 5) if variant == "vmap" else (5,), jnp.float32)
    seen = jaxprs.count_primitives(jax.make_jaxpr(staged)(x))
    holds = ("cond" not in seen and "select_n" in seen) if variant == "vmap" else "cond" in seen
    return Verdict(
        holds, f"{variant}: cond × {seen.get('cond', 0)}, select_n × {seen.get('select_n', 0)}"
    )

"""What the Pytrees page states about JAX, each with a check that asks JAX.

The checks run the page's own demos (the static-field lab on every change it offers, the
examples, the ``None`` tree, the ``in_axes`` choices) and compare with what JAX did: the programs
a jitted function holds (:func:`jaxplay.core.jax_private.cache_size`), the exception JAX raised,
the leaves and structures ``jax.tree`` returned.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp

from jaxplay.core import capture, claims
from jaxplay.core.i18n import N_
from jaxplay.pytrees import _empty, _examples, _params, _static

Verdict = claims.Verdict

#: JAX's words when a meta field cannot be compared (an array in it).
META_ERROR = "arrays cannot be passed as metadata fields"


def _fresh_class() -> type:
    """A dataclass registered now: no trace of it is cached yet, as in a fresh process."""

    @functools.partial(jax.tree_util.register_dataclass, data_fields=["w"], meta_fields=["tag"])
    @dataclasses.dataclass(frozen=True)
    class Tagged:
        w: Any
        tag: Any

    return Tagged


@claims.claim(
    "pytrees.array_meta_field",
    N_(
        "An array in a meta field: jit accepts a call while nothing is cached to compare it with, "
        "and raises ValueError ('arrays cannot be passed as metadata fields') when it compares the "
        "meta fields with a cached call's; the lab shows that error, not one of its own."
    ),
    cases=("jax", "lab"),
)
def _array_meta_field(case: str) -> Verdict:
    if case == "jax":
        tagged = _fresh_class()
        jitted = jax.jit(lambda t: t.w * 2)
        outcomes = [capture.run(jitted, tagged(jnp.float32(1.0), jnp.ones(2))) for _ in range(2)]
        errors = [o.error_type or "ok" for o in outcomes]
        holds = outcomes[0].ok and errors[1] == "ValueError" and META_ERROR in outcomes[1].message
        return Verdict(holds, f"bare jit: calls gave {errors}: {outcomes[1].message[:120]}")
    lab = _static.static_lab("array", 3)
    errors = [(r.error or "ok").split(":")[0] for r in lab.rows]
    holds = errors[1:] == ["ValueError", "ValueError"] and errors[0] in ("ok", "ValueError")
    holds = holds and all(META_ERROR in (r.error or META_ERROR) for r in lab.rows)
    return Verdict(holds, f"the lab's calls gave {errors}: {lab.rows[-1].error}")


@claims.claim(
    "pytrees.one_program_per_meta_and_leaf_type",
    N_(
        "jit compiles one program per distinct meta value and per leaf type (a Python float and a "
        "jnp.float32 are two); a new value of a data field reuses the program."
    ),
    cases=(("dynamic", 4, 2), ("static", 4, 1), ("static", 4, 3), ("weak", 4, 2)),
)
def _programs(case: tuple[str, int, int]) -> Verdict:
    lab = _static.static_lab(*case)
    expected = lab.distinct_static * lab.distinct_types
    if lab.compilations is None:
        return Verdict(True, "this JAX does not say how many programs it holds (not shown)")
    return Verdict(
        lab.compilations == expected and lab.failed is None,
        f"{case}: {lab.compilations} programs for {lab.distinct_static} meta values and "
        f"{lab.distinct_types} leaf types",
    )


@claims.claim(
    "pytrees.flatten_sorts_dict_keys",
    N_("jax.tree.flatten orders a dict's leaves by sorted key, not as written."),
)
def _sorted_keys(_: None) -> Verdict:
    tree = _examples.unsorted_dict()
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]
    expected = ["['alpha']", "['mid']['a']", "['mid']['b']", "['zeta']"]
    return Verdict(paths == expected, f"flattened order: {paths}")


#: Dicts keyed by one kind of thing or by a mix, by case: only the mix has no order.
KEYED: dict[str, dict[Any, float]] = {
    "mixed": {1: 2.0, "a": 3.0},
    "tuples": {(1, 2): 1.0, (0, 5): 2.0},
    "numbers": {2: 1.0, 1.5: 2.0},
}


@claims.claim(
    "pytrees.mixed_dict_keys_cannot_be_sorted",
    N_(
        "JAX cannot sort a dict's keys when strings are among numbers, and flattening such a "
        "dict raises; keys all of one comparable kind (numbers, tuples) flatten in sorted order."
    ),
    cases=tuple(KEYED),
)
def _mixed_keys(case: str) -> Verdict:
    tree = KEYED[case]
    try:
        leaves = jax.tree.leaves(tree)
    except (TypeError, ValueError) as err:
        return Verdict(case == "mixed", f"{type(err).__name__}: {err}")
    ordered = [tree[k] for k in sorted(tree)]
    return Verdict(case != "mixed" and leaves == ordered, f"leaves {leaves}")


@claims.claim(
    "pytrees.empty_nodes_hold_no_leaves",
    N_(
        "`None`, `[]`, `()` and `{}` are nodes without leaves: `tree.map` never calls its function "
        "on them and `grad` hands them back as they were; `is_leaf=lambda x: x is None` makes "
        "`None` a leaf."
    ),
    cases=(False, True),
)
def _empty_nodes(none_is_leaf: bool) -> Verdict:
    leaves, described, grads = _empty.none_leaves(none_is_leaf)
    expected = 2 if none_is_leaf else 1
    same = jax.tree.structure(grads) == jax.tree.structure(_examples.none_and_empty())
    holds = (
        len(leaves) == expected and same and described["bias"] == ("None" if none_is_leaf else None)
    )
    return Verdict(holds, f"is_leaf for None {none_is_leaf}: {len(leaves)} leaves, grad {grads}")


def _shapes(features: int = 3, hidden: int = 4) -> Any:
    return jax.eval_shape(
        functools.partial(_params.init_params, features=features, hidden=hidden),
        jax.random.key(0),
    )


@claims.claim(
    "pytrees.grad_returns_params_tree",
    N_(
        "jax.grad with respect to a tree of parameters returns a tree of the same structure, each "
        "leaf with its parameter's shape."
    ),
)
def _grad_tree(_: None) -> Verdict:
    params = _shapes()
    xs, ys = jax.ShapeDtypeStruct((2, 3), jnp.float32), jax.ShapeDtypeStruct((2,), jnp.float32)
    grads = jax.eval_shape(jax.grad(_params.loss), params, xs, ys)
    same = jax.tree.structure(grads) == jax.tree.structure(params)
    shapes = [g.shape for g in jax.tree.leaves(grads)] == [p.shape for p in jax.tree.leaves(params)]
    return Verdict(same and shapes, f"same structure {same}, same shapes {shapes}")


#: The in_axes choices that JAX refuses (the others map).
REFUSED = {"all-zero": "ValueError", "not-a-prefix": "ValueError"}


@claims.claim(
    "pytrees.in_axes_prefix",
    N_(
        "vmap's in_axes must be a prefix of the arguments' tree, each mapped leaf with an axis 0: "
        "(None, 0) and a per-subtree dict work; (0, 0) maps the scalar output bias and a dict "
        "naming only some keys is not a prefix: both raise ValueError."
    ),
    cases=tuple(choice.key for choice in _params.AXES),
)
def _in_axes(key: str) -> Verdict:
    choice = _params.find_axes(key)
    if choice.ensemble:
        params = jax.eval_shape(
            functools.partial(_params.ensemble, members=2, features=3, hidden=4),
            jax.random.key(0),
        )
        args = (params, jax.ShapeDtypeStruct((3,), jnp.float32))
    else:
        args = (_shapes(), jax.ShapeDtypeStruct((2, 3), jnp.float32))
    mapped = functools.partial(_params.vmapped_predict, choice.in_axes)
    outcome = capture.run(jax.eval_shape, mapped, *args)
    return Verdict(
        outcome.error_type == REFUSED.get(key),
        f"in_axes {choice.written}: {outcome.error_type or 'mapped'} {outcome.message[:100]}",
    )

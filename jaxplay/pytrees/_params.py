"""A pytree of parameters through ``jax.grad`` and ``jax.vmap`` (``in_axes`` as a pytree).

Why a module of its own: models keep their parameters as nested dicts, and the transforms take and
return the same nesting: ``grad`` returns gradients shaped like the parameters, and ``vmap``'s
``in_axes`` is itself a pytree, a *prefix* of the arguments' tree, so one entry can map a whole
sub-dict. The page offers a few ``in_axes`` (two that work, two that JAX refuses, with its own
errors) and shows every leaf's shape, the axis it is mapped over, and the result's shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from jaxplay.article import code
from jaxplay.core import capture, claims
from jaxplay.core.i18n import N_, _
from jaxplay.core.mlp import init_params, predict

#: Bounds of the sizes the page offers (every array here is tiny).
MAX_FEATURES = 8
MAX_HIDDEN = 16
MAX_BATCH = 8
MAX_MEMBERS = 4


def loss(params, xs, ys):
    predictions = jax.vmap(predict, in_axes=(None, 0))(params, xs)
    return jnp.mean((predictions - ys) ** 2)


def ensemble(key, members, features, hidden):
    keys = jax.random.split(key, members)
    stacked = jax.vmap(lambda k: init_params(k, features, hidden))(keys)
    return {"hidden": stacked["hidden"], "out": init_params(key, features, hidden)["out"]}


@dataclass(frozen=True)
class AxesChoice:
    """An ``in_axes`` the page offers, the arguments it is meant for, and what it means."""

    key: str
    in_axes: Any
    written: str
    ensemble: bool
    meaning: str


AXES: tuple[AxesChoice, ...] = (
    AxesChoice(
        "shared",
        (None, 0),
        "(None, 0)",
        False,
        N_("one set of parameters for every example: the batch axis of x is mapped"),
    ),
    AxesChoice(
        "ensemble",
        ({"hidden": 0, "out": None}, None),
        '({"hidden": 0, "out": None}, None)',
        True,
        N_("an ensemble of hidden layers stacked on axis 0, one shared output layer, one example"),
    ),
    AxesChoice(
        "all-zero",
        (0, 0),
        "(0, 0)",
        False,
        N_("every leaf mapped over its axis 0: the parameters too (a common mistake)"),
    ),
    AxesChoice(
        "not-a-prefix",
        ({"hidden": 0}, 0),
        '({"hidden": 0}, 0)',
        False,
        N_("a dict that names only some of the parameters' keys (not a prefix of their tree)"),
    ),
)


def find_axes(key: str) -> AxesChoice:
    for choice in AXES:
        if choice.key == key:
            return choice
    raise KeyError(key)


@dataclass(frozen=True)
class LeafRow:
    """One leaf of the arguments: its path, shape, the gradient's shape, and its ``in_axes``."""

    path: str
    shape: tuple[int, ...]
    grad_shape: tuple[int, ...] | None
    axis: str


@dataclass(frozen=True)
class ParamsRun:
    """``grad`` and ``vmap`` on the parameters.

    Attributes:
        rows: the leaves of ``(params, x)`` with their shapes and mapped axes.
        grad_same_structure: whether the gradient's tree equals the parameters' tree.
        grad_same_shapes: whether every gradient leaf has its parameter's shape.
        loss_value: the loss at the parameters.
        vmap: the outcome of the ``vmap`` call (its value is the output's shape).
        axes: the :class:`AxesChoice` used.
    """

    rows: tuple[LeafRow, ...]
    grad_same_structure: bool
    grad_same_shapes: bool
    loss_value: float
    vmap: capture.Outcome
    axes: AxesChoice

    def table(self) -> dict[str, list[str]]:
        """The leaves as table columns: path, shape, the gradient's shape, the mapped axis (the
        headers and the axes in the visitor's language)."""
        return {
            _("leaf"): [r.path for r in self.rows],
            _("shape"): [str(r.shape) for r in self.rows],
            _("grad shape"): ["" if r.grad_shape is None else str(r.grad_shape) for r in self.rows],
            "in_axes": [_axis_words(r.axis) for r in self.rows],
        }


@claims.states_nothing("names the axis the visitor's in_axes gave a leaf")
def _axis_words(axis: str) -> str:
    """A leaf's mapped axis as :func:`_axes_of` wrote it, in the visitor's language."""
    if axis == "not mapped":
        return _("not mapped")
    if axis.startswith("axis "):
        return _("axis {n}").format(n=axis.removeprefix("axis "))
    return axis


def vmapped_predict(in_axes, params, x):
    return jax.vmap(predict, in_axes=in_axes)(params, x)


def _axes_of(in_axes: Any, args: Any) -> list[str]:
    """Each leaf's mapped axis: ``in_axes`` broadcast over ``args`` (``?`` where it is no
    prefix, which is JAX's error to report)."""
    try:
        full = jax.tree.broadcast(in_axes, args, is_leaf=lambda x: x is None)
    except ValueError:
        return ["?"] * len(jax.tree.leaves(args))
    return [
        "not mapped" if a is None else f"axis {a}"
        for a in jax.tree.leaves(full, is_leaf=lambda x: x is None)
    ]


def params_run(axes_key: str, features: int, hidden: int, batch: int, members: int) -> ParamsRun:
    """Differentiate the loss with respect to the parameters, and vmap ``predict`` with the
    ``in_axes`` registered under ``axes_key``. Sizes are bounded by the ``MAX_`` constants."""
    for name, value, top in (
        ("features", features, MAX_FEATURES),
        ("hidden", hidden, MAX_HIDDEN),
        ("batch", batch, MAX_BATCH),
        ("members", members, MAX_MEMBERS),
    ):
        if not 1 <= value <= top:
            raise ValueError(f"{name} must be between 1 and {top}")
    choice = find_axes(axes_key)
    key = jax.random.key(0)
    params = init_params(key, features, hidden)
    xs = jax.random.normal(jax.random.key(1), (batch, features))
    ys = jnp.sin(xs.sum(axis=1))
    value, grads = jax.value_and_grad(loss)(params, xs, ys)
    args = (ensemble(key, members, features, hidden), xs[0]) if choice.ensemble else (params, xs)
    outcome = capture.run(
        vmapped_predict,
        choice.in_axes,
        *args,
        code=f"jax.vmap(predict, in_axes={choice.written})(params, x)",
        describe=lambda out: str(tuple(out.shape)),
    )
    paths = jax.tree_util.tree_flatten_with_path(args)[0]
    grad_shapes = [tuple(g.shape) for g in jax.tree.leaves(grads)]
    rows = []
    for i, ((path, leaf), axis) in enumerate(
        zip(paths, _axes_of(choice.in_axes, args), strict=True)
    ):
        name = ("params" if path[0].idx == 0 else "x") + jax.tree_util.keystr(path[1:])
        grad_shape = grad_shapes[i] if path[0].idx == 0 and not choice.ensemble else None
        rows.append(LeafRow(name, tuple(leaf.shape), grad_shape, axis))
    return ParamsRun(
        rows=tuple(rows),
        grad_same_structure=jax.tree.structure(grads) == jax.tree.structure(params),
        grad_same_shapes=grad_shapes == [tuple(p.shape) for p in jax.tree.leaves(params)],
        loss_value=float(value),
        vmap=outcome,
        axes=choice,
    )


def params_snippet(axes_key: str, features: int, hidden: int, batch: int, members: int) -> str:
    """A Code Lab cell: the same parameters through ``grad`` and the chosen ``vmap``."""
    choice = find_axes(axes_key)
    if choice.ensemble:
        args = [
            f"params = ensemble(key, {members}, {features}, {hidden})",
            "x = xs[0]",
        ]
    else:
        args = ["x = xs"]
    return code(
        "import jax\nimport jax.numpy as jnp\n\n\n",
        init_params,
        "",
        "",
        predict,
        "",
        "",
        loss,
        "",
        "",
        ensemble,
        "",
        "",
        "key = jax.random.key(0)",
        f"params = init_params(key, {features}, {hidden})",
        f"xs = jax.random.normal(jax.random.key(1), ({batch}, {features}))",
        "ys = jnp.sin(xs.sum(axis=1))",
        "grads = jax.grad(loss)(params, xs, ys)",
        'print("param shapes:", jax.tree.map(jnp.shape, params))',
        'print("grad shapes: ", jax.tree.map(jnp.shape, grads))',
        *args,
        f"out = jax.vmap(predict, in_axes={choice.written})(params, x)",
        'print("vmap output shape:", out.shape)',
    )

"""``None`` and empty containers: nodes with no leaves, and how ``is_leaf`` changes that.

Why a module of its own: ``None``, ``[]``, ``()`` and ``{}`` are pytree nodes with no children, so
they hold no leaves: ``jax.tree.map`` never calls its function on them and ``jax.grad`` hands them
back as they were. That is how optional parameters (a bias of ``None``) ride along through the
transforms. ``is_leaf`` lets one call treat ``None`` as a leaf instead, and then the mapped
function meets ``None`` and must handle it.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from jaxplay.article import code
from jaxplay.pytrees._anatomy import short
from jaxplay.pytrees._examples import none_and_empty


def show_leaf(x):
    return "None" if x is None else f"{x.dtype}{list(x.shape)}"


def none_leaves(none_is_leaf):
    tree = none_and_empty()
    is_leaf = (lambda x: x is None) if none_is_leaf else None
    leaves = jax.tree.leaves(tree, is_leaf=is_leaf)
    described = jax.tree.map(show_leaf, tree, is_leaf=is_leaf)
    grads = jax.grad(lambda params: jnp.sum(params["weights"] ** 2))(tree)
    return leaves, described, grads


@dataclass(frozen=True)
class EmptyDemo:
    """What :func:`none_leaves` returned, written out.

    Attributes:
        none_is_leaf: whether ``is_leaf`` made ``None`` a leaf.
        leaves: the leaves found, written short.
        described: the tree after ``jax.tree.map(show_leaf, ...)``.
        grads: the gradient of a loss of ``weights`` with respect to the whole tree.
        calls: how many times ``jax.tree.map`` called ``show_leaf``.
    """

    none_is_leaf: bool
    leaves: tuple[str, ...]
    described: str
    grads: str
    calls: int


def empty_demo(none_is_leaf: bool) -> EmptyDemo:
    """Run :func:`none_leaves` and count the calls of the mapped function."""
    leaves, described, grads = none_leaves(none_is_leaf)
    calls = len(jax.tree.leaves(described))
    return EmptyDemo(
        none_is_leaf=none_is_leaf,
        leaves=tuple(short(leaf) for leaf in leaves),
        described=short(described),
        grads=short(grads),
        calls=calls,
    )


def empty_snippet(none_is_leaf: bool) -> str:
    """A Code Lab cell: the same tree, with or without ``is_leaf``."""
    return code(
        "import jax\nimport jax.numpy as jnp\n\n\n",
        none_and_empty,
        "",
        "",
        show_leaf,
        "",
        "",
        none_leaves,
        "",
        "",
        f"leaves, described, grads = none_leaves(none_is_leaf={none_is_leaf})",
        'print("leaves:", len(leaves), leaves)',
        'print("tree.map:", described)',
        'print("grad:", grads)',
    )

"""Your own classes as pytrees: a registered dataclass, a class registered by hand, and one not
registered at all, each put through the same four JAX calls.

Why a module of its own: registration is what makes a class a container to JAX rather than one
opaque leaf. The page shows the same layer (``w``, ``b``) as three classes and what
``jax.tree.leaves``, ``jax.tree.map``, ``jax.jit`` and ``jax.grad`` really do with each, the errors
included (captured, never paraphrased). The classes are registered once, when this module is
imported: JAX's registry is process-wide and refuses a second registration of a type.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from jaxplay.article import code
from jaxplay.core import capture, claims
from jaxplay.core.i18n import N_
from jaxplay.pytrees._anatomy import Node, describe, short


@functools.partial(jax.tree_util.register_dataclass, data_fields=["w", "b"], meta_fields=["name"])
@dataclasses.dataclass(frozen=True)
class Dense:
    w: jax.Array  # data field: a leaf, traced by jit, differentiated by grad
    b: jax.Array
    name: str = "dense"  # meta field: part of the structure, must be hashable


class Affine:
    def __init__(self, w, b):
        self.w = w
        self.b = b


def register_affine():
    jax.tree_util.register_pytree_node(
        Affine,
        lambda layer: ((layer.w, layer.b), None),  # flatten: (children, aux data)
        lambda aux, children: Affine(*children),  # unflatten
    )


register_affine()


class Plain:  # never registered: JAX sees one opaque leaf
    def __init__(self, w, b):
        self.w = w
        self.b = b


def affine(layer, x):
    return x @ layer.w + layer.b


def layer_loss(layer, x):
    return jnp.sum(affine(layer, x) ** 2)


def make_layer(cls):
    return cls(w=jnp.ones((3, 2)), b=jnp.zeros(2))


def leaves_of(layer):
    return jax.tree.leaves(layer)


def doubled(layer):
    return jax.tree.map(lambda x: x * 2, layer)


def jitted(layer):
    return jax.jit(affine)(layer, jnp.ones(3))


def gradient(layer):
    return jax.grad(layer_loss)(layer, jnp.ones(3))


@dataclass(frozen=True)
class Registration:
    """One way to define the layer class."""

    key: str
    title: str
    cls: type
    parts: tuple[Any, ...]


REGISTRATIONS: tuple[Registration, ...] = (
    Registration("dataclass", N_("@dataclass + register_dataclass"), Dense, (Dense,)),
    Registration(
        "pytree_node", N_("a class + register_pytree_node"), Affine, (Affine, register_affine)
    ),
    Registration("plain", N_("a class, not registered"), Plain, (Plain,)),
)

#: The calls tried on each class, in order, with the code shown for each.
CALLS: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("jax.tree.leaves(layer)", leaves_of),
    ("jax.tree.map(lambda x: x * 2, layer)", doubled),
    ("jax.jit(affine)(layer, jnp.ones(3))", jitted),
    ("jax.grad(layer_loss)(layer, jnp.ones(3))", gradient),
)


def find_registration(key: str) -> Registration:
    for registration in REGISTRATIONS:
        if registration.key == key:
            return registration
    raise KeyError(key)


@dataclass(frozen=True)
class ClassDemo:
    """What JAX did with one class.

    Attributes:
        key: the :class:`Registration`'s key.
        structure: ``str(jax.tree.structure(layer))``.
        nodes: the layer drawn as a tree.
        n_leaves: leaves JAX found in the layer.
        outcomes: per call in :data:`CALLS`, its code and :class:`~jaxplay.core.capture.Outcome`.
    """

    key: str
    structure: str
    nodes: tuple[Node, ...]
    n_leaves: int
    outcomes: tuple[tuple[str, capture.Outcome], ...]


def class_demo(key: str) -> ClassDemo:
    """Build the layer as the class registered under ``key`` and try each call of :data:`CALLS`."""
    registration = find_registration(key)
    layer = make_layer(registration.cls)
    outcomes = tuple(
        (text, capture.run(fn, layer, code=text, describe=short)) for text, fn in CALLS
    )
    return ClassDemo(
        key=key,
        structure=str(jax.tree.structure(layer)),
        nodes=describe(layer, lambda x: x).nodes,
        n_leaves=len(jax.tree.leaves(layer)),
        outcomes=outcomes,
    )


@claims.states_nothing("code for the Code Lab: not a statement")
def class_snippet(key: str) -> str:
    """A Code Lab cell: the class as defined here and the four calls, each error printed."""
    registration = find_registration(key)
    calls = [
        'for name, call in [("leaves", leaves_of), ("tree.map", doubled), '
        '("jit", jitted), ("grad", gradient)]:',
        "    try:",
        '        print(name, "->", call(layer))',
        "    except Exception as err:  # what JAX raises for this class",
        '        print(name, "raised", type(err).__name__ + ":", str(err).splitlines()[0])',
    ]
    parts: list[Any] = []
    for part in registration.parts:
        parts += [part, "", ""]
    if registration.cls is Affine:
        parts += ["register_affine()", "", ""]
    return code(
        "import dataclasses\nimport functools\n\nimport jax\nimport jax.numpy as jnp\n\n\n",
        *parts,
        affine,
        "",
        "",
        layer_loss,
        "",
        "",
        make_layer,
        "",
        "",
        leaves_of,
        "",
        "",
        doubled,
        "",
        "",
        jitted,
        "",
        "",
        gradient,
        "",
        "",
        f"layer = make_layer({registration.cls.__name__})",
        'print("structure:", jax.tree.structure(layer))',
        *calls,
    )

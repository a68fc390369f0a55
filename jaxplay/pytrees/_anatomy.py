"""What JAX makes of a pytree: its nodes and leaves, flattened, mapped and put back together.

Why a module of its own: a pytree is JAX's word for "any nesting of registered containers with
arrays at the ends", and every transform takes one. The page shows a tree three ways, all read from
JAX itself rather than from our own walk of Python types: the nodes as ``jax.tree.structure`` sees
them (so a registered class, ``None`` and an empty list show as JAX treats them), the leaves in the
order ``jax.tree.flatten`` gives them, and the result of :func:`tree_functions`, the code the page
runs and the Code Lab snippet shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxplay.article import code
from jaxplay.core import claims

#: Arrays up to this many elements are written out in full; larger ones as ``f32[4,8]``.
MAX_SHOWN_ELEMENTS = 8


def tree_functions(tree, fn):
    leaves, treedef = jax.tree.flatten(tree)
    mapped = jax.tree.map(fn, tree)
    positions = jax.tree.unflatten(treedef, list(range(len(leaves))))
    return leaves, treedef, mapped, positions


@dataclass(frozen=True)
class Node:
    """One node of a drawn pytree.

    Attributes:
        path: child positions from the root (``()`` for the root).
        key: the edge from the parent as JAX writes a key path (``['w']``, ``[0]``, ``.b``).
        kind: ``"container"`` (has children), ``"empty"`` (a node with no leaves below it:
            ``None``, ``[]``, ``()``, ``{}``) or ``"leaf"``.
        label: the node's type (``dict``, ``Dense``) or the leaf written short (``f32[3,4]``).
        leaf_index: the leaf's position in ``jax.tree.flatten``'s list, for leaves.
    """

    path: tuple[int, ...]
    key: str
    kind: str
    label: str
    leaf_index: int | None = None

    @property
    def depth(self) -> int:
        return len(self.path)


@dataclass(frozen=True)
class Anatomy:
    """A pytree as JAX sees it, and what :func:`tree_functions` returned for it.

    Attributes:
        nodes: every node, parents before children, children in flatten order.
        structure: ``str(jax.tree.structure(tree))`` (the ``PyTreeDef``).
        leaf_paths: the key path of each leaf, in flatten order.
        leaf_texts: each leaf written short, in flatten order.
        mapped: the mapped tree, written out.
        positions: ``unflatten(treedef, range(n))`` written out: each leaf's flatten position.
        fn_name: the function ``jax.tree.map`` applied.
        dict_orders: for each dict whose keys were not written in sorted order, its path and its
            keys as written and as flattened.
    """

    nodes: tuple[Node, ...]
    structure: str
    leaf_paths: tuple[str, ...]
    leaf_texts: tuple[str, ...]
    mapped: str
    positions: str
    fn_name: str
    dict_orders: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()

    @property
    def n_leaves(self) -> int:
        return len(self.leaf_paths)

    @property
    def n_containers(self) -> int:
        return sum(n.kind != "leaf" for n in self.nodes)

    @property
    def n_empty(self) -> int:
        """Nodes with no leaf below them (``None``, ``[]``, ``()``, ``{}``)."""
        return sum(n.kind == "empty" for n in self.nodes)


_DTYPE_PREFIXES = (("bfloat", "bf"), ("float", "f"), ("uint", "u"), ("int", "i"), ("complex", "c"))


def short_dtype(dtype: Any) -> str:
    """``float32`` as JAX writes it in a jaxpr: ``f32``; ``bool`` stays ``bool``."""
    name = str(jnp.dtype(dtype))
    for long, prefix in _DTYPE_PREFIXES:
        if name.startswith(long) and name[len(long) :].isdigit():
            return prefix + name[len(long) :]
    return name


def short(value: Any, values: bool = True) -> str:
    """A leaf or a small tree written compactly: small arrays in full (with ``values``), larger
    ones by dtype and shape (``f32[3,4]``)."""
    if isinstance(value, (jax.Array, np.ndarray)):
        name = short_dtype(value.dtype)
        shape = ",".join(str(d) for d in value.shape)
        if values and value.size <= MAX_SHOWN_ELEMENTS:
            body = " ".join(np.array2string(np.asarray(value), precision=3, separator=", ").split())
            return f"{name}[{shape}] {body}" if value.ndim else f"{name}[] {body}"
        return f"{name}[{shape}]"
    if isinstance(value, dict):
        inner = ", ".join(f"{k!r}: {short(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, list):
        return "[" + ", ".join(short(v) for v in value) + "]"
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        inner = ", ".join(short(v) for v in value)
        return "(" + inner + ("," if len(value) == 1 else "") + ")"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    if jax.tree.structure(value).num_leaves and not _is_leaf(value):
        children = [short(c) for c in _children(value)[1]]
        return f"{type(value).__name__}(" + ", ".join(children) + ")"
    return f"<{type(value).__name__} object>"


def _is_leaf(value: Any) -> bool:
    treedef = jax.tree.structure(value)
    return treedef.num_nodes == 1 and treedef.num_leaves == 1


def _children(value: Any) -> tuple[list[str], list[Any]]:
    """The keys (as JAX writes key paths) and the children of one node, in flatten order."""
    pairs, _ = jax.tree_util.tree_flatten_with_path(value, is_leaf=lambda x: x is not value)
    return [jax.tree_util.keystr(path) for path, _ in pairs], [child for _, child in pairs]


def _walk(value: Any, path: tuple[int, ...], key: str, out: list[Node], leaves: list[int]) -> None:
    treedef = jax.tree.structure(value)
    if _is_leaf(value):
        out.append(Node(path, key, "leaf", short(value, values=False), leaves[0]))
        leaves[0] += 1
        return
    kind_type = treedef.node_data()[0] if treedef.node_data() else type(value)
    kind = "container" if treedef.num_leaves else "empty"
    out.append(Node(path, key, kind, "None" if value is None else kind_type.__name__))
    keys, children = _children(value)
    for i, (child_key, child) in enumerate(zip(keys, children, strict=True)):
        _walk(child, (*path, i), child_key, out, leaves)


def _dict_orders(value: Any, where: str = "") -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """Every dict in ``value`` whose keys were written out of sorted order."""
    found = []
    if isinstance(value, dict):
        written = tuple(repr(k) for k in value)
        flattened = tuple(repr(k) for k in sorted(value))
        if written != flattened:
            found.append((where or "the root", written, flattened))
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return found
    for k, child in items:
        found += _dict_orders(child, f"{where}[{k!r}]")
    return found


@claims.states("pytrees.flatten_sorts_dict_keys")
def describe(tree: Any, fn: Callable[[Any], Any]) -> Anatomy:
    """Run :func:`tree_functions` on ``tree`` and describe the tree and its results."""
    leaves, treedef, mapped, positions = tree_functions(tree, fn)
    nodes: list[Node] = []
    _walk(tree, (), "", nodes, [0])
    paths, _ = jax.tree_util.tree_flatten_with_path(tree)
    return Anatomy(
        nodes=tuple(nodes),
        structure=str(treedef),
        leaf_paths=tuple(jax.tree_util.keystr(p) for p, _ in paths),
        leaf_texts=tuple(short(leaf) for leaf in leaves),
        mapped=short(mapped),
        positions=short(positions),
        fn_name=fn.__name__,
        dict_orders=tuple(_dict_orders(tree)),
    )


def snippet(tree_source: str | Callable[[], Any], fn: Callable[[Any], Any]) -> str:
    """A Code Lab cell that builds the tree and runs :func:`tree_functions` on it.

    Arguments:
        tree_source: an example builder (a live function), or a literal as typed (already
            checked by :func:`~jaxplay.pytrees._examples.parse_literal`).
        fn: the function mapped over the leaves.
    """
    if callable(tree_source):
        build = [tree_source, "", "", f"tree = {tree_source.__name__}()"]
    else:
        build = [f"tree = {tree_source}"]
    return code(
        "import jax\nimport jax.numpy as jnp\n\n\n",
        fn,
        "",
        "",
        tree_functions,
        "",
        "",
        *build,
        f"leaves, treedef, mapped, positions = tree_functions(tree, {fn.__name__})",
        'print("structure:", treedef)',
        'print("leaves:", len(leaves), leaves)',
        'print("mapped:", mapped)',
        'print("positions:", positions)',
    )

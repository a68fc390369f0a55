"""Keys derived from a seed: trees of ``split`` and ``fold_in``, chained against wide derivation.

Why: every random number comes from an explicit key, and keys come from keys. The tree shows what
``split`` and ``fold_in`` derive (with one vmapped call per level, as a real program would), and
the article's chain of ``key, subkey = split(key)`` is compared with one wide call, in keys and in
time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import jax.random as jrandom
import numpy as np
from jax import jit, vmap

from jaxplay.core import timing
from jaxplay.prng._seeds import MAX_FOLD_DATA, MAX_TREE_BRANCHING, MAX_TREE_DEPTH, MAX_TREE_NODES


@dataclass(frozen=True)
class KeyNode:
    """One key of a derivation tree.

    Attributes:
        path: child indices from the root (``()`` is the root, ``(1, 0)`` the first child of the
            root's second child).
        label: how the key was made, e.g. ``"split[1] → split[0]"`` or ``"fold_in(7)"``.
        data: the key's uint32 words.
    """

    path: tuple[int, ...]
    label: str
    data: tuple[int, ...]

    @property
    def depth(self) -> int:
        return len(self.path)

    @property
    def name(self) -> str:
        """The path as text (``"root"``, ``"1"``, ``"1.0"``): stable ids for widgets and links."""
        return ".".join(map(str, self.path)) if self.path else "root"


@dataclass(frozen=True)
class KeyTree:
    """Every key of a tree derived from one seed, breadth first (the root first)."""

    seed: int
    depth: int
    branching: int
    method: str
    fold_data: int
    nodes: tuple[KeyNode, ...]

    def node(self, name: str) -> KeyNode:
        """The node called ``name`` (see :attr:`KeyNode.name`); ``KeyError`` if none is."""
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    @property
    def unique_keys(self) -> int:
        return len({n.data for n in self.nodes})


def tree_size(depth: int, branching: int) -> int:
    """Number of keys in a full tree: 1 + b + b**2 + ... + b**depth."""
    return sum(branching**d for d in range(depth + 1))


def max_depth(branching: int) -> int:
    """The deepest tree with this branching that stays within :data:`MAX_TREE_NODES` keys (and
    :data:`MAX_TREE_DEPTH`): the page offers exactly the depths :func:`key_tree` accepts."""
    depth = 0
    while depth < MAX_TREE_DEPTH and tree_size(depth + 1, branching) <= MAX_TREE_NODES:
        depth += 1
    return depth


def max_fold_data(branching: int) -> int:
    """The largest first ``fold_in`` datum: the ``branching`` consecutive data must fit a uint32."""
    return MAX_FOLD_DATA - branching + 1


def _check_tree(depth: int, branching: int, method: str, fold_data: int) -> None:
    if method not in ("split", "fold_in"):
        raise ValueError(f"method must be 'split' or 'fold_in', not {method!r}")
    if not 0 <= depth <= MAX_TREE_DEPTH:
        raise ValueError(f"Depth {depth} is outside 0..{MAX_TREE_DEPTH}.")
    if not 1 <= branching <= MAX_TREE_BRANCHING:
        raise ValueError(f"Branching {branching} is outside 1..{MAX_TREE_BRANCHING}.")
    if tree_size(depth, branching) > MAX_TREE_NODES:
        raise ValueError(
            f"Depth {depth} with branching {branching} makes {tree_size(depth, branching)} keys; "
            f"the limit is {MAX_TREE_NODES} so the tree stays readable."
        )
    if not 0 <= fold_data <= max_fold_data(branching):
        raise ValueError(
            f"fold_in data must lie in 0..{max_fold_data(branching)} (a uint32, leaving room "
            f"for {branching} consecutive values)."
        )


def key_tree(
    seed: int, depth: int, branching: int, method: str = "split", fold_data: int = 0
) -> KeyTree:
    """Derive a tree of keys from ``jax.random.key(seed)``.

    Each node's children are ``split(key, branching)`` (method ``"split"``) or
    ``fold_in(key, fold_data + i)`` for ``i < branching`` (method ``"fold_in"``). A level is made
    with one vmapped call, which is how a real program would derive many keys at once.

    Raises:
        ValueError: for a method, depth, branching or datum outside the limits (message names it).
    """
    _check_tree(depth, branching, method, fold_data)
    level = jrandom.key(seed)[None]
    if method == "split":
        derive = vmap(lambda k: jrandom.split(k, branching))
    else:
        data = jnp.arange(branching, dtype=jnp.uint32) + jnp.uint32(fold_data)
        derive = vmap(lambda k: vmap(lambda d: jrandom.fold_in(k, d))(data))
    root = KeyNode((), "root", tuple(int(w) for w in np.asarray(jrandom.key_data(level[0]))))
    nodes = [root]
    parents = [root]
    for _ in range(depth):
        derived = derive(level)
        children = np.asarray(jrandom.key_data(derived))  # (parents, branching, words)
        level = derived.reshape(-1)
        next_parents = []
        for p, parent in enumerate(parents):
            for i in range(branching):
                step = f"split[{i}]" if method == "split" else f"fold_in({fold_data + i})"
                label = step if parent is root else f"{parent.label} → {step}"
                node = KeyNode((*parent.path, i), label, tuple(int(w) for w in children[p, i]))
                next_parents.append(node)
        nodes.extend(next_parents)
        parents = next_parents
    return KeyTree(seed, depth, branching, method, fold_data, tuple(nodes))


def node_samples(data: tuple[int, ...], n: int = 8) -> np.ndarray:
    """``normal(key, (n,))`` for the threefry key with these words (via ``wrap_key_data``)."""
    key = jrandom.wrap_key_data(jnp.asarray(data, dtype=jnp.uint32))
    return np.asarray(jrandom.normal(key, (n,)))


def chained_keys(key: jax.Array, n: int) -> jax.Array:
    """The article's pattern: ``key, subkey = split(key)`` n times; the subkeys, in order."""
    subkeys = []
    for _ in range(n):
        key, subkey = jrandom.split(key)
        subkeys.append(subkey)
    return jnp.stack(subkeys)


def wide_split_keys(key: jax.Array, n: int) -> jax.Array:
    """One ``split(key, n)``: n keys from a single parallel call (JAX's recommendation)."""
    return jrandom.split(key, n)


def wide_fold_in_keys(key: jax.Array, n: int) -> jax.Array:
    """``fold_in(key, i)`` for i < n: key number i without deriving the others."""
    return vmap(lambda i: jrandom.fold_in(key, i))(jnp.arange(n, dtype=jnp.uint32))


DERIVATIONS: dict[str, Callable[[jax.Array, int], jax.Array]] = {
    "chained split": chained_keys,
    "split(key, n)": wide_split_keys,
    "fold_in(key, i)": wide_fold_in_keys,
}


@dataclass(frozen=True)
class Derivations:
    """n keys from one seed by each scheme of :data:`DERIVATIONS` (key data, shape (n, 2))."""

    seed: int
    keys: dict[str, np.ndarray]

    def unique(self, scheme: str) -> int:
        return len({tuple(row) for row in self.keys[scheme]})

    def shared(self, a: str, b: str) -> int:
        """How many keys scheme ``a`` and scheme ``b`` both produce (mixing them reuses keys)."""
        return len({tuple(r) for r in self.keys[a]} & {tuple(r) for r in self.keys[b]})


def derive_keys(seed: int, n: int) -> Derivations:
    """Key data of n keys from ``jax.random.key(seed)`` by chained and by wide derivation."""
    if not 1 <= n <= 256:
        raise ValueError(f"Derive 1..256 keys, not {n}.")
    root = jrandom.key(seed)
    return Derivations(
        seed, {name: np.asarray(jrandom.key_data(fn(root, n))) for name, fn in DERIVATIONS.items()}
    )


def _chained_scan(key: jax.Array, n: int) -> jax.Array:
    def step(k: jax.Array, _: None) -> tuple[jax.Array, jax.Array]:
        k, sub = jrandom.split(k)
        return k, sub

    return jax.lax.scan(step, key, None, length=n)[1]


@dataclass(frozen=True)
class SchemeTiming:
    """Time to derive ``n`` keys by one scheme, jitted; chained runs as a ``lax.scan`` loop."""

    scheme: str
    n: int
    timing: timing.Timing


def time_derivations(n: int = 1000, budget_s: float = 0.3) -> tuple[SchemeTiming, ...]:
    """Median time of deriving n keys: a sequential chain of splits vs one wide call.

    All three are jitted, so the difference is the dependency chain (n sequential splits) against
    one vectorised op, not Python dispatch.
    """
    if not 1 <= n <= 100_000:
        raise ValueError(f"Time 1..100000 keys, not {n}.")
    key = jrandom.key(0)
    fns = {
        "chained split": jit(partial(_chained_scan, n=n)),
        "split(key, n)": jit(partial(wide_split_keys, n=n)),
        "fold_in(key, i)": jit(partial(wide_fold_in_keys, n=n)),
    }
    return tuple(
        SchemeTiming(name, n, timing.measure(fn, key, budget_s=budget_s))
        for name, fn in fns.items()
    )

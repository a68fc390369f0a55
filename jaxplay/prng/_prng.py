"""JAX's explicit PRNG, made visible: seeds, keys, splits, implementations and their pitfalls.

Section 5 of the article creates ``PRNGKey(1765663200070)``, splits it, draws 1000 parallel streams
with ``vmap`` and threads a key through a training step. Every one of those steps hides something a
learner trips over: a seed larger than 32 bits is silently truncated unless x64 is on, one key used
twice gives the same "random" numbers, ``@jit @vmap`` maps the parameters too, and a training loop
that forgets the returned key draws the same noise every step. This module computes each of those
facts with JAX itself and returns plain data (ints, tuples, numpy arrays) for the page and tests.

Nothing here changes a process-wide JAX setting: the x64 comparison and the key-reuse checker use
JAX's thread-local config contexts, so other visitors of a multi-session server are not affected.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import jax.random as jrandom
import numpy as np
from jax import jit, vmap

from jaxplay.core import timing

#: The article's seed (section 5): 41 bits, so x64 decides what it means.
ARTICLE_SEED = 1765663200070
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
WORD = 0xFFFFFFFF
#: A typed seed longer than this is refused before anything is computed.
MAX_SEED_DIGITS = 40
#: The PRNG implementations JAX ships, by the name ``jax.random.key(seed, impl=...)`` takes.
IMPLS: tuple[str, ...] = ("threefry2x32", "rbg", "unsafe_rbg")
MAX_TREE_NODES = 121
MAX_TREE_DEPTH = 6
MAX_TREE_BRANCHING = 4
MAX_FOLD_DATA = WORD
MAX_PARALLEL_VALUES = 1_000_000
MAX_TIMED_NUMBERS = 10_000_000


# ---------------------------------------------------------------------------------------------
# Seeds
# ---------------------------------------------------------------------------------------------


class SeedError(ValueError):
    """A typed seed that is not a whole number (or absurdly long); ``message`` says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


_INT_RE = re.compile(r"[+-]?\d+(?:_\d+)*")


def parse_seed(text: str) -> int:
    """The integer a visitor typed, parsed strictly.

    Only whole numbers in decimal are seeds (``42``, ``-1``, ``1_765_663_200_070``): ``1.5``,
    ``1e12``, ``0x2a`` or ``abc`` are refused with a message saying why, rather than rounded or
    guessed, because a silently changed seed is exactly the bug this page is about. Range is
    *not* checked here: :func:`describe_seed` reports what JAX does with out-of-range seeds.

    Raises:
        SeedError: for anything that is not a decimal integer of at most 40 digits.
    """
    s = text.strip()
    if not s:
        raise SeedError("Type a seed: a whole number such as 42.")
    if _INT_RE.fullmatch(s) is None:
        hint = ""
        if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+(\.\d*)?[eE][+-]?\d+)", s):
            hint = " JAX seeds are integers; write the number out in digits."
        elif s.lower().startswith(("0x", "-0x", "+0x")):
            hint = " Write it in decimal."
        raise SeedError(f"`{s[:MAX_SEED_DIGITS]}` is not a whole number.{hint}")
    digits = s.lstrip("+-").replace("_", "")
    if len(digits) > MAX_SEED_DIGITS:
        raise SeedError(
            f"The seed has {len(digits)} digits; the limit is {MAX_SEED_DIGITS} "
            f"(and JAX itself accepts only seeds from -2**63 to 2**63 - 1)."
        )
    return int(s)


def threefry_seed_words(seed: int, x64: bool) -> tuple[int, int]:
    """The two uint32 words of ``PRNGKey(seed)`` by threefry's seeding rule, without JAX.

    JAX converts the seed to a signed integer of the default width, then stores
    ``[seed >> 32, seed & 0xFFFFFFFF]`` (two's complement, logical shift). With x64 off the
    integer is 32-bit, so the high word is always 0 and only the low 32 bits survive.
    The page shows this rule; the tests check it against JAX.

    Raises:
        OverflowError: for seeds outside the signed 64-bit range, as JAX does.
    """
    if not INT64_MIN <= seed <= INT64_MAX:
        raise OverflowError(f"seed {seed} does not fit in a signed 64-bit integer")
    if x64:
        return ((seed >> 32) & WORD, seed & WORD)
    return (0, seed & WORD)


@dataclass(frozen=True)
class SeedOutcome:
    """What ``jax.random.PRNGKey(seed)`` gave under one x64 setting.

    Attributes:
        x64: the ``jax_enable_x64`` setting it ran under.
        key_data: the key's uint32 words, or None if JAX refused the seed.
        error: ``"OverflowError: ..."`` when JAX refused the seed, else None.
    """

    x64: bool
    key_data: tuple[int, ...] | None
    error: str | None


@dataclass(frozen=True)
class SeedInfo:
    """A seed's keys with x64 off and on, and what a visitor should know about them."""

    seed: int
    x32: SeedOutcome
    x64: SeedOutcome

    @property
    def in_range(self) -> bool:
        """JAX accepted the seed under both settings."""
        return self.x32.error is None and self.x64.error is None

    @property
    def differs(self) -> bool:
        """The same seed gives different keys (so different streams) depending on x64."""
        return self.in_range and self.x32.key_data != self.x64.key_data

    @property
    def x32_twin(self) -> int | None:
        """The seed in 0..2**32-1 whose key equals this one's with x64 off, if not itself.

        With x64 off only ``seed mod 2**32`` matters, so e.g. 1765663200070 and 431641414 (and -1
        and 4294967295) collide: two "different" experiments share one random stream.
        """
        if not self.in_range or 0 <= self.seed <= WORD:
            return None
        return self.seed & WORD

    @property
    def notes(self) -> tuple[str, ...]:
        """Plain-words explanation of what JAX did with this seed."""
        s = self.seed
        if not self.in_range:
            err = self.x64.error or self.x32.error
            return (
                f"JAX converts a seed to a signed 64-bit integer, and {s} does not fit "
                f"(the range is -2**63 to 2**63 - 1): `PRNGKey({s})` raises `{err}` with x64 "
                "off and on. Reduce it yourself first, e.g. `seed % 2**63`, or derive a key from "
                "two smaller numbers with `fold_in(key(a), b)`.",
            )
        notes: list[str] = []
        if s < 0:
            notes.append(
                "A negative seed is taken in two's complement: with x64 on, the high word is "
                f"the sign extension ({self.x64.key_data[0]:#010x})."  # type: ignore[index]
            )
        if self.differs:
            notes.append(
                f"With x64 off JAX keeps only the low 32 bits (seed mod 2**32 = {s & WORD}) and "
                f"the high word is 0; with x64 on the high 32 bits ({(s >> 32) & WORD}) become "
                "the first word. Same seed, two different random streams: results change when "
                "someone flips `jax_enable_x64`."
            )
            notes.append(
                f"With x64 off, seed {s} collides with seed {self.x32_twin}: both give key "
                f"{list(self.x32.key_data or ())}."
            )
        else:
            notes.append(
                "The seed fits in 32 bits, so x64 off and on give the same key: "
                f"{list(self.x64.key_data or ())}."
            )
        return tuple(notes)


def _key_words(seed: int, x64: bool) -> SeedOutcome:
    # jax.enable_x64 is a thread-local config context: only this thread sees the change.
    with jax.enable_x64(x64):
        try:
            data = np.asarray(jrandom.PRNGKey(seed))
        except OverflowError as err:
            return SeedOutcome(x64, None, f"OverflowError: {err}")
    return SeedOutcome(x64, tuple(int(w) for w in data), None)


def describe_seed(seed: int) -> SeedInfo:
    """The key data JAX derives from ``seed`` with x64 off and with x64 on.

    Both are computed by JAX itself under thread-local ``jax.enable_x64(...)`` contexts, so the
    server's global setting (and every other visitor's computation) is left alone.
    """
    return SeedInfo(seed, _key_words(seed, False), _key_words(seed, True))


def key_hex(data: tuple[int, ...] | np.ndarray, short: bool = False) -> str:
    """Key words as hex: ``"0000019b 19ba5346"``, or ``"019b·5346"`` (low 4 digits) when short."""
    words = [int(w) for w in np.asarray(data).reshape(-1)]
    if short:
        return "·".join(f"{w & 0xFFFF:04x}" for w in words)
    return " ".join(f"{w:08x}" for w in words)


# ---------------------------------------------------------------------------------------------
# Key trees and derivation schemes
# ---------------------------------------------------------------------------------------------


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
    if not 0 <= fold_data <= MAX_FOLD_DATA - branching + 1:
        raise ValueError(
            f"fold_in data must lie in 0..{MAX_FOLD_DATA - branching + 1} (a uint32, leaving room "
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


# ---------------------------------------------------------------------------------------------
# Typed keys, legacy keys and PRNG implementations
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyForm:
    """One way of holding a key: what it looks like and what it draws.

    Attributes:
        code: the expression that made it.
        dtype: its dtype as JAX prints it (``uint32``, ``key<fry>``).
        shape: its shape (legacy keys carry the words as a trailing axis; typed keys are scalars).
        data: its key words.
        samples: ``normal(key, (4,))``.
    """

    code: str
    dtype: str
    shape: tuple[int, ...]
    data: tuple[int, ...]
    samples: tuple[float, ...]


def _form(code: str, key: jax.Array) -> KeyForm:
    data = jrandom.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    return KeyForm(
        code,
        str(key.dtype),
        tuple(key.shape),
        tuple(int(w) for w in np.asarray(data).reshape(-1)),
        tuple(float(v) for v in np.asarray(jrandom.normal(key, (4,)))),
    )


def key_forms(seed: int) -> tuple[KeyForm, ...]:
    """Legacy ``PRNGKey`` vs typed ``key`` for one seed, and the conversions between them.

    All four draw the same numbers: a typed key is the same words with the implementation
    attached to the dtype, so it cannot be mistaken for integers (no ``key + 1``).
    """
    legacy = jrandom.PRNGKey(seed)
    typed = jrandom.key(seed)
    return (
        _form(f"jax.random.PRNGKey({seed})", legacy),
        _form(f"jax.random.key({seed})", typed),
        _form("jax.random.key_data(typed)", jrandom.key_data(typed)),
        _form("jax.random.wrap_key_data(legacy)", jrandom.wrap_key_data(legacy)),
    )


@dataclass(frozen=True)
class ImplInfo:
    """One PRNG implementation seeded with the same integer.

    Attributes:
        impl: its name (``threefry2x32``, ``rbg``, ``unsafe_rbg``).
        dtype: the typed key's dtype (``key<fry>``, ``key<rbg>``, ``key<urbg>``).
        data_shape: the shape of its key data (the words it carries).
        data: the key words.
        samples: ``normal(key, (4,))``.
        split_data: the words of ``split(key)[0]``.
    """

    impl: str
    dtype: str
    data_shape: tuple[int, ...]
    data: tuple[int, ...]
    samples: tuple[float, ...]
    split_data: tuple[int, ...]


def impl_infos(seed: int) -> tuple[ImplInfo, ...]:
    """The same seed under every implementation of :data:`IMPLS`."""
    infos = []
    for impl in IMPLS:
        key = jrandom.key(seed, impl=impl)
        data = np.asarray(jrandom.key_data(key))
        infos.append(
            ImplInfo(
                impl,
                str(key.dtype),
                tuple(data.shape),
                tuple(int(w) for w in data),
                tuple(float(v) for v in np.asarray(jrandom.normal(key, (4,)))),
                tuple(int(w) for w in np.asarray(jrandom.key_data(jrandom.split(key)[0]))),
            )
        )
    return tuple(infos)


@dataclass(frozen=True)
class ImplTiming:
    """Time to draw ``n`` normal numbers from one implementation (jitted, on ``device``)."""

    impl: str
    n: int
    device: str
    timing: timing.Timing


def _draw(key: jax.Array, n: int) -> jax.Array:
    return jrandom.normal(key, (n,))


def time_impls(
    n: int, budget_s: float = 0.5, on_step: Callable[[str], None] | None = None
) -> tuple[ImplTiming, ...]:
    """Steady-state time of ``jit(normal)(key, (n,))`` for each implementation.

    Arguments:
        n: numbers per draw (at most :data:`MAX_TIMED_NUMBERS`).
        budget_s: sampling time per implementation (see :func:`jaxplay.core.timing.measure`).
        on_step: called with each implementation's name before it is timed (for progress).
    """
    if not 1 <= n <= MAX_TIMED_NUMBERS:
        raise ValueError(f"Draw 1..{MAX_TIMED_NUMBERS:,} numbers, not {n:,}.")
    device = jax.devices()[0]
    kind = device.device_kind
    where = device.platform if kind.lower() == device.platform else f"{device.platform} ({kind})"
    rows = []
    for impl in IMPLS:
        if on_step is not None:
            on_step(impl)
        fn = jit(partial(_draw, n=n))
        t = timing.measure(fn, jrandom.key(0, impl=impl), budget_s=budget_s)
        rows.append(ImplTiming(impl, n, where, t))
    return tuple(rows)


# ---------------------------------------------------------------------------------------------
# Parallel streams (the article's 1000 keys + vmap)
# ---------------------------------------------------------------------------------------------


def article_parallel(seed: int, n_keys: int, n_per_key: int) -> jax.Array:
    """The article's code: split the key, then ``vmap(normal)`` over ``split(key, n_keys)``."""
    key = jrandom.PRNGKey(seed)
    key, subkey1, subkey2 = jrandom.split(key, 3)
    keys = jrandom.split(key, n_keys)
    return vmap(lambda k: jrandom.normal(k, (n_per_key,)))(keys)


@dataclass(frozen=True)
class ParallelStats:
    """Samples of parallel streams (one row per key) and simple checks of their quality.

    Attributes:
        samples: shape (n_keys, n_per_key).
        corr: Pearson correlation between the first ``n_streams`` rows.
        band: ``1.96 / sqrt(n_per_key)``: independent streams' correlations fall inside ±band
            about 95% of the time.
    """

    samples: np.ndarray
    corr: np.ndarray
    band: float

    @property
    def mean(self) -> float:
        return float(self.samples.mean())

    @property
    def std(self) -> float:
        return float(self.samples.std())

    @property
    def skewness(self) -> float:
        z = (self.samples - self.samples.mean()) / self.samples.std()
        return float((z**3).mean())

    @property
    def excess_kurtosis(self) -> float:
        z = (self.samples - self.samples.mean()) / self.samples.std()
        return float((z**4).mean() - 3.0)

    @property
    def off_diagonal(self) -> np.ndarray:
        m = self.corr.shape[0]
        return self.corr[~np.eye(m, dtype=bool)]

    @property
    def within_band(self) -> float:
        """Fraction of off-diagonal correlations inside ±band (about 0.95 if independent)."""
        off = self.off_diagonal
        return float(np.mean(np.abs(off) <= self.band)) if off.size else 1.0


def parallel_stats(
    seed: int, n_keys: int = 1000, n_per_key: int = 10, n_streams: int = 8, reuse: bool = False
) -> ParallelStats:
    """Run :func:`article_parallel` and measure its streams.

    With ``reuse=True`` every stream gets the *same* key instead, the mistake the split prevents:
    all rows are identical and every correlation is 1.
    """
    if n_keys < 2 or n_per_key < 2 or n_keys * n_per_key > MAX_PARALLEL_VALUES:
        raise ValueError(
            f"Use at least 2 keys and 2 samples per key, and at most {MAX_PARALLEL_VALUES:,} "
            f"numbers in all (asked for {n_keys * n_per_key:,})."
        )
    if reuse:
        key = jrandom.PRNGKey(seed)
        samples = vmap(lambda k: jrandom.normal(k, (n_per_key,)))(
            jnp.broadcast_to(key, (n_keys, *key.shape))
        )
    else:
        samples = article_parallel(seed, n_keys, n_per_key)
    x = np.asarray(samples, dtype=np.float64)
    m = max(2, min(n_streams, n_keys))
    return ParallelStats(x, np.corrcoef(x[:m]), 1.96 / np.sqrt(n_per_key))


# ---------------------------------------------------------------------------------------------
# Pitfalls
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReuseDemo:
    """Two draws with one key (identical) and a draw with each half of a split (different)."""

    first: np.ndarray
    again: np.ndarray
    split_a: np.ndarray
    split_b: np.ndarray

    @property
    def identical(self) -> bool:
        return bool(np.array_equal(self.first, self.again))


def reuse_demo(seed: int, n: int = 5) -> ReuseDemo:
    """``normal(key)`` twice vs ``normal`` on each key of ``split(key)``."""
    key = jrandom.key(seed)
    first = jrandom.normal(key, (n,))
    again = jrandom.normal(key, (n,))  # the same key again: the same numbers
    a, b = jrandom.split(key)
    return ReuseDemo(
        np.asarray(first),
        np.asarray(again),
        np.asarray(jrandom.normal(a, (n,))),
        np.asarray(jrandom.normal(b, (n,))),
    )


def key_reuse_source(seed: int) -> str:
    """A program that reuses a key with JAX's key-reuse checker on (run it in the sandbox)."""
    return (
        "import jax\n"
        'jax.config.update("jax_debug_key_reuse", True)\n'
        "\n"
        f"key = jax.random.key({int(seed)})\n"
        "a = jax.random.normal(key, (3,))\n"
        'print("first draw:", a)\n'
        "b = jax.random.normal(key, (3,))  # the same key again\n"
        'print("second draw:", b)\n'
    )


#: The line of :func:`key_reuse_source` the checker stops at (the second draw).
KEY_REUSE_LINE = 7


@dataclass(frozen=True)
class CheckerOutcome:
    """What the key-reuse checker did with :func:`key_reuse_source`.

    Attributes:
        raised: whether the program stopped with an error.
        exc_type: the exception's type name (``KeyReuseError``), if it raised.
        message: the first line of its message.
        line: the program's line that raised, when known.
        stdout: what the program printed before it stopped.
        where: ``"sandbox"`` or ``"in-process"``.
    """

    raised: bool
    exc_type: str | None
    message: str | None
    line: int | None
    stdout: str
    where: str


def check_key_reuse_in_process(seed: int) -> CheckerOutcome:
    """The checker on the same program as :func:`key_reuse_source`, run in this process.

    Uses the thread-local ``jax.debug_key_reuse(True)`` context, so no other thread's setting
    changes. Tests use it to prove the checker fires without a sandbox.
    """
    printed = []
    with jax.debug_key_reuse(True):
        key = jrandom.key(seed)
        printed.append(f"first draw: {jrandom.normal(key, (3,))}")
        try:
            jrandom.normal(key, (3,))
        except Exception as err:  # KeyReuseError lives in jax.errors; report any type honestly
            msg = str(err).splitlines()[0]
            return CheckerOutcome(
                True, type(err).__name__, msg, KEY_REUSE_LINE, "\n".join(printed), "in-process"
            )
    return CheckerOutcome(False, None, None, None, "\n".join(printed), "in-process")


def check_key_reuse_sandboxed(
    seed: int,
    timeout_s: float = 30.0,
    visitor: str | None = None,
    on_queue: Callable[[int], None] | None = None,
) -> CheckerOutcome:
    """Run :func:`key_reuse_source` in the sandboxed runner, as a visitor's own code would run.

    The checker is a process-wide flag there (``jax.config.update``) in a single-use worker, so
    nothing leaks into the server. If the runner cannot run it (a public server without
    bubblewrap refuses all code, a timeout on an overloaded machine), the same program runs
    in-process under the thread-local :func:`check_key_reuse_in_process` and ``where`` says why.
    """
    from jaxplay import sandbox as runner

    result = runner.run_code(
        key_reuse_source(seed), timeout_s=timeout_s, visitor=visitor, on_queue=on_queue
    )
    err = result.error
    if result.ok:
        return CheckerOutcome(False, None, None, None, result.stdout, "sandbox")
    if err is not None and err.kind == "exception":
        message = err.message.splitlines()[0] if err.message else ""
        return CheckerOutcome(True, err.exc_type, message, err.line, result.stdout, "sandbox")
    fallback = check_key_reuse_in_process(seed)
    why = f"{err.kind}: {err.message}" if err is not None else "no result"
    return CheckerOutcome(
        fallback.raised,
        fallback.exc_type,
        fallback.message,
        fallback.line,
        fallback.stdout,
        f"in-process, because the sandbox did not run it ({why})",
    )


def _sample4(key: jax.Array) -> jax.Array:
    return jrandom.normal(key, (4,))


@dataclass(frozen=True)
class TransformAgreement:
    """``normal(key, (4,))`` for a few keys computed eagerly, under jit, vmap and jit(vmap)."""

    results: dict[str, np.ndarray]

    @property
    def max_abs_difference(self) -> float:
        base = self.results["eager"]
        return float(max(np.max(np.abs(v - base)) for v in self.results.values()))


def transform_agreement(seed: int, n_keys: int = 3) -> TransformAgreement:
    """The same keys give the same numbers whatever transform wraps the sampler."""
    keys = jrandom.split(jrandom.key(seed), n_keys)
    jitted = jit(_sample4)
    results = {
        "eager": np.stack([np.asarray(_sample4(k)) for k in keys]),
        "jit": np.stack([np.asarray(jitted(k)) for k in keys]),
        "vmap": np.asarray(vmap(_sample4)(keys)),
        "jit(vmap)": np.asarray(jit(vmap(_sample4))(keys)),
    }
    return TransformAgreement(results)


@jit
@vmap
def stochastic_layer(params, x, key):
    """带有随机性的层，可并行处理 (the article's code, as written)"""
    W, b = params
    noise = jrandom.normal(key, b.shape) * 0.1
    return jnp.dot(W, x) + b + noise


@jit
@partial(vmap, in_axes=(None, 0, 0))
def stochastic_layer_fixed(params, x, key):
    """Per-sample noise and inputs; the parameters are shared (not mapped)."""
    W, b = params
    noise = jrandom.normal(key, b.shape) * 0.1
    return jnp.dot(W, x) + b + noise


@dataclass(frozen=True)
class LayerRun:
    """One call of a stochastic layer: the output shape, or the error it raised."""

    name: str
    shape: tuple[int, ...] | None
    error_type: str | None
    error: str | None
    output: np.ndarray | None


def stochastic_layer_runs(
    batch: int, n_in: int = 3, n_out: int = 4, seed: int = 0
) -> tuple[LayerRun, LayerRun]:
    """Call the article's ``stochastic_layer`` and the fixed one on a batch.

    The article's ``@vmap`` maps every argument over axis 0, the parameters too: with
    ``batch != n_out`` it fails (inconsistent mapped sizes); with ``batch == n_out`` it silently
    pairs example i with row i of W and gives shape (batch,) instead of (batch, n_out).
    """
    if not 1 <= batch <= 64 or not 1 <= n_in <= 64 or not 1 <= n_out <= 64:
        raise ValueError("batch, n_in and n_out must lie in 1..64")
    kw, kb, kx, kn = jrandom.split(jrandom.PRNGKey(seed), 4)
    params = (jrandom.normal(kw, (n_out, n_in)), jrandom.normal(kb, (n_out,)))
    xs = jrandom.normal(kx, (batch, n_in))
    keys = jrandom.split(kn, batch)
    runs = []
    for name, layer in (
        ("as written", stochastic_layer),
        ("in_axes=(None, 0, 0)", stochastic_layer_fixed),
    ):
        try:
            out = np.asarray(layer(params, xs, keys))
        except (ValueError, TypeError) as err:
            runs.append(LayerRun(name, None, type(err).__name__, str(err).strip(), None))
        else:
            runs.append(LayerRun(name, tuple(out.shape), None, None, out))
    return runs[0], runs[1]


# A tiny regression with dropout on the inputs: enough to show what the key does in training.
_N_EXAMPLES, _N_FEATURES, _KEEP, _LR = 64, 8, 0.5, 0.1


def dropout_loss(w: jax.Array, batch: tuple[jax.Array, jax.Array], key: jax.Array) -> jax.Array:
    """Squared error with inverted dropout on the inputs, the dropout mask drawn from ``key``."""
    X, y = batch
    mask = jrandom.bernoulli(key, _KEEP, X.shape)
    return jnp.mean((jnp.where(mask, X / _KEEP, 0.0) @ w - y) ** 2)


@jit
def training_step(w, batch, key):
    """The article's pattern: split, use the subkey, return the new key with the parameters."""
    key, subkey = jrandom.split(key)
    grads = jax.grad(dropout_loss)(w, batch, subkey)
    return w - _LR * grads, key, subkey


def train_threading_key(w, batch, key, steps):
    """Correct: the key returned by each step is the one the next step splits."""
    history = []
    for _ in range(steps):
        w, key, subkey = training_step(w, batch, key)
        history.append((w, subkey))
    return history


def train_dropping_key(w, batch, key, steps):
    """The bug: the returned key is thrown away, so every step splits the same key."""
    history = []
    for _ in range(steps):
        w, _, subkey = training_step(w, batch, key)
        history.append((w, subkey))
    return history


@dataclass(frozen=True)
class TrainingRun:
    """One training run: the dropout loss each step optimised, and the randomness it used.

    Attributes:
        name: ``"key threaded"`` or ``"key dropped"``.
        losses: per step, the dropout loss of the weights the step started from, under the
            step's own mask (what the step's gradient descended).
        masks: per step, the dropout mask (steps, examples, features); True keeps an input.
        subkeys: per step, the subkey's words.
    """

    name: str
    losses: np.ndarray
    masks: np.ndarray
    subkeys: np.ndarray

    @property
    def unique_subkeys(self) -> int:
        return len({tuple(r) for r in self.subkeys})

    @property
    def unique_masks(self) -> int:
        return len({m.tobytes() for m in self.masks})


def training_runs(seed: int, steps: int = 60) -> tuple[TrainingRun, TrainingRun]:
    """Train the same model from the same key with the key threaded and with the key dropped.

    With the key dropped every step splits the same key, so every step draws the same dropout
    mask: the "random" regulariser is one fixed corruption of the data, and the model fits that
    instead of dropout's average over masks.
    """
    if not 1 <= steps <= 500:
        raise ValueError(f"Train for 1..500 steps, not {steps}.")
    kx, kw, key = jrandom.split(jrandom.key(seed), 3)
    X = jrandom.normal(kx, (_N_EXAMPLES, _N_FEATURES))
    y = X @ jrandom.normal(kw, (_N_FEATURES,))
    runs = []
    for name, loop in (("key threaded", train_threading_key), ("key dropped", train_dropping_key)):
        history = loop(jnp.zeros(_N_FEATURES), (X, y), key, steps)
        starts = jnp.stack([jnp.zeros(_N_FEATURES)] + [w for w, _ in history[:-1]])
        subkeys = jnp.stack([k for _, k in history])
        losses = vmap(dropout_loss, in_axes=(0, None, 0))(starts, (X, y), subkeys)
        masks = vmap(lambda k: jrandom.bernoulli(k, _KEEP, X.shape))(subkeys)
        runs.append(
            TrainingRun(
                name,
                np.asarray(losses),
                np.asarray(masks),
                np.asarray(jrandom.key_data(subkeys)),
            )
        )
    return runs[0], runs[1]

"""Typed keys against legacy ``PRNGKey`` arrays, and JAX's PRNG implementations side by side.

Why: a legacy key is two uint32 words any code may mistake for data; a typed key carries its
implementation in its dtype. The same seed is shown in every form and under every implementation
this JAX registers (:data:`IMPLS`, read from JAX: ``threefry2x32`` and ``threefry4x32``,
``philox2x32`` and ``philox4x32``, ``rbg`` and ``unsafe_rbg`` in JAX 0.10), with the time each
takes to draw numbers. What the page says about them (``rbg`` and ``unsafe_rbg`` differ in
``split`` and ``fold_in``; ``vmap`` over rbg keys is not a map over them) is checked by the
``prng`` claims.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import jax.random as jrandom
import numpy as np
from jax import jit

from jaxplay.core import claims, timing
from jaxplay.core.i18n import _, ngettext
from jaxplay.prng._seeds import IMPLS, MAX_TIMED_NUMBERS


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
        fold_data: the words of ``fold_in(key, 1)``.
        vmap_exact: whether ``vmap(normal)`` over 3 split keys equals a loop over them.
    """

    impl: str
    dtype: str
    data_shape: tuple[int, ...]
    data: tuple[int, ...]
    samples: tuple[float, ...]
    split_data: tuple[int, ...]
    fold_data: tuple[int, ...] = ()
    vmap_exact: bool = True


def _key_data(key: jax.Array) -> tuple[int, ...]:
    return tuple(int(w) for w in np.asarray(jrandom.key_data(key)).reshape(-1))


def vmap_is_exact(key: jax.Array, n_keys: int = 3) -> bool:
    """Whether ``vmap(normal)`` over ``split(key, n_keys)`` equals a loop over the same keys."""
    mapped, looped = _mapped_and_looped(key, n_keys)
    return bool(np.array_equal(np.asarray(mapped), np.asarray(looped)))


@partial(jit, static_argnums=1)
def _mapped_and_looped(key: jax.Array, n_keys: int) -> tuple[jax.Array, jax.Array]:
    """Both draws in one program, jitted once at module level: one compile per implementation
    for the process. Defined inside :func:`vmap_is_exact` it was compiled again for every key,
    so every new seed on the page cost the server about 3 s of compiling."""
    keys = jrandom.split(key, n_keys)
    mapped = jax.vmap(lambda k: jrandom.normal(k, (4,)))(keys)
    looped = jnp.stack([jrandom.normal(keys[i], (4,)) for i in range(n_keys)])
    return mapped, looped


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
                _key_data(jrandom.split(key)[0]),
                _key_data(jrandom.fold_in(key, 1)),
                vmap_is_exact(key),
            )
        )
    return tuple(infos)


@claims.states("prng.same_key_same_numbers", "prng.portable", "prng.vmap_exact")
def intro(impls_tab: str) -> str:
    """The page's first paragraph: keys are explicit, and which implementations draw the same
    numbers under the transforms (``impls_tab``: the tab's label, where that is shown)."""
    return _(
        "JAX has no hidden random state: every random number comes from an explicit **key**. "
        "With the default implementation (threefry2x32) the same key gives the same numbers "
        "under `jit`, `vmap` or on another device; the experimental `rbg` and `unsafe_rbg` do "
        "not under `vmap` (see *{impls_tab}*). Start from the article's seed, then derive, "
        "inspect and misuse keys."
    ).format(impls_tab=impls_tab)


@claims.states("prng.registered_impls", "prng.rbg_derivation", "prng.vmap_exact", "prng.portable")
def explain_impls(infos: tuple[ImplInfo, ...]) -> str:
    """The caption under the implementations table: what differs, from the rows (Markdown)."""
    import jax as _jax

    by_name = {i.impl: i for i in infos}
    text = ngettext(
        "JAX {version} ships {n} implementation: {names} (`{default}` is the default).",
        "JAX {version} ships {n} implementations: {names} (`{default}` is the default).",
        len(infos),
    ).format(
        version=_jax.__version__,
        n=f"{len(infos):,}",
        names=_(", ").join(f"`{i.impl}`" for i in infos),
        default=infos[0].impl,
    )
    rbg, unsafe = by_name.get("rbg"), by_name.get("unsafe_rbg")
    if rbg and unsafe:
        differs = [
            name
            for name, a, b in (
                ("`split`", rbg.split_data, unsafe.split_data),
                ("`fold_in`", rbg.fold_data, unsafe.fold_data),
            )
            if a != b
        ]
        if rbg.samples == unsafe.samples:
            sentence = _(
                " `rbg` and `unsafe_rbg` draw with XLA's RngBitGenerator: from the same seed they "
                "give the same draws{differences} (`rbg` derives keys the threefry way, "
                "`unsafe_rbg` with RngBitGenerator too)."
            )
        else:
            sentence = _(
                " `rbg` and `unsafe_rbg` draw with XLA's RngBitGenerator: from the same seed they "
                "give different draws{differences} (`rbg` derives keys the threefry way, "
                "`unsafe_rbg` with RngBitGenerator too)."
            )
        differences = (
            _(", and differ in {what}").format(what=_and(differs))
            if differs
            else _(", and differ in nothing shown here")
        )
        text += claims.qualify("prng.rbg_derivation", sentence.format(differences=differences))
    inexact = [f"`{i.impl}`" for i in infos if not i.vmap_exact]
    if inexact:
        text += claims.qualify(
            "prng.vmap_exact",
            _(
                " Under `vmap` over a batch of keys, {names} give other numbers than a loop over "
                "the same keys (the batch is drawn from the first key); the others map exactly."
            ).format(names=_and(inexact)),
        )
    text += claims.qualify(
        "prng.portable",
        _(
            " JAX documents threefry and Philox as identical across CPU, GPU and TPU and across "
            "shardings; rbg and unsafe_rbg as identical across shardings only."
        ),
    )
    return text


def _and(items: list[str]) -> str:
    """``a and b`` (``a and b and c``) in the visitor's language; ``""`` for none."""
    if not items:
        return ""
    text = items[0]
    for item in items[1:]:
        text = _("{a} and {b}").format(a=text, b=item)
    return text


@dataclass(frozen=True)
class ImplTiming:
    """Time to draw ``n`` normal numbers from one implementation (jitted, on ``device``)."""

    impl: str
    n: int
    device: str
    timing: timing.Timing


def _draw(key: jax.Array, n: int) -> jax.Array:
    return jrandom.normal(key, (n,))


def time_impl(impl: str, n: int, budget_s: float = 0.5) -> ImplTiming:
    """Steady-state time of ``jit(normal)(key, (n,))`` for one implementation of :data:`IMPLS`.

    Raises:
        ValueError: an unknown implementation, or ``n`` outside 1..:data:`MAX_TIMED_NUMBERS`.
    """
    if impl not in IMPLS:
        raise ValueError(f"Unknown PRNG implementation {impl!r}; JAX ships {', '.join(IMPLS)}.")
    if not 1 <= n <= MAX_TIMED_NUMBERS:
        raise ValueError(f"Draw 1..{MAX_TIMED_NUMBERS:,} numbers, not {n:,}.")
    device = jax.devices()[0]
    kind = device.device_kind
    where = device.platform if kind.lower() == device.platform else f"{device.platform} ({kind})"
    fn = jit(partial(_draw, n=n))
    return ImplTiming(
        impl, n, where, timing.measure(fn, jrandom.key(0, impl=impl), budget_s=budget_s)
    )


def time_impls(n: int, budget_s: float = 0.5) -> tuple[ImplTiming, ...]:
    """:func:`time_impl` for each implementation of :data:`IMPLS`, in order.

    The page calls :func:`time_impl` per implementation (cached) and draws its progress between
    the calls; this is the same measurement in one call.
    """
    return tuple(time_impl(impl, n, budget_s) for impl in IMPLS)

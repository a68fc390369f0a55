"""Typed keys against legacy ``PRNGKey`` arrays, and JAX's PRNG implementations side by side.

Why: a legacy key is two uint32 words any code may mistake for data; a typed key carries its
implementation in its dtype. The same seed is shown in every form and under ``threefry2x32``,
``rbg`` and ``unsafe_rbg``, with the time each takes to draw numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import jax.random as jrandom
import numpy as np
from jax import jit

from jaxplay.core import timing
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

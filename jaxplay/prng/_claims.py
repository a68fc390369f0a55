"""What the PRNG page states about JAX, each with a check that asks JAX.

The implementations are JAX's own registry (not a list we keep); the seeding rule is compared with
the key words ``PRNGKey`` really returns under thread-local ``jax.enable_x64`` contexts; what
differs between implementations is compared with their keys and draws; what JAX only documents
(portability across backends, which this one machine cannot test) is read from JAX's own
``jax.random`` documentation table, so a JAX that changes it fails the claim.
"""

from __future__ import annotations

import re

import jax
import jax.random as jrandom
import numpy as np

from jaxplay.core import claims, jax_private
from jaxplay.core.i18n import N_
from jaxplay.prng import _impls, _pitfalls, _seeds

Verdict = claims.Verdict

#: The implementations whose ``vmap`` over keys is not a map (JAX's docs: the batch is drawn
#: from the first key).
INEXACT_UNDER_VMAP = ("rbg", "unsafe_rbg")


@claims.claim(
    "prng.registered_impls",
    N_(
        "The page lists every PRNG implementation this JAX registers (six in JAX 0.10: "
        "threefry2x32, threefry4x32, philox2x32, philox4x32, rbg, unsafe_rbg), the default first."
    ),
)
def _registered(_: None) -> Verdict:
    registry = jax_private.prng_impl_names()
    listed = set(_seeds.IMPLS)
    accepted = [
        name
        for name in _seeds.IMPLS
        if jax.eval_shape(lambda name=name: jrandom.key(0, impl=name)) is not None
    ]
    holds = (
        (registry is None or listed == set(registry))
        and set(_seeds.DOCUMENTED_IMPLS) <= listed
        and len(accepted) == len(_seeds.IMPLS)
        and _seeds.IMPLS[0] == str(jax.config.values["jax_default_prng_impl"])
    )
    return Verdict(holds, f"JAX registers {registry}; the page lists {_seeds.IMPLS}")


def _data(key: jax.Array) -> tuple[int, ...]:
    return tuple(int(w) for w in np.asarray(jrandom.key_data(key)).reshape(-1))


@claims.claim(
    "prng.rbg_derivation",
    N_(
        "rbg and unsafe_rbg seeded alike hold the same key words and draw the same numbers, and "
        "differ in split and in fold_in."
    ),
    cases=(0, 9, 1765663200070 & 0xFFFFFFFF),
)
def _rbg_derivation(seed: int) -> Verdict:
    @jax.jit
    def facts(seed: jax.Array) -> tuple[jax.Array, ...]:
        out = []
        for impl in ("rbg", "unsafe_rbg"):
            key = jrandom.key(seed, impl=impl)
            out += [
                jrandom.key_data(key),
                jrandom.normal(key, (4,)),
                jrandom.key_data(jrandom.split(key)[0]),
                jrandom.key_data(jrandom.fold_in(key, 1)),
            ]
        return tuple(out)

    got = [np.asarray(a) for a in facts(np.uint32(seed))]
    same_words, same_draws, split_same, fold_same = (
        bool(np.array_equal(got[i], got[i + 4])) for i in range(4)
    )
    holds = same_words and same_draws and not split_same and not fold_same
    return Verdict(
        holds,
        f"seed {seed}: same words {same_words}, same draws {same_draws}, same split "
        f"{split_same}, same fold_in {fold_same}",
    )


@claims.claim(
    "prng.vmap_exact",
    N_(
        "vmap of a sampler over a batch of keys equals a loop over the keys for threefry and "
        "Philox; for rbg and unsafe_rbg it does not: the batch is drawn from the first key."
    ),
    cases=_seeds.IMPLS,
)
def _vmap_exact(impl: str) -> Verdict:
    key = jrandom.key(3, impl=impl)
    exact = _impls.vmap_is_exact(key)
    if impl not in INEXACT_UNDER_VMAP:
        return Verdict(exact, f"{impl}: vmap equals the loop: {exact}")

    @jax.jit
    def both(key: jax.Array) -> tuple[jax.Array, jax.Array]:
        keys = jrandom.split(key, 3)
        return jax.vmap(lambda k: jrandom.normal(k, (4,)))(keys), jrandom.normal(keys[0], (3, 4))

    mapped, drawn = both(key)
    first = bool(np.array_equal(np.asarray(mapped), np.asarray(drawn)))
    return Verdict(not exact and first, f"{impl}: vmap equals the loop {exact}, first key {first}")


def _documented_rows() -> dict[str, set[str]]:
    """JAX's ``jax.random`` summary table (reStructuredText): property -> the columns it marks."""
    lines = (jrandom.__doc__ or "").splitlines()
    table = re.compile(r"^\s*=+(\s+=+){3,}\s*$")  # a table's border: several runs of "="
    rule = next((line for line in lines if table.match(line)), "")
    spans = [(m.start(), m.end()) for m in re.finditer(r"=+", rule)]
    rows: dict[str, set[str]] = {}
    if not spans:
        return rows
    names: list[str] = []
    for line in lines[lines.index(rule) + 1 :]:
        if not line.strip():
            break
        if table.match(line):
            continue
        wide = line.replace("✅", "✅ ")  # the table is aligned for a mark two columns wide
        cells = [wide[a:b].strip() for a, b in spans]
        if not names:
            names = cells[1:]
            continue
        rows[cells[0]] = {name for name, cell in zip(names, cells[1:], strict=True) if cell}
    return rows


@claims.claim(
    "prng.portable",
    N_(
        "JAX documents threefry and Philox as identical across CPU/GPU/TPU and across shardings, "
        "rbg and unsafe_rbg as identical across shardings only, and only threefry and Philox as "
        "exact under vmap over keys."
    ),
)
def _portable(_: None) -> Verdict:
    rows = _documented_rows()
    backends = rows.get("identical across CPU/GPU/TPU", set())
    shardings = rows.get("identical across shardings", set())
    vmap_rows = rows.get("exact ``jax.vmap`` over keys", set())
    portable = {"Threefry", "Threefry*", "Philox"}
    holds = (
        backends == portable
        and vmap_rows == portable
        and portable | {"rbg", "unsafe_rbg"} <= shardings
    )
    return Verdict(holds, f"JAX's table: backends {backends}, shardings {shardings}")


@claims.claim(
    "prng.threefry_seed_rule",
    N_(
        "PRNGKey(seed) holds [seed >>> 32, seed & 0xFFFFFFFF] of the seed as a signed integer of "
        "the default width: with x64 off only the low 32 bits survive (the high word is 0)."
    ),
    cases=(0, 42, -1, 2**32 + 5, -(2**40), _seeds.ARTICLE_SEED, _seeds.INT64_MAX),
)
def _seed_rule(seed: int) -> Verdict:
    info = _seeds.describe_seed(seed)
    ours = (_seeds.threefry_seed_words(seed, False), _seeds.threefry_seed_words(seed, True))
    jaxs = (info.x32.key_data, info.x64.key_data)
    return Verdict(ours == jaxs, f"seed {seed}: JAX's words {jaxs}, the rule's {ours}")


@claims.claim(
    "prng.unsigned_32_bit_seed_ignores_x64",
    N_(
        "A seed from 0 to 2**32 - 1 gives the same key with x64 off and on; one from -2**32 to "
        "-1 does not (its high word is 0 with x64 off, 0xffffffff with it on)."
    ),
    cases=(0, 42, 2**31 + 7, 2**32 - 1, _seeds.ARTICLE_SEED % 2**32, -1, -5, -(2**32)),
)
def _unsigned_seed(seed: int) -> Verdict:
    info = _seeds.describe_seed(seed)
    off, on = info.x32.key_data, info.x64.key_data  # None where JAX refused the seed
    if off is None or on is None or len(off) != 2 or len(on) != 2:
        return Verdict(False, f"seed {seed}: x64 off {off}, on {on}")
    holds = off == on if seed >= 0 else (off[0], on[0]) == (0, 0xFFFFFFFF) and off[1] == on[1]
    return Verdict(holds, f"seed {seed}: x64 off {off}, on {on}")


@claims.claim(
    "prng.x64_changes_default_draws",
    N_(
        "With such a seed the key is the same with x64 off and on, but the numbers drawn are "
        "not: with x64 on, `normal` draws float64 by default; with `dtype=jnp.float32` both "
        "modes draw the same numbers."
    ),
    cases=(_seeds.ARTICLE_SEED % 2**32, 42),
)
def _x64_draws(seed: int) -> Verdict:
    def draw(x64: bool, dtype: str | None) -> tuple[np.ndarray, np.ndarray]:
        # Thread-local, as in _seeds: only this thread sees the change.
        with jax.enable_x64(x64):
            key = jrandom.key(seed)
            shape = (3,)
            numbers = (
                jrandom.normal(key, shape)
                if dtype is None
                else jrandom.normal(key, shape, dtype=dtype)
            )
            return np.asarray(jrandom.key_data(key)), np.asarray(numbers, dtype=np.float64)

    (key_off, off), (key_on, on) = draw(False, None), draw(True, None)
    (_, off32), (_, on32) = draw(False, "float32"), draw(True, "float32")
    holds = (
        bool((key_off == key_on).all()) and not np.allclose(off, on) and bool((off32 == on32).all())
    )
    return Verdict(
        holds,
        f"seed {seed}: keys {key_off.tolist()} / {key_on.tolist()}; default draws {off} / {on}; "
        f"float32 draws {off32} / {on32}",
    )


@claims.claim(
    "prng.seed_range",
    N_("A seed outside the signed 64-bit range raises OverflowError with x64 off and on."),
    cases=(2**63, -(2**63) - 1),
)
def _seed_range(seed: int) -> Verdict:
    info = _seeds.describe_seed(seed)
    errors = (info.x32.error or "", info.x64.error or "")
    holds = all(e.startswith("OverflowError") for e in errors)
    return Verdict(holds, f"seed {seed}: {errors}")


@claims.claim(
    "prng.same_key_same_numbers",
    N_(
        "With the default implementation the same keys give the same numbers eagerly, under jit, "
        "vmap and jit(vmap)."
    ),
    cases=(6,),
)
def _same_numbers(seed: int) -> Verdict:
    agreement = _pitfalls.transform_agreement(seed)
    return Verdict(
        agreement.max_abs_difference == 0.0,
        f"seed {seed}: largest difference {agreement.max_abs_difference:g}",
    )

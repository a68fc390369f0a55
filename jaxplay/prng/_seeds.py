"""Seeds: what ``PRNGKey(seed)`` keeps of a number with x64 off and on.

Why: the article seeds with 1765663200070, which does not fit in 32 bits; with x64 off (JAX's
default) only the low 32 bits survive, so the same seed draws different numbers depending on a
global flag. JAX itself computes both keys here, under thread-local ``jax.enable_x64`` contexts, so
no other visitor's setting changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import jax
import jax.random as jrandom
import numpy as np

from jaxplay.core import claims, jax_private
from jaxplay.core.errors import InputError
from jaxplay.core.i18n import _
from jaxplay.core.markdown import code

#: The article's seed (section 5): 41 bits, so x64 decides what it means.
ARTICLE_SEED = 1765663200070
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
WORD = 0xFFFFFFFF
#: A typed seed longer than this is refused before anything is computed.
MAX_SEED_DIGITS = 40
#: Names JAX's documentation lists, tried one by one when JAX will not list its registry.
DOCUMENTED_IMPLS = (
    "threefry2x32",
    "threefry4x32",
    "philox2x32",
    "philox4x32",
    "rbg",
    "unsafe_rbg",
)


def registered_impls() -> tuple[str, ...]:
    """The PRNG implementations this JAX ships, read from JAX at import, the default first.

    From JAX's own registry where it says (:func:`jaxplay.core.jax_private.prng_impl_names`);
    otherwise the documented names that ``jax.random.key(0, impl=...)`` accepts.
    """
    names = jax_private.prng_impl_names()
    if names is None:
        names = []
        for name in DOCUMENTED_IMPLS:
            try:
                jrandom.key(0, impl=name)
            except (ValueError, TypeError):
                continue
            names.append(name)
    default = str(jax.config.values["jax_default_prng_impl"])
    return tuple(sorted(names, key=lambda name: name != default))  # stable: JAX's order


#: The PRNG implementations JAX ships, by the name ``jax.random.key(seed, impl=...)`` takes.
IMPLS: tuple[str, ...] = registered_impls()
MAX_TREE_NODES = 121
MAX_TREE_DEPTH = 6
MAX_TREE_BRANCHING = 4
MAX_FOLD_DATA = WORD
MAX_PARALLEL_VALUES = 1_000_000
MAX_TIMED_NUMBERS = 10_000_000


class SeedError(InputError):
    """A typed seed that is not a whole number (or absurdly long); ``message`` says why."""


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
        raise SeedError(_("Type a seed: a whole number such as 42."))
    if _INT_RE.fullmatch(s) is None:
        typed = repr(s[:MAX_SEED_DIGITS])
        if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+(\.\d*)?[eE][+-]?\d+)", s):
            message = _(
                "{typed} is not a whole number. JAX seeds are integers; write the number out in "
                "digits."
            )
        elif s.lower().startswith(("0x", "-0x", "+0x")):
            message = _("{typed} is not a whole number. Write it in decimal.")
        else:
            message = _("{typed} is not a whole number.")
        raise SeedError(message.format(typed=typed))
    digits = s.lstrip("+-").replace("_", "")
    if len(digits) > MAX_SEED_DIGITS:
        raise SeedError(
            _(
                "The seed has {digits} digits; the limit is {limit} (and JAX itself accepts only "
                "seeds from -2**63 to 2**63 - 1)."
            ).format(digits=len(digits), limit=MAX_SEED_DIGITS)
        )
    return int(s)


@claims.states("prng.threefry_seed_rule")
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
                _(
                    "JAX converts a seed to a signed 64-bit integer, and {seed} does not fit (the "
                    "range is `-2**63` to `2**63 - 1`): `PRNGKey({seed})` raises {error} with x64 "
                    "off and on. Reduce it yourself first, e.g. `seed % 2**63`, or derive a key "
                    "from two smaller numbers with `fold_in(key(a), b)`."
                ).format(seed=s, error=code(err)),
            )
        notes: list[str] = []
        if s < 0:
            notes.append(
                _(
                    "A negative seed is taken in two's complement: with x64 on, the high word is "
                    "the top 32 bits of its 64-bit form ({high}; all ones, 0xffffffff, only for "
                    "seeds from -2**32 to -1)."
                ).format(high=f"{self.x64.key_data[0]:#010x}")  # type: ignore[index]
            )
        if self.differs:
            notes.append(
                _(
                    "With x64 off JAX keeps only the low 32 bits (`seed mod 2**32` = {low}) and "
                    "the high word is 0; with x64 on the high 32 bits ({high}) become the first "
                    "word. Same seed, two different random streams: results change when someone "
                    "flips `jax_enable_x64`."
                ).format(low=s & WORD, high=(s >> 32) & WORD)
            )
            collides = _(
                "With x64 off, seed {seed} collides with seed {twin}: both give key {key}."
            )
            notes.append(
                collides.format(seed=s, twin=self.x32_twin, key=list(self.x32.key_data or ()))
            )
        else:
            notes.append(
                _("The seed fits in 32 bits, so x64 off and on give the same key: {key}.").format(
                    key=list(self.x64.key_data or ())
                )
            )
            notes.append(
                claims.qualify(
                    "prng.x64_changes_default_draws",
                    _(
                        "The numbers drawn from it still differ: with x64 on, `normal` draws "
                        "float64 by default; pass `dtype=jnp.float32` in both modes to draw the "
                        "same numbers."
                    ),
                )
            )
        return tuple(notes)


def as_signed(seed: int, bits: int) -> int:
    """``seed`` as a two's-complement integer of ``bits`` bits (what JAX converts it to)."""
    seed &= (1 << bits) - 1
    return seed - (1 << bits) if seed >> (bits - 1) else seed


@claims.states("prng.threefry_seed_rule")
def seed_rule(info: SeedInfo) -> str:
    """The seeding rule in words, with this seed's numbers from the run (Markdown).

    JAX converts the seed to a signed integer of the default width (32 bits with x64 off, 64 with
    it on) and stores ``[seed >>> 32, seed & 0xFFFFFFFF]``, where ``>>>`` is a *logical* shift:
    zeros come in from the left. An arithmetic shift (Python's ``>>``, which copies the sign bit)
    would make the high word of a negative seed 0xffffffff with x64 off; JAX's is 0 (with x64 on
    the seed is a 64-bit integer, and a negative one's high word is 0xffffffff).
    """
    rule = _(
        "The rule: JAX converts the seed to a signed integer of the default width (32 bits with "
        "x64 off, 64 with it on) and stores `[seed >>> 32, seed & 0xFFFFFFFF]`, where `>>>` is a "
        "*logical* shift right: zeros come in from the left, so with x64 off the high word is "
        "always 0."
    )
    if not info.in_range or info.x32.key_data is None or info.x64.key_data is None:
        return rule
    s32, s64 = as_signed(info.seed, 32), as_signed(info.seed, 64)
    high32, high64 = info.x32.key_data[0], info.x64.key_data[0]
    text = _(
        "{rule} Seed {seed}: as int32 it is {s32}, high word {high32}; as int64 {s64}, high word "
        "{high64}."
    ).format(
        rule=rule,
        seed=info.seed,
        s32=s32,
        high32=f"{high32:#010x}",
        s64=s64,
        high64=f"{high64:#010x}",
    )
    arithmetic = (s32 >> 32) & WORD  # Python's >> is arithmetic: -1 >> 32 == -1
    if arithmetic != high32:
        text = _(
            "{text} An arithmetic shift (Python's `>>`, which copies the sign bit) would give "
            "`{s32} >> 32 = {shifted}`, high word {high}: not what JAX stores."
        ).format(text=text, s32=s32, shifted=s32 >> 32, high=f"{arithmetic:#010x}")
    return text


@claims.states_nothing("returns the key words JAX computed, as data")
def _key_words(seed: int, x64: bool) -> SeedOutcome:
    # jax.enable_x64 is a thread-local config context: only this thread sees the change.
    with jax.enable_x64(x64):
        try:
            data = np.asarray(jrandom.PRNGKey(seed))
        except OverflowError as err:
            return SeedOutcome(x64, None, f"OverflowError: {err}")
    return SeedOutcome(x64, tuple(int(w) for w in data), None)


@claims.states("prng.threefry_seed_rule", "prng.seed_range")
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

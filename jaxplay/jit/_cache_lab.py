"""The compile-cache lab: the article's ``static_argnums`` example, one visitor's jit cache.

Why a module of its own: the jit page lets a visitor flip a static flag, change a shape or a dtype
and watch ``jax.jit`` decide between reusing a compiled program and compiling a new one. That
needs a jitted function that belongs to the visitor (kept in their session, so the counter is
theirs alone), its cache size after each call, and JAX's own explanation of every cache miss,
captured through :func:`jaxplay.core.compilation.capture_compiles`. The tracing page's recompilation
lab is built on the same capture.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax.numpy as jnp

from jaxplay.article import dynamic_control_flow
from jaxplay.core import compilation, jax_private, timing
from jaxplay.core.i18n import N_, _
from jaxplay.jit._workloads import DTYPES, SizeError, not_offered

#: Longest ``x`` the lab builds (it only shows compilation, never times anything).
MAX_LENGTH = 1_000_000
#: The same, under the name the package exports (the page's length widget ends there).
CACHE_LAB_MAX_LENGTH = MAX_LENGTH


@dataclass(frozen=True)
class CacheCall:
    """One call of the lab's jitted function and what JAX did about it.

    Attributes:
        use_tanh, length, dtype: the call's arguments.
        cache_size: compiled versions held after the call (``None`` if JAX will not say).
        compiled: whether this call compiled (a cache miss) or reused a version.
        reasons: JAX's explanations of the cache miss, as logged.
        log: every compile-log message of the call about this function.
        changed: what differs from the previous call (static flag, shape, dtype), in words.
    """

    use_tanh: bool
    length: int
    dtype: str
    cache_size: int | None
    compiled: bool
    reasons: tuple[str, ...]
    log: tuple[str, ...]
    changed: tuple[str, ...] = ()

    @property
    def signature(self) -> tuple[bool, int, str]:
        """What the jit cache is keyed on here: the static value, the shape and the dtype."""
        return (self.use_tanh, self.length, self.dtype)


@dataclass
class CacheLab:
    """A visitor's own ``jit(dynamic_control_flow, static_argnums=(1,))`` and its call history.

    Each visitor gets a new jitted function (kept in their session), so the counter starts at 0
    for them and only their own calls change it.
    """

    jitted: Any = None
    history: list[CacheCall] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.jitted is None:
            import jax

            self.jitted = jax.jit(
                compilation.fresh_function(dynamic_control_flow), static_argnums=(1,)
            )

    def call(self, use_tanh: bool, length: int, dtype: str = "float32") -> CacheCall:
        """Call the jitted function once, capturing JAX's compile log and cache-miss reasons."""
        if dtype not in DTYPES:
            raise SizeError(not_offered(dtype))
        if not 1 <= length <= MAX_LENGTH:
            raise SizeError(
                _("the length must be between 1 and {limit}").format(limit=f"{MAX_LENGTH:,}")
            )
        x = jnp.ones(length, dtype)
        before = jax_private.cache_size(self.jitted)
        with compilation.capture_compiles() as log:
            timing.block(self.jitted(x, bool(use_tanh)))
        after = jax_private.cache_size(self.jitted)
        ours = log.for_function(dynamic_control_flow.__name__)
        compiled = any(e.kind == "compiling" for e in ours) or (
            before is not None and after is not None and after > before
        )
        now = (bool(use_tanh), length, dtype)
        changed = _changes(self.history[-1].signature, now) if self.history else ()
        record = CacheCall(
            use_tanh=bool(use_tanh),
            length=length,
            dtype=dtype,
            cache_size=after,
            compiled=compiled,
            reasons=tuple(e.explanation for e in ours if e.kind == "cache miss"),
            log=tuple(e.message for e in ours),
            changed=changed,
        )
        self.history.append(record)
        return record


#: How a change of each argument is written (English, marked: :attr:`CacheCall.changed` keeps
#: English words, :func:`history_table` says them in the visitor's language).
_CHANGES = (
    N_("static use_tanh {before} → {after}"),
    N_("shape ({before},) → ({after},)"),
    N_("dtype {before} → {after}"),
)


def _changes(
    before: tuple[bool, int, str], after: tuple[bool, int, str], say: Any = str
) -> tuple[str, ...]:
    """What differs between two signatures (static flag, length, dtype), each change written
    with ``say`` (``str``: English; ``_``: the visitor's language)."""
    return tuple(
        say(template).format(before=b, after=a)
        for template, b, a in zip(_CHANGES, before, after, strict=True)
        if b != a
    )


def history_table(history: list[CacheCall]) -> list[dict[str, object]]:
    """The lab's calls as table rows, words in the visitor's language (the keys stay)."""
    return [
        {
            "call": i + 1,
            "x": f"{r.dtype}[{r.length}], use_tanh={r.use_tanh}",
            "what changed": _(", ").join(
                _changes(history[i - 1].signature, r.signature, _) if i else ()
            )
            or "—",
            "result": _("compiled") if r.compiled else _("cache hit"),
            "cache size": r.cache_size,
        }
        for i, r in enumerate(history)
    ]

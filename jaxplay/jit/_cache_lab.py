"""The compile-cache lab: the article's ``static_argnums`` example, one visitor's jit cache.

Why a module of its own: the jit page lets a visitor flip a static flag, change a shape or a dtype
and watch ``jax.jit`` decide between reusing a compiled program and compiling a new one. That
needs a jitted function that belongs to the visitor (kept in their session, so the counter is
theirs alone), its cache size after each call, and JAX's own explanation of every cache miss,
captured through :func:`jaxplay.core.compilation.capture_compiles`. The tracing page's recompilation
lab is built on the same capture.
"""

from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxplay.article import dynamic_control_flow
from jaxplay.core import claims, compilation, jax_private, timing
from jaxplay.core.i18n import N_, _
from jaxplay.jit._workloads import DTYPES, SizeError, not_offered

#: Longest ``x`` the lab builds (it only shows compilation, never times anything).
MAX_LENGTH = 1_000_000
#: The same, under the name the package exports (the page's length widget ends there).
CACHE_LAB_MAX_LENGTH = MAX_LENGTH
#: Compiled versions one lab keeps: a new one past this starts the lab over (a new jitted
#: function, the old one's versions cleared). Each version is about 3 MB of the server's memory,
#: and a script sending a new length per rerun grew it by 573 MB in 200 reruns.
MAX_VERSIONS = 16
#: Compiled versions all the labs of this server process keep together. Past it, a new version
#: first releases the versions of the labs used least recently (each session has its own lab, so
#: a room's sessions, or one visitor's many, held 16 versions each, about 28 MB, without end).
MAX_PROCESS_VERSIONS = 64
#: Calls the history keeps ("Call again" adds one without compiling); older ones are dropped.
MAX_HISTORY = 50

#: Every lab of this process (a lab leaves with its session).
_labs: weakref.WeakSet[CacheLab] = weakref.WeakSet()
_labs_lock = threading.Lock()


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
        previous: the previous call's signature (``None`` for the lab's first call).
    """

    use_tanh: bool
    length: int
    dtype: str
    cache_size: int | None
    compiled: bool
    reasons: tuple[str, ...]
    log: tuple[str, ...]
    changed: tuple[str, ...] = ()
    previous: tuple[bool, int, str] | None = None

    @property
    def signature(self) -> tuple[bool, int, str]:
        """What the jit cache is keyed on here: the static value, the shape and the dtype."""
        return (self.use_tanh, self.length, self.dtype)


@dataclass(eq=False)  # compared and hashed by identity: the process's labs are a weak set
class CacheLab:
    """A visitor's own ``jit(dynamic_control_flow, static_argnums=(1,))`` and its call history.

    Each visitor gets a new jitted function (kept in their session), so the counter starts at 0
    for them and only their own calls change it. All the labs of the process hold at most
    :data:`MAX_PROCESS_VERSIONS` versions together: a lab may be started over for another's
    call (:attr:`released`), between two of its own calls, never during one.
    """

    jitted: Any = None
    history: list[CacheCall] = field(default_factory=list)
    #: Calls dropped from the front of :attr:`history` (the table numbers calls from there).
    dropped: int = 0
    #: Times the lab started over at :data:`MAX_VERSIONS` versions.
    restarts: int = 0
    #: The signatures compiled since the lab (last) started.
    versions: set[tuple[bool, int, str]] = field(default_factory=set)
    #: Whether the last start over released the versions for another lab's call (not this
    #: lab's own :data:`MAX_VERSIONS`).
    released: bool = False
    #: When the lab was last called (``time.monotonic``): the least recent is released first.
    used: float = field(default_factory=time.monotonic)
    #: Held during a call, and while another lab's call releases this one's versions.
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if self.jitted is None:
            self.jitted = self._new_function()
        with _labs_lock:
            _labs.add(self)

    @staticmethod
    def _new_function() -> Any:
        import jax

        return jax.jit(compilation.fresh_function(dynamic_control_flow), static_argnums=(1,))

    def _start_over(self, released: bool = False) -> None:
        """A new jitted function, the old one's compiled versions released (past
        :data:`MAX_VERSIONS`, or for another lab's call past :data:`MAX_PROCESS_VERSIONS`:
        visitors' new lengths must not fill the server's memory)."""
        self.jitted.clear_cache()
        self.jitted = self._new_function()
        self.history.clear()
        self.versions.clear()
        self.dropped = 0
        self.restarts += 1
        self.released = released

    def call(self, use_tanh: bool, length: int, dtype: str = "float32") -> CacheCall:
        """Call the jitted function once, capturing JAX's compile log and cache-miss reasons."""
        with self.lock:
            self.used = time.monotonic()
            return self._call(use_tanh, length, dtype)

    def visit(self, use_tanh: bool, length: int, dtype: str, again: bool = False) -> LabView:
        """What the page shows: the lab called unless its last call had these arguments (or
        ``again``), then its history, read under the lab's lock in one go: another visitor's
        call may start this lab over (:func:`_make_room`) between two reads of the lab."""
        with self.lock:
            last = self.history[-1].signature if self.history else None
            if again or last != (bool(use_tanh), length, dtype):
                self.used = time.monotonic()
                self._call(use_tanh, length, dtype)
            return LabView(tuple(self.history), self.dropped, self.restarts, self.released)

    def _call(self, use_tanh: bool, length: int, dtype: str) -> CacheCall:
        if dtype not in DTYPES:
            raise SizeError(not_offered(dtype))
        if not 1 <= length <= MAX_LENGTH:
            raise SizeError(
                _("the length must be between 1 and {limit}").format(limit=f"{MAX_LENGTH:,}")
            )
        now = (bool(use_tanh), length, dtype)
        if now not in self.versions:
            if len(self.versions) >= MAX_VERSIONS:
                self._start_over()
            _make_room(self)
        # Made by NumPy and put on the device: ``jnp.ones`` compiles an eager program per new
        # length, kept by JAX for the process (about 1.4 MB each), which no restart releases.
        x = jax.device_put(np.ones(length, jnp.dtype(dtype)))
        before = jax_private.cache_size(self.jitted)
        with compilation.capture_compiles() as log:
            timing.block(self.jitted(x, bool(use_tanh)))
        after = jax_private.cache_size(self.jitted)
        ours = log.for_function(dynamic_control_flow.__name__)
        compiled = any(e.kind == "compiling" for e in ours) or (
            before is not None and after is not None and after > before
        )
        if compiled:
            self.versions.add(now)
        previous = self.history[-1].signature if self.history else None
        changed = _changes(previous, now) if previous else ()
        record = CacheCall(
            use_tanh=bool(use_tanh),
            length=length,
            dtype=dtype,
            cache_size=after,
            compiled=compiled,
            reasons=tuple(e.explanation for e in ours if e.kind == "cache miss"),
            log=tuple(e.message for e in ours),
            changed=changed,
            previous=previous,
        )
        self.history.append(record)
        if len(self.history) > MAX_HISTORY:
            del self.history[0]
            self.dropped += 1
        return record


def _make_room(calling: CacheLab) -> None:
    """Release the least recently used other labs' versions while all labs together hold
    :data:`MAX_PROCESS_VERSIONS` or more (``calling`` is about to compile one). A lab in the
    middle of its own call is passed over: its versions go next time."""
    with _labs_lock:
        labs = list(_labs)
    total = sum(len(lab.versions) for lab in labs)
    for lab in sorted((lab for lab in labs if lab is not calling), key=lambda lab: lab.used):
        if total < MAX_PROCESS_VERSIONS:
            return
        if lab.versions and lab.lock.acquire(blocking=False):
            try:
                total -= len(lab.versions)
                lab._start_over(released=True)
            finally:
                lab.lock.release()


@dataclass(frozen=True)
class LabView:
    """The lab as the page shows it (:meth:`CacheLab.visit`): its history (the last call
    last), the calls dropped before it, its restarts, and whether the last restart released its
    versions for another lab."""

    history: tuple[CacheCall, ...]
    dropped: int
    restarts: int
    released: bool


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


def history_table(history: list[CacheCall], dropped: int = 0) -> list[dict[str, object]]:
    """The lab's calls as table rows, words in the visitor's language (the keys stay); the first
    ``dropped`` calls are no longer kept, so the rows are numbered from there."""
    return [
        {
            "call": dropped + i + 1,
            "x": f"{r.dtype}[{r.length}], use_tanh={r.use_tanh}",
            "what changed": _(", ").join(_changes(r.previous, r.signature, _) if r.previous else ())
            or "—",
            "result": _("compiled") if r.compiled else _("cache hit"),
            "cache size": r.cache_size,
        }
        for i, r in enumerate(history)
    ]


@claims.states_nothing("the lab's own limits, not a rule of JAX")
def cache_lab_restarted(released: bool) -> str:
    """Why the counter is back at one: the lab started over at :data:`MAX_VERSIONS`, or its
    versions were ``released`` for another lab's call (:data:`MAX_PROCESS_VERSIONS`)."""
    if released:
        return _(
            "The lab started over with a new jitted function: this server keeps at most {n} "
            "compiled versions for all labs together (every visitor's, every tab's), and "
            "yours, used least recently, made room for another lab's."
        ).format(n=MAX_PROCESS_VERSIONS)
    return _(
        "The lab started over with a new jitted function: it keeps at most {n} compiled "
        "versions, so that one visitor's versions do not fill the server's memory."
    ).format(n=MAX_VERSIONS)

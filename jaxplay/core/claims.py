"""Claims: every statement the app makes about how JAX behaves, with a check that asks JAX.

Why: a teaching tool that states a false rule is worse than one that states none, and a sentence
written from a rule we *assumed* (rather than from what JAX did) passes its own tests when those
tests check our arithmetic. So each statement about JAX's behaviour is a :class:`Claim`: the
sentence (or the rule a sentence builder uses), the inputs the page offers (``cases``), and a
``check`` that asks JAX itself — shard shapes, ``.sharding``, ``memory_analysis()``, the jaxpr,
the compiled HLO, a profiler trace, the exception actually raised — and returns a
:class:`Verdict` saying whether the claim held and what JAX did.

Claims live beside the topic that states them (``jaxplay/<topic>/_claims.py``) and register here,
in the one :data:`REGISTRY`; :func:`gather` imports every topic's claims by name (this layer
imports no topic). The tests run every check on every case. At run time the server checks them
once, in the background (:func:`start_checking`), so a page can say "N statements on this page
were checked against JAX x.y here" and a claim that fails on the JAX the server runs (a new JAX
changed behaviour) is shown as not true here, with what JAX did, instead of as a fact
(:func:`qualify`).

Sentence builders declare the claims they rest on with :func:`states` (or say why they state
nothing about JAX with :func:`states_nothing`); a test fails on a builder that does neither.

Checks run in the server process, beside visitors' work, each holding the measurement lock (no
measurement is timed beside one): they must be small (milliseconds to a few seconds; they run
in one thread), and must change JAX's configuration only through its thread-local context managers
(``with jax.debug_nans(True):``, ``with jax.enable_x64(True):``), never ``jax.config.update``.

Example:
    >>> from jaxplay.core import claims
    >>> @claims.claim("demo.sum_of_ones", "jnp.ones(3).sum() is 3", cases=(3,), registered=False)
    ... def _ones(n):
    ...     import jax.numpy as jnp
    ...     got = float(jnp.ones(n).sum())
    ...     return claims.Verdict(got == n, f"jnp.ones({n}).sum() gave {got:g}")
    >>> _ones.run().holds
    True
"""

from __future__ import annotations

import importlib
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from jaxplay.core import measure_lock

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Verdict:
    """What a check found: whether the claim held, and what JAX did (shown when it did not)."""

    holds: bool
    observed: str = ""


@dataclass(frozen=True)
class Result:
    """A claim checked on all its cases against the JAX this process runs."""

    key: str
    holds: bool
    jax_version: str
    #: What JAX did in the first case where the claim failed ("" when it held everywhere).
    observed: str = ""
    #: The case that failed, as text.
    case: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class Claim:
    """A statement about JAX's behaviour and the check that asks JAX whether it holds.

    Arguments:
        key: ``"<topic>.<name>"``: the topic package that states it, then a name.
        statement: the sentence, or the rule a sentence builder applies, in plain words.
        check: ``check(case) -> Verdict``: runs JAX on one of ``cases`` and compares the claim
            with what JAX did (shard shapes, exceptions, ``memory_analysis``, the jaxpr...), never
            with our own arithmetic.
        cases: the inputs the page offers (presets, dtypes, each branch of the builder); a claim
            with no inputs has the one case ``None``.
    """

    key: str
    statement: str
    check: Callable[[Any], Verdict] = field(compare=False)
    cases: tuple[Any, ...] = (None,)

    @property
    def topic(self) -> str:
        return self.key.partition(".")[0]

    def run(self) -> Result:
        """Check every case; the first failure (or exception) decides."""
        import jax

        start = time.perf_counter()
        for case in self.cases:
            try:
                verdict = self.check(case)
            except Exception as error:  # a check that breaks is a claim we cannot stand by
                verdict = Verdict(False, f"the check raised {type(error).__name__}: {error}")
            if not verdict.holds:
                return Result(
                    self.key,
                    False,
                    jax.__version__,
                    verdict.observed,
                    repr(case),
                    time.perf_counter() - start,
                )
        return Result(self.key, True, jax.__version__, "", "", time.perf_counter() - start)


class ClaimFunction:
    """A check function registered as a claim (what :func:`claim` returns), callable as it."""

    def __init__(self, claim: Claim) -> None:
        self.claim = claim
        self.__doc__ = claim.statement
        self.__name__ = claim.key

    def __call__(self, case: Any = None) -> Verdict:
        return self.claim.check(case)

    def run(self) -> Result:
        return self.claim.run()


#: Every registered claim by key, filled as the topics' ``_claims`` modules are imported.
REGISTRY: dict[str, Claim] = {}


def register(item: Claim) -> Claim:
    """Add ``item`` to :data:`REGISTRY`; a key is registered once."""
    if item.key in REGISTRY and REGISTRY[item.key] is not item:
        raise ValueError(f"claim {item.key!r} is registered twice")
    if "." not in item.key:
        raise ValueError(f"claim key {item.key!r} is not '<topic>.<name>'")
    REGISTRY[item.key] = item
    return item


def claim(
    key: str, statement: str, *, cases: Iterable[Any] = (None,), registered: bool = True
) -> Callable[[Callable[[Any], Verdict]], ClaimFunction]:
    """Decorate a check function to make it a registered :class:`Claim`.

    Example::

        @claims.claim("sharp_bits.size_zero_raises", "An integer index into a size-0 axis raises",
                      cases=("eager", "jit"))
        def _size_zero(mode):
            ...
            return claims.Verdict(raised is IndexError, f"JAX raised {raised.__name__}")
    """

    def wrap(check: Callable[[Any], Verdict]) -> ClaimFunction:
        made = Claim(key, statement, check, tuple(cases))
        if registered:
            register(made)
        return ClaimFunction(made)

    return wrap


def states(*keys: str) -> Callable[[F], F]:
    """Mark a sentence builder with the claims its sentences rest on (checked by a test)."""

    def mark(builder: F) -> F:
        builder.__claims__ = tuple(keys)  # type: ignore[attr-defined]
        return builder

    return mark


def states_nothing(why: str) -> Callable[[F], F]:
    """Mark a sentence builder that states nothing about JAX's behaviour (only our numbers,
    or what the visitor chose), with the reason; the test accepts it."""

    def mark(builder: F) -> F:
        builder.__claims__ = ()  # type: ignore[attr-defined]
        builder.__states_nothing__ = why  # type: ignore[attr-defined]
        return builder

    return mark


def claims_of(builder: Callable[..., Any]) -> tuple[str, ...] | None:
    """The claim keys a builder declared: ``()`` for :func:`states_nothing`, ``None`` unmarked."""
    return getattr(builder, "__claims__", None)


def gather(topics: Sequence[str]) -> dict[str, Claim]:
    """Import every topic's ``jaxplay.<topic>._claims`` (where one exists); return the registry."""
    for topic in topics:
        name = f"jaxplay.{topic}._claims"
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as missing:
            if missing.name != name:
                raise
    return REGISTRY


# --- checking at run time: once per process, in the background --------------------------------

_results: dict[str, Result] = {}
_lock = threading.Lock()
_started = False
_finished = threading.Event()


def check_all(keys: Iterable[str] | None = None) -> dict[str, Result]:
    """Run the checks of ``keys`` (every registered claim by default) now, in this thread.

    Each check holds the measurement lock (:func:`jaxplay.core.measure_lock.exclusive`, as
    nobody's measurement): it is JAX work on this process's cores, and a measurement timed
    beside it (in this process or its compute worker) would share them. All the checks take
    about 30 s of one core; beside them, a jit page measurement that takes 3.5 s alone took
    6 s in a room's first minute (2026-12-06). A measurement now waits for one check at most.
    """
    chosen = list(REGISTRY) if keys is None else list(keys)
    done: dict[str, Result] = {}
    for key in chosen:
        try:
            with measure_lock.exclusive():
                done[key] = REGISTRY[key].run()
        except Exception:  # pragma: no cover - Claim.run catches the check's own errors
            done[key] = Result(key, False, "?", traceback.format_exc(limit=1))
        with _lock:
            _results[key] = done[key]
    return done


def start_checking(topics: Sequence[str]) -> None:
    """Gather the topics' claims and check them once, in a background thread (first call only)."""
    global _started
    with _lock:
        if _started:
            return
        _started = True
    gather(topics)

    def work() -> None:
        try:
            check_all()
        finally:
            _finished.set()

    threading.Thread(target=work, name="jaxplay-claims", daemon=True).start()


def result(key: str) -> Result | None:
    """The check's result for ``key``, or ``None`` while it has not run here."""
    with _lock:
        return _results.get(key)


def qualify(key: str, sentence: str) -> str:
    """``sentence`` as is, unless its claim was checked here and failed: then it says so.

    The failure is stated before the sentence, with what JAX did, so a visitor reads the
    sentence as what the article (or this app) expected, not as a fact about this server's JAX.
    """
    found = result(key)
    if found is None or found.holds:
        return sentence
    from jaxplay.core.i18n import _

    return _("(Not true on JAX {version} here: {observed}) {sentence}").format(
        version=found.jax_version, observed=found.observed, sentence=sentence
    )


@dataclass(frozen=True)
class PageMark:
    """What one page's statements look like against this server's JAX."""

    checked: int
    failed: tuple[Result, ...]
    pending: int
    jax_version: str

    @property
    def line(self) -> str:
        """The one unobtrusive line a page shows."""
        from jaxplay.core.i18n import _, ngettext

        version = self.jax_version
        if self.checked == 0 and self.pending:
            return _("Checking this page's statements against JAX {version}…").format(
                version=version
            )
        text = ngettext(
            "{n} statement on this page was checked against JAX {version} on this server",
            "{n} statements on this page were checked against JAX {version} on this server",
            self.checked,
        ).format(n=f"{self.checked:,}", version=version)
        if self.failed:
            text += _("; {n} of them did not hold here").format(n=f"{len(self.failed):,}")
        return text + _(".")


def page_mark(topic: str) -> PageMark:
    """How the claims of ``topic`` fared on this server (for the page's one line)."""
    import jax

    keys = [key for key, item in REGISTRY.items() if item.topic == topic]
    with _lock:
        done = [_results[key] for key in keys if key in _results]
    return PageMark(
        checked=len(done),
        failed=tuple(r for r in done if not r.holds),
        pending=len(keys) - len(done),
        jax_version=jax.__version__,
    )

"""What a sharp-bits case is, and the one way a case runs: a live function, captured.

Why a module of its own: every case on the page works the same way. A case offers a few
**variants** (the code as people first write it, and the ways to write it right), each a
module-level function of this package that takes the case's **parameters** (an index, a value, a
dtype) as keywords. :func:`run` calls the chosen function through
:func:`jaxplay.core.capture.run`, so the page shows JAX's real value, printed output, warnings or
exception, and the case's ``explain`` turns what really happened into the sentence the page
states. The Code Lab snippet (:func:`snippet`) is that same function's source with a driver line,
so the code shown, the code run and the code opened in the Code Lab are one.
"""

from __future__ import annotations

import functools
import inspect
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jaxplay.article import code
from jaxplay.core import capture
from jaxplay.core.i18n import _

#: Text of a value shown on the page: arrays up to this many elements in full.
MAX_SHOWN = 16


@dataclass(frozen=True)
class Param:
    """A parameter of a case, shown as one widget.

    Attributes:
        name: the keyword the variant functions take.
        label: the widget's label (English, marked with ``N_``; :attr:`shown_label` translates).
        default: its first value.
        low, high, step: a slider's range (numbers); the page's widget enforces them.
        options: the choices of a ``choice`` parameter (then ``low``/``high`` are unused).
    """

    name: str
    label: str
    default: Any
    low: float = 0
    high: float = 0
    step: float = 1
    options: tuple[str, ...] = ()

    @property
    def shown_label(self) -> str:
        """The widget's label in the visitor's language."""
        return _(self.label)

    @property
    def kind(self) -> str:
        """``"choice"``, ``"int"`` or ``"float"``."""
        if self.options:
            return "choice"
        return "int" if isinstance(self.default, int) else "float"

    def check(self, value: Any) -> Any:
        """``value`` if the widget could have produced it, else ``ValueError``."""
        if self.kind == "choice":
            if value not in self.options:
                raise ValueError(f"{self.name} must be one of {', '.join(self.options)}")
            return value
        number = int(value) if self.kind == "int" else float(value)
        if not self.low <= number <= self.high:
            raise ValueError(f"{self.name} must be between {self.low:g} and {self.high:g}")
        return number


@dataclass(frozen=True)
class Variant:
    """One way to write a case's code.

    Attributes:
        key: a stable short name (links, tests).
        title: the picker's label (English: prose marked with ``N_``, code left as it is).
        fn: the function that runs, taking the case's parameters as keywords.
        helpers: functions ``fn`` calls that the code display and the snippet must include.
        note: what the variant shows, in prose (the numbers come from :attr:`Case.explain`);
            English, marked with ``N_``.
        raises: the exception class the page names for this variant, where it fails as written
            (for every parameter value, or for those ``raises_when`` accepts).
        raises_when: the parameter values for which ``raises`` applies (``None``: all).
        note_text: writes the note in the visitor's language at render time, for a note composed
            from a table (``note`` is then its English, which the claims read); ``None``: the
            note is ``note`` translated.
    """

    key: str
    title: str
    fn: Callable[..., Any]
    helpers: tuple[Callable[..., Any], ...] = ()
    note: str = ""
    raises: str | None = None
    raises_when: Callable[[Mapping[str, Any]], bool] | None = None
    note_text: Callable[[], str] | None = None

    @property
    def shown_title(self) -> str:
        """The picker's label in the visitor's language."""
        return _(self.title)

    @property
    def shown_note(self) -> str:
        """The note in the visitor's language (empty when the variant has none)."""
        if self.note_text is not None:
            return self.note_text()
        return _(self.note) if self.note else ""

    def expected_error(self, params: Mapping[str, Any]) -> str | None:
        """The exception the page names for these parameters, or ``None`` when it runs."""
        if self.raises is None or (self.raises_when is not None and not self.raises_when(params)):
            return None
        return self.raises


@dataclass(frozen=True)
class Case:
    """A sharp bit: its variants, parameters and how its outcome reads.

    Attributes:
        key: a stable short name (the link's ``sharp_case``).
        title: the picker's label (English, marked with ``N_``).
        intro: one paragraph of prose (English, marked with ``N_``; the claims read it).
        variants: the ways to write the code.
        params: the parameters every variant takes.
        explain: ``(variant key, params, outcome, value)`` → the sentence stating what JAX did,
            with every number taken from the run (``value`` is what the function returned, or
            ``None`` when it raised), in the visitor's language.
        imports: the snippet's first lines.
        intro_text: writes the intro in the visitor's language at render time, for an intro
            composed from a table (``intro`` is then its English); ``None``: ``intro`` translated.
    """

    key: str
    title: str
    intro: str
    variants: tuple[Variant, ...]
    params: tuple[Param, ...]
    explain: Callable[[str, Mapping[str, Any], capture.Outcome, Any], str]
    imports: str = "import jax\nimport jax.numpy as jnp\n"
    figure: Callable[[str, Mapping[str, Any]], Any] | None = field(default=None)
    intro_text: Callable[[], str] | None = None

    @property
    def shown_title(self) -> str:
        """The picker's label and the case's heading, in the visitor's language."""
        return _(self.title)

    @property
    def shown_intro(self) -> str:
        """The intro in the visitor's language."""
        return self.intro_text() if self.intro_text is not None else _(self.intro)

    def variant(self, key: str) -> Variant:
        for variant in self.variants:
            if variant.key == key:
                return variant
        raise KeyError(key)

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}

    def checked(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Every parameter of the case, checked (missing ones at their defaults)."""
        return {p.name: p.check(params.get(p.name, p.default)) for p in self.params}


@dataclass(frozen=True)
class CaseRun:
    """A variant run once: what JAX did, the sentence about it, and the runnable snippet."""

    case: str
    variant: str
    params: tuple[tuple[str, Any], ...]
    outcome: capture.Outcome
    sentence: str
    snippet: str
    expected_error: str | None


def show(value: Any) -> str:
    """A returned value as the page writes it: arrays as NumPy prints them at 4 decimals (as
    ``core.words.numbers`` writes them in a sentence), small ones in full."""
    if isinstance(value, dict):
        return "\n".join(f"{k}: {show(v)}" for k, v in value.items())
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return "(" + ", ".join(show(v) for v in value) + ")"
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        array = np.asarray(value)
        if array.size > MAX_SHOWN:
            return f"{array.dtype}{list(array.shape)}"
        text = np.array2string(array, precision=4, separator=", ")
        return f"{text} ({array.dtype})" if array.ndim else f"{text} ({array.dtype}, a scalar)"
    return repr(value)


def call_text(fn: Callable[..., Any], params: Mapping[str, Any]) -> str:
    """``fn(index=7, value=10.0)``: the call a snippet makes."""
    return f"{fn.__name__}(" + ", ".join(f"{k}={v!r}" for k, v in params.items()) + ")"


def run(case: Case, variant_key: str, params: Mapping[str, Any]) -> CaseRun:
    """Run one variant of ``case`` with ``params`` (checked against the case's ranges)."""
    variant = case.variant(variant_key)
    checked = case.checked(params)
    used = {k: v for k, v in checked.items() if k in inspect.signature(variant.fn).parameters}
    returned: list[Any] = []

    def keep(value: Any) -> str:
        returned.append(value)
        return show(value)

    outcome = capture.run(
        functools.partial(variant.fn, **used),
        code=textwrap.dedent(inspect.getsource(variant.fn)),
        describe=keep,
    )
    value = returned[0] if returned else None
    return CaseRun(
        case=case.key,
        variant=variant.key,
        params=tuple(checked.items()),
        outcome=outcome,
        sentence=case.explain(variant.key, checked, outcome, value),
        snippet=snippet(case, variant, used),
        expected_error=variant.expected_error(checked),
    )


def snippet(case: Case, variant: Variant, params: Mapping[str, Any]) -> str:
    """A Code Lab cell: the imports, the helpers, the variant's function and a call printing its
    result (``result: …``)."""
    parts: list[Any] = [case.imports + "\n\n"]
    for helper in variant.helpers:
        parts += [helper, "", ""]
    return code(*parts, variant.fn, "", "", f'print("result:", {call_text(variant.fn, params)})')

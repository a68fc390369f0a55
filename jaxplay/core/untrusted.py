"""Caps for data the server did not make: texts and lists from a worker, re-capped after decoding.

Why: a worker runs a visitor's code, and that code can rewrite anything in its own process
(the inspectors, JAX, the result pipe), so whatever the worker cut before sending proves
nothing. The server cuts again, per text, per line count and per line length, before anything
parses, matches or diffs it: then every later step works on a bounded input. Each cut is linear
in what it keeps plus one pass over what it is given.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")

#: What a cut text ends with, so a reader sees that it was cut.
CUT = "…"
#: The generic bounds of a JSON value nobody described further (:func:`json_value`).
MAX_JSON_DEPTH = 64
MAX_JSON_ITEMS = 1_000_000
MAX_JSON_TEXT = 200_000
#: The most arrays and objects, and values in all, of a JSON text a client sends before it is
#: parsed (:func:`json_text_refusal`). Our widgets' JSON is a few small objects (the editor's
#: text is one string, however long); a megabyte of ``{},`` parses into hundreds of MB.
MAX_JSON_CONTAINERS = 10_000
MAX_JSON_VALUES = 100_000
#: A JSON string literal, escapes included; one never closed (a last lone backslash too) runs
#: to the end of the text, so every match succeeds and each character is read once, possessively.
#: (A form that could fail took 3.3 s for 32 KB of ``"\\`` repeated: quadratic, on the server's
#: event loop.)
_JSON_STRING = re.compile(r'"[^"\\]*+(?:\\.?[^"\\]*+)*+(?:"|\Z)', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


def text(value: Any, chars: int, default: str = "") -> str:
    """``value`` if it is a string of at most ``chars`` characters, else cut there (with
    :data:`CUT`); ``default`` for anything that is not a string."""
    if not isinstance(value, str):
        return default
    return value if len(value) <= chars else value[:chars] + CUT


def lines(value: Any, *, chars: int, max_lines: int, line_chars: int) -> tuple[str, bool]:
    """A multi-line text capped at ``chars`` characters, ``max_lines`` lines (as
    ``str.splitlines`` counts them) and ``line_chars`` characters a line; and whether it was cut.

    A text within every bound comes back unchanged; a cut one has its lines joined by ``\\n``
    and every cut line ends with :data:`CUT`. A non-string is ``""``.
    """
    if not isinstance(value, str):
        return "", value is not None
    cut = len(value) > chars
    kept = value[:chars]
    parts = kept.splitlines()
    if len(parts) > max_lines:
        parts, cut = parts[:max_lines], True
    if any(len(p) > line_chars for p in parts):
        parts, cut = [p if len(p) <= line_chars else p[:line_chars] + CUT for p in parts], True
    return ("\n".join(parts) if cut else value), cut


def items(value: Any, limit: int, convert: Callable[[Any], T]) -> tuple[T, ...]:
    """The first ``limit`` entries of a JSON list, each through ``convert``; ``()`` if it is not
    a list. (A tuple of anything else, such as a dict, would iterate keys: refused.)"""
    if not isinstance(value, list | tuple):
        return ()
    return tuple(convert(v) for v in value[:limit])


def json_value(value: Any, depth: int = 0, budget: list[int] | None = None) -> Any:
    """A JSON value with every string, list and object capped (see the ``MAX_JSON_*`` bounds):
    nested deeper than :data:`MAX_JSON_DEPTH` becomes ``None``, and after
    :data:`MAX_JSON_ITEMS` values in all the rest is dropped, so the walk is bounded too."""
    budget = [MAX_JSON_ITEMS] if budget is None else budget
    if budget[0] <= 0 or depth > MAX_JSON_DEPTH:
        return None
    budget[0] -= 1
    if isinstance(value, str):
        return text(value, MAX_JSON_TEXT)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, list | tuple):
        head = list(value[: max(budget[0], 0)])
        if all(type(v) in _NUMBERS for v in head):  # a list of numbers (a line map) at once
            budget[0] -= len(head)
            return head
        return [json_value(v, depth + 1, budget) for v in head]
    if isinstance(value, dict):
        return {
            text(str(k), 200): json_value(v, depth + 1, budget)
            for k, v in _head(value.items(), budget)
        }
    return None


_NUMBERS = frozenset({int, float, bool, type(None)})


def _head(values: Iterable[T], budget: list[int]) -> list[T]:
    out = []
    for v in values:
        if len(out) >= budget[0]:
            break
        out.append(v)
    return out


def json_text_refusal(text: str) -> str | None:
    """Why a JSON text a client sent is refused before anything parses it, or ``None``
    (:func:`json_text`'s reason)."""
    try:
        json_text(text)
    except ValueError as refused:
        return str(refused)
    return None


def json_text(
    text: str,
    *,
    most_containers: int = MAX_JSON_CONTAINERS,
    most_values: int = MAX_JSON_VALUES,
    deepest_allowed: int = MAX_JSON_DEPTH,
) -> Any:
    """A JSON text a client sent, parsed once it is known to be cheap to parse; raises
    ``ValueError`` saying why it is refused.

    Refused: more than ``most_containers`` arrays and objects or about ``most_values`` values,
    nesting deeper than ``deepest_allowed`` (by default a widget's bounds), or text that is
    not JSON. Counted outside its strings, so a long string (the code in an editor) is one value.
    One regular-expression pass strips the strings; the counts are C loops over what is left; the
    depth walk and the parse run only on a text within the counts, so the check's own cost and
    memory are linear in the text and the parse's are bounded.
    """
    skeleton = _JSON_STRING.sub('""', text)
    containers = skeleton.count("[") + skeleton.count("{")
    if containers > most_containers:
        raise ValueError(f"{containers:,} arrays and objects (at most {most_containers:,})")
    values = skeleton.count(",") + skeleton.count(":")
    if values > most_values:
        raise ValueError(f"about {values:,} values (at most {most_values:,})")
    depth = deepest = 0
    for bracket in _BRACKET.findall(skeleton):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    if deepest > deepest_allowed:
        raise ValueError(f"nested {deepest} deep (at most {deepest_allowed})")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        raise ValueError(f"not JSON ({type(error).__name__})") from None

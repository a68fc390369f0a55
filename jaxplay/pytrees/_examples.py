"""The pytrees a visitor can pick, and the one way a typed pytree literal becomes a value.

Why a module of its own: the page lets a visitor type a nested Python literal (``{"a": [1, 2.5],
"b": None}``) and sees what JAX makes of it. Typed text is never run: :func:`parse_literal` reads
it with ``ast.literal_eval`` (no names, calls or operators beyond a sign) after a length check,
then walks the value and refuses anything past small limits (depth, nodes, integer range) or of a
kind a pytree lesson has no use for (strings as leaves, sets, mixed dict keys, which JAX cannot
sort, string keys that are not short names: keys are drawn in a Plotly chart, whose labels render
HTML). The examples are builders, each a live function whose source the Code Lab snippet shows.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from jaxplay.core import claims, words
from jaxplay.core.errors import InputError
from jaxplay.core.i18n import N_, _

#: Longest literal accepted, in characters (checked before parsing).
MAX_LITERAL_CHARS = 300
#: Deepest nesting of containers accepted.
MAX_LITERAL_DEPTH = 6
#: Most containers and leaves together.
MAX_LITERAL_NODES = 60
#: Integers are kept to int32's range, so every leaf converts to a JAX array (with x64 off a
#: Python int outside it raises OverflowError).
INT_RANGE = (int(jnp.iinfo(jnp.int32).min), int(jnp.iinfo(jnp.int32).max))
#: A dict key written as text is a Python name (any script: ``中文键`` is one) of at most this
#: many characters; a name holds no markup, and it is drawn in a chart whose labels render HTML.
MAX_KEY_CHARS = 24


class LiteralError(InputError):
    """A typed literal the page refuses, with the reason in words."""


def mlp_params():
    key_hidden, key_out = jax.random.split(jax.random.key(0))
    return {
        "hidden": {
            "w": jax.random.normal(key_hidden, (3, 4)),
            "b": jnp.zeros(4),
        },
        "out": {
            "w": jax.random.normal(key_out, (4, 1)),
            "b": jnp.zeros(1),
        },
    }


def nested_containers():
    return [1.0, (2.0, 3.0), [4.0, [5.0, 6.0]], {"x": 7.0}]


def none_and_empty():
    return {"weights": jnp.ones(3), "bias": None, "extras": [], "state": (), "cache": {}}


def unsorted_dict():
    return {"zeta": 1.0, "alpha": 2.0, "mid": {"b": 3.0, "a": 4.0}}


@dataclass(frozen=True)
class Example:
    """A pytree to explore: its name in the picker and the live function that builds it."""

    key: str
    title: str
    build: Callable[[], Any]


EXAMPLES: tuple[Example, ...] = (
    Example("mlp", N_("MLP parameters (nested dicts)"), mlp_params),
    Example("nested", N_("Nested lists, tuples and a dict"), nested_containers),
    Example("none", N_("None and empty containers"), none_and_empty),
    Example("unsorted", N_("A dict with its keys out of order"), unsorted_dict),
)

#: The picker's key for "type your own literal".
LITERAL = "literal"
DEFAULT_LITERAL = '{"b": [1, 2.5], "a": (None, [], 3), "c": {"z": -1}}'


def find_example(key: str) -> Example:
    """The example registered under ``key``; ``KeyError`` if none is."""
    for example in EXAMPLES:
        if example.key == key:
            return example
    raise KeyError(key)


def double(x):
    return x * 2


def size(x):
    return jnp.size(x)


def zeros_like(x):
    return jnp.zeros_like(x)


#: The functions ``jax.tree.map`` can apply, by the name the picker shows.
MAP_FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "double": double,
    "size": size,
    "zeros_like": zeros_like,
}


def parse_literal(text: str) -> Any:
    """A pytree from typed text: numbers, ``True``/``False``, ``None``, lists, tuples, dicts.

    Raises:
        LiteralError: the text is too long, not a literal, too deep or too big, or holds
            something else (a string leaf, a set, a complex number, an integer outside int32,
            a non-finite float, dict keys that are neither all strings nor all integers).
    """
    text = text.strip()
    if not text:
        raise LiteralError(
            _("type a Python literal, for example [1, (2, 3), {{'a': None}}]").format()
        )
    if len(text) > MAX_LITERAL_CHARS:
        raise LiteralError(
            _("the literal has {n} characters; at most {limit} are accepted").format(
                n=len(text), limit=MAX_LITERAL_CHARS
            )
        )
    nesting = _bracket_depth(text)
    if nesting > MAX_LITERAL_DEPTH + 1:
        # Said before parsing: Python's own parser gives up at 200 levels with a message
        # ("too many nested parentheses") that reads as if the literal were not valid.
        raise LiteralError(
            _(
                "the literal nests {n} levels below its outermost container; at most {limit} are "
                "accepted"
            ).format(n=nesting - 1, limit=MAX_LITERAL_DEPTH)
        )
    try:
        value = ast.literal_eval(text)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError) as err:
        reason = err.msg if isinstance(err, SyntaxError) else type(err).__name__
        raise LiteralError(
            _(
                "this is not a Python literal ({reason}): use numbers, None, True/False, "
                "[lists], (tuples) and {{dicts}} only."
            ).format(reason=reason)
            + words.ascii_hint(text)
        ) from None
    counted = _check(value, depth=0, seen=0)
    if counted > MAX_LITERAL_NODES:
        raise LiteralError(
            _("the literal has {n} containers and leaves; at most {limit}").format(
                n=counted, limit=MAX_LITERAL_NODES
            )
        )
    return value


def _bracket_depth(text: str) -> int:
    """How deep the brackets of ``text`` nest, outside string literals (one linear pass)."""
    depth = deepest = 0
    quote = ""
    escaped = False
    for char in text:
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth -= 1
    return deepest


def _check(value: Any, depth: int, seen: int) -> int:
    """Refuse what :func:`parse_literal` does not accept; return the nodes counted so far."""
    seen += 1
    if seen > MAX_LITERAL_NODES:
        return seen
    if depth > MAX_LITERAL_DEPTH:
        raise LiteralError(
            _("the literal nests deeper than {limit} levels below its outermost container").format(
                limit=MAX_LITERAL_DEPTH
            )
        )
    if value is None or isinstance(value, bool):
        return seen
    if isinstance(value, int):
        low, high = INT_RANGE
        if not low <= value <= high:
            raise LiteralError(
                _("{value} is outside int32's range ({low} to {high})").format(
                    value=value, low=f"{low:,}", high=f"{high:,}"
                )
            )
        return seen
    if isinstance(value, float):
        if not math.isfinite(value):
            raise LiteralError(_("leaves must be finite numbers"))
        return seen
    if isinstance(value, (list, tuple)):
        for item in value:
            seen = _check(item, depth + 1, seen)
        return seen
    if isinstance(value, dict):
        kinds = {type(k) for k in value}
        if kinds >= {str} and len(kinds) > 1:  # {1: 2, "a": 3}: sorting compares them
            raise LiteralError(
                claims.qualify(
                    "pytrees.mixed_dict_keys_cannot_be_sorted",
                    _(
                        "dict keys must be all strings or all integers (JAX sorts a dict's "
                        "keys, and cannot sort strings among numbers)"
                    ),
                )
            )
        if not (kinds <= {str} or kinds <= {int}):
            raise LiteralError(_("this box takes dict keys that are all strings or all integers"))
        for key in value:
            if isinstance(key, str) and not (key.isidentifier() and len(key) <= MAX_KEY_CHARS):
                raise LiteralError(
                    _(
                        "the dict key {key} is not accepted: string keys are Python names "
                        "(letters of any script, digits and _, not first a digit; at most "
                        "{limit} characters)"
                    ).format(key=repr(key), limit=MAX_KEY_CHARS)
                )
        for item in value.values():
            seen = _check(item, depth + 1, seen)
        return seen
    kind = type(value).__name__
    raise LiteralError(
        _(
            "a {kind} is not accepted here: leaves are numbers, booleans or None, containers are "
            "lists, tuples and dicts"
        ).format(kind=kind)
    )

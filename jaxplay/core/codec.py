"""The one encoding for bytes from a worker or a shared store: typed, bounded, never pickle.

Two kinds of bytes reach the server from places it does not control: what a sandboxed worker
sends back after running a visitor's input, and what the shared result store
(:mod:`jaxplay.hosting.results`) holds, which other processes write. Unpickling either would run
whatever code it named, so neither is pickle. Values are frozen dataclasses of numbers, strings,
tuples and numpy arrays; :func:`encode` writes them as plain JSON and :func:`decode` rebuilds
them, accepting only the dataclasses the caller names and only their own fields; anything else
is a ``ValueError``. Each field must hold what its annotation says (a ``str`` field a string,
a ``tuple[int | None, ...]`` a tuple of those), so code that reads a decoded value never meets a
type it did not declare. Sizes are not trusted either: every string and list is capped again on
decoding (:data:`MAX_TEXT`, :data:`MAX_ITEMS`), whatever the sender claims to have cut, and the
caller bounds the bytes before parsing them (a worker's result frame, a stored value's size).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Iterable
from typing import Any

import numpy as np

from jaxplay.core import untrusted

_CLASS = "__dataclass__"
_ARRAY = "__ndarray__"
_TUPLE = "__tuple__"
#: Deepest nesting of values: a jaxpr tree sub-jaxprs deep takes four levels a sub-jaxpr (a
#: block, its equations, an equation, its subs), and decoding stays far from Python's recursion
#: limit.
MAX_DEPTH = 160
#: Longest string a decoded result may hold (longer ones are cut, ending in ``…``).
MAX_TEXT = 1_000_000
#: Most entries of one decoded list, tuple or array (more is a ``ValueError``: a result's
#: arrays and rows are far smaller, and a cut array would no longer match its shape).
MAX_ITEMS = 1_000_000
#: A dataclass field's metadata key for the most items it may hold when decoded, below
#: :data:`MAX_ITEMS` (``field(metadata={MAX_ITEMS_KEY: 10_000})``): checked before its items are.
MAX_ITEMS_KEY = "max_items"
_DTYPES = frozenset({"float64", "float32", "int64", "int32", "bool", "complex128", "complex64"})


def encode(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON data: dataclasses by name and fields, arrays as nested lists."""
    if depth > MAX_DEPTH:
        raise ValueError("the value is nested too deeply to send")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {
            f.name: encode(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)
        }
        return {_CLASS: type(value).__name__, **fields}
    if isinstance(value, np.ndarray):
        kind = str(value.dtype)
        if kind not in _DTYPES:
            value, kind = value.astype(np.float64), "float64"
        data = value.tolist()
        if value.dtype.kind == "c":
            data = [[z.real, z.imag] for z in value.ravel().tolist()]
        return {_ARRAY: data, "dtype": kind, "shape": list(value.shape)}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return {_TUPLE: [encode(v, depth + 1) for v in value]}
    if isinstance(value, list):
        return [encode(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(k): encode(v, depth + 1) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"cannot send a {type(value).__name__}")


def decode(
    data: Any, allowed: Iterable[type], depth: int = 0, most_values: int | None = None
) -> Any:
    """Rebuild what :func:`encode` wrote; only the dataclasses in ``allowed`` may appear.

    ``most_values``: the most values and containers (an array counts once) the data may hold,
    counted as they are decoded: a sender's 4 MB of ``[[]]`` in one field cost a second of
    decoding before its type was ever checked (each dataclass field's JSON kind is now checked
    first, too). Anything else than what :func:`encode` writes raises ``ValueError`` (a number
    too large for its array's dtype too): a caller catches that one exception.
    """
    classes = {cls.__name__: cls for cls in allowed}
    try:
        return _decode(data, classes, depth, _Budget(most_values))
    except (OverflowError, RecursionError) as err:  # a number too large for its dtype, say
        raise ValueError(f"the data is not what was sent: {type(err).__name__}") from None


class _Budget:
    """How many more values a decode may make (``None``: no bound)."""

    def __init__(self, most: int | None) -> None:
        self.most, self.left = most, most

    def spend(self) -> None:
        if self.left is None:
            return
        self.left -= 1
        if self.left < 0:
            raise ValueError(f"the data holds more than {self.most:,} values")


def _decode(data: Any, classes: dict[str, type], depth: int, budget: _Budget) -> Any:
    if depth > MAX_DEPTH:
        raise ValueError("the data is nested too deeply")
    budget.spend()
    if isinstance(data, list):
        return [_decode(v, classes, depth + 1, budget) for v in _capped(data)]
    if not isinstance(data, dict):
        if isinstance(data, str):
            return untrusted.text(data, MAX_TEXT)
        if data is None or isinstance(data, bool | int | float):
            return data
        raise ValueError(f"unexpected {type(data).__name__} in the data")
    if _TUPLE in data:
        items = data[_TUPLE]
        if not isinstance(items, list):
            raise ValueError("a tuple must hold a list")
        return tuple(_decode(v, classes, depth + 1, budget) for v in _capped(items))
    if _ARRAY in data:
        return _array(data)
    if _CLASS in data:
        cls = classes.get(str(data[_CLASS]))
        if cls is None:
            raise ValueError(f"{data[_CLASS]!r} is not a result this page accepts")
        names = {f.name for f in dataclasses.fields(cls)}
        given = {k for k in data if k != _CLASS}
        if given != names:
            raise ValueError(f"{cls.__name__} fields do not match: {sorted(given ^ names)}")
        hints = _hints(cls)
        for f in dataclasses.fields(cls):
            _within(data[f.name], f.metadata.get(MAX_ITEMS_KEY), f"{cls.__name__}.{f.name}")
            if f.name in hints and not _shaped_like(data[f.name], hints[f.name]):
                raise ValueError(f"{cls.__name__}.{f.name} is not a {_name(hints[f.name])}")
        fields = {k: _decode(data[k], classes, depth + 1, budget) for k in names}
        for name, hint in hints.items():
            if name in fields and not _conforms(fields[name], hint):
                raise ValueError(f"{cls.__name__}.{name} is not a {_name(hint)}")
        return cls(**fields)
    return {str(k): _decode(v, classes, depth + 1, budget) for k, v in data.items()}


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """A dataclass's field annotations, resolved (an unresolvable one is not checked)."""
    try:
        return typing.get_type_hints(cls)
    except Exception:
        return {}


def _conforms(value: Any, hint: Any) -> bool:
    """Whether a decoded ``value`` is what ``hint`` declares. Only what :func:`encode` can write
    is checked (plain values, tuples, lists, dicts, arrays, dataclasses); ``Any``, a type
    variable or another form is accepted as it is. An ``int`` is a ``float``, as in typing."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any or isinstance(hint, typing.TypeVar):
        return True
    if hint is None or hint is type(None):
        return value is None
    if origin is typing.Union or origin is types.UnionType:
        return any(_conforms(value, arg) for arg in args)
    if origin is typing.Literal:
        return value in args
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool) and _fits(value)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint in (str, bool, np.ndarray) or (
        isinstance(hint, type) and dataclasses.is_dataclass(hint)
    ):
        return isinstance(value, hint)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_conforms(v, args[0]) for v in value)
        return not args or (len(args) == len(value) and all(map(_conforms, value, args)))
    if origin is list or hint is list:
        return isinstance(value, list) and all(_conforms(v, args[0]) for v in value if args)
    if origin is dict or hint is dict:
        return isinstance(value, dict) and all(
            _conforms(v, args[1]) for v in value.values() if len(args) == 2
        )
    if hint is tuple:
        return isinstance(value, tuple)
    return True


def _shaped_like(raw: Any, hint: Any) -> bool:
    """Whether ``raw``, as :func:`encode` wrote it, can decode into ``hint``: its JSON kind
    only (a string for ``str``, a tagged object for a dataclass, a list for ``list``...), looked
    at before anything of it is decoded; what it holds :func:`_conforms` checks after."""
    origin = typing.get_origin(hint)
    if hint is Any or isinstance(hint, typing.TypeVar):
        return True
    if hint is None or hint is type(None):
        return raw is None
    if origin is typing.Union or origin is types.UnionType:
        return any(_shaped_like(raw, arg) for arg in typing.get_args(hint))
    if hint is str:
        return isinstance(raw, str)
    if hint in (int, float, bool):
        return isinstance(raw, bool | int | float)
    if hint is np.ndarray:
        return isinstance(raw, dict) and _ARRAY in raw
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return isinstance(raw, dict) and _CLASS in raw
    if origin is tuple or hint is tuple:
        return isinstance(raw, dict) and _TUPLE in raw
    if origin is list or hint is list:
        return isinstance(raw, list)
    if origin is dict or hint is dict:
        return isinstance(raw, dict) and not ({_TUPLE, _ARRAY, _CLASS} & raw.keys())
    return True


def _name(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")


def _fits(value: int | float) -> bool:
    """Whether ``value`` converts to a float: a JSON integer may have 400 digits."""
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _within(raw: Any, most: int | None, name: str) -> None:
    """Refuse a list (or tuple) field of a dataclass holding more than ``most`` items before its
    items are decoded one by one (a field's metadata :data:`MAX_ITEMS_KEY` says ``most``)."""
    if most is None:
        return
    items = raw.get(_TUPLE) if isinstance(raw, dict) else raw
    if isinstance(items, list) and len(items) > most:
        raise ValueError(f"{name} holds {len(items):,} items (at most {most:,})")


def _capped(items: list[Any]) -> list[Any]:
    if len(items) > MAX_ITEMS:
        raise ValueError(f"a list of {len(items):,} entries (at most {MAX_ITEMS:,} are accepted)")
    return items


def _array(data: dict[str, Any]) -> np.ndarray:
    kind = str(data.get("dtype"))
    if kind not in _DTYPES:
        raise ValueError(f"arrays of {kind!r} are not accepted")
    shape = data.get("shape")
    if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise ValueError("an array needs a shape")
    values = data[_ARRAY]
    if not isinstance(values, list) or math.prod(shape) > MAX_ITEMS:
        raise ValueError(f"an array of at most {MAX_ITEMS:,} values is accepted")
    try:
        if np.dtype(kind).kind == "c":
            pairs = np.asarray(values, dtype=np.float64).reshape(-1, 2)
            return (pairs[:, 0] + 1j * pairs[:, 1]).astype(kind).reshape(shape)
        array = np.asarray(values, dtype=kind)
    except (OverflowError, TypeError) as err:  # 10**400 as float64, 2**70 as int64, ...
        raise ValueError(f"an array's values are no {kind}: {type(err).__name__}") from None
    if list(array.shape) != shape:
        raise ValueError("an array's values do not match its shape")
    return array


def dataclass_types(annotation: Any, found: set[type] | None = None) -> frozenset[type]:
    """Every dataclass a value of type ``annotation`` may hold (its fields' types, recursively),
    for :func:`decode`'s ``allowed``: what a function is annotated to return is what may come
    back, and nothing else.

    Example:
        >>> from jaxplay.core import timing
        >>> sorted(t.__name__ for t in dataclass_types(timing.JitComparison | None))
        ['JitComparison', 'Timing']
    """
    found = set() if found is None else found
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        if annotation in found:
            return frozenset(found)
        found.add(annotation)
        try:
            hints = typing.get_type_hints(annotation)
        except Exception:  # a forward reference that cannot be resolved: its own fields only
            hints = {f.name: f.type for f in dataclasses.fields(annotation)}
        for hint in hints.values():
            dataclass_types(hint, found)
        return frozenset(found)
    for arg in typing.get_args(annotation):
        dataclass_types(arg, found)
    return frozenset(found)

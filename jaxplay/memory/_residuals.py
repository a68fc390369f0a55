"""What ``jax.grad`` saves between its forward and backward passes, as rows (JAX's own list).

``jax.ad_checkpoint.print_saved_residuals`` prints one line per saved value; the memory page
shows them as a table and counts them per variant, so this module reads them into
:class:`Residual` rows, from JAX's structured (private) form where present and from the printed
text otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import jax
import numpy as np

from jaxplay.core import capture, jax_private
from jaxplay.core.hlo import DTYPE_BYTES


@dataclass(frozen=True)
class Residual:
    """One value saved for the backward pass.

    Attributes:
        dtype: short dtype (``f32``).
        shape: its shape.
        bytes: its size.
        origin: ``argument``, ``output`` (of an op), ``named`` (a ``checkpoint_name`` tag),
            ``constant``, ``literal`` or ``jitted`` (output of an inner jitted function).
        producer: the argument's name, the primitive, or the tag.
        source: where in Python it was made (``memory.py:61 (seed_round)``), if known.
        description: JAX's own words (the line ``print_saved_residuals`` prints).
    """

    dtype: str
    shape: tuple[int, ...]
    bytes: int
    origin: str
    producer: str
    source: str | None
    description: str


_AVAL = re.compile(r"^(?P<dtype>[a-z][a-z0-9]*)\[(?P<dims>[^\]]*)\]")
_SOURCE = re.compile(r"^(?P<file>.+?):(?P<line>\d+)(?::\d+)?(?: \((?P<fn>[^)]*)\))?$")
_DESCRIPTIONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("argument", re.compile(r"^from the argument (?P<who>.+)$")),
    ("named", re.compile(r"^named '(?P<who>[^']+)' from (?P<src>.+)$")),
    ("jitted", re.compile(r"^output of jitted function '(?P<who>[^']+)' from (?P<src>.+)$")),
    ("output", re.compile(r"^output of (?P<who>\S+) from (?P<src>.+)$")),
    ("constant", re.compile(r"^from a (?P<who>constant)$")),
    ("literal", re.compile(r"^from a (?P<who>literal)$")),
)


def _short_source(src: str) -> str:
    m = _SOURCE.match(src.strip())
    if not m:
        return src.strip()
    where = f"{PurePath(m.group('file')).name}:{m.group('line')}"
    return f"{where} ({m.group('fn')})" if m.group("fn") else where


def parse_residual(aval: str, description: str) -> Residual:
    """A :class:`Residual` from one ``print_saved_residuals`` line, split as (aval, description).

    ``aval`` is JAX's short form (``f32[1000,1000]``); ``description`` the rest of the line.
    """
    m = _AVAL.match(aval.strip())
    dtype = m.group("dtype") if m else aval.strip()
    dims = tuple(int(d) for d in m.group("dims").split(",") if d.strip()) if m else ()
    size = int(np.prod(dims, dtype=np.int64)) if dims else 1
    origin, producer, source = "other", "", None
    for kind, pattern in _DESCRIPTIONS:
        d = pattern.match(description.strip())
        if d:
            origin, producer = kind, d.group("who")
            if "src" in d.groupdict() and d.group("src"):
                source = _short_source(d.group("src"))
            break
    return Residual(
        dtype=dtype,
        shape=dims,
        bytes=int(size * DTYPE_BYTES.get(dtype, 0)),
        origin=origin,
        producer=producer,
        source=source,
        description=description.strip(),
    )


def _printed_saved_residuals(f: Callable[..., Any], *args: Any) -> list[tuple[str, str]]:
    """Public ``print_saved_residuals``, its printed lines captured and split."""
    from jax.ad_checkpoint import print_saved_residuals

    with capture.printed() as out:
        print_saved_residuals(f, *args)
    pairs = []
    for line in out.text.splitlines():
        aval, _, description = line.strip().partition(" ")
        if _AVAL.match(aval):
            pairs.append((aval, description))
    return pairs


def saved_residuals(
    f: Callable[..., Any], *args: Any, use_private: bool = True, argnums: int | None = None
) -> tuple[Residual, ...]:
    """What ``jax.grad(f)`` saves between its forward and backward passes, one row per value
    (``jax.grad(f, argnums)``'s, when given).

    The same list ``jax.ad_checkpoint.print_saved_residuals(f, *args)`` prints. JAX's structured
    form of it is private, so it is used when present (``use_private``) and the printed text is
    captured and parsed otherwise; both give the same rows. That public list plans a backward
    pass for every argument, so with ``argnums`` the printed route differentiates ``f`` with the
    other arguments behind ``stop_gradient`` (the same count; such an argument, where saved, is
    then named as ``stop_gradient``'s output).
    """
    pairs = jax_private.saved_residuals(f, *args, argnums=argnums) if use_private else None
    if pairs is None and argnums is None:
        pairs = _printed_saved_residuals(f, *args)
    elif pairs is None:

        def only_wrt(*values: Any) -> Any:
            return f(
                *[v if i == argnums else jax.lax.stop_gradient(v) for i, v in enumerate(values)]
            )

        pairs = _printed_saved_residuals(only_wrt, *args)
    return tuple(parse_residual(aval, description) for aval, description in pairs)

"""What a function is staged for: the shape and dtype of each argument, never data.

Why a module of its own: the tracing page and the sandbox stage functions for abstract arguments
(``jax.ShapeDtypeStruct``) a visitor describes in words; these are read and bounded here, before
anything is traced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jaxplay.core import claims, markdown
from jaxplay.core.i18n import N_, _

#: dtypes a visitor may give an argument (float64/int64 only exist with ``jax_enable_x64``).
DTYPES: tuple[str, ...] = ("float32", "bfloat16", "float16", "int32", "int8", "uint8", "bool")
#: A Python float as JAX sees it: float32, *weakly typed* (the other operand's dtype wins). An
#: option value (links carry it); the picker shows it translated (:func:`dtype_label`).
WEAK_FLOAT32 = N_("float32, weak (a Python float)")
#: What the page's own functions may be staged with: the dtypes, and a Python float. (Functions
#: from the Code Lab are staged in the sandbox, which takes real dtypes only.)
PRESET_DTYPES: tuple[str, ...] = (*DTYPES, WEAK_FLOAT32)
#: Largest number of elements of one argument (nothing is allocated, but compile time grows).
MAX_ELEMENTS = 1 << 24
#: Largest rank of one argument.
MAX_RANK = 6
#: Most arguments a function may be staged with: the page draws a shape box and a dtype picker
#: for each, and Streamlit's cost per widget grows with the widgets already drawn (a
#: 1,000-argument ``def`` held the server's interpreter for 10 s a rerun).
MAX_ARGS = 8


# --- inputs ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InputSpec:
    """The abstract value of one argument: its shape and dtype (no data is ever needed)."""

    shape: tuple[int, ...]
    dtype: str

    def __str__(self) -> str:
        if self.dtype == WEAK_FLOAT32:
            return f"float32[{','.join(map(str, self.shape))}] (weak)"
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"

    @property
    def weak(self) -> bool:
        """A weakly typed argument: what a Python scalar becomes."""
        return self.dtype == WEAK_FLOAT32


def dtype_label(dtype: str) -> str:
    """How the dtype picker shows ``dtype``: its name, or the weak float described in the
    visitor's language."""
    return _(WEAK_FLOAT32) if dtype == WEAK_FLOAT32 else dtype


def parse_shape(text: str) -> tuple[int, ...]:
    """A shape typed as ``"4, 8"``, ``"(4, 8)"`` or ``"3"``; empty or ``"()"`` is a scalar.

    Raises ``ValueError`` with a message fit to show: which part is not a size, or which limit
    (:data:`MAX_RANK`, :data:`MAX_ELEMENTS`) the shape exceeds.
    """
    body = text.strip().strip("()[]").strip()
    if not body:
        return ()
    dims: list[int] = []
    for part in (p.strip() for p in body.split(",")):
        if not part:
            continue
        try:
            # isdigit() holds for '²', which int() refuses with Python's own words.
            size = int(part) if part.isdigit() else None
        except ValueError:
            size = None
        if size is None:
            raise ValueError(
                _("'{part}' is not a size: write sizes as whole numbers, e.g. 4, 8").format(
                    part=part[:40]
                )
            )
        dims.append(size)
    shape = tuple(dims)
    check_shape(shape)
    return shape


@claims.states_nothing("the page's own limit on arguments, not a rule of JAX")
def arity_problem(name: str, arity: int) -> str | None:
    """Why ``name``, needing ``arity`` arguments, is not staged (over :data:`MAX_ARGS`): Markdown
    in the visitor's language; ``None`` when it may be."""
    if arity <= MAX_ARGS:
        return None
    return _(
        "{name} takes {n} arguments: functions of at most {limit} are staged here (each "
        "gets a shape and a dtype box)."
    ).format(name=markdown.code(name), n=f"{arity:,}", limit=MAX_ARGS)


def check_shape(shape: tuple[int, ...]) -> None:
    """Refuse shapes over :data:`MAX_RANK` dimensions or :data:`MAX_ELEMENTS` elements."""
    if len(shape) > MAX_RANK:
        raise ValueError(
            _("rank {rank} is over the limit of {limit} dimensions").format(
                rank=len(shape), limit=MAX_RANK
            )
        )
    elements = 1
    for d in shape:
        elements *= d
    if elements > MAX_ELEMENTS:
        raise ValueError(
            _("{n} elements is over the limit of {limit} elements per argument").format(
                n=f"{elements:,}", limit=f"{MAX_ELEMENTS:,}"
            )
        )


def shape_structs(args: Sequence[InputSpec]) -> list[Any]:
    import jax
    import jax.numpy as jnp

    for spec in args:
        check_shape(spec.shape)
    return [
        jax.ShapeDtypeStruct(s.shape, jnp.float32, weak_type=True)
        if s.weak
        else jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype))
        for s in args
    ]

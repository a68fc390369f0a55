"""A jaxpr as plain data: a tree of its equations (for the graph) and rows (for the table).

Why: a jaxpr holds JAX objects that cannot leave the process that traced them, and the sandbox
stages visitors' functions in another process. Here a closed jaxpr becomes frozen dataclasses of
strings and numbers (variables named uniquely, sub-jaxprs nested, each equation's source line)
that round-trip through JSON.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from jaxplay.core import jax_private

# --- the equations as a tree ----------------------------------------------------------------------


@dataclass(frozen=True)
class SourceRef:
    """The Python source a page shows: a file and the span of its lines on screen."""

    file: str
    first: int
    last: int

    @property
    def name(self) -> str:
        """The file's name without its folders (what a page may show of where code lives)."""
        return PurePath(self.file).name

    def line(self, file: str | None, line: int | None) -> int | None:
        """``line`` if it lies in this source, else ``None``."""
        if file is None or line is None or file != self.file:
            return None
        return line if self.first <= line <= self.last else None


@dataclass(frozen=True)
class Atom:
    """A jaxpr variable or literal: ``name`` is unique in its :class:`Block` tree."""

    name: str
    type: str
    literal: bool = False


@dataclass(frozen=True)
class Sub:
    """A jaxpr inside an equation's parameters (``pjit``'s ``jaxpr``, ``cond``'s ``branches[1]``).

    Attributes:
        param: the parameter holding it, with an index for tuples (``branches[0]``).
        bind: for each of the sub-jaxpr's inputs, the position of the equation input it receives,
            or ``None`` where that cannot be told.
        block: the sub-jaxpr.
    """

    param: str
    bind: tuple[int | None, ...]
    block: Block


@dataclass(frozen=True)
class Eqn:
    """One jaxpr equation.

    Attributes:
        path: its place in the tree: ``"3"`` at the top, ``"3/jaxpr/0"`` inside eqn 3's jaxpr.
        primitive: the primitive's name (``mul``, ``scan``).
        params: short parameters as text (sub-jaxprs and long values left out).
        inputs, outputs: the variables read and bound.
        source_line: the line of the shown source that produced it, if it is one.
        where: JAX's own summary of the location (``file.py:12:8 (f)``), if any.
        subs: the sub-jaxprs in its parameters.
    """

    path: str
    primitive: str
    params: str
    inputs: tuple[Atom, ...]
    outputs: tuple[Atom, ...]
    source_line: int | None
    where: str
    subs: tuple[Sub, ...] = ()


@dataclass(frozen=True)
class Block:
    """A jaxpr: constants, inputs, equations in order, outputs."""

    constvars: tuple[Atom, ...]
    invars: tuple[Atom, ...]
    outvars: tuple[Atom, ...]
    eqns: tuple[Eqn, ...]


def walk(block: Block, depth: int = 0) -> Iterable[tuple[int, Eqn]]:
    """Every equation of ``block`` and its sub-jaxprs, in program order, with its nesting depth."""
    for eqn in block.eqns:
        yield depth, eqn
        for sub in eqn.subs:
            yield from walk(sub.block, depth + 1)


class Names:
    """JAX-style names (``a`` … ``z``, ``ba`` …) for variables, one per ``Var`` object."""

    def __init__(self) -> None:
        self._names: dict[int, str] = {}
        self._keep: list[Any] = []

    def __call__(self, var: Any) -> str:
        key = id(var)
        if key not in self._names:
            self._keep.append(var)  # ids stay unique while the objects live
            n = len(self._names)
            name = ""
            while True:
                name = chr(ord("a") + n % 26) + name
                n = n // 26 - 1
                if n < 0:
                    break
            self._names[key] = name
        return self._names[key]


def _type(aval: Any) -> str:
    try:
        return str(aval.str_short(short_dtypes=True))
    except Exception:  # tokens and other abstract values print plainly
        return str(aval)


def _literal(value: Any) -> str:
    """A literal's value as the jaxpr prints it (``1.0``, ``3``, ``True``)."""
    import numpy as np

    try:
        array = np.asarray(value)
    except Exception:  # an opaque literal: its own text is all there is
        return str(value)
    return str(array.item()) if array.ndim == 0 else f"array{list(array.shape)}"


def _atom(var: Any, names: Names) -> Atom:
    from jax.extend import core

    if isinstance(var, core.Literal):
        return Atom(name=_literal(var.val), type=_type(var.aval), literal=True)
    if isinstance(var, core.DropVar):
        return Atom(name="_", type=_type(var.aval))
    return Atom(name=names(var), type=_type(var.aval))


def _short_params(params: dict[str, Any]) -> str:
    from jax.extend import core

    parts = []
    for key in sorted(params):
        value = params[key]
        values = value if isinstance(value, (tuple, list)) else (value,)
        if any(isinstance(v, (core.ClosedJaxpr, core.Jaxpr)) for v in values):
            continue
        if value is None:
            continue
        text = str(value)
        if len(text) <= 24 and "\n" not in text:
            parts.append(f"{key}={text}")
    return " ".join(parts)


def _bind(eqn: Any, param: str, n_sub: int) -> tuple[int | None, ...]:
    """Which equation inputs feed a sub-jaxpr's inputs (each control-flow primitive's rule)."""
    n = len(eqn.invars)
    if eqn.primitive.name == "while":
        cn, bn = int(eqn.params["cond_nconsts"]), int(eqn.params["body_nconsts"])
        carry = list(range(cn + bn, n))
        idx = [*range(cn), *carry] if param == "cond_jaxpr" else [*range(cn, cn + bn), *carry]
    elif n_sub <= n:
        # pjit/scan/remat/custom_*: one to one; cond: the branch index comes first.
        idx = list(range(n - n_sub, n))
    else:
        idx = []
    if len(idx) != n_sub:
        return (None,) * n_sub
    return tuple(idx)


def _subjaxprs(params: dict[str, Any]) -> list[tuple[str, Any]]:
    from jax.extend import core

    found = []
    for key in sorted(params):
        value = params[key]
        if isinstance(value, (core.ClosedJaxpr, core.Jaxpr)):
            found.append((key, value))
        elif isinstance(value, (tuple, list)):
            for i, v in enumerate(value):
                if isinstance(v, (core.ClosedJaxpr, core.Jaxpr)):
                    found.append((f"{key}[{i}]", v))
    return found


def build_block(jaxpr: Any, source: SourceRef | None, names: Names, prefix: str = "") -> Block:
    """The :class:`Block` tree of a ``Jaxpr``/``ClosedJaxpr``, locations resolved to ``source``."""
    from jax.extend import core

    inner = jaxpr.jaxpr if isinstance(jaxpr, core.ClosedJaxpr) else jaxpr
    eqns = []
    for i, eqn in enumerate(inner.eqns):
        path = f"{prefix}{i}"
        frame = jax_private.user_frame(eqn)
        file = getattr(frame, "file_name", None)
        line = getattr(frame, "start_line", None)
        where = f"{file}:{line} ({frame.function_name})" if frame is not None else ""
        inputs = tuple(_atom(v, names) for v in eqn.invars)
        subs = tuple(
            Sub(
                param=param,
                bind=_bind(eqn, param.split("[")[0], len(_open(sub).invars)),
                block=build_block(sub, source, names, f"{path}/{param}/"),
            )
            for param, sub in _subjaxprs(eqn.params)
        )
        eqns.append(
            Eqn(
                path=path,
                primitive=eqn.primitive.name,
                params=_short_params(eqn.params),
                inputs=inputs,
                outputs=tuple(_atom(v, names) for v in eqn.outvars),
                source_line=source.line(file, line) if source else None,
                where=where,
                subs=subs,
            )
        )
    return Block(
        constvars=tuple(_atom(v, names) for v in inner.constvars),
        invars=tuple(_atom(v, names) for v in inner.invars),
        outvars=tuple(_atom(v, names) for v in inner.outvars),
        eqns=tuple(eqns),
    )


def _open(jaxpr: Any) -> Any:
    from jax.extend import core

    return jaxpr.jaxpr if isinstance(jaxpr, core.ClosedJaxpr) else jaxpr


# --- structured views -----------------------------------------------------------------------------


@dataclass(frozen=True)
class EquationRow:
    """One equation as a table row: what it computes, on what, and where it came from."""

    path: str
    depth: int
    primitive: str
    inputs: str
    outputs: str
    params: str
    source_line: int | None


def equation_rows(block: Block) -> tuple[EquationRow, ...]:
    """All equations of ``block`` (sub-jaxprs included, after their parent) as rows."""
    return tuple(
        EquationRow(
            path=eqn.path,
            depth=depth,
            primitive=eqn.primitive,
            inputs=", ".join(f"{a.name}:{a.type}" if a.literal else a.type for a in eqn.inputs),
            outputs=", ".join(a.type for a in eqn.outputs),
            params=eqn.params,
            source_line=eqn.source_line,
        )
        for depth, eqn in walk(block)
    )


@dataclass(frozen=True)
class FusionRow:
    """One XLA fusion (one kernel) of the optimized HLO and the ops it holds."""

    name: str
    kind: str
    ops: tuple[str, ...]
    shape: str
    source_lines: tuple[int, ...]

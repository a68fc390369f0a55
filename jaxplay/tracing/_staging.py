"""One function at every stage JAX takes it through: Python → jaxpr → StableHLO → optimized HLO.

Why this module: the model is Compiler Explorer. The same program is shown at each stage side by
side, and every equation, op and instruction is tied back to the Python line that produced it. JAX
records those lines itself (a jaxpr equation's ``source_info``, StableHLO ``loc(...)`` locations,
HLO ``metadata`` with stack frames); this module reads them out of all three and into one number per
text line, so a page can highlight "everything that came from line 12".

Everything here returns plain data (frozen dataclasses of strings, numbers and tuples) that
round-trips through JSON, so the same :class:`Staged` can be built inside the code sandbox for a
visitor's function and shown by the server, which never runs that function itself.

- :func:`stage` — the texts, the equations as a tree (for the graph) and as rows, the XLA fusions,
  and the source line of every text line.
- :func:`stage_variant` — the same for ``jit(f)``, ``grad(f)`` or ``vmap(f)``.
- :func:`unified_diff`, :func:`side_by_side` — two stages or two variants compared.
- :func:`pane_html`, :func:`diff_html` — the texts with highlighted lines, escaped, for display.
"""

from __future__ import annotations

import dataclasses
import difflib
import html
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from jaxplay.core import hlo, jax_private

#: dtypes a visitor may give an argument (float64/int64 only exist with ``jax_enable_x64``).
DTYPES: tuple[str, ...] = ("float32", "bfloat16", "float16", "int32", "int8", "uint8", "bool")
#: Largest number of elements of one argument (nothing is allocated, but compile time grows).
MAX_ELEMENTS = 1 << 24
#: Largest rank of one argument.
MAX_RANK = 6
#: The variants of ``f`` that can be staged and compared.
VARIANTS: tuple[str, ...] = ("f", "jit(f)", "grad(f)", "vmap(f)")
#: Batch size of the new leading axis ``vmap(f)`` maps over.
VMAP_BATCH = 4
#: The stages of a :class:`Staged`, as ``(label, attribute)``.
STAGES: tuple[tuple[str, str], ...] = (
    ("jaxpr", "jaxpr_text"),
    ("StableHLO", "stablehlo_text"),
    ("optimized HLO", "hlo_text"),
)


# --- inputs ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InputSpec:
    """The abstract value of one argument: its shape and dtype (no data is ever needed)."""

    shape: tuple[int, ...]
    dtype: str

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"


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
        if not part.isdigit():
            raise ValueError(f"'{part}' is not a size: write sizes as whole numbers, e.g. 4, 8")
        dims.append(int(part))
    shape = tuple(dims)
    check_shape(shape)
    return shape


def check_shape(shape: tuple[int, ...]) -> None:
    """Refuse shapes over :data:`MAX_RANK` dimensions or :data:`MAX_ELEMENTS` elements."""
    if len(shape) > MAX_RANK:
        raise ValueError(f"rank {len(shape)} is over the limit of {MAX_RANK} dimensions")
    elements = 1
    for d in shape:
        elements *= d
    if elements > MAX_ELEMENTS:
        raise ValueError(
            f"{elements:,} elements is over the limit of {MAX_ELEMENTS:,} elements per argument"
        )


def _structs(args: Sequence[InputSpec]) -> list[Any]:
    import jax
    import jax.numpy as jnp

    for spec in args:
        check_shape(spec.shape)
    return [jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype)) for s in args]


# --- the equations as a tree ----------------------------------------------------------------------


@dataclass(frozen=True)
class SourceRef:
    """The Python source a page shows: a file and the span of its lines on screen."""

    file: str
    first: int
    last: int

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


class _Names:
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


def _atom(var: Any, names: _Names) -> Atom:
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


def build_block(jaxpr: Any, source: SourceRef | None, names: _Names, prefix: str = "") -> Block:
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


# --- source lines of every text line --------------------------------------------------------------

_JAXPR_LOC = re.compile(r"#\s(?P<file>.+?):(?P<line>\d+)(?::\d+)?(?:\s\([^()]*\))?\s*$")
_MLIR_ALIAS = re.compile(r"^(?P<alias>#loc\d*) = loc\((?P<body>.*)\)\s*$")
_MLIR_TOKEN = re.compile(r'(?P<ref>#loc\d*)|"(?P<file>(?:[^"\\]|\\.)*)":(?P<line>\d+):\d+')
_MLIR_OP_LOC = re.compile(r"\bloc\((?P<body>.*)\)\s*(?:\{)?\s*$")
_HLO_NAME = re.compile(r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s")


def jaxpr_line_sources(text: str, source: SourceRef | None) -> tuple[int | None, ...]:
    """For each line of a jaxpr printed with ``source_info=True``: the source line it names."""
    out: list[int | None] = []
    for line in text.splitlines():
        m = _JAXPR_LOC.search(line)
        out.append(source.line(m.group("file"), int(m.group("line"))) if m and source else None)
    return tuple(out)


def stablehlo_line_sources(text: str, source: SourceRef | None) -> tuple[int | None, ...]:
    """For each line of StableHLO printed with ``debug_info=True``: the source line of its op.

    An op's location is a chain of ``#locN`` aliases (named locations, call sites) ending in
    ``"file":line:col`` locations; the first file location reached is the innermost frame.
    """
    lines = text.splitlines()
    aliases: dict[str, str] = {}
    for line in lines:
        m = _MLIR_ALIAS.match(line)
        if m:
            aliases[m.group("alias")] = m.group("body")

    memo: dict[str, tuple[str, int] | None] = {}

    def first_file(body: str, seen: frozenset[str]) -> tuple[str, int] | None:
        for token in _MLIR_TOKEN.finditer(body):
            ref = token.group("ref")
            if ref is None:
                return token.group("file"), int(token.group("line"))
            if ref in seen or ref not in aliases:
                continue
            if ref not in memo:
                memo[ref] = first_file(aliases[ref], seen | {ref})
            if memo[ref] is not None:
                return memo[ref]
        return None

    out: list[int | None] = []
    for line in lines:
        m = None if _MLIR_ALIAS.match(line) else _MLIR_OP_LOC.search(line)
        found = first_file(m.group("body"), frozenset()) if m else None
        out.append(source.line(*found) if found and source else None)
    return tuple(out)


def hlo_line_sources(text: str, source: SourceRef | None) -> tuple[int | None, ...]:
    """For each line of optimized HLO: the source line in its instruction's metadata.

    Instruction names are unique in an HLO module, so the instructions that
    :func:`jaxplay.core.hlo.parse_fusions` and :func:`jaxplay.core.hlo.entry_ops` read
    (with their source lines) are matched back to the text by name.
    """
    by_name: dict[str, hlo.SourceLine | None] = {}
    for op in hlo.entry_ops(text):
        by_name[op.name] = op.source
    for fused in hlo.parse_fusions(text):
        for op in fused.instructions:
            by_name[op.name] = op.source
    out: list[int | None] = []
    for line in text.splitlines():
        m = _HLO_NAME.match(line)
        where = by_name.get(m.group("name")) if m else None
        out.append(source.line(where.file, where.line) if where and source else None)
    return tuple(out)


# --- staging --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Staged:
    """A function at each stage, with structured views and the source line of every text line.

    Attributes:
        jaxpr_text: ``make_jaxpr``'s jaxpr, each equation followed by ``# file:line (function)``.
        stablehlo_text: ``jit(f).lower(...).as_text(debug_info=True)`` (with ``loc`` locations).
        hlo_text: ``.compile().as_text()``: the optimized HLO XLA runs (fusions visible).
        jaxpr: the jaxpr as a :class:`Block` tree (for the graph and the rows).
        arg_names: the function's argument names, as JAX recorded them.
        jaxpr_lines, stablehlo_lines, hlo_lines: one entry per text line: the line of the shown
            source it came from, or ``None``.
        fusions: the XLA fusions of the optimized HLO.
        notes: what could not be done (a stage a backend would not print).
    """

    jaxpr_text: str
    stablehlo_text: str
    hlo_text: str
    jaxpr: Block
    arg_names: tuple[str, ...]
    jaxpr_lines: tuple[int | None, ...]
    stablehlo_lines: tuple[int | None, ...]
    hlo_lines: tuple[int | None, ...]
    fusions: tuple[FusionRow, ...]
    notes: tuple[str, ...] = ()

    @property
    def equations(self) -> tuple[EquationRow, ...]:
        """The equations as rows (see :func:`equation_rows`)."""
        return equation_rows(self.jaxpr)

    def lines_of(self, stage: str) -> tuple[int | None, ...]:
        """The per-line source map of a stage named as in :data:`STAGES`."""
        attr = dict(STAGES)[stage]
        return getattr(self, attr.replace("_text", "_lines"))

    def text_of(self, stage: str) -> str:
        """The text of a stage named as in :data:`STAGES`."""
        return getattr(self, dict(STAGES)[stage])

    def to_json(self) -> dict[str, Any]:
        """Plain JSON data (lists, dicts, strings, numbers); :meth:`from_json` reverses it."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Staged:
        """The :class:`Staged` that :meth:`to_json` produced (e.g. inside the sandbox)."""
        return cls(
            jaxpr_text=str(data["jaxpr_text"]),
            stablehlo_text=str(data["stablehlo_text"]),
            hlo_text=str(data["hlo_text"]),
            jaxpr=_block_from_json(data["jaxpr"]),
            arg_names=tuple(str(n) for n in data["arg_names"]),
            jaxpr_lines=tuple(_line(n) for n in data["jaxpr_lines"]),
            stablehlo_lines=tuple(_line(n) for n in data["stablehlo_lines"]),
            hlo_lines=tuple(_line(n) for n in data["hlo_lines"]),
            fusions=tuple(
                FusionRow(
                    name=str(f["name"]),
                    kind=str(f["kind"]),
                    ops=tuple(str(o) for o in f["ops"]),
                    shape=str(f["shape"]),
                    source_lines=tuple(n for n in map(_line, f["source_lines"]) if n is not None),
                )
                for f in data["fusions"]
            ),
            notes=tuple(str(n) for n in data.get("notes", ())),
        )


def _line(value: Any) -> int | None:
    """A line number from JSON: an int, or ``None`` for anything else."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _atoms(items: Iterable[dict[str, Any]]) -> tuple[Atom, ...]:
    return tuple(
        Atom(name=str(a["name"]), type=str(a["type"]), literal=bool(a["literal"])) for a in items
    )


def _block_from_json(data: dict[str, Any]) -> Block:
    return Block(
        constvars=_atoms(data["constvars"]),
        invars=_atoms(data["invars"]),
        outvars=_atoms(data["outvars"]),
        eqns=tuple(
            Eqn(
                path=str(e["path"]),
                primitive=str(e["primitive"]),
                params=str(e["params"]),
                inputs=_atoms(e["inputs"]),
                outputs=_atoms(e["outputs"]),
                source_line=_line(e["source_line"]),
                where=str(e["where"]),
                subs=tuple(
                    Sub(
                        param=str(s["param"]),
                        bind=tuple(_line(b) for b in s["bind"]),
                        block=_block_from_json(s["block"]),
                    )
                    for s in e["subs"]
                ),
            )
            for e in data["eqns"]
        ),
    )


def _on_fresh_stack(fn: Callable[[], Any]) -> Any:
    """``fn()`` run in a new thread, so the call stack JAX records starts there.

    Traced from a page, the stack would hold the web server's frames (Streamlit's script runner,
    its caches), and JAX writes all of them into the StableHLO locations and the HLO's file and
    function tables. A new thread's stack holds only ``fn``'s own frames. (JAX's thread-local
    settings, such as an ``enable_x64`` context, are not carried into the thread.)
    """
    jax_private.hide_frames_of(__file__)
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as err:  # re-raised in the caller's thread
            outcome["error"] = err

    thread = threading.Thread(target=target, name="jaxplay-stage", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _trace_and_lower(jitted: Any, structs: Sequence[Any]) -> tuple[Any, Any]:
    traced = jitted.trace(*structs)
    return traced, traced.lower()


def _jaxpr_text(closed: Any) -> str:
    try:
        return str(closed.pretty_print(source_info=True))
    except Exception:  # an older/newer printer without source_info: the plain text still helps
        return str(closed)


def _stablehlo_text(lowered: Any, notes: list[str]) -> str:
    try:
        return str(lowered.as_text(debug_info=True))
    except TypeError:
        notes.append("this JAX prints StableHLO without locations")
        return str(lowered.as_text())


def stage(
    fn: Callable[..., Any],
    args: Sequence[InputSpec],
    *,
    source: SourceRef | None = None,
    path_alias: str | None = None,
) -> Staged:
    """Trace, lower and compile ``fn`` for arguments of the given shapes and dtypes.

    Arguments:
        fn: the function (a plain Python function, or one already wrapped in ``jax.jit``).
        args: shape and dtype of each positional argument (no data is allocated).
        source: the source shown beside the stages; locations outside it map to no line.
        path_alias: a short name written in place of ``source.file`` in the texts (the page shows
            ``_presets.py`` rather than a long absolute path).

    Returns:
        A :class:`Staged`. JAX's own errors (a shape mismatch, a Python ``if`` on a tracer)
        propagate unchanged so the caller can show their real type and message.
    """
    import jax

    structs = _structs(args)
    notes: list[str] = []
    traced, lowered = _on_fresh_stack(lambda: _trace_and_lower(jax.jit(fn), structs))
    closed = traced.jaxpr
    jaxpr_text = _jaxpr_text(closed)
    stablehlo_text = _stablehlo_text(lowered, notes)
    hlo_text = str(lowered.compile().as_text())
    try:
        arg_names = tuple(closed.jaxpr.debug_info.arg_names)
    except Exception:  # debug info is best effort in JAX
        arg_names = ()
    fusions = tuple(
        FusionRow(
            name=f.name,
            kind=f.kind,
            ops=f.ops,
            shape=f.shape,
            source_lines=tuple(
                dict.fromkeys(
                    n
                    for n in (source.line(s.file, s.line) if source else None for s in f.sources)
                    if n is not None
                )
            ),
        )
        for f in hlo.parse_fusions(hlo_text)
    )
    staged = Staged(
        jaxpr_text=jaxpr_text,
        stablehlo_text=stablehlo_text,
        hlo_text=hlo_text,
        jaxpr=build_block(closed, source, _Names()),
        arg_names=arg_names,
        jaxpr_lines=jaxpr_line_sources(jaxpr_text, source),
        stablehlo_lines=stablehlo_line_sources(stablehlo_text, source),
        hlo_lines=hlo_line_sources(hlo_text, source),
        fusions=fusions,
        notes=tuple(notes),
    )
    if source and path_alias:
        staged = dataclasses.replace(
            staged,
            jaxpr_text=jaxpr_text.replace(source.file, path_alias),
            stablehlo_text=stablehlo_text.replace(source.file, path_alias),
            hlo_text=hlo_text.replace(source.file, path_alias),
        )
    return staged


# --- variants: jit(f), grad(f), vmap(f) -----------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """``f`` under one transform, staged, or the error JAX raised for it."""

    name: str
    note: str
    staged: Staged | None
    error: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "note": self.note,
            "staged": self.staged.to_json() if self.staged else None,
            "error": self.error,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Variant:
        staged = Staged.from_json(data["staged"]) if data.get("staged") else None
        error = data.get("error")
        return cls(
            str(data["name"]), str(data["note"]), staged, None if error is None else str(error)
        )


def variant_function(
    fn: Callable[..., Any], args: Sequence[InputSpec], name: str
) -> tuple[Callable[..., Any], tuple[InputSpec, ...], str]:
    """``fn`` transformed as ``name`` says, the arguments it takes, and a note on what was done.

    ``grad(f)`` differentiates with respect to the first argument; a function whose output is not
    one scalar is summed first (``grad`` needs a scalar), and the note says so. ``vmap(f)`` maps
    over a new leading axis of size :data:`VMAP_BATCH` on every argument.
    """
    import jax
    import jax.numpy as jnp

    args = tuple(args)
    if name == "f":
        return fn, args, "f as written."
    if name == "jit(f)":
        return jax.jit(fn), args, "f wrapped in jax.jit: its jaxpr is one jit equation."
    if name == "vmap(f)":
        batched = tuple(InputSpec((VMAP_BATCH, *a.shape), a.dtype) for a in args)
        note = f"vmap over a new leading axis of size {VMAP_BATCH} on every argument."
        return jax.vmap(fn), batched, note
    if name == "grad(f)":
        out = jax.eval_shape(fn, *_structs(args))
        leaves = jax.tree_util.tree_leaves(out)
        if len(leaves) == 1 and leaves[0].shape == ():
            return jax.grad(fn), args, "gradient with respect to the first argument."

        def summed(*a: Any) -> Any:
            return sum(jnp.sum(leaf) for leaf in jax.tree_util.tree_leaves(fn(*a)))

        shapes = ", ".join(f"{leaf.dtype}{list(leaf.shape)}" for leaf in leaves)
        note = (
            f"f returns {shapes}, not one scalar, so this is grad of the sum of its outputs, "
            "with respect to the first argument."
        )
        return jax.grad(summed), args, note
    raise ValueError(f"unknown variant {name!r}; one of {VARIANTS}")


def stage_variant(
    fn: Callable[..., Any],
    args: Sequence[InputSpec],
    name: str,
    *,
    source: SourceRef | None = None,
    path_alias: str | None = None,
) -> Variant:
    """:func:`stage` of :func:`variant_function`; JAX's error, if it raises one, kept as text."""
    note = ""
    try:
        target, target_args, note = variant_function(fn, args, name)
        staged = stage(target, target_args, source=source, path_alias=path_alias)
    except Exception as err:  # JAX's own message is the lesson: keep it, type included
        return Variant(name, note, None, f"{type(err).__name__}: {err}")
    return Variant(name, note, staged, None)


# --- diffs ----------------------------------------------------------------------------------------

_JAXPR_COMMENT = re.compile(r"\s+#\s.*$")
_MLIR_LOC = re.compile(r"\s*loc\((?:[^()]|\([^()]*\))*\)")
_HLO_METADATA = re.compile(r",\s*metadata=\{[^{}]*\}")


def without_locations(text: str) -> str:
    """``text`` with source locations removed (jaxpr comments, ``loc(...)``, HLO ``metadata``).

    Locations differ between any two variants and drown the real differences in a diff.
    """
    out = []
    for line in text.splitlines():
        if line.startswith("#loc"):
            continue
        line = _JAXPR_COMMENT.sub("", line)
        line = _MLIR_LOC.sub("", line)
        line = _HLO_METADATA.sub("", line)
        out.append(line.rstrip())
    return "\n".join(out)


def unified_diff(a: str, b: str, a_name: str, b_name: str, context: int = 3) -> str:
    """A unified diff of two texts (``---``/``+++`` headers, ``@@`` hunks), like ``diff -u``."""
    return "\n".join(
        difflib.unified_diff(a.splitlines(), b.splitlines(), a_name, b_name, n=context, lineterm="")
    )


@dataclass(frozen=True)
class DiffRow:
    """One row of a side-by-side diff: ``tag`` is ``equal``, ``replace``, ``delete`` or ``insert``.

    Line numbers count from 1; a side with nothing on this row has ``None`` and empty text.
    """

    tag: str
    left_no: int | None
    left: str
    right_no: int | None
    right: str


def side_by_side(a: str, b: str) -> tuple[DiffRow, ...]:
    """The rows of a side-by-side diff of two texts (``difflib.SequenceMatcher`` opcodes)."""
    left, right = a.splitlines(), b.splitlines()
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for k in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + k, j1 + k
            has_left, has_right = i < i2, j < j2
            rows.append(
                DiffRow(
                    tag=tag,
                    left_no=i + 1 if has_left else None,
                    left=left[i] if has_left else "",
                    right_no=j + 1 if has_right else None,
                    right=right[j] if has_right else "",
                )
            )
    return tuple(rows)


# --- display: escaped HTML with highlighted lines -------------------------------------------------

HIGHLIGHT = "rgba(255, 200, 0, 0.35)"
#: Most lines one pane draws.
MAX_PANE_LINES = 5000
_DIFF_COLORS = {
    "delete": "rgba(255, 80, 80, 0.25)",
    "insert": "rgba(60, 200, 90, 0.25)",
    "replace": "rgba(255, 200, 0, 0.25)",
}
_PRE = (
    "margin:0;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px;"
    "line-height:1.45;white-space:pre;"
)


def pane_html(
    text: str,
    line_sources: Sequence[int | None],
    selected: int | None,
    *,
    first_number: int = 1,
    only_marked: bool = False,
    max_lines: int = MAX_PANE_LINES,
    max_height_px: int = 460,
) -> str:
    """``text`` as a scrollable, line-numbered block; lines whose source is ``selected`` marked.

    With ``only_marked``, only the marked lines are kept (numbered as in the full text, a ``⋯``
    row where lines were skipped): long HLO modules then show what came from the line at once.
    At most ``max_lines`` lines are drawn (a note says how many were left out): a browser
    slows to a crawl on a block of hundreds of thousands. All text is escaped: a visitor's code
    is shown, never interpreted as HTML.
    """
    rows = []
    skipped = False
    drawn = 0
    all_lines = text.splitlines()
    for i, line in enumerate(all_lines):
        if drawn >= max_lines:
            rows.append(
                f'<div style="opacity:.6;">… {len(all_lines) - i:,} more lines not shown '
                f"(the pane shows at most {max_lines:,})</div>"
            )
            break
        mark = selected is not None and i < len(line_sources) and line_sources[i] == selected
        if only_marked and not mark:
            skipped = True
            continue
        if skipped and rows:
            rows.append('<div style="opacity:.45;">   ⋯</div>')
        skipped = False
        style = f"background:{HIGHLIGHT};" if mark else ""
        drawn += 1
        rows.append(
            f'<div style="{style}"><span style="opacity:.45;user-select:none;">'
            f"{i + first_number:>4} </span>{html.escape(line) or ' '}</div>"
        )
    return (
        f'<div style="max-height:{max_height_px}px;overflow:auto;border:1px solid '
        f'rgba(128,128,128,.35);border-radius:6px;padding:6px;"><pre style="{_PRE}">'
        + "".join(rows)
        + "</pre></div>"
    )


def highlighted(line_sources: Sequence[int | None], selected: int | None) -> int:
    """How many lines :func:`pane_html` marks for ``selected``."""
    return sum(1 for s in line_sources if selected is not None and s == selected)


def diff_html(rows: Sequence[DiffRow], *, max_height_px: int = 520) -> str:
    """A side-by-side diff as an escaped two-column table, changed rows coloured by kind.

    Long lines wrap inside their half, so both sides stay aligned and fully readable.
    """
    number = "width:3em;opacity:.45;vertical-align:top;text-align:right;padding-right:6px;"
    cell = "width:calc(50% - 3em);white-space:pre-wrap;word-break:break-all;vertical-align:top;"
    cells = []
    for row in rows:
        color = _DIFF_COLORS.get(row.tag, "")
        style = f' style="background:{color};"' if color else ""
        cells.append(
            f"<tr{style}><td style='{number}'>{row.left_no or ''}</td>"
            f"<td style='{cell}'>{html.escape(row.left)}</td>"
            f"<td style='{number}'>{row.right_no or ''}</td>"
            f"<td style='{cell}'>{html.escape(row.right)}</td></tr>"
        )
    return (
        f'<div style="max-height:{max_height_px}px;overflow:auto;border:1px solid '
        'rgba(128,128,128,.35);border-radius:6px;">'
        f'<table style="{_PRE}white-space:normal;border-collapse:collapse;width:100%;'
        'table-layout:fixed;">' + "".join(cells) + "</table></div>"
    )


# --- a visitor's function, staged in the code sandbox ---------------------------------------------

#: Longest stage text sent back from the sandbox (longer ones are cut, with a note).
MAX_SANDBOX_TEXT = 200_000
#: Sandbox runs get longer than a plain run: four variants are traced and compiled.
SANDBOX_TIMEOUT_S = 30.0


def code_functions(source: str) -> tuple[tuple[str, int], ...]:
    """The functions ``source`` defines at top level and how many positional arguments each needs.

    The names are :func:`jaxplay.sandbox.defined_functions`' (``def``, ``f = lambda ...``,
    ``f = jax.jit(g)``); the counts come from the ``def`` or ``lambda`` (for ``jax.jit(g)``,
    from ``g``; 1 when it cannot be told). Parsed with ``ast``, nothing is run. Raises
    ``SyntaxError`` for code that does not parse, so the page can say where.
    """
    import ast

    from jaxplay.sandbox import defined_functions

    tree = ast.parse(source)

    def needed(args: ast.arguments) -> int:
        return len([*args.posonlyargs, *args.args]) - len(args.defaults)

    counts: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            counts[node.name] = needed(node.args)
        elif isinstance(node, ast.Assign):
            value = node.value
            if isinstance(value, ast.Lambda):
                count = needed(value.args)
            elif isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Name):
                count = counts.get(value.args[0].id, 1)
            else:
                count = 1
            for target in node.targets:
                if isinstance(target, ast.Name):
                    counts[target.id] = count
    return tuple((name, counts.get(name, 1)) for name in defined_functions(source))


def _cut(staged: Staged) -> Staged:
    """``staged`` with texts over :data:`MAX_SANDBOX_TEXT` cut (and their line maps with them)."""
    changes: dict[str, Any] = {}
    notes = list(staged.notes)
    for label, attr in STAGES:
        text = getattr(staged, attr)
        if len(text) > MAX_SANDBOX_TEXT:
            kept = text[:MAX_SANDBOX_TEXT].rsplit("\n", 1)[0]
            lines_attr = attr.replace("_text", "_lines")
            changes[attr] = kept
            changes[lines_attr] = getattr(staged, lines_attr)[: len(kept.splitlines())]
            notes.append(f"the {label} text is cut at {MAX_SANDBOX_TEXT:,} characters")
    return dataclasses.replace(staged, **changes, notes=tuple(notes)) if changes else staged


def inspect_stages(fn: Callable[..., Any], args: tuple[Any, ...]) -> dict[str, Any]:
    """The ``stages`` inspector: every variant of a visitor's function, staged, as JSON data.

    Runs inside the sandboxed worker (registered in :data:`jaxplay.sandbox._inspectors.INSPECTORS`).
    The function's own file (the worker's name for the visitor's code) is the shown source, whole.
    """
    import inspect as pyinspect

    specs = tuple(InputSpec(tuple(int(d) for d in a.shape), str(a.dtype)) for a in args)
    code = getattr(pyinspect.unwrap(fn), "__code__", None)
    source = SourceRef(code.co_filename, 1, 10**9) if code is not None else None
    variants = []
    for name in VARIANTS:
        variant = stage_variant(fn, specs, name, source=source)
        if variant.staged is not None:
            variant = dataclasses.replace(variant, staged=_cut(variant.staged))
        variants.append(variant.to_json())
    return {"variants": variants}


@dataclass(frozen=True)
class SandboxStages:
    """What the sandbox returned for a visitor's function: its variants, or why there are none."""

    variants: tuple[Variant, ...]
    error: str | None

    def variant(self, name: str) -> Variant | None:
        """The variant called ``name`` (one of :data:`VARIANTS`), if the sandbox sent it."""
        return next((v for v in self.variants if v.name == name), None)


def sandbox_stages(
    source: str, function: str, args: Sequence[InputSpec], *, visitor: str | None = None
) -> SandboxStages:
    """Run ``source`` in the code sandbox and stage its ``function`` there (see ``runner``).

    The visitor's code never runs in this process; the worker's JSON is decoded defensively
    (it is untrusted once user code ran in it): anything malformed becomes an error message.
    """
    from jaxplay import sandbox as runner

    request = runner.InspectRequest(
        function=function,
        args=tuple(runner.ArgSpec(a.shape, a.dtype) for a in args),
        inspectors=("stages",),
    )
    result = runner.run_code(source, inspect=request, timeout_s=SANDBOX_TIMEOUT_S, visitor=visitor)
    err = result.error
    if err is not None:
        where = f" (line {err.line})" if err.line else ""
        return SandboxStages((), f"{err.exc_type or err.kind}{where}: {err.message}")
    data = result.inspections.get("stages")
    if not isinstance(data, dict) or "variants" not in data:
        message = data.get("error") if isinstance(data, dict) else None
        return SandboxStages((), str(message or "the sandbox returned no stages"))
    try:
        variants = tuple(Variant.from_json(v) for v in data["variants"])
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        return SandboxStages((), f"the sandbox returned malformed stage data ({err})")
    return SandboxStages(variants, None)

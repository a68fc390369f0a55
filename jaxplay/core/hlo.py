"""What XLA fused: the fusions of an optimized HLO module, read from its text.

``jax.jit(f).lower(x).compile().as_text()`` is the program XLA actually runs. Each ``fusion``
instruction in it is one kernel: the elementwise ops inside its *fused computation* never write
their intermediates to memory. Counting fusions and listing the ops inside them is how one sees
what "jit fuses the chain" means, and where fusion stops (a reduction or a dot often starts a new
kernel).

The text format is not a stable API, so :func:`parse_fusions` reads only what every recent XLA
prints (computation headers, ``%name = shape opcode(operands), attrs`` lines, ``kind=``, ``calls=``,
``metadata={...}``) and resolves source lines from both metadata styles: the older
``source_file=... source_line=...`` and the newer ``stack_frame_id=N`` with its tables at the top of
the module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

#: Bytes per element of the HLO primitive types (sub-byte types rounded as XLA packs them).
DTYPE_BYTES: dict[str, float] = {
    "pred": 1,
    "s4": 0.5,
    "u4": 0.5,
    "s8": 1,
    "u8": 1,
    "s16": 2,
    "u16": 2,
    "f16": 2,
    "bf16": 2,
    "s32": 4,
    "u32": 4,
    "f32": 4,
    "s64": 8,
    "u64": 8,
    "f64": 8,
    "c64": 8,
    "c128": 16,
    "f8e4m3fn": 1,
    "f8e5m2": 1,
    "f8e4m3b11fnuz": 1,
    "f8e4m3fnuz": 1,
    "f8e5m2fnuz": 1,
    "f8e4m3": 1,
    "f8e3m4": 1,
    "f8e8m0fnu": 1,
    "f4e2m1fn": 0.5,
}

#: Fusion kinds as XLA prints them (``kind=kLoop``) and as this module names them.
KINDS: dict[str, str] = {
    "kLoop": "loop",
    "kInput": "input",
    "kOutput": "output",
    "kCustom": "custom",
}

#: Opcodes that are plumbing rather than work; left out of :attr:`Fusion.ops`.
PLUMBING: frozenset[str] = frozenset({"parameter", "constant"})


@dataclass(frozen=True)
class SourceLine:
    """Where in the user's Python an HLO instruction came from."""

    file: str
    line: int
    function: str | None = None

    def __str__(self) -> str:
        where = f"{PurePath(self.file).name}:{self.line}"
        return f"{where} ({self.function})" if self.function else where


@dataclass(frozen=True)
class HloOp:
    """One instruction of an HLO computation.

    Attributes:
        name: the instruction's name without ``%`` (``sin.0``).
        opcode: the HLO opcode (``sine``, ``multiply``, ``fusion``, ``reduce``).
        shape: the result shape as printed, layout removed (``f32[100,100]``, ``(f32[2], s32[])``).
        operands: names of the operand instructions.
        op_name: the ``op_name`` metadata JAX attaches (``jit(f)/sin``), if any.
        source: the user's source line from the metadata, if any.
    """

    name: str
    opcode: str
    shape: str
    operands: tuple[str, ...]
    op_name: str | None
    source: SourceLine | None

    @property
    def primitive(self) -> str | None:
        """The JAX primitive behind the op (last part of ``op_name``: ``sin``, ``dot_general``)."""
        if not self.op_name:
            return None
        return self.op_name.rsplit("/", 1)[-1] or None


@dataclass(frozen=True)
class Fusion:
    """One fusion instruction of the module: one kernel launch, its intermediates never stored.

    Attributes:
        name: the fusion instruction's name (``broadcast_add_fusion``).
        kind: ``loop`` (elementwise), ``input`` (reduction-rooted), ``output`` (a dot or
            convolution with elementwise consumers), ``custom`` (a backend library: cuBLAS/Triton
            gemms on GPU, XNNPACK/YNNPACK on CPU), or XLA's own name for a kind not listed here.
        computation: the fused computation it calls.
        parent: the computation holding the fusion instruction (the entry, or a loop body).
        shape: the output shape as printed, layout removed.
        outputs: ``(dtype, dims)`` of each output (one unless the fusion returns a tuple).
        ops: opcodes of the work inside, in program order (parameters and constants left out;
            nested fusions are flattened into their parent).
        instructions: every instruction inside, including parameters and constants.
        operands: the fusion instruction's operands (what it reads from memory).
        op_name: the fusion instruction's own ``op_name`` metadata.
        sources: distinct source lines of the fusion and the ops inside, first appearance first.
        backend_kind: the backend's fusion label, if any (``__triton_gemm``, ``__ynn_fusion``).
    """

    name: str
    kind: str
    computation: str
    parent: str
    shape: str
    outputs: tuple[tuple[str, tuple[int, ...]], ...]
    ops: tuple[str, ...]
    instructions: tuple[HloOp, ...]
    operands: tuple[str, ...]
    op_name: str | None
    sources: tuple[SourceLine, ...]
    backend_kind: str | None

    @property
    def dtype(self) -> str:
        """The output dtype (``f32``); distinct dtypes comma-joined for a tuple output."""
        return ",".join(dict.fromkeys(d for d, _ in self.outputs))

    @property
    def dims(self) -> tuple[int, ...]:
        """Dimensions of the first output."""
        return self.outputs[0][1] if self.outputs else ()

    @property
    def output_bytes(self) -> int:
        """Bytes the fusion writes: the size of all its outputs."""
        return int(sum(_elements(dims) * DTYPE_BYTES.get(d, 0) for d, dims in self.outputs))

    @property
    def primitives(self) -> tuple[str, ...]:
        """Distinct JAX primitives fused here (from metadata), in program order."""
        names = (op.primitive for op in self.instructions if op.opcode not in PLUMBING)
        return tuple(dict.fromkeys(n for n in names if n))


def _elements(dims: tuple[int, ...]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


_HEADER = re.compile(r"^(?:ENTRY\s+)?%?(?P<name>[\w.\-]+)\s*\(.*->.*\{\s*$")
_ASSIGN = re.compile(r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*(?P<rest>.*)$")
_ARRAY = re.compile(r"(?P<dtype>[a-z][a-z0-9]*)\[(?P<dims>[^\]]*)\]")
_TABLE_ROW = re.compile(r"^(?P<id>\d+)\s+(?P<body>.*)$")
_FIELD = re.compile(r'(?P<key>\w+)=(?:"(?P<str>(?:[^"\\]|\\.)*)"|(?P<val>[^\s,}]+))')
_LAYOUT = re.compile(r"\{[^{}]*\}")


def _balanced(text: str, start: int, open_: str, close: str) -> int:
    """Index just past the bracket that closes the one at ``text[start]`` (quotes respected)."""
    depth = 0
    quoted = False
    i = start
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == "\\":
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch == open_:
            depth += 1
        elif ch == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def _strip_layout(shape: str) -> str:
    """``f32[100,100]{1,0}`` -> ``f32[100,100]`` (layouts may nest: ``{1,0:T(8,128)}``)."""
    previous = None
    while previous != shape:
        previous, shape = shape, _LAYOUT.sub("", shape)
    return shape


def _parse_outputs(shape: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    out = []
    for m in _ARRAY.finditer(shape):
        dims = tuple(
            int(d.lstrip("<=")) for d in m.group("dims").split(",") if d.strip().lstrip("<=")
        )
        out.append((m.group("dtype"), dims))
    return tuple(out)


@dataclass(frozen=True)
class _Frames:
    """The ``FileNames``/``FunctionNames``/``FileLocations``/``StackFrames`` tables of a module."""

    files: dict[int, str]
    functions: dict[int, str]
    locations: dict[int, dict[str, str]]
    frames: dict[int, dict[str, str]]

    def source(self, frame_id: int) -> SourceLine | None:
        frame = self.frames.get(frame_id)
        if frame is None:
            return None
        loc = self.locations.get(int(frame.get("file_location_id", -1)))
        if loc is None or "line" not in loc:
            return None
        file = self.files.get(int(loc.get("file_name_id", -1)), "?")
        function = self.functions.get(int(loc.get("function_name_id", -1)))
        return SourceLine(file=file, line=int(loc["line"]), function=function)


def _fields(body: str) -> dict[str, str]:
    return {
        m.group("key"): m.group("str") if m.group("str") is not None else m.group("val")
        for m in _FIELD.finditer(body)
    }


def _unquote(body: str) -> str:
    body = body.strip()
    if len(body) >= 2 and body[0] == body[-1] == '"':
        return body[1:-1]
    return body


def _parse_frames(lines: list[str]) -> _Frames:
    tables: dict[str, dict[int, str]] = {
        "FileNames": {},
        "FunctionNames": {},
        "FileLocations": {},
        "StackFrames": {},
    }
    current: dict[int, str] | None = None
    for line in lines:
        stripped = line.strip()
        if stripped in tables:
            current = tables[stripped]
            continue
        if _HEADER.match(line):
            break
        row = _TABLE_ROW.match(stripped)
        if current is not None and row:
            current[int(row.group("id"))] = row.group("body")
        elif stripped and current is not None and not row:
            current = None
    return _Frames(
        files={k: _unquote(v) for k, v in tables["FileNames"].items()},
        functions={k: _unquote(v) for k, v in tables["FunctionNames"].items()},
        locations={k: _fields(v) for k, v in tables["FileLocations"].items()},
        frames={k: _fields(v) for k, v in tables["StackFrames"].items()},
    )


@dataclass(frozen=True)
class _Instr:
    op: HloOp
    attrs: str


def _parse_instruction(line: str, frames: _Frames) -> _Instr | None:
    m = _ASSIGN.match(line)
    if not m:
        return None
    rest = m.group("rest").lstrip()
    if rest.startswith("("):
        end = _balanced(rest, 0, "(", ")")
    else:
        end = rest.find(" ")
        end = len(rest) if end < 0 else end
    shape, rest = rest[:end], rest[end:].lstrip()
    op_match = re.match(r"(?P<opcode>[\w\-]+)\(", rest)
    if not op_match:
        return None
    open_at = op_match.end() - 1
    close_at = _balanced(rest, open_at, "(", ")")
    operands = tuple(
        name
        for name in (
            re.sub(r"^.*?%?([\w.\-]+)\s*$", r"\1", part.strip())
            for part in _split_top(rest[open_at + 1 : close_at - 1])
        )
        if name
    )
    attrs = rest[close_at:]
    metadata = ""
    meta_at = attrs.find("metadata={")
    if meta_at >= 0:
        start = meta_at + len("metadata=")
        metadata = attrs[start : _balanced(attrs, start, "{", "}")]
    fields = _fields(metadata)
    source: SourceLine | None = None
    if "source_file" in fields and "source_line" in fields:
        source = SourceLine(fields["source_file"], int(fields["source_line"]))
    elif "stack_frame_id" in fields:
        source = frames.source(int(fields["stack_frame_id"]))
    op = HloOp(
        name=m.group("name"),
        opcode=op_match.group("opcode"),
        shape=_strip_layout(shape),
        operands=operands,
        op_name=fields.get("op_name"),
        source=source,
    )
    return _Instr(op=op, attrs=attrs)


def _split_top(text: str) -> list[str]:
    """Split on commas not inside brackets (operands may carry shapes: ``f32[2,3] %x``)."""
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if current:
        parts.append("".join(current))
    return parts


def _parse_computations(lines: list[str], frames: _Frames) -> dict[str, list[_Instr]]:
    computations: dict[str, list[_Instr]] = {}
    current: list[_Instr] | None = None
    for line in lines:
        header = _HEADER.match(line)
        if header and not line.startswith((" ", "\t")):
            current = computations.setdefault(header.group("name"), [])
            continue
        if line.startswith("}"):
            current = None
            continue
        if current is not None:
            instr = _parse_instruction(line, frames)
            if instr is not None:
                current.append(instr)
    return computations


def _attr(attrs: str, key: str) -> str | None:
    m = re.search(rf"(?:^|[\s,]){key}=%?([\w.\-]+)", attrs)
    return m.group(1) if m else None


def parse_fusions(hlo_text: str) -> list[Fusion]:
    """The fusions of an optimized HLO module, in program order.

    Arguments:
        hlo_text: the text of a compiled module, ``jax.jit(f).lower(*args).compile().as_text()``.
            (Unoptimized HLO and StableHLO have no fusions: the result is then empty.)

    Returns:
        One :class:`Fusion` per fusion instruction outside fused computations (the entry and any
        loop bodies or branches); nested fusions are flattened into the fusion that contains them.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> text = jax.jit(lambda x: jnp.cos(jnp.sin(x))).lower(jnp.ones(8)).compile().as_text()
        >>> [f.ops for f in parse_fusions(text)]
        [('sine', 'cosine')]
    """
    lines = hlo_text.splitlines()
    frames = _parse_frames(lines)
    computations = _parse_computations(lines, frames)
    fused: set[str] = set()
    for instrs in computations.values():
        for instr in instrs:
            if instr.op.opcode == "fusion":
                called = _attr(instr.attrs, "calls")
                if called:
                    fused.add(called)

    def inside(computation: str, seen: frozenset[str]) -> list[HloOp]:
        ops: list[HloOp] = []
        for instr in computations.get(computation, []):
            called = _attr(instr.attrs, "calls") if instr.op.opcode == "fusion" else None
            if called and called not in seen:
                ops.extend(inside(called, seen | {called}))
            else:
                ops.append(instr.op)
        return ops

    fusions: list[Fusion] = []
    for parent, instrs in computations.items():
        if parent in fused:
            continue
        for instr in instrs:
            if instr.op.opcode != "fusion":
                continue
            called = _attr(instr.attrs, "calls") or ""
            body = tuple(inside(called, frozenset({called})))
            raw_kind = _attr(instr.attrs, "kind") or "kLoop"
            backend = re.search(r'"kind"\s*:\s*"([^"]+)"', instr.attrs)
            sources = (instr.op.source, *(op.source for op in body))
            fusions.append(
                Fusion(
                    name=instr.op.name,
                    kind=KINDS.get(raw_kind, raw_kind.removeprefix("k").lower()),
                    computation=called,
                    parent=parent,
                    shape=instr.op.shape,
                    outputs=_parse_outputs(instr.op.shape),
                    ops=tuple(op.opcode for op in body if op.opcode not in PLUMBING),
                    instructions=body,
                    operands=instr.op.operands,
                    op_name=instr.op.op_name,
                    sources=tuple(dict.fromkeys(s for s in sources if s is not None)),
                    backend_kind=backend.group(1) if backend else None,
                )
            )
    return fusions


def entry_ops(hlo_text: str) -> list[HloOp]:
    """Instructions outside fused computations and reducer regions (what runs as separate steps).

    Besides fusions these are the un-fused kernels (a lone ``dot``, a ``custom-call`` to a
    library) and plumbing (``parameter``, ``tuple``, ``bitcast``): what stayed outside fusions.
    """
    lines = hlo_text.splitlines()
    frames = _parse_frames(lines)
    computations = _parse_computations(lines, frames)
    called = {
        _attr(i.attrs, "calls" if i.op.opcode == "fusion" else "to_apply")
        for instrs in computations.values()
        for i in instrs
    }
    return [i.op for name, instrs in computations.items() if name not in called for i in instrs]

"""Which line of the shown Python each line of a jaxpr, StableHLO or HLO text came from.

Why: the tracing page highlights "everything that came from line 12". JAX records the lines itself,
in three formats: a jaxpr comment, StableHLO ``loc(...)`` aliases, HLO ``metadata``; each is read
here into one number per text line.
"""

from __future__ import annotations

import re

from jaxplay.core import hlo
from jaxplay.tracing._jaxpr_tree import SourceRef

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

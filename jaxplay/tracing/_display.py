"""Stages compared and shown: diffs of two texts, and escaped HTML with highlighted lines.

Why: the page shows JAX's texts with the lines from one source line highlighted, and two stages or
variants side by side. Everything here is escaped: a visitor's function names end up in these
texts, and ``st.html`` must never render them as markup.
"""

from __future__ import annotations

import difflib
import html
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from jaxplay.core import claims
from jaxplay.core.i18n import _, ngettext

# --- diffs ----------------------------------------------------------------------------------------

# Every pattern here runs on texts a worker sent (a visitor's code may have forged them), so each
# is linear: a match may only start where a run of whitespace starts (``(?<!\s)``) and takes the
# whole run at once (``\s++``, ``\s*+``). Plain ``\s+#`` retried from every space of a run: a
# line of 100,000 spaces took minutes, holding the GIL.
_JAXPR_COMMENT = re.compile(r"(?<!\s)\s++#\s.*$")
_MLIR_LOC = re.compile(r"(?<!\s)\s*+loc\((?:[^()]|\([^()]*\))*\)")
_HLO_METADATA = re.compile(r",\s*+metadata=\{[^{}]*\}")


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


#: Most lines of each text a diff compares, and the longest line it compares whole.
MAX_DIFF_LINES = 3_000
MAX_DIFF_LINE_CHARS = 1_000
#: A line seen more often than this in either text is matched in order of appearance (its
#: k-th copy with the other text's k-th): it keeps each step of the matcher short.
_REPEATS = 4
#: The matcher's work budget (lines scanned over all its steps); past it, the texts are shown
#: aligned at their common start and end with one changed block between.
_DIFF_WORK = 100_000


class _OverBudget(Exception):
    pass


class _BoundedMatcher(difflib.SequenceMatcher):  # type: ignore[type-arg]
    """``SequenceMatcher(autojunk=False)`` that stops (:class:`_OverBudget`) past a budget.

    ``difflib``'s matcher is cubic in the worst case (two texts of one repeated line: 1,000
    lines took 35 s); with each line seen at most :data:`_REPEATS` times a side, one step costs
    at most that many lookups per line it scans, and the steps together are counted here.
    """

    a: Sequence[object]  # set by SequenceMatcher.set_seq1; typeshed leaves it undeclared

    def __init__(self, a: list[object], b: list[object], work: int) -> None:
        self._work = work
        super().__init__(None, a, b, autojunk=False)

    def find_longest_match(
        self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None
    ) -> difflib.Match:
        ahi = len(self.a) if ahi is None else ahi
        self._work -= ahi - alo + 1
        if self._work < 0:
            raise _OverBudget
        return super().find_longest_match(alo, ahi, blo, bhi)


def _diff_lines(text: str) -> tuple[list[str], bool]:
    """The lines of ``text`` a diff compares (:data:`MAX_DIFF_LINES` of at most
    :data:`MAX_DIFF_LINE_CHARS` characters), and whether any were cut."""
    lines = text.splitlines()
    cut = len(lines) > MAX_DIFF_LINES
    lines = lines[:MAX_DIFF_LINES]
    if any(len(line) > MAX_DIFF_LINE_CHARS for line in lines):
        cut = True
        lines = [
            line if len(line) <= MAX_DIFF_LINE_CHARS else line[:MAX_DIFF_LINE_CHARS] + "…"
            for line in lines
        ]
    return lines, cut


def _keys(lines: list[str], counts: Counter[str], other: Counter[str]) -> list[object]:
    seen: Counter[str] = Counter()
    out: list[object] = []
    for line in lines:
        if counts[line] <= _REPEATS and other[line] <= _REPEATS:
            out.append(line)
        else:
            out.append((line, seen[line]))
            seen[line] += 1
    return out


@dataclass(frozen=True)
class Diff:
    """What a diff compared and its opcodes (``difflib``'s ``(tag, i1, i2, j1, j2)``)."""

    left: tuple[str, ...]
    right: tuple[str, ...]
    opcodes: tuple[tuple[str, int, int, int, int], ...]
    notes: tuple[str, ...]


def diff(a: str, b: str) -> Diff:
    """The line diff of two texts, bounded in time whatever they hold.

    At most :data:`MAX_DIFF_LINES` lines of :data:`MAX_DIFF_LINE_CHARS` characters of each are
    compared; a line repeated more than a few times is matched in order; and when the matcher
    would still take long, the texts are aligned at their common first and last lines with
    one changed block between. ``notes`` says which of these happened (empty when none did), in
    the visitor's language.
    """
    (left, left_cut), (right, right_cut) = _diff_lines(a), _diff_lines(b)
    notes = []
    if left_cut or right_cut:
        notes.append(
            _(
                "the diff compares the first {lines} lines of each text, {chars} characters a line"
            ).format(lines=f"{MAX_DIFF_LINES:,}", chars=f"{MAX_DIFF_LINE_CHARS:,}")
        )
    ca, cb = Counter(left), Counter(right)
    try:
        matcher = _BoundedMatcher(_keys(left, ca, cb), _keys(right, cb, ca), _DIFF_WORK)
        opcodes = tuple(matcher.get_opcodes())
    except _OverBudget:
        opcodes = _prefix_suffix(left, right)
        notes.append(
            _(
                "the texts are too long and repetitive to align line by line: only their common "
                "first and last lines are matched"
            )
        )
    return Diff(tuple(left), tuple(right), opcodes, tuple(notes))


def _prefix_suffix(a: list[str], b: list[str]) -> tuple[tuple[str, int, int, int, int], ...]:
    """Opcodes that match the common first and last lines and replace what lies between."""
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    ops: list[tuple[str, int, int, int, int]] = []
    if start:
        ops.append(("equal", 0, start, 0, start))
    i2, j2 = len(a) - end, len(b) - end
    if i2 > start or j2 > start:
        tag = "replace" if i2 > start and j2 > start else "delete" if i2 > start else "insert"
        ops.append((tag, start, i2, start, j2))
    if end:
        ops.append(("equal", i2, len(a), j2, len(b)))
    return tuple(ops)


def unified_diff(a: str, b: str, a_name: str, b_name: str, context: int = 3) -> str:
    """A unified diff of two texts (``---``/``+++`` headers, ``@@`` hunks), like ``diff -u``
    (bounded as :func:`diff` is)."""
    found = diff(a, b)
    out: list[str] = []
    for group in _grouped(found.opcodes, context):
        if not out:
            out += [f"--- {a_name}", f"+++ {b_name}"]
        first, last = group[0], group[-1]
        left = _unified_range(first[1], last[2])
        right = _unified_range(first[3], last[4])
        out.append(f"@@ -{left} +{right} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [" " + line for line in found.left[i1:i2]]
                continue
            out += ["-" + line for line in found.left[i1:i2]]
            out += ["+" + line for line in found.right[j1:j2]]
    return "\n".join(out)


def _grouped(
    opcodes: Sequence[tuple[str, int, int, int, int]], n: int
) -> list[list[tuple[str, int, int, int, int]]]:
    """``SequenceMatcher.get_grouped_opcodes`` for opcodes already computed."""
    matcher = difflib.SequenceMatcher(None, "", "")
    # get_opcodes returns what it already has: ours (an attribute typeshed leaves undeclared).
    matcher.opcodes = list(opcodes)  # pyright: ignore[reportAttributeAccessIssue]
    return [list(g) for g in matcher.get_grouped_opcodes(n)]


def _unified_range(start: int, stop: int) -> str:
    """A ``@@`` range as ``difflib`` writes it."""
    beginning, length = start + 1, stop - start
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


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
    """The rows of a side-by-side diff of two texts (the opcodes of :func:`diff`)."""
    found = diff(a, b)
    left, right = found.left, found.right
    rows: list[DiffRow] = []
    for tag, i1, i2, j1, j2 in found.opcodes:
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
#: A pane's line: long lines wrap inside the pane (never cut off at its right edge), their
#: continuation indented past the line number so it reads as the same line.
_WRAPPED_LINE = "white-space:pre-wrap;overflow-wrap:anywhere;padding-left:5ch;text-indent:-5ch;"


@claims.states_nothing("markup around JAX's own text")
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
    """``text`` as a line-numbered block, scrolling down and wrapping long lines (a pane is half
    the page wide: a line cut off at its edge hid what XLA did); lines whose source is
    ``selected`` marked.

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
            left = len(all_lines) - i
            left_out = ngettext(
                "… {n} more line not shown (the pane shows at most {limit})",
                "… {n} more lines not shown (the pane shows at most {limit})",
                left,
            ).format(n=f"{left:,}", limit=f"{max_lines:,}")
            rows.append(f'<div style="opacity:.6;">{html.escape(left_out)}</div>')
            break
        mark = selected is not None and i < len(line_sources) and line_sources[i] == selected
        if only_marked and not mark:
            skipped = True
            continue
        if skipped and rows:
            rows.append('<div style="opacity:.45;">   ⋯</div>')
        skipped = False
        style = _WRAPPED_LINE + (f"background:{HIGHLIGHT};" if mark else "")
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

"""Stages compared and shown: diffs of two texts, and escaped HTML with highlighted lines.

Why: the page shows JAX's texts with the lines from one source line highlighted, and two stages or
variants side by side. Everything here is escaped: a visitor's function names end up in these
texts, and ``st.html`` must never render them as markup.
"""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

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
#: A pane's line: long lines wrap inside the pane (never cut off at its right edge), their
#: continuation indented past the line number so it reads as the same line.
_WRAPPED_LINE = "white-space:pre-wrap;overflow-wrap:anywhere;padding-left:5ch;text-indent:-5ch;"


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

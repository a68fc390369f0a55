"""Refusals in plain words: of text a visitor typed (:class:`InputError`), and JAX's own, with
JAX's message kept beside them (:func:`explain_error`).

Why: a page reads formulas, axis specs, PartitionSpecs, literals, shapes and seeds a visitor
typed, and each parser refuses some; one type for all of them means one way to show a refusal
(the message as text, a caret under the column at fault). And a wrong ``in_axes`` or a ``grad``
of a vector output makes JAX raise a precise but terse message: the vmap and compose pages
translate the ones they provoke, each from its own table of patterns; the translation never
replaces JAX's message, it is shown next to it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from jaxplay.core.i18n import _


class InputError(ValueError):
    """Text a visitor typed that a page refuses: what is wrong, and where.

    Attributes:
        message: what is wrong, in plain words (plain text, never Markdown: it may quote the
            visitor's text; pages show it escaped).
        text: the text as typed, when the parser kept it ("" when the page has it).
        line: 1-based line of the offending part.
        col: 1-based column of the offending part, ``None`` when it concerns the whole text.
    """

    def __init__(self, message: str, *, text: str = "", line: int = 1, col: int | None = None):
        where = ""
        if col is not None:
            where = " " + (
                _("(line {line}, column {col})").format(line=line, col=col)
                if line > 1
                else _("(column {col})").format(col=col)
            )
        super().__init__(message + where)
        self.message = message
        self.text = text
        self.line = line
        self.col = col

    def pointer(self, text: str | None = None) -> str:
        """The offending line of ``text`` (by default the text kept) with a caret under the
        column at fault; ``""`` without a column.

        Example:
            >>> print(InputError("a number is missing", text="(0, x)", col=5).pointer())
            (0, x)
                ^
        """
        lines = python_lines((self.text if text is None else text).strip()) or [""]
        if self.col is None or not 1 <= self.line <= len(lines):
            return ""
        return f"{lines[self.line - 1]}\n{' ' * (self.col - 1)}^"


@dataclass(frozen=True)
class FriendlyError:
    """JAX's refusal, in plain words, with the original kept for reference."""

    plain: str
    error_type: str
    message: str


#: An explanation: a template whose ``{0}``, ``{1}`` ... are the pattern's groups, or a function
#: of those groups (when the words depend on their values, not only on their text).
Explanation = str | Callable[..., str]


#: Where Python's parser ends a line: ``\r\n``, ``\r`` or ``\n``, and nothing else.
_PYTHON_LINE_END = re.compile(r"(?<=\r\n)|(?<=\r)(?!\n)|(?<=\n)")


def python_lines(text: str, keepends: bool = False) -> list[str]:
    r"""``text``'s lines as Python numbers them (its tracebacks, ``SyntaxError.lineno``).

    ``str.splitlines`` also ends a line at a form feed, U+2028 and six other characters, so a
    line number counted by Python picked another line of a visitor's code.

    Example:
        >>> python_lines("a = '\u2028'\nb\r\nc")
        ["a = '\u2028'", 'b', 'c']
    """
    lines = [line for line in _PYTHON_LINE_END.split(text) if line]
    return lines if keepends else [line.rstrip("\r\n") for line in lines]


def explain_error(err: BaseException, table: Sequence[tuple[str, Explanation]]) -> FriendlyError:
    """Plain words for a JAX error, from the first pattern of ``table`` its message matches.

    ``table`` holds ``(regular expression, explanation)`` pairs; ``{0}``, ``{1}`` ... in an
    explanation are the pattern's groups, and a callable explanation gets them as arguments.
    An error no pattern matches gets a general sentence.
    """
    message = str(err)
    for pattern, plain in table:
        match = re.search(pattern, message, flags=re.S)
        if match:
            words = plain(*match.groups()) if callable(plain) else plain.format(*match.groups())
            return FriendlyError(words, type(err).__name__, message)
    return FriendlyError(
        _("JAX refused this combination; its message says why."), type(err).__name__, message
    )

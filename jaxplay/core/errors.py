"""JAX's refusals in plain words, with JAX's own message kept beside them.

Why: a wrong ``in_axes`` or a ``grad`` of a vector output makes JAX raise a precise but terse
message. The vmap and compose pages translate the ones they provoke, each from its own table of
patterns; the translation never replaces JAX's message, it is shown next to it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class FriendlyError:
    """JAX's refusal, in plain words, with the original kept for reference."""

    plain: str
    error_type: str
    message: str


#: An explanation: a template whose ``{0}``, ``{1}`` ... are the pattern's groups, or a function
#: of those groups (when the words depend on their values, not only on their text).
Explanation = str | Callable[..., str]


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
        "JAX refused this combination; its message says why.", type(err).__name__, message
    )

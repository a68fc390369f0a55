"""Counts in words: "1 variant", "2 variants", so a sentence built from a run reads right.

Why a module: every page puts computed counts into sentences (the house rule: numbers come from
the run), and "1 sizes" or "device(s)" is what happens when each page spells plurals itself.
"""

from __future__ import annotations


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun, singular for exactly one: ``count(1, "size")`` is ``"1 size"``.

    ``plural`` defaults to the noun with an ``s`` (pass it for "process" → "processes").

    Example:
        >>> count(2, "process", "processes"), count(1, "key"), count(0, "key")
        ('2 processes', '1 key', '0 keys')
    """
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


def times(n: int | None) -> str:
    """How often something happened, in words: ``"once"``, ``"twice"``, ``"3 times"``.

    Example:
        >>> times(1), times(2), times(0), times(None)
        ('once', 'twice', '0 times', 'an unknown number of times')
    """
    if n is None:
        return "an unknown number of times"
    return {1: "once", 2: "twice"}.get(n, f"{n:,} times")

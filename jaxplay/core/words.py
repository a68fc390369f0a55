"""Counts in words: "1 variant", "2 variants", so a sentence built from a run reads right.

Why a module: every page puts computed counts into sentences (the house rule: numbers come from
the run), and "1 sizes" or "device(s)" is what happens when each page spells plurals itself.
"""

from __future__ import annotations

from jaxplay.core.i18n import _, ngettext


def plural(n: int, word: str, many: str | None = None) -> str:
    """The word that agrees with ``n``: ``word`` for exactly one, else ``many`` (by default
    ``word`` with an ``s``). For a noun after its number use :func:`count`; this one is for the
    words around it ("was"/"were", "holds"/"hold", "axis"/"axes").

    Example:
        >>> plural(1, "was", "were"), plural(3, "was", "were"), plural(2, "kernel")
        ('was', 'were', 'kernels')
    """
    return word if n == 1 else (many or word + "s")


def count(n: int, noun: str, many: str | None = None) -> str:
    """``n`` and the noun, singular for exactly one: ``count(1, "size")`` is ``"1 size"``.

    ``many`` defaults to the noun with an ``s`` (pass it for "process" → "processes").

    Example:
        >>> count(2, "process", "processes"), count(1, "key"), count(0, "key")
        ('2 processes', '1 key', '0 keys')
    """
    return f"{n:,} {plural(n, noun, many)}"


def times(n: int | None) -> str:
    """How often something happened, in words: ``"once"``, ``"twice"``, ``"3 times"`` (in the
    visitor's language).

    Example:
        >>> times(1), times(2), times(0), times(None)
        ('once', 'twice', '0 times', 'an unknown number of times')
    """
    if n is None:
        return _("an unknown number of times")
    if n == 1:
        return _("once")
    if n == 2:
        return _("twice")
    return ngettext("{n} time", "{n} times", n).format(n=f"{n:,}")


def either(items: list[str]) -> str:
    """Alternatives in prose: ``0``, ``0 or 1``, ``0, 1 or 2`` (in the visitor's language).

    Example:
        >>> either(["0"]), either(["0", "1"]), either(["0", "1", "2"])
        ('0', '0 or 1', '0, 1 or 2')
    """
    if len(items) <= 1:
        return "".join(items)
    return _("{items} or {last}").format(items=_(", ").join(items[:-1]), last=items[-1])


def number(value: float, digits: int = 4) -> str:
    """A number for prose: ``digits`` significant figures, no float noise, ``nan``/``inf`` as is.

    ``float(np.float32(0.7659))`` is ``0.7659000158309937``; a sentence shows ``0.7659``, as
    NumPy and JAX print arrays.

    Example:
        >>> number(0.7659000158309937), number(1.0), number(float("nan")), number(123456.0)
        ('0.7659', '1', 'nan', '1.235e+05')
    """
    return f"{float(value):.{digits}g}"


def factor(ratio: float, places: int = 1) -> str:
    """A ratio for "N× faster" with ``places`` decimals, more where fewer would print ``1``: a
    difference the run found clear is never written "1.0× faster".

    Example:
        >>> factor(2.345), factor(1.04), factor(1.004), factor(1.04, places=2)
        ('2.3', '1.04', '1.004', '1.04')
    """
    for shown in (f"{ratio:.{n}f}" for n in range(places, 4)):
        if float(shown) != 1.0:
            return shown
    return f"{ratio:.3f}"


def in_units(value: float, units: tuple[tuple[str, float], ...]) -> str:
    """``value`` with three significant figures in the smallest of ``units`` (``(name, scale)``
    pairs, smallest scale first) that shows it in fewer than four digits, once rounded: 999.6 µs
    is ``1 ms``, not ``1e+03 µs``, and 1,000 KiB is ``0.977 MiB``. A value too large for the
    largest unit keeps its digits up to 10**15 of it, three figures past; ``nan`` is ``n/a``.
    Every formatter of a quantity with units goes through here (seconds, bytes, FLOP).

    Example:
        >>> seconds = (("µs", 1e-6), ("ms", 1e-3), ("s", 1.0))
        >>> in_units(0.0009996, seconds), in_units(0.0009994, seconds), in_units(5e4, seconds)
        ('1 ms', '999 µs', '50,000 s')
        >>> in_units(1000 * 2**10, (("B", 1), ("KiB", 2**10), ("MiB", 2**20)))
        '0.977 MiB'
    """
    if value != value:  # NaN
        return "n/a"
    for unit, scale in units:
        shown = f"{value / scale:.3g}"
        if abs(float(shown)) < 1000:
            return f"{shown} {unit}"
    unit, scale = units[-1]
    big = value / scale
    return f"{big:,.0f} {unit}" if abs(big) < 1e15 else f"{big:.3g} {unit}"


def numbers(values: object, digits: int = 4) -> str:
    """A list of numbers for prose, written as NumPy prints an array at ``digits`` decimals
    (the array blocks beside such sentences print the same way, so the two agree), without
    the padding that aligns the columns of a printed array.

    Example:
        >>> import numpy as np
        >>> numbers(np.array([1.1774100065231323, float("nan")], dtype=np.float32))
        '[1.1774, nan]'
        >>> numbers([0.029574545, 2.0])
        '[0.0296, 2.]'
    """
    import re

    import numpy as np

    text = np.array2string(
        np.asarray(values).ravel(),
        precision=digits,
        separator=", ",
        max_line_width=10**9,
        threshold=10**9,
    )
    text = re.sub(r"\s+", " ", text)
    return re.sub(r" ([,\]])", r"\1", text).replace("[ ", "[")


def ascii_hint(text: str) -> str:
    """A hint when ``text`` holds full-width punctuation (``（３，）``, typed with a CJK input
    method): Python reads only the ASCII forms. ``""`` when there is none.

    Full-width *digits* are digits to Python (``int("４２")`` is 42); full-width brackets,
    commas and operators are not, and a refusal that does not say so leaves a visitor stuck.

    Example:
        >>> ascii_hint("（3，）")
        ' Full-width （ ， ） are not Python: type ASCII ( , ) instead.'
        >>> ascii_hint("(3,)")
        ''
    """
    found = dict.fromkeys(
        c for c in text if "\uff01" <= c <= "\uff5e" and not c.isdigit() and not c.isalpha()
    )
    if "\u3000" in text:
        found["\u3000"] = None
    if not found:
        return ""
    shown = list(found)[:6]
    plain = [" " if c == "\u3000" else chr(ord(c) - 0xFEE0) for c in shown]
    if "\u3000" in shown:
        return " " + _(
            "Full-width characters ({shown}) are not Python: type the ASCII ones."
        ).format(shown=" ".join(shown))
    return " " + _("Full-width {shown} are not Python: type ASCII {plain} instead.").format(
        shown=" ".join(shown), plain=" ".join(plain)
    )

"""Counts in words."""

from jaxplay.core import words


def test_singular_only_for_one() -> None:
    assert words.count(1, "variant") == "1 variant"
    assert words.count(2, "variant") == "2 variants"
    assert words.count(0, "size") == "0 sizes"
    assert words.count(1, "process", "processes") == "1 process"
    assert words.count(3, "process", "processes") == "3 processes"
    assert words.count(12345, "key") == "12,345 keys"


def test_the_words_around_a_count_agree_with_it() -> None:
    assert [words.plural(n, "was", "were") for n in (0, 1, 2)] == ["were", "was", "were"]
    assert words.plural(1, "axis", "axes") == "axis" and words.plural(2, "kernel") == "kernels"


def test_no_sentence_spells_its_own_plural() -> None:
    """Plurals come from ``words`` (one place, and the one a second language will change):
    no ``'s' if n != 1`` or ``'was' if n == 1 else 'were'`` in the package or the pages."""
    import re
    from pathlib import Path

    root = Path(words.__file__).resolve().parents[2]
    # A word (or nothing) if a count is one, else another word: "line" if n == 1 else "lines".
    word = r"""(['"])\w*\1"""
    spelled = re.compile(word + r" if [^'\"\n]*[!=]= 1 else " + word.replace("1", "2"))
    assert spelled.search("f\"{n} call{'' if n == 1 else 's'}\"")
    assert spelled.search('lines = "line" if count == 1 else "lines"')
    assert not spelled.search('inner + ("," if len(value) == 1 else "")')  # a 1-tuple's comma
    found = [
        f"{path.relative_to(root)}:{n}"
        for path in [*root.joinpath("jaxplay").rglob("*.py"), *root.joinpath("pages").glob("*.py")]
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if spelled.search(line)
    ]
    assert not found, found


def test_times_says_once_and_twice_in_words() -> None:
    from jaxplay.core import words

    assert [words.times(n) for n in (0, 1, 2, 3, 1000)] == [
        "0 times",
        "once",
        "twice",
        "3 times",
        "1,000 times",
    ]
    assert words.times(None) == "an unknown number of times"


def test_prose_numbers_carry_no_float_noise() -> None:
    import numpy as np

    from jaxplay.core.words import number, numbers

    assert number(float(np.float32(0.7659))) == "0.7659"
    # As the array is printed beside the sentence (4 decimals, NumPy's printing).
    printed = np.array([1.1774100065231323, np.nan], dtype=np.float32)
    assert numbers(printed) == "[1.1774, nan]"
    shown = np.array2string(printed, precision=4, separator=", ")
    assert numbers(printed) == " ".join(shown.split()).replace(" ,", ",")
    assert numbers([0.029574545, 2.0]) == "[0.0296, 2.]"  # never nine decimals in prose
    assert number(2.0) == "2" and number(float("inf")) == "inf"


def test_full_width_punctuation_gets_an_ascii_hint_everywhere_text_is_parsed() -> None:
    import pytest

    from jaxplay import sandbox
    from jaxplay.core import expr
    from jaxplay.core.words import ascii_hint
    from jaxplay.vmap._axes import parse_axes

    assert ascii_hint("４２") == ""  # full-width digits are digits to Python
    assert "（ ， ）" in ascii_hint("（３，）")
    with pytest.raises(ValueError, match="type ASCII"):
        sandbox.parse_arg_specs("（3，）")
    with pytest.raises(expr.ExprError, match="type ASCII"):
        expr.parse("jnp.sin（x）", ("x",))
    with pytest.raises(ValueError, match="type ASCII"):
        parse_axes("（0，None）", "in_axes")


def test_quantities_change_unit_where_the_rounded_figure_would_reach_a_thousand() -> None:
    """`.3g` rounds 999.6 up to "1e+03": a unit is chosen on the figure as shown, never on the
    value before rounding (each formatter of a quantity goes through `words.in_units`)."""
    from jaxplay.core import budget, timing
    from jaxplay.jit._program import human_bytes

    assert timing.format_seconds(0.99996) == "1 s"
    assert timing.format_seconds(0.0009996) == "1 ms"
    assert timing.format_seconds(0.0009994) == "999 µs"
    assert timing.format_seconds(-0.0025) == "-2.5 ms"
    assert timing.format_seconds(float("nan")) == "n/a"
    assert budget.format_bytes(1000 * 2**10) == "0.977 MiB"  # the binary band 1000-1023
    assert budget.format_bytes(1020 * 2**20) == "0.996 GiB"
    assert budget.format_bytes(80) == "80 B"
    assert human_bytes(999_600) == "1 MB" and human_bytes(120) == "120 B"
    assert budget.format_flops(999.6e9) == "1 TFLOP"
    assert budget.format_duration(0.04) == "40 ms" and budget.format_duration(186) == "3.1 min"
    for text in (
        timing.format_seconds(x * 10.0**e) for x in (0.9995, 0.99996) for e in range(-9, 3)
    ):
        assert "e+" not in text, text

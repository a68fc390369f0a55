"""Counts in words."""

from jaxplay.core import words


def test_singular_only_for_one() -> None:
    assert words.count(1, "variant") == "1 variant"
    assert words.count(2, "variant") == "2 variants"
    assert words.count(0, "size") == "0 sizes"
    assert words.count(1, "process", "processes") == "1 process"
    assert words.count(3, "process", "processes") == "3 processes"
    assert words.count(12345, "key") == "12,345 keys"


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

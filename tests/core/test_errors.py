"""JAX's refusals in plain words: the first matching pattern explains, JAX's message is kept."""

from __future__ import annotations

from jaxplay.core.errors import explain_error

TABLE = (
    (r"axis (-?\d+) is out of bounds for array of dimension (\d+)", "axis {0} of {1} axes"),
    (r"out of bounds", "some axis is out of bounds"),
)


def test_the_first_matching_pattern_explains_with_its_groups() -> None:
    err = ValueError("axis 3 is out of bounds for array of dimension 2")
    friendly = explain_error(err, TABLE)
    assert friendly.plain == "axis 3 of 2 axes"
    assert friendly.error_type == "ValueError" and friendly.message == str(err)


def test_an_unknown_error_keeps_jaxs_message() -> None:
    friendly = explain_error(RuntimeError("something new"), TABLE)
    assert friendly.error_type == "RuntimeError" and friendly.message == "something new"
    assert "its message says why" in friendly.plain


def test_an_explanation_may_depend_on_the_values_it_names() -> None:
    """A callable explanation gets the pattern's groups (vmap's axis range by the input's rank:
    "0 or 1", not "0 to 2 − 1")."""
    from jaxplay.core.errors import explain_error

    def axes(rank: str) -> str:
        return f"{int(rank) - 1} is the last axis"

    got = explain_error(ValueError("rank is 3"), [(r"rank is (\d+)", axes)])
    assert got.plain == "2 is the last axis"
    assert (
        explain_error(ValueError("rank is 3"), [(r"rank is (\d+)", "rank {0}")]).plain == "rank 3"
    )

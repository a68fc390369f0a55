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


def test_every_parser_of_typed_text_refuses_with_the_one_input_error() -> None:
    """Formulas, axis specs, PartitionSpecs, literals, shapes and seeds: one type, so a page
    shows every refusal one way (``_ui.input_error``: the message as text, a caret)."""
    import pytest

    from jaxplay import devices, prng, pytrees, sandbox
    from jaxplay.core import expr
    from jaxplay.core.errors import InputError
    from jaxplay.vmap import _axes

    refusals = [
        lambda: expr.parse("jnp.sin(x) +* 2"),
        lambda: _axes.parse_axes("(0, nope)"),
        lambda: devices.parse_spec("P('i',"),
        lambda: pytrees.parse_literal("[1, 2"),
        lambda: sandbox.parse_arg_specs("(3,), (4, 4"),
        lambda: prng.parse_seed("1.5"),
    ]
    for refuse in refusals:
        with pytest.raises(InputError) as err:
            refuse()
        assert err.value.message and "(column" not in err.value.message
    with pytest.raises(InputError) as err:
        sandbox.parse_arg_specs("(3,), (4, 4")
    assert err.value.pointer() == "(3,), (4, 4\n           ^"


def test_a_pointer_puts_the_caret_under_the_column_of_its_line() -> None:
    from jaxplay.core.errors import InputError

    err = InputError("unexpected name", line=2, col=3)
    assert str(err) == "unexpected name (line 2, column 3)"
    assert err.pointer("x + 1\n2 zz") == "2 zz\n  ^"
    assert InputError("too long").pointer("x") == ""  # no column: no caret
    assert InputError("bad", line=5, col=1).pointer("one line") == ""  # no such line

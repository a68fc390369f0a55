"""The safe expression language: what it accepts, what it refuses and where, and its gradients."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxplay.core import expr
from jaxplay.core.expr import ExprError, parse


@pytest.mark.parametrize(
    ("source", "x", "expected"),
    [
        ("jnp.sin(x) * x**2", 2.0, np.sin(2.0) * 4.0),
        ("jnp.where(x > 0, x**2, jnp.sin(x))", -1.0, np.sin(-1.0)),
        ("jax.nn.relu(x - 1) + jnp.pi", 3.0, 2.0 + np.pi),
        ("-x // 2 + x % 3", 7.0, -4.0 + 1.0),
        ("jnp.sum(x[1:]) / 2", np.arange(4.0), 3.0),
        ("x[..., 0]", np.arange(4.0).reshape(2, 2), None),
        ("jnp.linalg.norm(x, ord=2)", np.array([3.0, 4.0]), 5.0),
        ("jnp.mean(x, axis=-1, keepdims=True)", np.ones((2, 3)), None),
    ],
)
def test_accepts_and_evaluates(source: str, x: object, expected: float | None) -> None:
    value = np.asarray(parse(source)(x))
    if expected is not None:
        np.testing.assert_allclose(value, expected, rtol=1e-6)


def test_multi_variable_formula_matches_numpy() -> None:
    f = parse("jnp.tanh(W @ x + b)", ("W", "x", "b"))
    w, x, b = np.full((2, 3), 0.1), np.arange(3.0), np.array([0.5, -0.5])
    np.testing.assert_allclose(f(w, x, b), np.tanh(w @ x + b), rtol=1e-6)
    np.testing.assert_allclose(f(W=w, x=x, b=b), np.tanh(w @ x + b), rtol=1e-6)
    assert f.names_used == {"W", "x", "b"}


def test_transpose_attribute_on_variables() -> None:
    f = parse("x.T @ x")
    assert f(jnp.ones((2, 3))).shape == (3, 3)


@pytest.mark.parametrize(
    ("source", "x"),
    [("jnp.sin(x) * x**2", 1.3), ("jnp.tanh(x) ** 3", -0.4), ("jnp.exp(-x**2 / 2)", 0.7)],
)
def test_gradients_are_correct(source: str, x: float) -> None:
    f = parse(source)
    eps = 1e-3
    numeric = (float(f(x + eps)) - float(f(x - eps))) / (2 * eps)
    assert float(jax.grad(f)(x)) == pytest.approx(numeric, rel=1e-2, abs=1e-3)


def test_known_gradient_of_seed_function() -> None:
    f = parse("jnp.where(x > 0, x**2, jnp.sin(x))")
    assert float(jax.grad(f)(3.0)) == pytest.approx(6.0)
    assert float(jax.grad(f)(-1.0)) == pytest.approx(np.cos(-1.0), rel=1e-6)


def test_works_under_jit_and_vmap() -> None:
    f = parse("x**2 + 1")
    np.testing.assert_allclose(jax.jit(jax.vmap(f))(jnp.arange(3.0)), [1.0, 2.0, 5.0])


@pytest.mark.parametrize(
    ("source", "fragment", "col"),
    [
        ('__import__("os")', "__import__", 1),
        ("x.__class__", "__class__", 1),
        ("1 + (lambda: 1)", "lambda", 6),
        ("1 + (lambda: 1)()", "can be called", 6),
        ("[i for i in x]", "comprehension", 1),
        ('open("/etc/passwd")', "open", 1),
        ("jnp.ones((10**6, 10**6))", "jnp.ones", 1),
        ("jax.devices()", "jax.devices", 1),
        ("np.sin(x)", "np.sin", 1),
        ("x + y", "'y'", 5),
        ("jnp.sin(x).real", "real", 1),
        ('"text"', "str", 1),
        ("x if x > 0 else 0", "jnp.where", 1),
        ("x and 1", "and/or", 1),
        ("f'{x}'", "f-string", 1),
        ("jnp.sum(x, where=x)", "where", 18),
        ("jnp.sum(**x)", "keyword", None),
        ("1 < x < 2", "chained", 1),
        ("x is None", "Is", 1),
        ("{1: 2}", "dict", 1),
        ("(y := 2)", "assignment", 2),
    ],
)
def test_refuses_with_reason_and_column(source: str, fragment: str, col: int | None) -> None:
    with pytest.raises(ExprError) as info:
        parse(source)
    assert fragment in info.value.message
    if col is not None:
        assert info.value.col == col


def test_syntax_error_points_at_column() -> None:
    with pytest.raises(ExprError) as info:
        parse("jnp.sin(x")
    assert "syntax error" in info.value.message
    assert info.value.col is not None and info.value.col >= 1


def test_length_and_depth_limits() -> None:
    with pytest.raises(ExprError, match="500"):
        parse("x + " * 200 + "x")
    nested = "(" * 60 + "x" + ")" * 60
    parse(nested)  # parentheses alone do not nest the tree
    deep = "-" * 60 + "x"
    with pytest.raises(ExprError, match="50 levels"):
        parse(deep)


def test_huge_integer_power_is_refused_not_hanging() -> None:
    with pytest.raises(ExprError, match="too large") as info:
        parse("9**9**9 + x")
    assert info.value.col == 1  # refused while checking, pointing at the power


@pytest.mark.parametrize(
    "formula",
    [
        "((9**1024)**1024)**64 + x",  # each power allowed alone; together hundreds of MB
        "x * 2**300",
        "-(2**255) * 2 + x",
        "(10**80) * (10**80) + x",
    ],
)
def test_chained_integer_arithmetic_is_bounded_while_checking(formula: str) -> None:
    """Python integers hold the server's GIL while they grow: refused before anything runs."""
    with pytest.raises(ExprError, match="too large"):
        parse(formula)


def test_integers_inside_the_bound_still_work() -> None:
    assert float(parse("x + 2**200 / 2**199")(1.0)) == 3.0
    assert float(parse("x ** 3")(2.0)) == 8.0


@pytest.mark.parametrize(
    "formula", ["[0] * (6 * 10**8)", "jnp.sum([x] * 100)", "(x,) * 3", "[x] + [x]"]
)
def test_lists_take_no_arithmetic(formula: str) -> None:
    """``[0] * (6 * 10**8)`` built a 4.7 GB list in one request."""
    with pytest.raises(ExprError, match="list or tuple"):
        parse(formula)


def test_list_literals_and_formula_size_are_capped() -> None:
    items = ", ".join(["1"] * (expr.MAX_LIST_ITEMS + 1))
    with pytest.raises(ExprError, match="at most"):
        parse(f"jnp.sum(jnp.where(x > 0, x, jnp.max([{items}])))")
    many = "+".join(["x"] * 150)  # under 500 characters, over the node limit
    with pytest.raises(ExprError, match="parts"):
        parse(many)


@pytest.mark.parametrize("formula", ["jnp.round(x, 10**9)", "jnp.round(x, decimals=10**9)"])
def test_round_decimals_are_capped(formula: str) -> None:
    """jnp.round computes 10**decimals as a Python integer."""
    with pytest.raises(ExprError, match="decimals"):
        parse(formula)(1.5)
    assert float(parse("jnp.round(x, 1)")(1.26)) == pytest.approx(1.3)


def test_never_calls_eval_or_compile() -> None:
    with open(expr.__file__, encoding="utf-8") as handle:
        source = handle.read()
    for forbidden in ("eval(", "exec(", "compile("):
        assert forbidden not in source.replace('mode="eval"', "")


def test_bad_variable_names_and_empty_input() -> None:
    with pytest.raises(ExprError, match="empty"):
        parse("   ")
    with pytest.raises(ExprError, match="variable name"):
        parse("x", ("jnp",))


def test_allowed_functions_lists_the_whitelist() -> None:
    names = expr.allowed_functions()
    assert "jnp.sin" in names and "jax.nn.relu" in names and "jnp.ones" not in names


@pytest.mark.parametrize("text", ["x **", "jnp.sin(x) +", "  x * 2 -  "])
def test_a_formula_that_ends_too_early_gets_its_caret_at_the_end(text: str) -> None:
    """Python reports offset 0 for these; the caret went under the first column."""
    with pytest.raises(expr.ExprError, match="ends before it is complete") as err:
        expr.parse(text)
    assert err.value.col == len(text.strip()) + 1


def test_the_servers_shape_check_leaves_no_trace_with_jax() -> None:
    """A formula's ``jnp`` functions are jitted: JAX kept a trace of each for every new static
    argument (``norm``'s ``ord``), for the process (20 MB over 1,500 formulas). Checked with
    jit off, each check traces anew: JAX kept nothing. With jit on (the positive control) the
    second check is JAX's kept trace."""
    import functools

    traces: list[float] = []

    @functools.partial(jax.jit, static_argnums=1)
    def scaled(x: jax.Array, p: float) -> jax.Array:
        traces.append(p)
        return x * p

    spec = jax.ShapeDtypeStruct((), jnp.float32)
    for _ in range(2):  # a formula is parsed anew each time: a new function
        assert expr.shape_of(lambda x: scaled(x, 2.5), spec).shape == ()
    assert traces == [2.5, 2.5]
    for _ in range(2):
        jax.eval_shape(lambda x: scaled(x, 2.5), spec)
    assert traces == [2.5, 2.5, 2.5]
    norm = parse("jnp.linalg.norm(x[None], ord=2.5)")
    assert expr.shape_of(norm, spec) == jax.eval_shape(norm, spec)

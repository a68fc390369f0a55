"""AppTests of the grad page: every preset, a typed formula, bad input, a broken custom rule."""

from __future__ import annotations

import pytest

from jaxplay import grad as ad
from jaxplay.hosting import catalog
from tests.conftest import assert_clean, open_page

SPEC = catalog.find("grad")
FORMULA = "type a formula"


def _texts(elements) -> list[str]:  # noqa: ANN001
    return [e.value for e in elements]


@pytest.mark.parametrize("preset", list(ad.PRESETS))
def test_each_preset_draws_checks_and_shows_the_articles_error(preset: str) -> None:
    at = open_page(SPEC, grad_preset=preset)
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 4  # derivatives, check, custom rule, Hessian diagonal
    errors = _texts(at.error)
    assert len(errors) == 1 and "Gradient only defined for scalar-output functions" in errors[0]
    warnings = _texts(at.warning)
    if preset.startswith("where"):
        assert any("f′ jumps from 1" in w for w in warnings)
    else:
        assert not any("jumps" in w for w in warnings)
    assert any("check_grads` passes" in s for s in _texts(at.success))


def test_a_typed_formula_with_a_kink_is_drawn_and_flagged() -> None:
    at = open_page(SPEC, grad_preset=FORMULA, grad_formula="jnp.abs(x)", grad_order=1)
    assert_clean(at)
    assert any("f′ jumps from -1 to 1" in w for w in _texts(at.warning))


@pytest.mark.parametrize(
    ("formula", "message"),
    [
        ("jnp.sin(x", "syntax error"),
        ("jnp.ones(3)", "not in the allowed list"),
        ("jnp.ravel(x)", "one number"),
    ],
)
def test_a_bad_formula_gets_a_clear_message(formula: str, message: str) -> None:
    at = open_page(SPEC, grad_preset=FORMULA, grad_formula=formula)
    assert_clean(at)
    assert any(message in e for e in _texts(at.error)), _texts(at.error)
    assert not at.get("plotly_chart")


def test_a_backwards_range_is_refused() -> None:
    at = open_page(SPEC, grad_lo=3.0, grad_hi=-3.0)
    assert_clean(at)
    assert any("Not drawn" in e and "smaller to a larger" in e for e in _texts(at.error))


def test_a_broken_custom_rule_shows_the_disagreement() -> None:
    at = open_page(SPEC, grad_factor=3.0)
    assert_clean(at)
    assert any("disagrees with JAX by up to 4" in e for e in _texts(at.error))


def test_argnums_both_lists_params_and_x() -> None:
    at = open_page(SPEC, grad_argnums="argnums=(0, 1) (both)")
    assert_clean(at)
    tables = [d.value for d in at.dataframe if "path" in d.value.columns]
    assert list(tables[0]["path"]) == [
        "params[0] (W1)",
        "params[1] (b1)",
        "params[2] (W2)",
        "params[3] (b2)",
        "x",
    ]

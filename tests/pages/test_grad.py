"""AppTests of the grad page: every preset and tab, a typed formula in a worker, its failures
shown as text, bad input, a broken custom rule, custom_jvp, stop_gradient and linearize."""

from __future__ import annotations

import re

import pytest

from jaxplay import grad as ad
from jaxplay.hosting import catalog
from tests.support.apptest import assert_clean, open_page
from tests.support.page_texts import float_noise, markdown_texts

SPEC = catalog.find("grad")
FORMULA = "type a formula"
TABS = (
    "f, f′, f″…",
    "Check",
    "value_and_grad, jvp, vjp",
    "custom_vjp",
    "custom_jvp",
    "stop_gradient, linearize",
    "Pytrees & Hessian",
)
#: ``tanh`` nested as deep as the formula language allows.
DEEP_TANH = "jnp.tanh(" * 39 + "x" + ")" * 39


def _texts(elements) -> list[str]:
    """The texts as shown (Markdown's backslash escapes removed)."""
    return [re.sub(r"\\(.)", r"\1", e.value) for e in elements]


@pytest.mark.parametrize("preset", list(ad.PRESETS))
def test_each_preset_draws_and_checks(preset: str) -> None:
    at = open_page(SPEC, grad_preset=preset)
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 1  # only the open tab draws
    warnings = _texts(at.warning)
    if preset.startswith("where"):
        assert any("f′ changes from 1" in w for w in warnings)
    else:
        assert not any("changes from" in w or "NaN/inf" in w for w in warnings)
    at = open_page(SPEC, grad_preset=preset, grad_tab="Check")
    assert_clean(at)
    assert any("check_grads` passes" in s for s in _texts(at.success))


@pytest.mark.parametrize("tab", TABS)
def test_every_tab_draws_without_an_error(tab: str) -> None:
    at = open_page(SPEC, grad_tab=tab)
    assert_clean(at)
    assert not float_noise(markdown_texts(at)), float_noise(markdown_texts(at))
    expected_charts = {"value_and_grad, jvp, vjp": 0, "custom_jvp": 0}.get(tab, 1)
    assert len(at.get("plotly_chart")) == expected_charts, tab


def test_the_articles_hessian_diagonal_error_is_shown() -> None:
    at = open_page(SPEC, grad_tab="Pytrees & Hessian")
    assert_clean(at)
    errors = _texts(at.error)
    assert len(errors) == 1 and "Gradient only defined for scalar-output functions" in errors[0]
    assert any("nothing 241×241 is ever held" in m for m in _texts(at.markdown))


def test_a_typed_formula_with_a_kink_is_drawn_and_flagged() -> None:
    at = open_page(SPEC, grad_preset=FORMULA, grad_formula="jnp.abs(x)", grad_order=1)
    assert_clean(at)
    assert any("f′ changes from -1 to 1" in w for w in _texts(at.warning))
    at = open_page(
        SPEC, grad_preset=FORMULA, grad_formula="jnp.abs(x)", grad_order=1, grad_tab="Check"
    )
    assert_clean(at)
    assert any(
        "check_grads` fails" in w or "passes" in w for w in _texts(at.warning) + _texts(at.success)
    )


def test_a_formula_that_compiles_too_long_ends_with_a_message_and_nothing_stale() -> None:
    at = open_page(SPEC, grad_preset=FORMULA, grad_formula=DEEP_TANH, grad_order=4)
    assert_clean(at)
    errors = _texts(at.error)
    assert any(
        "Differentiating this formula to order 4 took longer than" in e
        and "try a lower order or a simpler formula" in e
        for e in errors
    ), errors
    assert not at.get("plotly_chart")


@pytest.mark.parametrize(
    ("formula", "message"),
    [
        ("jnp.sin(x", "syntax error"),
        ("jnp.ones(3)", "not in the allowed list"),
        ("jnp.ravel(x)", "one number"),
        ("jnp.tanh(" * 45 + "x" + ")" * 45, "parts; the limit is 200"),
    ],
)
def test_a_bad_formula_gets_a_clear_message_at_once(formula: str, message: str) -> None:
    at = open_page(SPEC, grad_preset=FORMULA, grad_formula=formula)
    assert_clean(at)
    assert any(message in e for e in _texts(at.error)), _texts(at.error)
    assert not at.get("plotly_chart")


def test_a_formula_with_markdown_shows_it_as_text() -> None:
    at = open_page(SPEC, grad_preset=FORMULA, grad_formula="x + [sign in](http://127.0.0.1:9/x)")
    assert_clean(at)
    shown = [e.value for e in at.error]
    assert shown and all("](http" not in e for e in shown)


def test_a_backwards_range_is_refused() -> None:
    at = open_page(SPEC, grad_lo=3.0, grad_hi=-3.0)
    assert_clean(at)
    assert any("Not drawn" in e and "smaller to a larger" in e for e in _texts(at.error))
    assert not at.get("plotly_chart")


def test_a_broken_custom_rule_shows_the_disagreement() -> None:
    at = open_page(SPEC, grad_factor=3.0, grad_tab="custom_vjp")
    assert_clean(at)
    assert any("disagrees with JAX by up to 4" in e for e in _texts(at.error))


def test_a_tabs_widgets_keep_their_values_while_another_tab_is_open() -> None:
    at = open_page(SPEC, grad_tab="custom_vjp")
    at.slider(key="grad_factor").set_value(3.0).run()
    at.session_state["grad_tab"] = "Check"
    at.run()
    at.session_state["grad_tab"] = "custom_vjp"
    at.run()
    assert_clean(at)
    assert at.slider(key="grad_factor").value == 3.0


def test_argnums_both_lists_params_and_x() -> None:
    at = open_page(SPEC, grad_argnums="argnums=(0, 1) (both)", grad_tab="Pytrees & Hessian")
    assert_clean(at)
    tables = [d.value for d in at.dataframe if "path" in d.value.columns]
    assert list(tables[0]["path"]) == [
        "params[0] (W1)",
        "params[1] (b1)",
        "params[2] (W2)",
        "params[3] (b2)",
        "x",
    ]


def test_custom_jvp_beside_custom_vjp_shows_the_real_exception() -> None:
    at = open_page(SPEC, grad_tab="custom_jvp")
    assert_clean(at)
    said = " ".join(_texts(at.markdown))
    assert "Both answer 3 of 7 calls with the same value" in said
    assert "The `custom_vjp` function refuses 4" in said and "function refuses 0" in said
    codes = " ".join(_texts(at.code))
    assert "TypeError: can't apply forward-mode autodiff (jvp) to a custom_vjp function." in codes


@pytest.mark.parametrize("x", [0.7, -1.3])
def test_the_stop_gradient_sentence_follows_x(x: float) -> None:
    at = open_page(SPEC, grad_tab="stop_gradient, linearize", grad_stop_x=x)
    assert_clean(at)
    caption = next(c for c in _texts(at.caption) if "straight-through" in c)
    assert f"at x = {x:g} it returns round(x) = {round(x):g} and reports derivative 1" in caption
    lin = next(m for m in _texts(at.markdown) if "jax.linearize(f, x)" in m)
    assert "keeps 5 residual arrays (20,000 bytes)" in lin and "all linear" in lin


@pytest.mark.parametrize("x0", [0.7, 2.5])
def test_the_modes_tab_evaluates_at_the_chosen_point(x0: float) -> None:
    at = open_page(SPEC, grad_tab="value_and_grad, jvp, vjp", grad_x0=x0)
    assert_clean(at)
    assert any(f"at x₀ = {x0:g}, four ways" in c for c in _texts(at.caption))
    table = at.dataframe[0].value
    assert len(table) == 5

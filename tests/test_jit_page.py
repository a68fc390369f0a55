"""AppTests of the jit page: each preset, a typed formula, bad inputs, the labs."""

from __future__ import annotations

import pytest

from jaxplay.hosting import catalog
from tests.conftest import assert_clean, open_page

SMALL = {"jit_rows": 16, "jit_cols": 8}


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


@pytest.fixture(scope="module")
def spec() -> catalog.PageSpec:
    return catalog.find("jit")


@pytest.mark.parametrize("preset", ["softmax", "chain", "layer"])
def test_each_preset_is_measured(spec, preset: str) -> None:
    at = open_page(spec, jit_preset=preset, **SMALL)
    assert_clean(at)
    assert not at.error
    metrics = _metrics(at)
    assert metrics["speedup: eager median / jit median"].endswith("×")
    assert "steady call (median)" in metrics and "achieved GB/s" in metrics
    assert any(
        "naive_softmax" in c.value or "tanh_layer" in c.value or "sin" in c.value for c in at.code
    )


def test_a_typed_formula_is_measured(spec) -> None:
    at = open_page(spec, jit_preset="formula", jit_formula="jnp.tanh(x) * 2 + x", **SMALL)
    assert_clean(at)
    assert not at.error
    assert "speedup: eager median / jit median" in _metrics(at)


def test_a_bad_formula_shows_the_parsers_message(spec) -> None:
    at = open_page(spec, jit_preset="formula", jit_formula="jnp.sin(x) +* 2", **SMALL)
    assert_clean(at)
    assert len(at.error) == 1
    assert "syntax error" in at.error[0].value
    assert any(c.value.strip().endswith("^") for c in at.code)
    assert "speedup: eager median / jit median" not in _metrics(at)


def test_a_formula_that_fails_on_the_shape_is_reported(spec) -> None:
    at = open_page(spec, jit_preset="formula", jit_formula="x @ x", **SMALL)
    assert_clean(at)
    assert "TypeError" in at.error[0].value


def test_an_oversized_input_is_refused_naming_the_limit(spec) -> None:
    at = open_page(spec, jit_rows=100_000, jit_cols=1_000)
    assert_clean(at)
    assert "16,000,000" in at.error[0].value


def test_compile_cache_panel_counts_and_explains(spec) -> None:
    at = open_page(spec, **SMALL)
    size = "compiled versions: `dynamic_control_flow._cache_size()`"
    assert _metrics(at)[size] == "1"
    at.toggle(key="jit_cache_tanh").set_value(False).run()
    assert _metrics(at)[size] == "2"
    assert any("Static" in c.value or "static" in c.value for c in at.code)
    at.toggle(key="jit_cache_tanh").set_value(True).run()
    assert _metrics(at)[size] == "2"
    assert any("reused" in s.value for s in at.success)
    at.number_input(key="jit_cache_len").set_value(7).run()
    assert _metrics(at)[size] == "3"
    assert_clean(at)


def test_side_effects_and_the_sweep(spec) -> None:
    at = open_page(spec, jit_rows=2, jit_cols=4)
    metrics = _metrics(at)
    assert metrics["counter after 2 eager calls"] == "2"
    assert metrics["counter after 2 jitted calls"] == "1"
    assert any("jax.debug.print (run time)" in c.value for c in at.code)
    at.button(key="jit_sweep_run").click().run()
    assert_clean(at)
    assert any("Over 10 calls" in m.value for m in at.markdown)

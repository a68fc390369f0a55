"""AppTests of the compose page: every stack preset, bad input, the article's failures, a sweep."""

from __future__ import annotations

import pytest

from jaxplay import compose as cp
from jaxplay.hosting import catalog
from tests.conftest import assert_clean, open_page

SPEC = catalog.find("compose")


def _texts(elements) -> list[str]:  # noqa: ANN001
    return [e.value for e in elements]


def test_the_default_stack_runs_and_the_articles_failures_are_shown() -> None:
    at = open_page(SPEC)
    assert_clean(at)
    assert "result = jax.jit(jax.vmap(jax.grad(f)))(x)" in " ".join(_texts(at.code))
    errors = " ".join(_texts(at.error))
    assert "ValueError: vmap got inconsistent sizes" in errors  # @jit @vmap per-sample, as written
    assert "TypeError: Error interpreting argument" in errors  # jit(optimized_hvp)(f, ...)
    assert any("equal to a Python loop over the samples: **True**" in s for s in _texts(at.success))


@pytest.mark.parametrize("preset", list(cp.STACK_PRESETS)[1:])
def test_each_preset_sets_the_stack_and_runs(preset: str) -> None:
    at = open_page(SPEC)
    at.selectbox(key="compose_preset").select(preset).run()
    assert_clean(at)
    expected = cp.STACK_PRESETS[preset].stack
    slots = [at.selectbox(key=f"compose_t{i}").value for i in range(cp.MAX_STACK)]
    assert tuple(s for s in slots if s != "—") == expected
    refused = [e for e in _texts(at.error) if "JAX refuses" in e]
    assert bool(refused) == preset.startswith("invalid"), refused


def test_a_bad_formula_points_at_its_column() -> None:
    at = open_page(SPEC, compose_function="type a formula", compose_formula="jnp.sin(x")
    assert_clean(at)
    assert any("not allowed" in e and "syntax error" in e for e in _texts(at.error))
    assert "jnp.sin(x\n       ^" in _texts(at.code)  # the unclosed parenthesis


def test_an_over_large_result_is_refused_naming_the_limit() -> None:
    at = open_page(
        SPEC,
        compose_t0="hessian",
        compose_t1="hessian",
        compose_t2="—",
        compose_function="tanh, elementwise (vector → vector)",
        compose_shape="a batch of 4 vectors: shape (4, 3)",
    )
    assert_clean(at)
    assert any(str(cp.MAX_OUTPUT_ELEMENTS) in w for w in _texts(at.warning))


def test_square_per_sample_batches_fail_differently_as_written() -> None:
    at = open_page(SPEC, compose_batch=3, compose_features=3)
    assert_clean(at)
    assert any("TypeError: Gradient only defined" in e for e in _texts(at.error))


def test_measuring_jacobians_names_the_faster_mode() -> None:
    at = open_page(SPEC, compose_widths=[4, 16])
    at.button(key="compose_jac_measure").click().run()
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 1
    verdicts = [m for m in _texts(at.markdown) if "× faster" in m]
    assert len(verdicts) == 2 and all("jacfwd" in v or "jacrev" in v for v in verdicts)

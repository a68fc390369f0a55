"""AppTests of the compose page: every stack preset, bad input, the article's failures, sweeps,
two visitors measuring in turn, and shared links that keep the preset."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from jaxplay import compose as cp
from jaxplay.compose import _pipeline
from jaxplay.hosting import catalog
from tests.support.apptest import APP_TIMEOUT_S, assert_clean, open_page, timed_calls

SPEC = catalog.find("compose")
TABS = ("Pipeline builder", "Per-sample gradients", "jacfwd vs jacrev", "Hessian-vector products")
IGNORED_NOTE = "Parts of this link were ignored"


def _texts(elements) -> list[str]:
    """The texts as shown (Markdown's backslash escapes removed)."""
    return [re.sub(r"\\(.)", r"\1", e.value) for e in elements]


def _link(params: dict[str, str]) -> AppTest:
    """A fresh session that opens the page's address with ``params`` in its query string."""
    at = AppTest.from_file(str(catalog.ROOT / "app.py"), default_timeout=APP_TIMEOUT_S)
    at.run()
    at.switch_page(SPEC.path)
    at.query_params.update(params)
    at.run()
    return at


def test_the_default_stack_runs() -> None:
    at = open_page(SPEC)
    assert_clean(at)
    assert "result = jax.jit(jax.vmap(jax.grad(f)))(x)" in " ".join(_texts(at.code))
    captions = " ".join(_texts(at.caption))
    assert "f's Python code ran once while the whole stack was traced, for x's 4 rows" in captions
    assert "The same stack without jit, run op by op, gives" in captions


def test_only_the_open_tab_computes() -> None:
    at = open_page(SPEC)
    assert not at.get("plotly_chart") and not at.error  # the other tabs did not run
    assert not any("Per-sample" in t or "As written" in t for t in _texts(at.markdown))


def test_the_articles_failures_are_shown_on_their_tabs() -> None:
    at = open_page(SPEC, compose_tab=TABS[1])
    assert_clean(at)
    errors = " ".join(_texts(at.error))
    assert "ValueError: vmap got inconsistent sizes" in errors  # B = 8, D = 3
    assert "TypeError: Gradient only defined for scalar-output functions" in errors  # B = D
    assert any("equal to a Python loop over the samples: **yes**" in s for s in _texts(at.success))
    at = open_page(SPEC, compose_tab=TABS[3])
    assert_clean(at)
    assert "TypeError: Error interpreting argument" in " ".join(_texts(at.error))


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


def test_clicking_through_the_presets_notes_no_ignored_link() -> None:
    """The preset's callback changed the transforms while the address still held the previous
    preset's: the page took them for a link's values it could not show."""
    at = open_page(SPEC)
    for preset in [*list(cp.STACK_PRESETS)[1:], next(iter(cp.STACK_PRESETS))]:
        # What the browser sends: the address as the last run left it.
        at.query_params.clear()
        at.query_params.update({k: str(v) for k, v in _bound_values(at).items()})
        at.selectbox(key="compose_preset").select(preset).run()
        assert_clean(at)
        assert not [w for w in _texts(at.warning) if IGNORED_NOTE in w], preset


def _bound_values(at: AppTest) -> dict[str, str]:
    """The builder's widgets that differ from their defaults, as the address would carry them."""
    first = next(iter(cp.STACK_PRESETS))
    defaults = {f"compose_t{i}": "—" for i in range(cp.MAX_STACK)}
    defaults.update({f"compose_t{i}": t for i, t in enumerate(cp.STACK_PRESETS[first].stack)})
    defaults["compose_function"] = cp.STACK_PRESETS[first].function
    defaults["compose_shape"] = cp.STACK_PRESETS[first].shape
    defaults["compose_preset"] = first
    values = {k: at.selectbox(key=k).value for k in defaults}
    return {k: v for k, v in values.items() if v != defaults[k]}


def test_a_shared_link_keeps_the_preset_box() -> None:
    name = "Hessian two ways: jacfwd(jacrev(f))"
    preset = cp.STACK_PRESETS[name]
    at = _link(
        {
            "compose_preset": name,
            "compose_t0": "jacfwd",
            "compose_t1": "jacrev",
            "compose_t2": "—",
            "compose_function": preset.function,
            "compose_shape": preset.shape,
        }
    )
    assert_clean(at)
    assert at.selectbox(key="compose_preset").value == name
    assert [at.selectbox(key=f"compose_t{i}").value for i in range(2)] == ["jacfwd", "jacrev"]
    assert not [w for w in _texts(at.warning) if IGNORED_NOTE in w]


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
    refused = " ".join(_texts(at.warning))
    assert (
        f"the result would have 248832 elements; the limit is {_pipeline.MAX_OUTPUT_ELEMENTS}"
        in refused
    )


def test_a_typed_formula_runs_in_a_worker_and_its_text_is_escaped() -> None:
    at = open_page(
        SPEC, compose_function="type a formula", compose_formula="jnp.sum(x * jnp.tanh(x))"
    )
    assert_clean(at)
    assert "result = jax.jit(jax.vmap(jax.grad(f)))(x)" in " ".join(_texts(at.code))
    at = open_page(
        SPEC,
        compose_t0="grad",
        compose_t1="—",
        compose_t2="—",
        compose_function="type a formula",
        compose_formula="jnp.tanh(x) + jnp.sum(x[:, 0])",
        compose_shape="a vector: shape (3,)",
    )
    assert_clean(at)
    assert all("](" not in e for e in _texts(at.error))  # any visitor text escaped


@pytest.mark.parametrize(("batch", "features"), [(8, 3), (3, 3), (5, 2)])
def test_the_per_sample_sentences_follow_the_shapes(batch: int, features: int) -> None:
    at = open_page(SPEC, compose_tab=TABS[1], compose_batch=batch, compose_features=features)
    assert_clean(at)
    why = next(m for m in _texts(at.markdown) if m.startswith("**Why:**"))
    assert (
        f"params of shape ({features},) and B = {batch} samples the sizes "
        + ("agree" if batch == features else "disagree")
        in why
    )
    assert f"({batch}, {features}) matrix of different rows the call returns shape " in why
    assert "(the first row's): **no**" in why and "it equals the loop: **yes**" in why
    first = next(e for e in _texts(at.error) if f"B = {batch}, D = {features}" in e)
    assert ("TypeError" if batch == features else "ValueError") in first


def test_the_per_sample_gradients_run_in_the_compute_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each new B or D compiled programs (about 11 MB) that JAX kept in the server process."""
    ran = timed_calls(monkeypatch)
    at = open_page(SPEC, compose_tab=TABS[1], compose_batch=7, compose_features=5)
    assert_clean(at)
    assert ran == ["per_sample"]
    assert any("B = 7, D = 5" in e for e in _texts(at.error))


@pytest.mark.parametrize(
    ("tab", "key", "sizes", "button"),
    [
        (TABS[2], "compose_widths", [4, 16], "compose_jac_measure"),
        (TABS[3], "compose_dims", [16, 64], "compose_hvp_measure"),
    ],
)
def test_two_visitors_measure_in_turn(tab: str, key: str, sizes: list, button: str) -> None:
    """The second visitor's Measure replayed the first's cached sweep, whose progress callback
    drew into the first visitor's page: ``CacheReplayClosureError`` for everyone after the first.
    """
    texts = []
    for _visitor in range(2):
        at = open_page(SPEC, compose_tab=tab, **{key: sizes})
        at.button(key=button).click().run()
        assert_clean(at)
        assert len(at.get("plotly_chart")) == 1
        texts.append(" ".join(_texts(at.markdown) + _texts(at.caption)))
    assert texts[0] == texts[1]  # the second visitor sees the first one's measurement


def test_measuring_jacobians_names_the_faster_mode() -> None:
    at = open_page(SPEC, compose_tab=TABS[2], compose_widths=[4, 16])
    at.button(key="compose_jac_measure").click().run()
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 1
    # A winner only beyond both quartile ranges (at the suite's tiny budgets often a tie).
    verdicts = [m for m in _texts(at.markdown) if m.startswith(("wide input", "wide output"))]
    assert len(verdicts) == 2
    assert all(
        ("× faster" in v and ("jacfwd" in v or "jacrev" in v)) or "no clear winner" in v
        for v in verdicts
    )


def test_measuring_hvps_compares_three_ways() -> None:
    at = open_page(SPEC, compose_tab=TABS[3], compose_dims=[16])
    at.button(key="compose_hvp_measure").click().run()
    assert_clean(at)
    summary = next(c for c in _texts(at.caption) if c.startswith("At n=16:"))
    assert all(m in summary for m in cp.HVP_METHODS)
    assert "Fastest: " in summary or "No clear fastest: " in summary

"""The sharp-bits page through AppTest: every case, sentences that follow the parameters, the
Code Lab button, and the link to the tracing page's control-flow pitfalls."""

from __future__ import annotations

import pytest

from jaxplay import sharp_bits
from jaxplay.hosting import catalog
from tests.support.apptest import assert_clean, editor_text, open_page
from tests.support.page_texts import float_noise, markdown_texts

SPEC = catalog.find("sharp-bits")


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


@pytest.mark.parametrize("case", [c.key for c in sharp_bits.CASES])
def test_every_case_shows_what_jax_did(case: str) -> None:
    at = open_page(SPEC, sharp_case=case)
    assert_clean(at)
    spec = sharp_bits.find_case(case)
    first = spec.variants[0]
    expected = sharp_bits.run(case, first.key).sentence
    assert f"**What JAX did:** {expected}" in texts(at.markdown)
    assert not float_noise(markdown_texts(at)), float_noise(markdown_texts(at))
    assert at.button(key=f"sharp_open_{case}")


def test_a_parameter_changes_the_sentence() -> None:
    at = open_page(SPEC, sharp_case="bounds", sharp_bounds_index=7)
    assert "`x[7]` returned 40, the value at position 4" in texts(at.markdown)
    other = open_page(SPEC, sharp_case="bounds", sharp_bounds_index=-2)
    assert "`x[-2]` returned 30, the value at position 3" in texts(other.markdown)


def test_a_failing_variant_names_its_exception_and_shows_jaxs_message() -> None:
    at = open_page(SPEC, sharp_case="debug_nans", sharp_debug_nans_variant="debug_nans")
    assert_clean(at)
    assert "raises `FloatingPointError`" in texts(at.caption)
    assert "`with_debug_nans(…)` raises **FloatingPointError**" in texts(at.error)
    assert "raised FloatingPointError at `sqrt`" in texts(at.markdown)
    assert at.get("plotly_chart") == []  # only the where case draws


def test_the_where_case_draws_its_gradient_curve() -> None:
    at = open_page(SPEC, sharp_case="where", sharp_where_x=-1.0)
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 1
    assert "At x = -1 the value is 0 and the gradient is nan" in texts(at.markdown)


def test_open_in_code_lab_loads_the_case() -> None:
    at = open_page(SPEC, sharp_case="printing", sharp_printing_variant="vmap")
    at.button(key="sharp_open_printing").click().run()
    assert_clean(at)
    expected = sharp_bits.run("printing", "vmap").snippet
    assert at.session_state["code_lab_source"] == expected
    assert editor_text(at) == expected


def test_control_flow_links_to_the_tracing_pages_tracers_tab() -> None:
    at = open_page(SPEC)
    links = [e for e in at.get("page_link") if "Tracers" in e.proto.label]
    assert len(links) == 1
    assert links[0].proto.query_string == "tracing_tab=Tracers"
    tracing = open_page(catalog.find("tracing"), tracing_tab="Tracers")
    assert_clean(tracing)
    assert "Pitfalls, run for real" in [s.value for s in tracing.subheader]

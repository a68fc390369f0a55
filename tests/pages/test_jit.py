"""AppTests of the jit page: each preset, a typed formula, bad inputs, the labs."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from jaxplay.hosting import catalog
from jaxplay.jit import _measurement
from tests.support.apptest import APP_TIMEOUT_S, assert_clean, open_page

SMALL = {"jit_rows": 16, "jit_cols": 8}
SQUARE = {"jit_rows": 16, "jit_cols": 16}


def _shown(markdown: str) -> str:
    """Markdown as it reads on the page: backslash escapes removed."""
    return re.sub(r"\\(.)", r"\1", markdown)


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _in_tab(spec, tab: str, **settings: object):
    """The page opened at one of its tabs, as a link naming it does (only the open tab runs;
    AppTest cannot click a tab, and a tab's key set between runs does not open it)."""
    at = open_page(spec, jit_tab=tab, **settings)
    assert_clean(at)
    return at


@pytest.fixture(scope="module")
def spec() -> catalog.PageSpec:
    return catalog.find("jit")


@pytest.mark.parametrize("preset", ["softmax", "chain", "layer"])
def test_each_preset_is_measured(spec, preset: str) -> None:
    at = open_page(spec, jit_preset=preset, **SMALL)
    assert_clean(at)
    assert not at.error
    assert "steady call (median)" in _metrics(at)
    assert any(
        "naive_softmax" in c.value or "tanh_layer" in c.value or "sin" in c.value for c in at.code
    )
    at = _in_tab(spec, "Eager vs jit", jit_preset=preset, **SMALL)
    assert _metrics(at)["speedup: eager median / jit median"].endswith("×")
    at = _in_tab(spec, "Roofline", jit_preset=preset, **SMALL)
    assert "achieved GB/s" in _metrics(at)


def test_a_typed_formula_is_measured(spec) -> None:
    at = open_page(
        spec,
        jit_preset="formula",
        jit_formula="jnp.tanh(x) * 2 + x",
        jit_tab="Eager vs jit",
        **SMALL,
    )
    assert_clean(at)
    assert not at.error
    assert "speedup: eager median / jit median" in _metrics(at)


def test_a_bad_formula_shows_the_parsers_message(spec) -> None:
    at = open_page(
        spec, jit_preset="formula", jit_formula="jnp.sin(x) +* 2", jit_tab="Eager vs jit", **SMALL
    )
    assert_clean(at)
    assert len(at.error) == 1
    assert "syntax error" in at.error[0].value
    assert any(c.value.strip().endswith("^") for c in at.code)
    assert "speedup: eager median / jit median" not in _metrics(at)


def test_a_formula_that_fails_on_the_shape_is_reported(spec) -> None:
    at = open_page(spec, jit_preset="formula", jit_formula="x @ x", **SMALL)
    assert_clean(at)
    assert "TypeError" in at.error[0].value


def test_a_formula_refused_in_its_trace_is_said_in_the_visitors_language(spec) -> None:
    """A new size is traced in the compute worker (the server's check), and what the formula
    language refuses only there (``decimals`` is checked when the formula is called) comes
    back in the visitor's language, as the page's own refusal: not a worker's failure."""
    at = AppTest.from_file(str(catalog.ROOT / "app.py"), default_timeout=APP_TIMEOUT_S)
    at.query_params["lang"] = "zh"
    at.run()
    at.switch_page(spec.path)
    at.query_params["lang"] = "zh"
    at.session_state["jit_preset"] = "formula"
    at.session_state["jit_formula"] = "jnp.round(x, 1.5)"
    for key, value in {"jit_rows": 17, "jit_cols": 9}.items():
        at.session_state[key] = value
    at.run()
    assert_clean(at)
    assert len(at.error) == 1
    assert "不允许使用这个公式" in at.error[0].value
    assert "decimals 必须是 -30 到 30 之间的整数" in _shown(at.error[0].value)
    assert "worker" not in at.error[0].value.lower()


def test_jaxs_own_exception_in_the_check_is_shown_as_the_functions_failure(spec) -> None:
    """The check's trace runs in the compute worker; JAX's exception classes of its own come
    back under their names and read as the function's failure, as a trace here showed them
    (not as a failed measurement)."""
    at = open_page(spec, jit_preset="formula", jit_formula="jnp.where(x)", jit_rows=17, jit_cols=9)
    assert_clean(at)
    assert len(at.error) == 1
    shown = _shown(at.error[0].value)
    assert shown.startswith("**The function failed:** `ConcretizationTypeError: ")
    assert "Measuring this function" not in shown


def test_an_oversized_input_is_refused_naming_the_limit(spec) -> None:
    at = open_page(spec, jit_rows=100_000, jit_cols=1_000)
    assert_clean(at)
    assert "16,000,000" in _shown(at.error[0].value)


def test_compile_cache_panel_counts_and_explains(spec) -> None:
    at = open_page(spec, jit_tab="Compile cache", **SMALL)
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
    at = open_page(spec, jit_rows=2, jit_cols=4, jit_tab="Side effects")
    metrics = _metrics(at)
    assert metrics["counter after 2 eager calls"] == "2"
    assert metrics["counter after 2 jitted calls"] == "1"
    assert any("jax.debug.print (run time)" in c.value for c in at.code)
    at = _in_tab(spec, "Size sweep", jit_rows=2, jit_cols=4)
    at.button(key="jit_sweep_run").click().run()
    assert_clean(at)
    assert any("Over 10 calls" in m.value for m in at.markdown)
    at = open_page(spec, jit_rows=1, jit_cols=1, jit_tab="Side effects")
    at.slider(key="jit_counter_calls").set_value(1).run()
    assert "counter after 1 eager call" in _metrics(at)  # not "1 eager calls"
    at = _in_tab(spec, "Size sweep", jit_rows=1, jit_cols=1)  # one size is no sweep
    assert_clean(at)
    assert any("needs two sizes or more" in i.value for i in at.info)
    assert not [b for b in at.button if b.key == "jit_sweep_run"]


def _statuses(at) -> list[str]:
    return [s.label for s in at.status]


def test_a_measurement_shows_its_status_and_a_refusal_leaves_nothing_stale(spec) -> None:
    at = open_page(spec, jit_preset="formula", jit_formula="x @ x.T", jit_rows=11, jit_cols=3)
    assert_clean(at)
    assert any(label.startswith("Measured on") for label in _statuses(at)), _statuses(at)
    assert any("What XLA compiled" in m.value for m in at.markdown)
    # The same formula on a tall x needs a 10**10-element result: refused before it runs.
    at.number_input(key="jit_cols").set_value(1).run()
    at.number_input(key="jit_rows").set_value(100_000).run()
    assert_clean(at)
    assert "the limit is 16,000,000" in _shown(at.error[0].value)
    assert not _statuses(at)  # no status box beside the refusal
    assert not _metrics(at).keys() & {"first call", "speedup: eager median / jit median"}
    assert not any("What XLA compiled" in m.value for m in at.markdown)
    assert not at.get("plotly_chart")
    assert not [d for d in at.dataframe if "memory_analysis()" in d.value.columns]


def test_two_visitors_with_the_same_settings_share_one_measurement(spec) -> None:
    settings = {"jit_preset": "chain", "jit_rows": 13, "jit_cols": 5}
    before = _measurement.MEASUREMENTS.measured
    first = open_page(spec, **settings)
    second = open_page(spec, **settings)
    assert _measurement.MEASUREMENTS.measured == before + 1
    assert _metrics(first)["first call"] == _metrics(second)["first call"]
    assert any(label.startswith("Measured on") for label in _statuses(first))
    assert not _statuses(second)  # nothing to wait for: no status box
    provenance = [c.value for c in second.caption if c.value.startswith("Measured ")]
    assert provenance and "Everyone who opens these settings" in provenance[0]


def test_measure_again_measures_anew_for_everyone(spec) -> None:
    settings = {"jit_preset": "chain", "jit_rows": 14, "jit_cols": 5}
    at = open_page(spec, **settings)
    before = _measurement.MEASUREMENTS.measured
    at.button(key="jit_remeasure").click().run()
    assert_clean(at)
    assert _measurement.MEASUREMENTS.measured == before + 1
    assert any("measurement 2 of these settings" in c.value for c in at.caption)
    later = open_page(spec, **settings)
    assert any("measurement 2 of these settings" in c.value for c in later.caption)


def test_eager_against_jit_is_measured_when_its_tab_opens_and_again_on_request(spec) -> None:
    """A new setting on the Stages tab measures no race (most of its cost); the Eager vs jit
    tab measures it, the Article tab reads the same one, and its Measure again measures it anew
    for everyone."""
    settings = {"jit_preset": "chain", "jit_rows": 15, "jit_cols": 5}
    before = _measurement.RACES.measured
    assert_clean(open_page(spec, **settings))
    assert _measurement.RACES.measured == before
    at = _in_tab(spec, "Eager vs jit", **settings)
    assert _measurement.RACES.measured == before + 1
    assert _metrics(at)["speedup: eager median / jit median"].endswith("×")
    assert any("comparison = timing.compare_jit(" in c.value for c in at.code)
    article = _in_tab(spec, "Article vs honest", **settings)
    assert _measurement.RACES.measured == before + 1
    assert any("Everyone who opens these settings" in c.value for c in article.caption)
    assert article.button(key="jit_article_remeasure") is not None
    at.button(key="jit_race_remeasure").click().run()
    assert_clean(at)
    assert _measurement.RACES.measured == before + 2
    assert any("measurement 2 of these settings" in c.value for c in at.caption)


def test_the_stages_tab_explains_the_first_call_and_the_compiled_program(spec) -> None:
    at = open_page(spec, **SMALL)
    texts = " ".join(m.value for m in at.markdown)
    assert "What the first call includes" in texts and "function calls" in texts
    assert "`exp` is computed once" in texts and "5 operations" in texts
    at = _in_tab(spec, "Roofline", **SMALL)
    units = [d.value for d in at.dataframe if "memory_analysis()" in d.value.columns]
    sizes = units[0]["size"] if units else None
    assert sizes is not None and all(
        size.endswith("B") or size == "not reported by this backend" for size in sizes
    )
    assert not [w for w in at.warning if "library kernel" in w.value]


def test_the_roofline_warns_that_library_calls_count_no_flops(spec) -> None:
    at = _in_tab(spec, "Roofline", jit_preset="formula", jit_formula="jnp.linalg.inv(x)", **SQUARE)
    said = [w.value for w in at.warning if "library kernel" in w.value]
    assert said and "`custom-call`" in said[0], [w.value for w in at.warning]


def test_the_beyond_tabs_run_in_the_sandbox(spec) -> None:
    shown = {}
    for tab, key in (("Donation", "jit_donation_run"), ("Profiler trace", "jit_trace_run")):
        at = _in_tab(spec, tab, **SMALL)
        at.button(key=key).click().run()
        assert_clean(at)
        assert not at.error, [e.value for e in at.error]
        shown[tab] = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.code)
        if tab == "Profiler trace":
            assert at.get("download_button")
    assert "raises **RuntimeError**" in shown["Donation"]
    assert "x + 1" in shown["Donation"] and "deleted" in shown["Donation"]
    assert "jit_naive_softmax" in shown["Profiler trace"]


def test_the_persistent_cache_tab_compares_two_processes(spec) -> None:
    at = open_page(spec, jit_cache_rounds=1, jit_tab="Persistent cache", **SMALL)
    at.button(key="jit_compile_cache_run").click().run()
    assert_clean(at)
    assert any("second process" in m.value and "cache hit" in m.value for m in at.markdown)


def test_a_formula_error_is_text_not_markdown(spec) -> None:
    """``__import__`` is an unknown name; unescaped, the message rendered it as bold "import"."""
    at = open_page(spec, jit_preset="formula", jit_formula="__import__", **SMALL)
    assert_clean(at)
    html = MarkdownIt("gfm-like").render(at.error[0].value)
    assert "'__import__'" in html
    assert "<strong>" not in html.split("not allowed:")[1]


def test_the_kernels_table_gives_a_kernels_name_room_to_show_whole(spec) -> None:
    """A fused kernel's name (``loop_exponential_reduce_fusion``) was cut off in a narrow column."""
    import json

    at = open_page(spec, jit_preset="softmax", **SMALL)
    table = next(d for d in at.dataframe if "kernel" in d.value.columns)
    names = list(table.value["kernel"])
    assert any("fusion" in name for name in names), names
    config = json.loads(table.proto.columns)
    assert config["kernel"]["width"] == "large", config

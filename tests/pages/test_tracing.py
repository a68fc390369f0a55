"""AppTests of the tracing page: every preset and view, bad inputs, the sandbox, the other tabs."""

from __future__ import annotations

import pytest

from jaxplay import tracing
from jaxplay.hosting import catalog
from jaxplay.tracing import _display, _inputs, _presets
from tests.support.apptest import assert_clean, open_page, timed_calls
from tests.support.page_texts import PAYLOAD, hostile_links

SPEC = catalog.find("tracing")


def _html(at) -> str:
    return "\n".join(str(e.proto.body) for e in at.get("html"))


def _errors(at) -> list[str]:
    return [e.value for e in at.error]


@pytest.mark.parametrize("key", [p.key for p in tracing.PRESETS])
def test_every_preset_shows_four_panes_with_the_line_highlighted(key: str) -> None:
    at = open_page(SPEC, tracing_preset=key)
    assert_clean(at)
    assert not _errors(at)
    titles = " ".join(m.value for m in at.markdown)
    for pane in ("**Python**", "**jaxpr**", "**StableHLO**", "**Optimized HLO**"):
        assert pane in titles
    assert "lines from line" in titles or "line from line" in titles
    assert _html(at).count(_display.HIGHLIGHT) >= 4  # source, jaxpr, StableHLO, HLO


def test_picking_an_equation_highlights_its_source_line() -> None:
    at = open_page(SPEC, tracing_preset="softmax", tracing_pick_by="jaxpr equation")
    assert_clean(at)
    box = at.selectbox(key="tracing_pick_eqn")
    box.select_index(next(i for i, o in enumerate(box.options) if ": exp " in o)).run()
    assert_clean(at)
    lines, start = tracing.preset_source(tracing.find_preset("softmax"))[:2]
    exp_line = start + next(i for i, t in enumerate(lines.splitlines()) if "jnp.exp" in t)
    titles = " ".join(m.value for m in at.markdown)
    assert f"**Python** · 1 line from line {exp_line}" in titles
    assert f"**jaxpr** · 1 line from line {exp_line}" in titles


def test_views_render() -> None:
    for view in ("Equations", "XLA fusions", "Graph", "Diff"):
        at = open_page(SPEC, tracing_preset="cond", tracing_view=view)
        assert_clean(at)
        assert not _errors(at), view
    at = open_page(SPEC, tracing_preset="scan", tracing_view="Equations")
    assert len(at.dataframe[0].value) == len(
        tracing.stage(_presets.scan_example, [tracing.InputSpec((6, 3), "float32")]).equations
    )


def test_the_equation_count_names_sub_jaxprs_only_where_there_are_some() -> None:
    flat = open_page(SPEC, tracing_preset="softmax", tracing_view="Equations")
    n = len(flat.dataframe[0].value)
    assert f"{n} equations, all at the top level." in [c.value for c in flat.caption]
    nested = open_page(SPEC, tracing_preset="scan", tracing_view="Equations")
    captions = " ".join(c.value for c in nested.caption)
    assert "at the top level, the rest in sub-jaxprs)." in captions


def test_diff_unified_and_side_by_side() -> None:
    at = open_page(SPEC, tracing_view="Diff", tracing_diff_mode="unified")
    assert_clean(at)
    assert any(c.language == "diff" and c.value.startswith("---") for c in at.code)
    at = open_page(SPEC, tracing_view="Diff")
    assert "rows differ" in " ".join(c.value for c in at.caption)


def test_graph_shows_the_cap_message_only_when_capped() -> None:
    at = open_page(SPEC, tracing_preset="while", tracing_view="Graph", tracing_expand=["0"])
    assert_clean(at)
    assert not at.warning
    assert "9 equations" in " ".join(c.value for c in at.caption)


def test_bad_shapes_are_refused_with_a_clear_message() -> None:
    at = open_page(SPEC, tracing_seed_shape_0="100000, 100000")
    assert_clean(at)
    assert any("limit of" in e for e in _errors(at))
    at = open_page(SPEC, tracing_seed_shape_0="3, x")
    assert any("is not a size" in e for e in _errors(at))


@pytest.mark.parametrize(
    ("y_dtype", "equations", "weak"),
    [(_inputs.WEAK_FLOAT32, 3, True), ("float32", 2, False)],
)
def test_the_articles_x_times_y_plus_one_is_staged_as_it_calls_it(
    y_dtype: str, equations: int, weak: bool
) -> None:
    """The article passes y = 2.0, a Python float: weakly typed, so converted first (three
    equations); as a float32 array there is nothing to convert (two). The sentence counts them."""
    at = open_page(SPEC, tracing_preset="seed", tracing_seed_dtype_1=y_dtype)
    assert_clean(at)
    story = next(m.value for m in at.markdown if m.value.startswith("The jaxpr has"))
    assert story.startswith(f"The jaxpr has {equations} equations at the top level")
    assert ("`y` is weakly typed" in story) == weak
    assert ("`convert_element_type`" in story) == weak
    assert at.selectbox(key="tracing_seed_dtype_1").value == y_dtype


def test_visitor_text_renders_as_text() -> None:
    at = open_page(SPEC, tracing_seed_shape_0=PAYLOAD)
    assert_clean(at)
    assert any("127" in e for e in _errors(at))
    assert hostile_links(at) == []
    # A shared Code Lab snippet is staged here without a Run click: its exception's text is
    # shown as code.
    source = f"raise ValueError({PAYLOAD!r})\n\ndef f(x):\n    return x\n"
    at = open_page(SPEC, tracing_preset="code_lab", code_lab_source=source)
    assert_clean(at)
    assert any("127.0.0.1:9" in c.value for c in at.code)
    assert hostile_links(at) == []


def test_a_shape_mismatch_shows_jaxs_error() -> None:
    at = open_page(SPEC, tracing_preset="mlp", tracing_mlp_shape_1="15, 32")
    assert_clean(at)
    assert any("JAX raised" in e for e in _errors(at))
    assert any("TypeError" in c.value for c in at.code)


def test_a_presets_variants_are_staged_in_the_compute_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each new shape compiled programs (about 1.6 MB) that JAX kept for the process; all four
    variants come back from one job, and the diff compares two of them."""
    ran = timed_calls(monkeypatch)
    at = open_page(SPEC, tracing_preset="softmax", tracing_softmax_shape_0="7, 5")
    assert_clean(at)
    assert ran == ["preset_stages"] and [s.label for s in at.status] == ["Staged"]
    assert "f32[7,5]" in _html(at)
    staged = tracing.preset_stages("softmax", (((7, 5), "float32"),))
    assert [v.name for v in staged.variants] == list(tracing.VARIANTS)
    assert all(v.staged is not None for v in staged.variants)


def test_a_sandboxed_code_lab_function() -> None:
    source = "import jax.numpy as jnp\n\n\ndef g(x, y):\n    z = jnp.tanh(x) * y\n    return z\n"
    at = open_page(SPEC, tracing_preset="code_lab", code_lab_source=source)
    assert_clean(at)
    assert not _errors(at)
    assert at.selectbox(key="tracing_function").value == "g"
    assert "&lt;code-lab&gt;" in _html(at) or "code-lab" in _html(at)
    assert "z = jnp.tanh(x) * y" in _html(at).replace("&#x27;", "'")


def test_tracer_bool_conversion_in_user_code_is_explained() -> None:
    source = "def f(x):\n    if x > 0:\n        return x\n    return -x\n"
    at = open_page(
        SPEC, tracing_preset="code_lab", code_lab_source=source, tracing_code_lab_shape_0="()"
    )
    assert_clean(at)
    assert any("JAX raised" in e for e in _errors(at))
    assert any("TracerBoolConversionError" in c.value for c in at.code)
    assert any("A Python branch on a traced value" in i.value for i in at.info)


def test_user_code_that_does_not_parse() -> None:
    at = open_page(SPEC, tracing_preset="code_lab", code_lab_source="def f(:\n")
    assert_clean(at)
    assert any("does not parse" in e for e in _errors(at))


def test_tracers_tab_shows_real_errors_and_explanations() -> None:
    at = open_page(SPEC, tracing_tab="Tracers")
    assert_clean(at)
    errors = " ".join(_errors(at))
    for name in ("TracerBoolConversionError", "ConcretizationTypeError", "UnexpectedTracerError"):
        assert name in errors
    assert any("DynamicJaxprTracer" in c.value for c in at.code)


def test_recompilation_tab_counts_compilations(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lab compiles in the compute worker: a table of new shapes was a dozen compiles of
    the server's interpreter (1 CPU-s), and JAX kept something of each."""
    ran = timed_calls(monkeypatch)
    at = open_page(SPEC, tracing_tab="Recompilation")
    assert_clean(at)
    assert ran in ([], ["run_recompilation_lab"])  # [] where another test ran the default
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Compilations"] == "2"
    assert metrics["Cache size after the last call"] == "2"
    log = "\n".join(c.value for c in at.code if "TRACING CACHE MISS" in c.value)
    assert "defined at <app>/jaxplay/article/_s6_tracing.py" in log  # JAX's log, without
    assert str(catalog.ROOT) not in log  # the server's paths
    captions = " ".join(c.value for c in at.caption)
    assert "the cache size is 2 after three calls" in captions  # the scenario's own calls
    # Calls of the visitor's: the lesson's counts were said of them ("2 after three calls"
    # above 3 compilations and a cache of 1).
    at.toggle(key="tracing_redefine_article").set_value(True).run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Compilations"] == "3"
    captions = " ".join(c.value for c in at.caption)
    assert "2 after three calls" not in captions and "These are your calls" in captions
    at = open_page(SPEC, tracing_tab="Recompilation", tracing_scenario="unhashable")
    assert any("Non-hashable" in c.value for c in at.code)
    assert ran[-1:] == ["run_recompilation_lab"] and [s.label for s in at.status] == ["Called"]


def test_loops_tab() -> None:
    at = open_page(SPEC, tracing_tab="Python vs lax loops", tracing_loop_max=16)
    assert_clean(at)
    table = at.dataframe[0].value
    assert list(table["Python for loop"]) == [2, 4, 8, 16, 32]
    captions = " ".join(c.value for c in at.caption)
    assert "Length 16: Python for loop 32 equations" in captions
    assert f"Length 1: Python for loop {table['Python for loop'].iloc[0]} equations" in captions


def test_a_flood_of_table_edits_is_dropped_before_streamlit_applies_them() -> None:
    """The recompilation lab's table is a data editor: its edits arrive as JSON from the
    browser and Streamlit applies them row by row in the server's Python. 5,000 added rows are
    dropped unapplied (a new table starts from the scenario's calls), and the page says so."""
    flood = {"added_rows": [{"x shape": "3"}] * 5_000, "edited_rows": {}, "deleted_rows": []}
    # Applied, these take some 90 s of the server's Python on two busy cores.
    at = open_page(SPEC, tracing_tab="Recompilation", tracing_calls_article=flood)
    assert_clean(at)
    assert any("edits were over what it takes" in w.value for w in at.warning)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Compilations"] == "2"  # the scenario's own calls

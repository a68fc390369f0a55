"""The Memory & fusion page: both panels, their controls, their sentences, and shared links."""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest

from jaxplay import memory
from jaxplay.hosting import catalog
from tests.support.apptest import APP_TIMEOUT_S, assert_clean, open_page

SPEC = catalog.find("memory")
IGNORED_NOTE = "Parts of this link were ignored"


def _texts(elements) -> str:
    return " ".join(str(e.value) for e in elements)


def _open_link(params: dict) -> AppTest:
    at = AppTest.from_file(str(catalog.ROOT / "app.py"), default_timeout=APP_TIMEOUT_S)
    at.run()
    at.switch_page(SPEC.path)
    at.query_params.update(params)
    at.run()
    return at


def test_checkpointing_panel_shows_chart_tables_and_what_the_programs_did():
    at = open_page(SPEC, memory_size=16, memory_depth=3, memory_loop="scan")
    assert_clean(at)
    assert not at.error
    assert len(at.get("plotly_chart")) == 1
    summary = at.dataframe[0].value
    assert list(summary["variant"]) == [memory.VARIANTS[k].short for k in memory.DEFAULT_VARIANTS]
    # Nothing the CPU does not report, and no column that is the same for every variant.
    assert "peak MiB" not in summary and "argument MiB" not in summary
    assert "argument MiB: " in _texts(at.caption)
    assert (summary["temp MiB"] > 0).all()
    assert summary["saved residuals"].iloc[1] == 1  # the checkpointed whole layer: its input
    assert all(v != "not run" for v in summary["gradient vs no checkpoint"])
    assert len(at.expander) >= len(memory.DEFAULT_VARIANTS)
    assert "memory_stats" in _texts(at.caption) or "high-water" in _texts(at.caption)
    # The scan's per-block checkpoint: the sentence states the table's own temp memory.
    story = _texts(at.markdown)
    none, per_round = summary["temp MiB"].iloc[0], summary["temp MiB"].iloc[2]
    assert per_round < none
    drop = f"temp memory {none:.3g} MiB → {per_round:.3g} MiB (`memory_analysis()`)"
    assert drop in story and "cannot merge across loop iterations" in story
    # Each variant's residuals described from what JAX saved.
    assert "1 saved residual, by producer: 1 × `x (argument)`" in story


def test_unrolled_loop_says_xla_merged_the_recomputation_back():
    at = open_page(SPEC, memory_size=8, memory_depth=2, memory_loop="unrolled")
    assert_clean(at)
    story = _texts(at.markdown)
    per_round = re.search(
        r"\*\*checkpoint\(each block\), nothing_saveable\*\*: .*?recomputes \((\d+) `sine` ops "
        r"against (\d+)\), behind 2 optimization barriers\. XLA:CPU removed every barrier .*? "
        r"has (\d+) `sine` ops, the same as without checkpoint",
        story,
    )
    assert per_round, story
    lowered, reference, compiled = map(int, per_round.groups())
    assert lowered > reference == compiled
    # The article's own layer without checkpoint: the matmuls' operands and derivative factors.
    assert "8 saved residuals, by producer:" in story
    assert "4 × matmul operands" in story and "4 × derivative factors" in story


def test_a_layer_checkpointed_whole_recomputes_nothing_under_grad():
    """Checkpointed whole, the layer's lowered gradient has no extra op: the forward pass outside
    the checkpoint is left out (its value is unused), so XLA merged nothing; the page says that,
    not that XLA merged a recomputation away."""
    at = open_page(SPEC, memory_size=8, memory_depth=2, memory_loop="unrolled")
    assert_clean(at)
    whole = next(m.value for m in at.markdown if m.value.startswith("**checkpoint(whole layer)**"))
    counts = re.search(
        r"has (\d+) `sine` ops, as many as without checkpoint, behind 1 optimization barrier: "
        r"no extra `sine`\. `grad` uses no value of the forward pass.*? The compiled program has "
        r"(\d+) `sine` ops, the same as without checkpoint",
        whole,
    )
    assert counts, whole
    assert counts.group(1) == counts.group(2)
    assert "merged" not in whole


def test_sizes_are_bounded_by_the_widgets():
    at = open_page(SPEC, memory_size=8, memory_depth=1, memory_variants=["none"])
    size, depth = at.number_input(key="memory_size"), at.number_input(key="memory_depth")
    assert size.proto.max == memory.MAX_SIZE and str(memory.MAX_SIZE) in size.proto.help
    assert depth.proto.max == memory.MAX_DEPTH
    assert memory.check_size(memory.MAX_SIZE + 1, 1)  # the code refuses what the box cannot ask


def test_size_above_the_run_limit_is_compiled_only():
    limit = memory.run_limit(memory.platform())
    at = open_page(SPEC, memory_size=limit + 1, memory_depth=1, memory_variants=["none"])
    assert_clean(at)
    assert str(limit) in _texts(at.info)
    assert not at.get("plotly_chart")
    summary = at.dataframe[0].value
    assert summary["gradient time"].iloc[0] == "not run"


def test_fusion_panel_runs_a_preset_and_says_what_the_program_does():
    at = open_page(SPEC, memory_panel="Fusion", memory_chain_size=32)
    assert_clean(at)
    assert not at.error
    table = at.table[0].value
    assert len(at.table) == 2  # eager against jit, and the fusions (cells wrap)
    ops = memory.CHAIN_PRESETS[next(iter(memory.CHAIN_PRESETS))]
    assert list(table.loc["programs (eager), kernels (jit)"]) == [str(len(ops)), "1"]
    assert len(at.get("plotly_chart")) == 1
    story = _texts(at.markdown)
    assert "into 1 kernel, and `cost_analysis()` counts 2× the array's bytes" in story
    assert "no intermediate goes to memory" in story

    at.selectbox(key="memory_preset").set_value("A reduction in the chain").run()
    assert_clean(at)
    assert at.multiselect(key="memory_chain").value == list(
        memory.CHAIN_PRESETS["A reduction in the chain"]
    )
    kernels = int(at.table[0].value.loc["programs (eager), kernels (jit)", "jit"])
    assert kernels >= 2
    story = _texts(at.markdown)
    assert f"into {kernels} kernels" in story and "through memory" in story
    assert "no intermediate goes to memory" not in story
    assert not [w for w in at.warning if IGNORED_NOTE in w.value]


def test_the_chains_first_roofs_are_measured_in_the_visitors_turn(monkeypatch) -> None:
    """A fresh server's first chain also measures the machine's roofs: in the box's turn, so
    for its visitor (the page tests' conftest fails a measurement for nobody)."""
    from jaxplay import sandbox

    monkeypatch.setattr(sandbox, "_roofs", None)
    at = open_page(SPEC, memory_panel="Fusion", memory_chain_size=24)
    assert_clean(at)
    assert sandbox._roofs is not None  # measured now, in the compute worker


def test_a_link_to_a_chain_shows_its_preset_and_no_ignored_note():
    chain = list(memory.CHAIN_PRESETS["A matmul in the chain"])
    at = _open_link({"memory_panel": "Fusion", "memory_chain_size": "16", "memory_chain": chain})
    assert_clean(at)
    assert at.selectbox(key="memory_preset").value == "A matmul in the chain"
    assert not [w for w in at.warning if IGNORED_NOTE in w.value]
    # Back to the first preset (the default chain, which the URL leaves out): still no note.
    first = next(iter(memory.CHAIN_PRESETS))
    at.selectbox(key="memory_preset").set_value(first).run()
    assert at.multiselect(key="memory_chain").value == list(memory.CHAIN_PRESETS[first])
    assert not [w for w in at.warning if IGNORED_NOTE in w.value], _texts(at.warning)
    # A chain of one's own is no preset.
    at.multiselect(key="memory_chain").set_value(["sin"]).run()
    assert at.selectbox(key="memory_preset").value == "(your own chain)"


def test_fusion_panel_refuses_an_empty_chain():
    at = open_page(SPEC, memory_panel="Fusion", memory_chain_size=8)
    limit = memory.chain_limit(memory.platform())
    assert at.number_input(key="memory_chain_size").proto.max == limit
    at.multiselect(key="memory_chain").set_value([]).run()
    assert "empty" in _texts(at.error)
    assert not at.table and not at.get("plotly_chart")  # no stale results beside it


def test_the_views_are_tabs_and_a_link_still_names_one() -> None:
    """The page switched views with a "Panel" radio; every page now uses tabs for views."""
    at = open_page(SPEC, memory_panel="Fusion", memory_chain_size=8)
    assert_clean(at)
    assert [t.label for t in at.tabs] == ["Checkpointing", "Fusion"]
    assert not at.radio

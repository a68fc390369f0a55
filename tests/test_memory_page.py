"""The Memory & fusion page: both panels, their controls, and sizes over the limits."""

from __future__ import annotations

from jaxplay import memory
from jaxplay.hosting import catalog
from tests.conftest import assert_clean, open_page

SPEC = catalog.find("memory")


def _texts(elements) -> str:
    return " ".join(str(e.value) for e in elements)


def test_checkpointing_panel_shows_chart_tables_and_residuals():
    at = open_page(SPEC, memory_size=16, memory_depth=3, memory_loop="scan")
    assert_clean(at)
    assert not at.error
    chart = at.get("plotly_chart")
    assert len(chart) == 1
    summary = at.dataframe[0].value
    assert list(summary["variant"]) == [memory.VARIANTS[k].label for k in memory.DEFAULT_VARIANTS]
    assert (summary["temp MiB"] > 0).all()
    assert summary["saved residuals"].iloc[1] == 1  # the checkpointed whole layer: its input
    assert all(v != "not run" for v in summary["gradient vs no checkpoint"])
    assert len(at.expander) >= len(memory.DEFAULT_VARIANTS)
    assert "memory_stats" in _texts(at.caption) or "high-water" in _texts(at.caption)


def test_unrolled_loop_and_mlp_with_all_variants():
    at = open_page(
        SPEC,
        memory_model="mlp",
        memory_loop="unrolled",
        memory_size=8,
        memory_depth=2,
        memory_variants=list(memory.VARIANTS),
    )
    assert_clean(at)
    summary = at.dataframe[0].value
    assert len(summary) == len(memory.VARIANTS)


def test_size_over_the_limit_is_refused_with_the_limit_named():
    at = open_page(SPEC, memory_size=memory.MAX_SIZE + 1)
    assert_clean(at)
    assert str(memory.MAX_SIZE) in _texts(at.error)
    assert not at.get("plotly_chart")


def test_size_above_the_run_limit_is_compiled_only():
    limit = memory.run_limit(memory.platform())
    at = open_page(SPEC, memory_size=limit + 1, memory_depth=1, memory_variants=["none"])
    assert_clean(at)
    assert str(limit) in _texts(at.info)
    assert not at.get("plotly_chart")
    summary = at.dataframe[0].value
    assert summary["gradient time"].iloc[0] == "not run"


def test_fusion_panel_runs_a_preset_and_reports_kernels():
    at = open_page(SPEC, memory_panel="Fusion", memory_chain_size=32)
    assert_clean(at)
    assert not at.error
    metrics = {m.label: m.value for m in at.metric}
    ops = memory.CHAIN_PRESETS[next(iter(memory.CHAIN_PRESETS))]
    assert metrics["kernels: eager → jit"] == f"{len(ops)} → 1"
    assert metrics["time: eager → jit"].count("s") >= 2  # two measured durations
    assert len(at.get("plotly_chart")) == 1
    assert "GB/s" in _texts(at.markdown)

    at.selectbox(key="memory_preset").set_value("Fusion stops at a reduction").run()
    assert_clean(at)
    assert at.multiselect(key="memory_chain").value == list(
        memory.CHAIN_PRESETS["Fusion stops at a reduction"]
    )
    kernels = int(at.metric[0].value.split("→")[1])
    assert kernels >= 2
    assert 1 <= len(at.dataframe[0].value) <= kernels


def test_fusion_panel_refuses_bad_input():
    limit = memory.chain_limit(memory.platform())
    at = open_page(SPEC, memory_panel="Fusion", memory_chain_size=limit + 1)
    assert_clean(at)
    assert str(limit) in _texts(at.error)
    at.multiselect(key="memory_chain").set_value([]).run()
    assert "empty" in _texts(at.error)

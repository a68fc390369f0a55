"""What the memory page shows, built in ``jaxplay.memory``: its settings, the plan of a
checkpointing run and its words, the summary's columns and captions, the chain's preset, metrics,
tables and captions."""

from __future__ import annotations

import types
from typing import Any, cast

import pytest

from jaxplay import memory
from jaxplay.memory import _remat_report, _remat_run

FIRST_PRESET = next(iter(memory.CHAIN_PRESETS))


def test_the_checkpoint_settings_offer_the_registries_with_their_limits() -> None:
    platform = memory.platform()
    model, loop = memory.checkpoint_choices()
    assert (model.name, loop.name) == ("model", "loop")
    assert list(model.options) == list(memory.MODELS) and model.default == "seed"
    # The loop box opened on lax.scan (the second option) before it was data: it still does.
    assert list(loop.options).index(loop.default) == 1 == list(memory.LOOPS).index("scan")
    assert loop.help and "lax.scan" in loop.help
    variants = memory.variants_choice()
    assert list(variants.options) == list(memory.VARIANTS)
    assert variants.default == memory.DEFAULT_VARIANTS
    assert variants.options["whole"] == memory.VARIANTS["whole"].label
    size, depth = memory.checkpoint_boxes("mlp", platform)
    assert (size.name, size.most, size.default) == ("size", memory.MAX_SIZE, 128)
    assert f"Up to {memory.run_limit(platform)} the gradients are run" in size.help
    assert (depth.name, depth.label, depth.most) == ("depth", "layers", memory.MAX_DEPTH)
    assert memory.checkpoint_boxes("seed", platform)[1].label == "rounds"
    chain = memory.chain_size_box(platform)
    assert (chain.name, chain.most, chain.default) == (
        "chain_size",
        memory.chain_limit(platform),
        512,
    )
    assert f"1 to {chain.most} on {platform}" in chain.help


def test_a_plan_runs_no_checkpoint_first_and_only_once() -> None:
    plan = memory.plan_run("seed", ["whole", "none", "per_round"], "scan", 8, 2, "cpu")
    assert plan.keys == ("none", "whole", "per_round")
    assert plan.settings == ("seed", plan.keys, "scan", 8, 2)
    assert plan.problem is None and plan.compiled_only is None
    assert plan.run and plan.wait is None  # small: it runs as the page opens
    assert plan.button == "Run and time 3 variants"
    assert memory.plan_run("seed", [], "scan", 8, 2, "cpu").keys == ("none",)


def test_a_plan_refuses_sizes_outside_the_limits_and_decides_nothing_else() -> None:
    plan = memory.plan_run("seed", ["whole"], "scan", memory.MAX_SIZE + 1, 2, "cpu")
    assert plan.problem is not None and plan.problem.startswith("**Not analysed:** Size ")
    assert not plan.run and plan.compiled_only is None and plan.wait is None


def test_a_plan_above_the_run_limit_compiles_only_and_never_waits() -> None:
    size = memory.run_limit("cpu") + 1
    plan = memory.plan_run("seed", ["whole"], "scan", size, 2, "cpu")
    assert plan.problem is None and not plan.run and plan.wait is None
    assert plan.compiled_only is not None
    assert plan.compiled_only.startswith(f"Size {size} is above {size - 1}, the largest run")


def test_a_heavy_plan_waits_for_the_button_with_its_predicted_cost() -> None:
    plan = memory.plan_run("mlp", memory.DEFAULT_VARIANTS, "unrolled", 512, 12, "cpu")
    assert plan.run and plan.wait is not None
    assert "Running and timing 4 variants at these settings is predicted" in plan.wait


def test_the_progress_names_each_variant_and_the_device() -> None:
    label = memory.VARIANTS["whole"].label
    assert memory.step_label(2, 3, "whole") == f"Variant 2/3: {label}…"
    assert memory.analysed_label(1, "cpu") == "1 variant analysed on cpu"
    assert memory.analysed_label(1200, "gpu") == "1,200 variants analysed on gpu"


@pytest.fixture(scope="module")
def reference() -> memory.RematResult:
    return memory.analyse_variant("seed", "none", "scan", 8, 2, run=False)


def test_every_shown_summary_column_is_configured_by_its_kind(reference) -> None:
    (row,) = _remat_report.summary_rows([reference])
    columns = memory.summary_columns()
    assert set(columns) == set(row) - {"± IQR/2"}
    for key, column in columns.items():
        assert column.number == isinstance(row[key], int | float), key
        assert column.format is None or column.number, key
    assert columns["variant"].pinned and columns["temp MiB"].format == "%.3g"


def test_the_summary_caption_says_the_shared_values_only_when_there_are_some() -> None:
    shared = _remat_report.SummaryTable([], "argument MiB: 1.5 for every variant")
    said = memory.summary_caption(shared)
    assert "beside other buffers (argument MiB: 1.5 for every variant)." in said
    assert "up to 262,144 evenly spaced entries" in said
    alone = memory.summary_caption(_remat_report.SummaryTable([], ""))
    assert "beside other buffers. The gradients" in alone and "every variant" not in alone


def test_the_peak_caption_says_when_the_device_reports_no_memory() -> None:
    def results(peak: int | None) -> Any:
        return [types.SimpleNamespace(peak_bytes=peak)]

    assert "cpu reports none" in memory.peak_caption(results(None), "cpu")
    assert "high-water mark" in memory.peak_caption(results(2**20), "gpu")


def test_the_residuals_heading_counts_what_the_variant_saves(reference) -> None:
    n = len(reference.residuals)
    expected = f"{reference.variant.label}: {n} saved residual{'s' if n != 1 else ''}"
    assert memory.residuals_heading(reference) == expected


def test_the_preset_follows_the_chain_and_gives_its_chain_back() -> None:
    for name, chain in memory.CHAIN_PRESETS.items():
        assert memory.preset_of(list(chain)) == name
        assert memory.preset_chain(name) == list(chain)
    first = list(memory.CHAIN_PRESETS[FIRST_PRESET])
    assert memory.preset_of(first[::-1]) == memory.PRESET_CHOICES[-1] == "(your own chain)"
    assert memory.preset_chain("(your own chain)") is None
    assert list(memory.DEFAULT_CHAIN) == first
    assert list(memory.PRESET_CHOICES[:-1]) == list(memory.CHAIN_PRESETS)


@pytest.fixture(scope="module")
def report() -> memory.ChainReport:
    return memory.analyse_chain(("sin", "cos"), 16, 0.02)


def test_the_chain_tables_are_the_reports_own_rows_with_their_headers(report) -> None:
    columns, labels = memory.eager_vs_jit_table(report)
    assert columns == memory.eager_vs_jit_rows(report)  # English: the headers are the keys
    assert labels == ["programs (eager), kernels (jit)", "MiB moved", "time (median)", "GB/s"]
    rows, index = memory.fusion_table(report)
    assert index == "kernel" and len(rows) == len(report.fusions) >= 1
    assert [row[index] for row in rows] == [f.name for f in report.fusions]
    assert rows[0]["JAX ops inside"] == " → ".join(report.fusions[0].primitives)


def test_the_chain_metrics_and_bytes_caption_come_from_the_report(report) -> None:
    (speedup, s), (bandwidth, gbps) = memory.chain_metrics(report)
    assert (speedup, s) == ("jit speedup", f"{report.comparison.speedup:.2f}×")
    assert bandwidth == "copy bandwidth here" and gbps.endswith(" GB/s")
    caption = memory.bytes_caption(report)
    assert f"Eager: {report.comparison.eager.describe()}." in caption
    assert f"Roof: {report.reference.method_text}." in caption


def test_the_kernel_captions_appear_only_when_there_is_something_to_say() -> None:
    def stand_in(
        fusions: list[tuple[str, ...]], unfused: list[tuple[str, str]], jaxpr: tuple[str, ...]
    ) -> Any:
        return cast(
            "memory.ChainReport",
            types.SimpleNamespace(
                fusions=[types.SimpleNamespace(primitives=p) for p in fusions],
                unfused=[types.SimpleNamespace(name=n, opcode=o) for n, o in unfused],
                lowered_ops=tuple((p, jaxpr.count(p)) for p in set(jaxpr)),
            ),
        )

    quiet = stand_in([("sin", "cos")], [], ("sin", "cos"))
    assert memory.recomputed_caption(quiet) is None and memory.unfused_caption(quiet) is None
    busy = stand_in([("sin", "reduce_max"), ("sin", "sub")], [("dot.3", "dot")], ("sin", "sub"))
    said = memory.recomputed_caption(busy) or ""
    assert said.startswith("In more kernels than the program XLA was given has of them: sin.")
    assert memory.unfused_caption(busy) == "Outside any fusion: `dot.3` (dot)"


def test_variants_to_run_keeps_the_visitors_order() -> None:
    assert _remat_run.variants_to_run(["per_round", "none", "whole"]) == (
        "none",
        "per_round",
        "whole",
    )
    # Each once, whatever a scripted client repeated (5,000 copies drew 35,000 messages).
    assert _remat_run.variants_to_run(["whole"] * 5000 + ["none", "whole"]) == ("none", "whole")

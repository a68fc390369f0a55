"""Memory & fusion: what gradient checkpointing saves, and what XLA fuses (article section 8)."""

import pandas as pd
import streamlit as st

from jaxplay import memory
from jaxplay.core import roofline, words
from pages import _ui  # every page imports it first: see its docstring

st.title(":material/memory: Memory & fusion")
st.write(
    "The article's last section wraps a layer in `jax.checkpoint` and says *observe the memory "
    "difference*; its fusion example stops after `y = jnp.sin(x)`. Here both are run: what each "
    "checkpointing variant saves and costs, and what `jit` fuses into how many kernels."
)


@_ui.cached(max_entries=20, show_spinner=False)
def variant(
    model: str, key: str, loop: str, size: int, depth: int, run: bool
) -> memory.RematResult:
    return memory.analyse_variant(model, key, loop, size, depth, run)


@_ui.cached(max_entries=8, show_spinner=False)
def chain(ops: tuple[str, ...], size: int) -> memory.ChainReport:
    return memory.analyse_chain(ops, size)


def checkpointing(platform: str, device: str) -> None:
    """The story: pick a model and variants, analyse each (on a button when heavy), show them."""
    model, loop, size, depth, chosen = checkpoint_settings(platform)
    problem = memory.check_size(size, depth)
    if problem:
        st.error(f"**Not analysed:** {problem}", icon=":material/block:")
        return
    keys = ["none", *[k for k in chosen if k != "none"]]
    run = size <= memory.run_limit(platform)
    if not run:
        st.info(
            f"Size {size} is above {memory.run_limit(platform)}, the largest run and timed on "
            f"{platform}: compiled and analysed only (no times, no gradient check).",
            icon=":material/info:",
        )
    # A link may ask for the largest size and depth: heavy work waits for the visitor's button.
    chosen_settings = (model, tuple(keys), loop, size, depth)
    cost = memory.run_cost(*chosen_settings) if run else 0.0
    if cost > memory.AUTO_RUN_S and not _ui.measure_button(
        f"Run and time {words.count(len(keys), 'variant')}", "memory_run", chosen_settings
    ):
        st.info(memory.run_cost_note(cost, len(keys)), icon=":material/timer:")
        return
    with _ui.measuring("Tracing, compiling and timing each variant…") as status:
        results = []
        try:
            for i, k in enumerate(keys, 1):
                status.update(label=f"Variant {i}/{len(keys)}: {memory.VARIANTS[k].label}…")
                results.append(variant(model, k, loop, size, depth, run))
        except Exception as err:  # e.g. the device runs out of memory at a large size
            status.update(label="Failed", state="error")
            _ui.show_error(err, "**The analysis failed:** ")
            return
        status.update(
            label=f"{words.count(len(keys), 'variant')} analysed on {device}", state="complete"
        )
    checkpoint_results(results, memory.MODELS[model], loop, platform, device, run)


def checkpoint_settings(platform: str) -> tuple[str, str, int, int, list[str]]:
    """The model, loop, size, depth and variants the visitor chose."""
    c1, c2, c3, c4 = st.columns([2, 2, 1, 1])
    model = c1.selectbox(
        "Model",
        list(memory.MODELS),
        format_func=lambda k: memory.MODELS[k].title,
        key="memory_model",
        bind="query-params",
    )
    loop = c2.selectbox(
        "Loop",
        list(memory.LOOPS),
        1,
        memory.LOOPS.get,
        key="memory_loop",
        bind="query-params",
        help="The article's code loops in Python, which jit unrolls at trace time into one long "
        "program; `lax.scan` compiles one loop body and runs it once per round.",
    )
    limit = memory.run_limit(platform)
    size = int(
        c3.number_input(
            "size n",
            1,
            memory.MAX_SIZE,
            128,
            key="memory_size",
            bind="query-params",
            help=f"1 to {memory.MAX_SIZE}. Up to {limit} the gradients are run and timed on "
            f"{platform}; above, they are compiled and analysed only (nothing that size is "
            "allocated).",
        )
    )
    label = memory.MODELS[model].depth_label
    depth = int(
        c4.number_input(
            label,
            1,
            memory.MAX_DEPTH,
            10,
            key="memory_depth",
            bind="query-params",
            help=f"1 to {memory.MAX_DEPTH}.",
        )
    )
    chosen = st.multiselect(
        "Variants (a block is one round, or one layer; no checkpoint is always shown: it is "
        "the reference gradient)",
        list(memory.VARIANTS),
        list(memory.DEFAULT_VARIANTS),
        format_func=lambda k: memory.VARIANTS[k].label,
        key="memory_variants",
        bind="query-params",
    )
    return model, loop, size, depth, chosen


def checkpoint_results(
    results: list, model: memory.Model, loop: str, platform: str, device: str, run: bool
) -> None:
    """Each variant's memory and time, the table, the story, and each variant's residuals."""
    if run:
        _ui.chart(memory.memory_time_figure(results, device), key="memory_chart")
        st.caption("Down and to the left is better: less memory and less time.")
    table = memory.summary_table(results)
    st.dataframe(
        pd.DataFrame(table.rows),
        hide_index=True,
        key="memory_table",
        column_config={
            "variant": st.column_config.TextColumn(pinned=True),
            "saved residuals": st.column_config.NumberColumn(
                "saved", help="Residuals JAX saves for the backward pass"
            ),
            "residual MiB": st.column_config.NumberColumn("saved MiB", format="%.3g"),
            "temp MiB": st.column_config.NumberColumn(
                "temp MiB", format="%.3g", help="XLA's memory_analysis() of the gradient"
            ),
            "gradient time": st.column_config.TextColumn("time", help="Median of the samples"),
            "gradient vs no checkpoint": st.column_config.TextColumn(
                "Δ grad", help="Largest difference from no checkpoint's gradient, relative"
            ),
        },
    )
    st.caption(
        "Saved residuals are JAX's plan; temp MiB is what XLA's compiled program needs "
        "(`memory_analysis()`), where those residuals and other scratch buffers live"
        + (f" ({table.constants})" if table.constants else "")
        + f". The gradients are compared on up to {memory.GRADIENT_SAMPLE:,} evenly spaced "
        "entries of each leaf."
    )
    for paragraph in memory.remat_story(results, model, loop, platform):
        st.markdown(paragraph)
    if results[0].peak_bytes is None:
        st.caption(
            f"Peak device memory: {platform} reports none (`device.memory_stats()` is None)."
        )
    else:
        st.caption("Peak MiB is the device's high-water mark so far: it only ever grows.")
    for r in results:
        with st.expander(f"{r.variant.label}: {words.count(len(r.residuals), 'saved residual')}"):
            st.code(memory.variant_code(r.variant, model), language="python")
            st.caption(memory.variant_explanation(r.variant, model))
            st.markdown(memory.residual_story(r))
            st.dataframe(
                pd.DataFrame(memory.residual_rows(r)),
                hide_index=True,
                key=f"memory_residuals_{r.variant.key}",
            )
    _ui.show_code(memory.ARTICLE_CODE, label="The article's code (section 8)")
    _ui.show_code(model.block, memory.build_loss, memory.analyse_variant)


OWN_CHAIN = "(your own chain)"
DEFAULT_CHAIN = list(next(iter(memory.CHAIN_PRESETS.values())))


def use_preset() -> None:
    chosen = st.session_state["memory_preset"]
    if chosen in memory.CHAIN_PRESETS:
        st.session_state["memory_chain"] = list(memory.CHAIN_PRESETS[chosen])


def fusion_panel(platform: str, device: str) -> None:
    c1, c2 = st.columns([3, 1])
    preset_box = c1.empty()
    limit = memory.chain_limit(platform)
    size = int(
        c2.number_input(
            "size n",
            1,
            limit,
            512,
            key="memory_chain_size",
            bind="query-params",
            help=f"1 to {limit} on {platform} (an n×n float32 array, every op's result too).",
        )
    )
    ops = st.multiselect(
        "The chain, in order (add or remove ops)",
        list(memory.CHAIN_OPS),
        None if "memory_chain" in st.session_state else DEFAULT_CHAIN,
        key="memory_chain",
        bind="query-params",
        max_selections=memory.MAX_CHAIN_OPS,
    )
    # The preset is derived from the chain (which the link carries), so a link reproduces both.
    matching = [name for name, chain in memory.CHAIN_PRESETS.items() if list(chain) == ops]
    st.session_state["memory_preset"] = matching[0] if matching else OWN_CHAIN
    preset_box.selectbox(
        "Preset",
        [*memory.CHAIN_PRESETS, OWN_CHAIN],
        key="memory_preset",
        on_change=use_preset,
    )
    problem = memory.check_chain(ops, size, platform)
    if problem:
        st.error(f"**Not run:** {problem}", icon=":material/block:")
        return
    with _ui.measuring("Compiling, then timing eager and jit…") as status:
        try:
            report = chain(tuple(ops), size)
        except Exception as err:  # e.g. the device runs out of memory at a large size
            status.update(label="Failed", state="error")
            _ui.show_error(err, "**The chain failed:** ")
            return
        status.update(label=f"Measured on {device}", state="complete")
    fusion_results(report, ops)


def fusion_results(report: memory.ChainReport, ops: list[str]) -> None:
    """Eager against jit (kernels, bytes, time), the story, and what XLA fused."""
    # Two short metrics and a table: five "a → b" metrics in a row were cut off at 1024 px.
    m = st.columns(2)
    m[0].metric("jit speedup", f"{report.comparison.speedup:.2f}×")
    m[1].metric("copy bandwidth here", f"{report.reference.copy_bandwidth_gbps:.3g} GB/s")
    st.table(pd.DataFrame(memory.eager_vs_jit_rows(report), index=list(memory.COMPARED)))
    st.markdown(memory.fusion_story(report))
    _ui.chart(memory.chain_figure(report), key="memory_chain_chart")
    st.caption(
        "Eager bytes: every kernel's inputs read and output written; jit bytes: XLA's "
        "`cost_analysis()`; GB/s: bytes / blocked median time. "
        f"Eager: {report.comparison.eager.describe()}. jit: {report.comparison.jitted.describe()}. "
        f"Roof: {report.reference.method}."
    )
    st.write(memory.bandwidth_story(report))
    st.subheader("What XLA fused")
    # A table whose cells wrap: the ops inside a kernel are long lists.
    st.table(pd.DataFrame(memory.fusion_rows(report.fusions)).set_index("kernel"))
    if again := memory.recomputed_primitives(report.fusions):
        st.caption(
            f"In more than one kernel: {', '.join(again)}. XLA recomputes these cheap ops where "
            "they are needed rather than write them to memory once and read them back."
        )
    if report.unfused:
        outside = ", ".join(f"`{o.name}` ({o.opcode})" for o in report.unfused)
        st.caption(f"Outside any fusion: {outside}")
    with st.expander("Optimized HLO", icon=":material/account_tree:"):
        st.code(_ui.scrub(report.hlo_text), language=None)
    _ui.show_code(memory.chain_source(ops), memory.run_chain, memory.analyse_chain)


# The address keeps the key the panel radio had (memory_panel): old links open the same view.
_ui.lazy_tabs(
    {
        "Checkpointing": lambda: checkpointing(memory.platform(), roofline.device_label()),
        "Fusion": lambda: fusion_panel(memory.platform(), roofline.device_label()),
    },
    key="memory_panel",
    keep={
        "Checkpointing": (
            "memory_model",
            "memory_loop",
            "memory_size",
            "memory_depth",
            "memory_variants",
        ),
        "Fusion": ("memory_chain_size", "memory_chain"),
    },
)

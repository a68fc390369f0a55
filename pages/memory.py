"""Memory & fusion: what gradient checkpointing saves, and what XLA fuses (article section 8)."""

import pandas as pd
import streamlit as st

from jaxplay import memory
from jaxplay.core import roofline
from jaxplay.core.i18n import N_, _, ngettext
from pages import _ui  # every page imports it first: see its docstring

st.title(":material/memory: " + _("Memory & fusion"))
st.write(
    _(
        "The article's last section wraps a layer in `jax.checkpoint` and says *observe the "
        "memory difference*; its fusion example stops after `y = jnp.sin(x)`. Here both are run: "
        "what each checkpointing variant saves and costs, and what `jit` fuses into how many "
        "kernels."
    )
)


def variants(n: int) -> str:
    """``"3 variants"`` in the visitor's language."""
    return ngettext("{n} variant", "{n} variants", n).format(n=f"{n:,}")


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
        st.error(_("**Not analysed:** {reason}").format(reason=problem), icon=":material/block:")
        return
    keys = ["none", *[k for k in chosen if k != "none"]]
    run = size <= memory.run_limit(platform)
    if not run:
        st.info(
            _(
                "Size {size} is above {limit}, the largest run and timed on {platform}: compiled "
                "and analysed only (no times, no gradient check)."
            ).format(size=size, limit=memory.run_limit(platform), platform=platform),
            icon=":material/info:",
        )
    # A link may ask for the largest size and depth: heavy work waits for the visitor's button.
    chosen_settings = (model, tuple(keys), loop, size, depth)
    cost = memory.run_cost(*chosen_settings) if run else 0.0
    if cost > memory.AUTO_RUN_S and not _ui.measure_button(
        _("Run and time {variants}").format(variants=variants(len(keys))),
        "memory_run",
        chosen_settings,
    ):
        st.info(memory.run_cost_note(cost, len(keys)), icon=":material/timer:")
        return
    with _ui.measuring(_("Tracing, compiling and timing each variant…")) as status:
        results = []
        try:
            for i, k in enumerate(keys, 1):
                label = _("Variant {i}/{n}: {variant}…").format(
                    i=i, n=len(keys), variant=_(memory.VARIANTS[k].label)
                )
                status.update(label=label)
                results.append(variant(model, k, loop, size, depth, run))
        except Exception as err:  # e.g. the device runs out of memory at a large size
            status.update(label=_("Failed"), state="error")
            _ui.show_error(err, _("**The analysis failed:** "))
            return
        analysed = _("{variants} analysed on {device}")
        status.update(
            label=analysed.format(variants=variants(len(keys)), device=device), state="complete"
        )
    checkpoint_results(results, memory.MODELS[model], loop, platform, device, run)


def checkpoint_settings(platform: str) -> tuple[str, str, int, int, list[str]]:
    """The model, loop, size, depth and variants the visitor chose."""
    c1, c2, c3, c4 = st.columns([2, 2, 1, 1])
    model = c1.selectbox(
        _("Model"),
        list(memory.MODELS),
        format_func=lambda k: _(memory.MODELS[k].title),
        key="memory_model",
        bind="query-params",
    )
    loop = c2.selectbox(
        _("Loop"),
        list(memory.LOOPS),
        1,
        lambda k: _(memory.LOOPS[k]),
        key="memory_loop",
        bind="query-params",
        help=_(
            "The article's code loops in Python, which jit unrolls at trace time into one long "
            "program; `lax.scan` compiles one loop body and runs it once per round."
        ),
    )
    limit = memory.run_limit(platform)
    size = int(
        c3.number_input(
            _("size n"),
            1,
            memory.MAX_SIZE,
            128,
            key="memory_size",
            bind="query-params",
            help=_(
                "1 to {most}. Up to {limit} the gradients are run and timed on {platform}; "
                "above, they are compiled and analysed only (nothing that size is allocated)."
            ).format(most=memory.MAX_SIZE, limit=limit, platform=platform),
        )
    )
    label = _(memory.MODELS[model].depth_label)
    depth = int(
        c4.number_input(
            label,
            1,
            memory.MAX_DEPTH,
            10,
            key="memory_depth",
            bind="query-params",
            help=_("1 to {most}.").format(most=memory.MAX_DEPTH),
        )
    )
    chosen = st.multiselect(
        _(
            "Variants (a block is one round, or one layer; no checkpoint is always shown: it is "
            "the reference gradient)"
        ),
        list(memory.VARIANTS),
        list(memory.DEFAULT_VARIANTS),
        format_func=lambda k: _(memory.VARIANTS[k].label),
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
        st.caption(_("Down and to the left is better: less memory and less time."))
    table = memory.summary_table(results)
    st.dataframe(
        pd.DataFrame(table.rows),
        hide_index=True,
        key="memory_table",
        column_config=summary_columns(),
    )
    sample = f"{memory.GRADIENT_SAMPLE:,}"
    if table.constants:
        caption = _(
            "Saved residuals are JAX's plan; temp MiB is what XLA's compiled program needs "
            "(`memory_analysis()`), where those residuals and other scratch buffers live "
            "({constants}). The gradients are compared on up to {sample} evenly spaced entries "
            "of each leaf."
        )
    else:
        caption = _(
            "Saved residuals are JAX's plan; temp MiB is what XLA's compiled program needs "
            "(`memory_analysis()`), where those residuals and other scratch buffers live. The "
            "gradients are compared on up to {sample} evenly spaced entries of each leaf."
        )
    st.caption(caption.format(constants=table.constants, sample=sample))
    for paragraph in memory.remat_story(results, model, loop, platform):
        st.markdown(paragraph)
    if results[0].peak_bytes is None:
        st.caption(
            _(
                "Peak device memory: {platform} reports none (`device.memory_stats()` is None)."
            ).format(platform=platform)
        )
    else:
        st.caption(_("Peak MiB is the device's high-water mark so far: it only ever grows."))
    for r in results:
        n = len(r.residuals)
        saved = ngettext("{n} saved residual", "{n} saved residuals", n).format(n=f"{n:,}")
        with st.expander(_("{variant}: {saved}").format(variant=_(r.variant.label), saved=saved)):
            st.code(memory.variant_code(r.variant, model), language="python")
            st.caption(memory.variant_explanation(r.variant, model))
            st.markdown(memory.residual_story(r))
            st.dataframe(
                pd.DataFrame(memory.residual_rows(r)),
                hide_index=True,
                key=f"memory_residuals_{r.variant.key}",
            )
    _ui.show_code(memory.ARTICLE_CODE, label=_("The article's code (section 8)"))
    _ui.show_code(model.block, memory.build_loss, memory.analyse_variant)


OWN_CHAIN = N_("(your own chain)")
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
            _("size n"),
            1,
            limit,
            512,
            key="memory_chain_size",
            bind="query-params",
            help=_(
                "1 to {limit} on {platform} (an n×n float32 array, every op's result too)."
            ).format(limit=limit, platform=platform),
        )
    )
    ops = st.multiselect(
        _("The chain, in order (add or remove ops)"),
        list(memory.CHAIN_OPS),
        None if "memory_chain" in st.session_state else DEFAULT_CHAIN,
        format_func=_,
        key="memory_chain",
        bind="query-params",
        max_selections=memory.MAX_CHAIN_OPS,
    )
    # The preset is derived from the chain (which the link carries), so a link reproduces both.
    matching = [name for name, chain in memory.CHAIN_PRESETS.items() if list(chain) == ops]
    st.session_state["memory_preset"] = matching[0] if matching else OWN_CHAIN
    preset_box.selectbox(
        _("Preset"),
        [*memory.CHAIN_PRESETS, OWN_CHAIN],
        format_func=_,
        key="memory_preset",
        on_change=use_preset,
    )
    problem = memory.check_chain(ops, size, platform)
    if problem:
        st.error(_("**Not run:** {reason}").format(reason=problem), icon=":material/block:")
        return
    with _ui.measuring(_("Compiling, then timing eager and jit…")) as status:
        try:
            report = chain(tuple(ops), size)
        except Exception as err:  # e.g. the device runs out of memory at a large size
            status.update(label=_("Failed"), state="error")
            _ui.show_error(err, _("**The chain failed:** "))
            return
        status.update(label=_("Measured on {device}").format(device=device), state="complete")
    fusion_results(report, ops)


def fusion_results(report: memory.ChainReport, ops: list[str]) -> None:
    """Eager against jit (kernels, bytes, time), the story, and what XLA fused."""
    # Two short metrics and a table: five "a → b" metrics in a row were cut off at 1024 px.
    m = st.columns(2)
    m[0].metric(_("jit speedup"), f"{report.comparison.speedup:.2f}×")
    m[1].metric(_("copy bandwidth here"), f"{report.reference.copy_bandwidth_gbps:.3g} GB/s")
    compared = pd.DataFrame(
        memory.eager_vs_jit_rows(report), index=[_(row) for row in memory.COMPARED]
    )
    st.table(compared.rename(columns={"eager": _("eager")}))
    st.markdown(memory.fusion_story(report))
    _ui.chart(memory.chain_figure(report), key="memory_chain_chart")
    st.caption(
        _(
            "Eager bytes: every kernel's inputs read and output written; jit bytes: XLA's "
            "`cost_analysis()`; GB/s: bytes / blocked median time. Eager: {eager}. jit: {jit}. "
            "Roof: {roof}."
        ).format(
            eager=report.comparison.eager.describe(),
            jit=report.comparison.jitted.describe(),
            roof=report.reference.method_text,
        )
    )
    st.write(memory.bandwidth_story(report))
    st.subheader(_("What XLA fused"))
    # A table whose cells wrap: the ops inside a kernel are long lists.
    st.table(fusion_table(report))
    if again := memory.recomputed_primitives(report.fusions):
        st.caption(
            _(
                "In more than one kernel: {ops}. XLA recomputes these cheap ops where they are "
                "needed rather than write them to memory once and read them back."
            ).format(ops=_(", ").join(again))
        )
    if report.unfused:
        outside = _(", ").join(f"`{o.name}` ({o.opcode})" for o in report.unfused)
        st.caption(_("Outside any fusion: {kernels}").format(kernels=outside))
    with st.expander(_("Optimized HLO"), icon=":material/account_tree:"):
        st.code(_ui.scrub(report.hlo_text), language=None)
    _ui.show_code(memory.chain_source(ops), memory.run_chain, memory.analyse_chain)


def summary_columns() -> dict:
    """How the summary table's columns are shown: labels and help in the visitor's language
    (the data keeps its English keys)."""
    column = st.column_config
    return {
        "variant": column.TextColumn(_("variant"), pinned=True),
        "saved residuals": column.NumberColumn(
            _("saved"), help=_("Residuals JAX saves for the backward pass")
        ),
        "residual MiB": column.NumberColumn(_("saved MiB"), format="%.3g"),
        "temp MiB": column.NumberColumn(
            _("temp MiB"), format="%.3g", help=_("XLA's memory_analysis() of the gradient")
        ),
        "argument MiB": column.NumberColumn(_("argument MiB"), format="%.3g"),
        "output MiB": column.NumberColumn(_("output MiB"), format="%.3g"),
        "peak MiB": column.NumberColumn(_("peak MiB"), format="%.3g"),
        "gradient time": column.TextColumn(_("time"), help=_("Median of the samples")),
        "gradient vs no checkpoint": column.TextColumn(
            _("Δ grad"), help=_("Largest difference from no checkpoint's gradient, relative")
        ),
    }


def fusion_table(report: memory.ChainReport) -> pd.DataFrame:
    """What XLA fused, one row per kernel, the headers in the visitor's language."""
    headers = {
        "kernel": _("kernel"),
        "kind": _("kind"),
        "JAX ops inside": _("JAX ops inside"),
        "HLO ops inside": _("HLO ops inside"),
        "output": _("output"),
        "source lines": _("source lines"),
    }
    rows = memory.fusion_rows(report.fusions)
    return pd.DataFrame(rows).rename(columns=headers).set_index(headers["kernel"])


# The address keeps the key the panel radio had (memory_panel): old links open the same view.
CHECKPOINTING, FUSION = _("Checkpointing"), _("Fusion")
_ui.lazy_tabs(
    {
        CHECKPOINTING: lambda: checkpointing(memory.platform(), roofline.device_label()),
        FUSION: lambda: fusion_panel(memory.platform(), roofline.device_label()),
    },
    key="memory_panel",
    keep={
        CHECKPOINTING: (
            "memory_model",
            "memory_loop",
            "memory_size",
            "memory_depth",
            "memory_variants",
        ),
        FUSION: ("memory_chain_size", "memory_chain"),
    },
)

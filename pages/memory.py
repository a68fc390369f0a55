"""Memory & fusion: what gradient checkpointing saves, and what XLA fuses (article section 8)."""

from pages import _ui  # every page imports it first: see its docstring

from typing import Any

import pandas as pd
import streamlit as st

from jaxplay import memory, sandbox
from jaxplay.core import roofline
from jaxplay.core.i18n import _

st.title(":material/memory: " + _("Memory & fusion"))
st.write(
    _(
        "The article's last section wraps a layer in `jax.checkpoint` and says *observe the "
        "memory difference*; its fusion example stops after `y = jnp.sin(x)`. Here both are run: "
        "what each checkpointing variant saves and costs, and what `jit` fuses into how many "
        "kernels."
    )
)


@_ui.cached(max_entries=20, show_spinner=False)
def variant(
    model: str, key: str, loop: str, size: int, depth: int, run: bool, _turn: _ui.Turn | None = None
) -> memory.RematResult:
    return sandbox.timed(memory.analyse_variant, model, key, loop, size, depth, run, turn=_turn)


@_ui.cached(max_entries=8, show_spinner=False)
def chain(ops: tuple[str, ...], size: int, _turn: _ui.Turn | None = None) -> memory.ChainReport:
    reference = sandbox.machine_reference(turn=_turn)
    return sandbox.timed(memory.analyse_chain, ops, size, reference=reference, turn=_turn)


def checkpointing() -> None:
    """The story: pick a model and variants, analyse each (on a button when heavy), show them."""
    platform, device = memory.platform(), roofline.device_label()
    c1, c2, c3, c4 = st.columns([2, 2, 1, 1])
    choices = memory.checkpoint_choices()
    model, loop = (setting_box(c, box) for c, box in zip((c1, c2), choices, strict=True))
    boxes = memory.checkpoint_boxes(model, platform)
    size, depth = (setting_box(c, box) for c, box in zip((c3, c4), boxes, strict=True))
    chosen = setting_box(st, memory.variants_choice())
    plan = memory.plan_run(model, chosen, loop, size, depth, platform)
    if plan.problem:
        st.error(plan.problem, icon=":material/block:")
        return
    if plan.compiled_only:
        st.info(plan.compiled_only, icon=":material/info:")
    # A link may ask for the largest size and depth: heavy work waits for the visitor's button.
    if plan.wait and not _ui.measure_button(plan.button, "memory_run", plan.settings):
        st.info(plan.wait, icon=":material/timer:")
        return
    with _ui.measuring(_("Tracing, compiling and timing each variant…")) as status:
        results = []
        try:
            for i, k in enumerate(plan.keys, 1):
                status.update(label=memory.step_label(i, len(plan.keys), k))
                results.append(variant(model, k, loop, size, depth, plan.run, _turn=status.turn))
        except Exception as err:  # e.g. the device runs out of memory at a large size
            status.update(label=_("Failed"), state="error")
            _ui.show_error(err, _("**The analysis failed:** "))
            return
        status.update(label=memory.analysed_label(len(plan.keys), device), state="complete")
    checkpoint_results(results, memory.MODELS[model], loop, platform, device, plan.run)


def checkpoint_results(
    results: list, model: memory.Model, loop: str, platform: str, device: str, run: bool
) -> None:
    """Each variant's memory and time, the table, the story, and each variant's residuals."""
    if run:
        _ui.chart(memory.memory_time_figure, results, device, key="memory_chart")
        st.caption(_("Down and to the left is better: less memory and less time."))
    table = memory.summary_table(results)
    summary = pd.DataFrame(table.rows)
    st.dataframe(summary, hide_index=True, key="memory_table", column_config=summary_columns())
    st.caption(memory.summary_caption(table))
    for paragraph in memory.remat_story(results, model, loop, platform):
        st.markdown(paragraph)
    st.caption(memory.peak_caption(results, platform))
    for r in results:
        with st.expander(memory.residuals_heading(r)):
            st.code(memory.variant_code(r.variant, model), language="python")
            st.caption(memory.variant_explanation(r.variant, model))
            st.markdown(memory.residual_story(r))
            residuals = pd.DataFrame(memory.residual_rows(r))
            st.dataframe(residuals, hide_index=True, key=f"memory_residuals_{r.variant.key}")
    _ui.show_code(memory.ARTICLE_CODE, label=_("The article's code (section 8)"))
    _ui.show_code(model.block, memory.build_loss, memory.analyse_variant)


def setting_box(column, box: memory.Choice | memory.Choices | memory.NumberBox) -> Any:
    """A setting's box, bound to the address as ``memory_<name>``: a number box from 1 to its
    ``most``, or a choice's options shown by their labels (a multiselect when several)."""
    key = f"memory_{box.name}"
    if isinstance(box, memory.NumberBox):
        value = column.number_input(
            box.label, 1, box.most, box.default, key=key, bind="query-params", help=box.help
        )
        return int(value)
    options, shown = list(box.options), box.options.get
    if isinstance(box, memory.Choices):
        return column.multiselect(
            box.label, options, list(box.default), format_func=shown, key=key, bind="query-params"
        )
    index = options.index(box.default)
    return column.selectbox(
        box.label, options, index, shown, key=key, bind="query-params", help=box.help
    )


def summary_columns() -> dict:
    """How the summary table's columns are shown, as jaxplay says (labels, formats and help in
    the visitor's language; the data keeps its English keys)."""
    column = st.column_config
    return {
        key: column.NumberColumn(c.label, help=c.help, format=c.format)
        if c.number
        else column.TextColumn(c.label, help=c.help, pinned=c.pinned)
        for key, c in memory.summary_columns().items()
    }


def use_preset() -> None:
    if preset_ops := memory.preset_chain(st.session_state["memory_preset"]):
        st.session_state["memory_chain"] = preset_ops


def fusion_panel() -> None:
    platform, device = memory.platform(), roofline.device_label()
    c1, c2 = st.columns([3, 1])
    preset_box = c1.empty()
    size = setting_box(c2, memory.chain_size_box(platform))
    ops = st.multiselect(
        _("The chain, in order (add or remove ops)"),
        list(memory.CHAIN_OPS),
        None if "memory_chain" in st.session_state else list(memory.DEFAULT_CHAIN),
        format_func=_,
        key="memory_chain",
        bind="query-params",
        max_selections=_ui.most_chosen("memory_chain", memory.MAX_CHAIN_OPS),
    )
    # The preset is derived from the chain (which the link carries), so a link reproduces both.
    st.session_state["memory_preset"] = memory.preset_of(ops)
    preset_box.selectbox(
        _("Preset"),
        list(memory.PRESET_CHOICES),
        format_func=_,
        key="memory_preset",
        on_change=use_preset,
    )
    if problem := memory.check_chain(ops, size, platform):
        st.error(_("**Not run:** {reason}").format(reason=problem), icon=":material/block:")
        return
    with _ui.measuring(_("Compiling, then timing eager and jit…")) as status:
        try:
            report = chain(tuple(ops), size, _turn=status.turn)
        except Exception as err:  # e.g. the device runs out of memory at a large size
            status.update(label=_("Failed"), state="error")
            _ui.show_error(err, _("**The chain failed:** "))
            return
        status.update(label=_("Measured on {device}").format(device=device), state="complete")
    fusion_results(report, ops)


def fusion_results(report: memory.ChainReport, ops: list[str]) -> None:
    """Eager against jit (kernels, bytes, time), the story, and what XLA fused."""
    # Two short metrics and a table: five "a → b" metrics in a row were cut off at 1024 px.
    for column, (label, value) in zip(st.columns(2), memory.chain_metrics(report), strict=True):
        column.metric(label, value)
    columns, labels = memory.eager_vs_jit_table(report)
    st.table(pd.DataFrame(columns, index=labels))
    st.markdown(memory.fusion_story(report))
    _ui.chart(memory.chain_figure, report, key="memory_chain_chart")
    st.caption(memory.bytes_caption(report))
    st.write(memory.bandwidth_story(report))
    st.subheader(_("What XLA fused"))
    # A table whose cells wrap: the ops inside a kernel are long lists.
    rows, index = memory.fusion_table(report)
    st.table(pd.DataFrame(rows).set_index(index))
    for caption in memory.fusion_captions(report):
        st.caption(caption)
    with st.expander(_("Optimized HLO"), icon=":material/account_tree:"):
        st.code(_ui.scrub(report.hlo_text), language=None)
    _ui.show_code(memory.chain_source(ops), memory.run_chain, memory.analyse_chain)


# The address keeps the key the panel radio had (memory_panel): old links open the same view.
CHECKPOINTING, FUSION = _("Checkpointing"), _("Fusion")
CHECKPOINT_KEYS = ("memory_model", "memory_loop", "memory_size", "memory_depth", "memory_variants")
_ui.lazy_tabs(
    {CHECKPOINTING: checkpointing, FUSION: fusion_panel},
    key="memory_panel",
    keep={CHECKPOINTING: CHECKPOINT_KEYS, FUSION: ("memory_chain_size", "memory_chain")},
)

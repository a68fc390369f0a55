"""vmap: write the function for one example, get the batched one; see the axes, speed and jaxpr."""

from pages import _ui

import inspect

import pandas as pd
import streamlit as st

from jaxplay import sandbox, vmap
from jaxplay.core import i18n, markdown
from jaxplay.core.i18n import _

BATCH_BUDGET_S = 0.2

st.title(":material/view_column: vmap")
st.write(
    _(
        "`jax.vmap` turns a function of one example into a function of a batch; `in_axes` says "
        "where the batch axis is in each argument. Change the axes and see the shapes, JAX's "
        "verdict, the speed against a Python loop, and the batched jaxpr."
    )
)


@_ui.cached(max_entries=64, show_spinner=False)
def outcome(
    in_text: str, out_text: str, layout: str, w_choice: str, language: str
) -> vmap.VmapOutcome:
    """The editor's outcome; its explanations are in ``language`` (part of the cache key)."""
    return vmap.apply_axes(
        vmap.parse_axes(in_text), vmap.parse_axes(out_text, "out_axes"), layout, w_choice
    )


@_ui.cached(max_entries=16, show_spinner=False)
def batch_point(n: int, _turn: _ui.Turn | None = None) -> vmap.BatchPoint:
    return sandbox.timed(vmap.time_batch, n=n, budget_s=BATCH_BUDGET_S, turn=_turn)


@_ui.cached(max_entries=16, show_spinner=False)
def conv(images, size: int, kernels, custom: str, _turn: _ui.Turn | None = None) -> vmap.ConvResult:
    """In the compute worker: each new count or size compiled programs (14 MB) JAX kept here."""
    return sandbox.timed(vmap.run_conv, images, size, kernels, custom, turn=_turn)


#: How each verdict of the editor is shown: a refusal, the loop's numbers, or a silent bug.
VERDICT_BOXES = {
    vmap.AxesVerdict.REFUSED: (st.error, ":material/error:"),
    vmap.AxesVerdict.SAME_AS_LOOP: (st.success, ":material/check_circle:"),
    vmap.AxesVerdict.NOT_PER_EXAMPLE: (st.warning, ":material/warning:"),
}


def editor_tab() -> None:
    st.code(inspect.getsource(vmap.process_single_example), language="python")
    st.markdown(vmap.puzzle_intro())
    a, b = st.columns(2)
    layout = a.selectbox("X", vmap.LAYOUTS, format_func=_, key="vmap_layout", bind="query-params")
    w_choice = b.selectbox("W", vmap.W_CHOICES, format_func=_, key="vmap_w", bind="query-params")
    in_text = _ui.text_box(
        a,
        "in_axes",
        "(0, None)",
        key="vmap_in_axes",
        bind="query-params",
        help=_(
            "One entry per argument (x, params): an int is that input's batch axis, None "
            "means all examples share it; params may take a tuple (axis for W, axis for b)."
        ),
    )
    out_text = _ui.text_box(b, "out_axes", "0", key="vmap_out_axes", bind="query-params")
    try:
        result = outcome(in_text, out_text, layout, w_choice, i18n.current())
    except vmap.AxesError as err:
        _ui.input_error(err, _("Not an axis spec:"))
    else:
        for row in result.rows:
            st.markdown(vmap.shape_sentence(row))
        verdict, sentence = vmap.axes_verdict(result)
        box, icon = VERDICT_BOXES[verdict]
        box(sentence, icon=icon)
        if result.error is not None:
            with st.expander(_("JAX's own message")):
                _ui.error_code(f"{result.error.error_type}: {result.error.message}")
        _ui.show_code(result.code, vmap.apply_axes)
    with st.expander(_("Show the answer to the puzzle for this X and W")):
        st.code(vmap.correct_axes(layout, w_choice), language=None)


def speed_tab() -> None:
    sizes = st.multiselect(
        _("Batch sizes"),
        list(vmap.BATCH_SIZE_CHOICES),
        list(vmap.DEFAULT_BATCH_SIZES),
        key="vmap_sizes",
        bind="query-params",
    )
    try:
        chosen = vmap.check_batch_sizes(sizes)
    except ValueError as err:
        st.warning(markdown.escape(err), icon=":material/block:")
        chosen = ()
    if _ui.measure_button(_("Measure"), "vmap_measure", chosen):
        # One cached call per size, the progress drawn here between them: a cached function
        # draws nothing (Streamlit replays it for the next visitor).
        running, done = vmap.timing_labels(len(chosen))
        points = _ui.measure_points(
            running, done, chosen, lambda n, turn: batch_point(n, _turn=turn), vmap.point_label
        )
        bt = vmap.combine(points)
        _ui.chart(vmap.batching_figure, bt, key="vmap_speed_chart")
        st.caption(vmap.batching_caption(bt))
    elif chosen:
        st.info(_("Times the article's Python loop, vmap and jit(vmap) at each batch size."))
    _ui.show_code(vmap.manual_batch_process, vmap.time_batch)


def convolution_tab() -> None:
    a, b, c = st.columns([2, 1, 2])
    images = a.multiselect(
        _("Images"),
        vmap.PATTERNS,
        list(vmap.DEFAULT_IMAGES),
        format_func=_,
        key="vmap_images",
        max_selections=_ui.most_chosen("vmap_images", vmap.MAX_IMAGES),
        bind="query-params",
    )
    size = b.slider(
        _("Size"), vmap.MIN_IMAGE, vmap.MAX_IMAGE, 12, key="vmap_size", bind="query-params"
    )
    kernels = c.multiselect(
        _("Kernels"),
        list(vmap.KERNEL_CHOICES),
        list(vmap.DEFAULT_KERNELS),
        format_func=_,
        key="vmap_kernels",
        max_selections=_ui.most_chosen("vmap_kernels", vmap.MAX_KERNELS),
        bind="query-params",
    )
    custom = vmap.DEFAULT_CUSTOM_KERNEL
    if vmap.CUSTOM_KERNEL in kernels:
        custom = _ui.text_box(
            st,
            _("Your kernel (rows separated by ;)"),
            custom,
            key="vmap_custom_kernel",
            bind="query-params",
        )
    st.code(vmap.BATCH_CONV2D_LINES, language="python", wrap_lines=True)
    st.caption(
        _(
            "The article's line and comments as written: read left to right, the first `vmap` "
            "(the outer one) maps axis 0 of the images, the article's channels; the second maps "
            "the kernels. The table below shows what each level receives."
        )
    )
    chosen = (tuple(images), size, tuple(kernels), custom)
    try:  # refused here, in the visitor's language, before the worker convolves
        vmap.conv_inputs(*chosen)
    except ValueError as err:
        st.warning(markdown.escape(err), icon=":material/block:")
    else:
        cr = _ui.computed(_("Convolving…"), _("Convolved"), conv, *chosen)
        _ui.chart(vmap.conv_figure, cr, key="vmap_conv_chart")
        for column, (label, value) in zip(st.columns(2), vmap.agreement_metrics(cr), strict=True):
            column.metric(label, value)
        rows, index = vmap.level_table(cr)
        st.table(pd.DataFrame(rows).set_index(index))
    _ui.show_code(vmap.conv2d_single, vmap.run_conv)


def jaxpr_tab() -> None:
    batch = st.slider(
        _("Batch size"), 1, 8, vmap.JAXPR_BATCH, key="vmap_jaxpr_batch", bind="query-params"
    )
    jc = vmap.batched_jaxprs(batch)
    for column, (heading, jaxpr) in zip(st.columns(2), vmap.jaxpr_panels(jc), strict=True):
        column.markdown(heading)
        column.code(jaxpr, language=None)
    _ui.show_code(vmap.batched_jaxprs)


EDITOR, SPEED, CONVOLUTION = (
    _("in_axes editor"),
    _("Loop vs vmap vs jit(vmap)"),
    _("Nested vmap: 2-D convolution"),
)
_ui.lazy_tabs(
    {EDITOR: editor_tab, SPEED: speed_tab, CONVOLUTION: convolution_tab, "jaxpr": jaxpr_tab},
    key="vmap_tab",
    keep={
        EDITOR: ("vmap_layout", "vmap_w", "vmap_in_axes", "vmap_out_axes"),
        SPEED: ("vmap_sizes",),
        CONVOLUTION: ("vmap_images", "vmap_size", "vmap_kernels", "vmap_custom_kernel"),
        "jaxpr": ("vmap_jaxpr_batch",),
    },
)

"""vmap: write the function for one example, get the batched one; see the axes, speed and jaxpr."""

import inspect

import pandas as pd
import streamlit as st

from jaxplay import vmap
from jaxplay.core import i18n, markdown
from jaxplay.core.i18n import _, ngettext
from pages import _ui

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
def batch_point(n: int) -> vmap.BatchPoint:
    return vmap.time_batch(n, budget_s=BATCH_BUDGET_S)


@_ui.cached(max_entries=16, show_spinner=_("Convolving…"))
def conv(
    images: tuple[str, ...], size: int, kernels: tuple[str, ...], custom: str, language: str
) -> vmap.ConvResult:
    """The convolution; its table's sentences are in ``language`` (part of the cache key)."""
    return vmap.run_conv(images, size, kernels, custom)


def editor_tab() -> None:
    st.code(inspect.getsource(vmap.process_single_example), language="python")
    st.markdown(
        _(
            "**The puzzle:** {n} examples are stacked in X, and W is shared or given per example. "
            "Which `in_axes` make `batch_process(X, (W, b))` compute `W @ x + b` for each "
            "example, as a loop would? Pick a layout, type your answer, and see what JAX does."
        ).format(n=vmap.EDITOR_BATCH)
    )
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
            "means every example shares it; params may take a pair (axis for W, axis for b)."
        ),
    )
    out_text = _ui.text_box(b, "out_axes", "0", key="vmap_out_axes", bind="query-params")
    try:
        result = outcome(in_text, out_text, layout, w_choice, i18n.current())
    except vmap.AxesError as err:
        _ui.input_error(err, _("Not an axis spec:"))
    else:
        for row in result.rows:
            if row.axis is None:
                line = _("`{name}`: {shape} — not mapped; each call sees `{per_call}`")
            else:
                line = _("`{name}`: {shape} — axis {axis} mapped; each call sees `{per_call}`")
            st.markdown(
                line.format(
                    name=row.name, shape=row.markdown(), axis=row.axis, per_call=row.per_call
                )
            )
        if result.error is not None:
            st.error(
                _("**JAX refuses:** {reason}").format(reason=result.error.plain),
                icon=":material/error:",
            )
            with st.expander(_("JAX's own message")):
                _ui.error_code(f"{result.error.error_type}: {result.error.message}")
        elif result.matches_loop:
            st.success(
                _("Output shape {shape}: the same numbers as a loop over the {n} examples.").format(
                    shape=result.output_shape, n=vmap.EDITOR_BATCH
                ),
                icon=":material/check_circle:",
            )
        else:
            st.warning(
                _(
                    "It runs, with output shape {shape}, but these are not the per-example "
                    "results W x + b: the mapped axes are not the batch axes."
                ).format(shape=result.output_shape),
                icon=":material/warning:",
            )
        _ui.show_code(result.code, vmap.apply_axes)
    with st.expander(_("Show the answer to the puzzle for this X and W")):
        st.code(vmap.correct_axes(layout, w_choice), language=None)


def speed_tab() -> None:
    sizes = st.multiselect(
        _("Batch sizes"),
        [1, 4, 16, 64, 256, vmap.MAX_TIMING_BATCH],
        [1, 16, 256],
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
        n = len(chosen)
        points = _ui.measure_points(
            ngettext(
                "Timing the loop, vmap and jit(vmap) at {n} batch size…",
                "Timing the loop, vmap and jit(vmap) at {n} batch sizes…",
                n,
            ).format(n=f"{n:,}"),
            ngettext("{n} batch size timed", "{n} batch sizes timed", n).format(n=f"{n:,}"),
            chosen,
            batch_point,
            lambda size: _("batch {n}").format(n=size),
        )
        bt = vmap.combine(points)
        _ui.chart(vmap.batching_figure(bt), key="vmap_speed_chart")
        if bt.agree:
            caption = _(
                "D={d_in}, H={d_out}; the three give the same numbers at batch {sizes}. Each "
                "point is `timing.measure`: warmed up, blocked, median of repeated samples."
            )
        else:
            caption = _(
                "D={d_in}, H={d_out}; the three **differ** at batch {sizes}. Each point is "
                "`timing.measure`: warmed up, blocked, median of repeated samples."
            )
        sizes_at = bt.batch_sizes if bt.agree else bt.disagree_at
        st.caption(
            caption.format(d_in=bt.d_in, d_out=bt.d_out, sizes=_(", ").join(map(str, sizes_at)))
        )
    elif chosen:
        st.info(_("Times the article's Python loop, vmap and jit(vmap) at each batch size."))
    _ui.show_code(vmap.manual_batch_process, vmap.time_batch)


def convolution_tab() -> None:
    a, b, c = st.columns([2, 1, 2])
    images = a.multiselect(
        _("Images"),
        vmap.PATTERNS,
        ["checkerboard", "disc"],
        format_func=_,
        key="vmap_images",
        max_selections=vmap.MAX_IMAGES,
        bind="query-params",
    )
    size = b.slider(
        _("Size"), vmap.MIN_IMAGE, vmap.MAX_IMAGE, 12, key="vmap_size", bind="query-params"
    )
    kernels = c.multiselect(
        _("Kernels"),
        [*vmap.KERNELS, vmap.CUSTOM_KERNEL],
        ["edge: Sobel x", "blur: box 3×3"],
        format_func=_,
        key="vmap_kernels",
        max_selections=vmap.MAX_KERNELS,
        bind="query-params",
    )
    custom = "0 1 0; 1 -4 1; 0 1 0"
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
    try:
        cr = conv(tuple(images), size, tuple(kernels), custom, i18n.current())
    except ValueError as err:
        st.warning(markdown.escape(err), icon=":material/block:")
    else:
        _ui.chart(vmap.conv_figure(cr), key="vmap_conv_chart")
        m1, m2 = st.columns(2)
        m1.metric("max |batch_conv2d − convolve2d|", f"{cr.max_diff_convolve2d:.2g}")
        m2.metric("max |batch_conv2d − lax.conv|", f"{cr.max_diff_lax_conv:.2g}")
        # A table whose cells wrap: what each level maps is a sentence. The headers: the
        # fields' names in English, translated in another language.
        headers = {
            "code": _("code"),
            "maps_over": _("maps_over"),
            "per_call": _("per_call"),
            "output": _("output"),
        }
        rows = [{headers[k]: v for k, v in vars(level).items()} for level in cr.levels]
        st.table(pd.DataFrame(rows).set_index(headers["code"]))
    _ui.show_code(vmap.conv2d_single, vmap.run_conv)


def jaxpr_tab() -> None:
    batch = st.slider(
        _("Batch size"), 1, 8, vmap.JAXPR_BATCH, key="vmap_jaxpr_batch", bind="query-params"
    )
    jc = vmap.batched_jaxprs(batch)
    a, b = st.columns(2)
    loop_dots, vmap_dots = (
        jc.loop_counts.get("dot_general", 0),
        jc.vmap_counts.get("dot_general", 0),
    )
    a.markdown(_("**Python loop**: {n} × `dot_general`").format(n=loop_dots))
    a.code(jc.loop_text, language=None)
    b.markdown(_("**vmap**: {n} × `dot_general`, for any batch").format(n=vmap_dots))
    b.code(jc.vmap_text, language=None)
    _ui.show_code(vmap.batched_jaxprs)


EDITOR, SPEED, CONVOLUTION = (
    _("in_axes editor"),
    _("Loop vs vmap vs jit(vmap)"),
    _("Nested vmap: 2-D convolution"),
)
_ui.lazy_tabs(
    {
        EDITOR: editor_tab,
        SPEED: speed_tab,
        CONVOLUTION: convolution_tab,
        "jaxpr": jaxpr_tab,
    },
    key="vmap_tab",
    keep={
        EDITOR: ("vmap_layout", "vmap_w", "vmap_in_axes", "vmap_out_axes"),
        SPEED: ("vmap_sizes",),
        CONVOLUTION: (
            "vmap_images",
            "vmap_size",
            "vmap_kernels",
            "vmap_custom_kernel",
        ),
        "jaxpr": ("vmap_jaxpr_batch",),
    },
)

"""Compose: stack transforms in any order; the article's compositions as written and fixed."""

from pages import _ui

import streamlit as st

from jaxplay import compose, sandbox
from jaxplay.core import expr, markdown
from jaxplay.core.i18n import _

st.title(":material/stacks: " + _("Compose"))
st.write(
    _(
        "JAX's transforms take a function and return a function, so they stack: "
        "`jit(vmap(grad(f)))` is a compiled, batched gradient. Build a stack, see its result and "
        "jaxpr, and see the article's compositions run as written and fixed."
    )
)


@_ui.cached(max_entries=64, show_spinner=False)
def pipeline(stack: tuple[str, ...], source: str, shape: tuple[int, ...]) -> compose.PipelineResult:
    return compose.pipeline(stack, source, shape)


@_ui.cached(max_entries=16, show_spinner=False)
def samples(batch: int, features: int, _turn: _ui.Turn | None = None) -> compose.PerSample:
    """In the compute worker: each new B or D compiled programs (11 MB) JAX kept here."""
    return sandbox.timed(compose.per_sample, batch, features, turn=_turn)


@_ui.cached(max_entries=64, show_spinner=False)
def jacobian_point(sweep: str, width: int, _turn: _ui.Turn | None = None) -> compose.JacobianPoint:
    return sandbox.timed(compose.jacobian_point, sweep=sweep, width=width, turn=_turn)


@_ui.cached(max_entries=64, show_spinner=False)
def hvp_point(method: str, n: int, _turn: _ui.Turn | None = None) -> compose.HvpPoint:
    return sandbox.timed(compose.hvp_point, method=method, n=n, turn=_turn)


@st.cache_data(max_entries=1, show_spinner=False)
def jacobian_check() -> tuple[tuple[int, ...], float]:
    return compose.jacobians_agree(64, 8)


@st.cache_data(max_entries=1, show_spinner=False)
def jit_hvp() -> tuple[compose.JitHvp, float]:
    return compose.jit_hvp(), compose.hvp_agreement(compose.AGREEMENT_N)


def apply_preset() -> None:
    st.session_state.update(compose.preset_settings(st.session_state["compose_preset"]))


def choice(where, label: str, options: tuple[str, ...], key: str, shown=_, **more) -> str:
    """A box of the builder, bound to the address; its default is the first preset's."""
    index = options.index(compose.DEFAULT_SETTINGS[key])
    return where.selectbox(
        label, options, format_func=shown, index=index, key=key, bind="query-params", **more
    )


def builder_tab() -> None:
    """The story: stack transforms on f, apply them at x, show what came out (or why not)."""
    stack, source, shape = builder_settings()
    try:
        with st.spinner(compose.applying(stack, source, shape) + "…", show_time=True):
            result = pipeline(stack, source, shape)
    except expr.ExprError as err:
        _ui.input_error(err, _("This formula is not allowed:"), source)
    except (ValueError, sandbox.TaskFailed) as err:
        text, limit = compose.refusal(err, stack)
        show = st.warning if limit else st.error
        show(markdown.escape(text), icon=":material/block:")
    else:
        show_pipeline(result, stack)
    _ui.show_code(compose.pipeline, compose.compose, compose.stack_code)


def builder_settings() -> tuple[tuple[str, ...], str, tuple[int, ...]]:
    """The transform stack (outermost first), f's source and x's shape the visitor chose."""
    choice(st, _("Preset"), compose.PRESET_CHOICES, "compose_preset", on_change=apply_preset)
    columns = st.columns(compose.MAX_STACK)
    boxes = [
        choice(column, compose.slot_label(i), compose.SLOT_CHOICES, key, shown=str)
        for i, (key, column) in enumerate(zip(compose.SLOT_KEYS, columns, strict=True))
    ]
    stack = compose.stack_of(boxes)
    a, b = st.columns(2)
    function = choice(a, "f(x)", compose.FUNCTION_CHOICES, "compose_function")
    shape_name = choice(b, "x", compose.SHAPE_CHOICES, "compose_shape")
    source = compose.FUNCTIONS.get(function, "")
    if function == compose.TYPED_FORMULA:
        source = _ui.text_box(
            a,
            "f(x) =",
            "jnp.sum(x * jnp.tanh(x))",
            key="compose_formula",
            bind="query-params",
            help=compose.formula_help(),
        )
    st.caption(compose.stack_caption(stack))
    return stack, source, compose.INPUT_SHAPES[shape_name]


def show_pipeline(result: compose.PipelineResult, stack: tuple[str, ...]) -> None:
    """The composed function's code and values (or JAX's refusal), and what the run showed."""
    st.code(result.code, language="python")
    if result.error is not None:
        st.error(compose.refused_sentence(result.error), icon=":material/error:")
        with st.expander(_("JAX's own message")):
            _ui.error_code(f"{result.error.error_type}: {result.error.message}")
        return
    st.markdown(compose.shapes_sentence(result))
    st.code(compose.values_text(result), language=None)
    for note in compose.pipeline_notes(result, stack):
        st.caption(note)
    with st.expander(_("jaxpr of the composed function"), icon=":material/account_tree:"):
        st.code(result.jaxpr, language=None)


def per_sample_tab() -> None:
    a, b = st.columns(2)
    batch = a.slider(
        _("samples B"), 1, compose.MAX_SAMPLES, 8, key="compose_batch", bind="query-params"
    )
    features = b.slider(
        _("features D"), 1, compose.MAX_FEATURES, 3, key="compose_features", bind="query-params"
    )
    ps = _ui.computed(_("Computing the gradients…"), _("Computed"), samples, batch, features)
    st.markdown(compose.shapes_line(ps))
    for sentence, outcome in compose.per_sample_cases(ps):
        if outcome.ok:
            st.info(sentence, icon=":material/info:")
            continue
        st.error(sentence, icon=":material/error:")
        with st.expander(_("JAX's full message")):
            _ui.error_code(outcome.message)
    st.markdown(compose.per_sample_why(ps))
    st.success(compose.per_sample_fixed(ps), icon=":material/check_circle:")
    st.dataframe(compose.fixed_rows(ps), key="compose_per_sample_table")
    _ui.show_code(compose.per_sample_gradient, compose.loss_for_sample, compose.per_sample)


def picked(sizes: compose.SizeSweep, key: str) -> tuple[int, ...]:
    """The sizes the visitor picked for a sweep, smallest first, each once whatever was sent."""
    chosen = st.multiselect(
        _(sizes.label), sizes.choices, sizes.default, key=key, bind="query-params"
    )
    return tuple(sorted(set(chosen)))


def measured(sizes: compose.SizeSweep, chosen: tuple[int, ...], point, name: str) -> list[str]:
    """After Measure: each of ``chosen`` timed by the cached ``point``, the chart, its sentences."""
    if not _ui.measure_button(_("Measure"), f"compose_{name}_measure", chosen):
        return []
    points = _ui.measure_points(
        *sizes.progress(len(chosen)),
        sizes.steps(chosen),
        lambda step, turn: point(*step, _turn=turn),
        sizes.step_label,
    )
    sweep = sizes.collect(points)
    _ui.chart(sizes.figure, sweep, key=f"compose_{name}_chart")
    return sizes.sentences(sweep)


def jac_tab() -> None:
    chosen = picked(compose.JACOBIAN_SIZES, "compose_widths")
    st.caption(compose.agreement_sentence(*jacobian_check()))
    verdicts = measured(compose.JACOBIAN_SIZES, chosen, jacobian_point, "jac")
    for verdict in verdicts:
        st.markdown(verdict)
    if chosen and not verdicts:
        st.info(compose.jacobian_plan())
    _ui.show_code(compose.neural_network, compose.jacobian_point)


def hvp_tab() -> None:
    made, agreement = jit_hvp()
    st.code(made.as_written.code, language="python")
    st.error(compose.as_written_sentence(made), icon=":material/error:")
    st.markdown(compose.jit_hvp_why(made, agreement))
    st.markdown(_(compose.HVP_WAYS))
    chosen = picked(compose.HVP_SIZES, "compose_dims")
    for summary in measured(compose.HVP_SIZES, chosen, hvp_point, "hvp"):
        st.caption(summary)
    _ui.show_code(
        compose.forward_over_reverse_hvp, compose.hvp, compose.optimized_hvp, compose.hvp_point
    )


TABS = {  # label: the view, and the keys of its widgets (kept while the tab is closed)
    _("Pipeline builder"): (builder_tab, compose.SETTING_KEYS),
    _("Per-sample gradients"): (per_sample_tab, ("compose_batch", "compose_features")),
    _("jacfwd vs jacrev"): (jac_tab, ("compose_widths",)),
    _("Hessian-vector products"): (hvp_tab, ("compose_dims",)),
}
views = {label: view for label, (view, _keys) in TABS.items()}
_ui.lazy_tabs(views, key="compose_tab", keep={label: keys for label, (_view, keys) in TABS.items()})

"""Sharp bits: JAX's gotchas, each a small case run for real, as usually written and fixed."""

from pages import _ui  # every page imports it first: see its docstring

import streamlit as st

from jaxplay import sharp_bits
from jaxplay.core import i18n
from jaxplay.core.i18n import _
from jaxplay.hosting import catalog

st.title(":material/report: " + _("Sharp bits"))
st.write(
    _(
        "Where JAX is not NumPy: behaviours that surprise everyone once. Each case runs here for "
        "real, in a few variants (as usually written, and the fix) with parameters to change; "
        "what you read below each one is what JAX just did on this server. Open a case in the "
        "Code Lab to edit it freely."
    )
)


@st.cache_data(max_entries=256, show_spinner=_("Running the case…"))
def run_case(
    case: str, variant: str, params: tuple[tuple[str, object], ...], language: str
) -> sharp_bits.CaseRun:
    """One variant run; its sentence is in ``language`` (part of the cache's key)."""
    with i18n.speaking(language):
        return sharp_bits.run(case, variant, **dict(params))


def param_widget(case: sharp_bits.Case, param: sharp_bits.Param, column) -> object:
    key = f"sharp_{case.key}_{param.name}"
    if param.kind == "choice":
        return column.selectbox(
            param.shown_label,
            param.options,
            index=param.options.index(param.default),
            key=key,
            bind="query-params",
        )
    return column.slider(
        param.shown_label,
        param.low if param.kind == "float" else int(param.low),
        param.high if param.kind == "float" else int(param.high),
        param.default,
        param.step if param.kind == "float" else int(param.step),
        key=key,
        bind="query-params",
    )


titles = {c.key: c.shown_title for c in sharp_bits.CASES}
case_key = st.pills(
    _("Case"),
    list(titles),
    format_func=titles.get,
    default=sharp_bits.CASES[0].key,
    key="sharp_case",
    bind="query-params",
)
case = sharp_bits.find_case(case_key or sharp_bits.CASES[0].key)
st.subheader(case.shown_title)
st.markdown(case.shown_intro)

variants = {v.key: v.shown_title for v in case.variants}
variant_key = st.segmented_control(
    _("Variant"),
    list(variants),
    format_func=variants.get,
    default=case.variants[0].key,
    required=True,
    key=f"sharp_{case.key}_variant",
    bind="query-params",
)
variant = case.variant(variant_key or case.variants[0].key)
params = {}
if case.params:
    columns = st.columns(len(case.params))
    for param, column in zip(case.params, columns, strict=True):
        params[param.name] = param_widget(case, param, column)

run = run_case(case.key, variant.key, tuple(params.items()), i18n.current())
_ui.show_code(*variant.helpers, variant.fn, expanded=True, label=_("Show the code that ran"))
st.markdown(_("**What JAX did:** {sentence}").format(sentence=run.sentence))
if run.expected_error:
    st.caption(_("As written, this variant raises `{error}`.").format(error=run.expected_error))
_ui.show_outcome(run.outcome, what=f"`{variant.fn.__name__}(…)`")
if case.figure is not None:
    _ui.chart(case.figure, variant.key, params, key=f"sharp_{case.key}_chart")
if variant.shown_note:
    st.info(variant.shown_note, icon=":material/lightbulb:")
_ui.code_lab_button(run.snippet, key=f"sharp_open_{case.key}", label=_("Open in Code Lab"))

st.divider()
st.markdown(
    _(
        "**Control flow on traced values** (`if x > 0:` under `jit`) is the next sharp bit: "
        "the Tracing page runs that error and its fixes."
    )
)
st.page_link(
    catalog.find("tracing").path,
    label=_("Tracing & jaxpr → Tracers: control-flow pitfalls, run for real"),
    icon=":material/account_tree:",
    query_params=_ui.linked({"tracing_tab": _("Tracers")}),
)

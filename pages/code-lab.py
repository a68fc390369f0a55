"""Code Lab: write JAX code, run it in a sandbox, see its output, values, arrays and jaxpr."""

from pages import _code_lab, _ui  # _ui comes first either way: see its docstring
from pages._editor import code_editor, run_requested

import streamlit as st

from jaxplay import article, code_lab, sandbox
from jaxplay.core.errors import InputError
from jaxplay.core.i18n import _
from jaxplay.hosting import catalog, snippets

sandbox.warm_up()  # returns at once; spare workers start in the background

DEFAULT = article.by_id(article.DEFAULT_ID).source

st.title(":material/terminal: " + _("Code Lab"))
st.caption(code_lab.intro())

state = st.session_state
state.setdefault("code_lab_source", DEFAULT)
# The editor's widget state is dropped when another page is shown; code_lab_source is the
# lasting copy (the walkthrough writes it too), so the editor is refilled from it whenever it is
# shown anew or the code was changed outside it.


# Kept by jaxplay, not st.cache_resource: a client message must not reset its per-visitor limits.
store = snippets.shared_store()
# A shared link (?snippet=<id>) loads its code once; the visitor's edits are kept after that.
shared_id = st.query_params.get("snippet")


if shared_id and state.get("code_lab_loaded_snippet") != shared_id:
    _code_lab.open_shared(store, shared_id, state)
# Once the visitor has edited the loaded code, the address no longer names what the editor
# shows: a reload would load the snippet again over the edits (they stay in the session).
if shared_id and state.get("code_lab_snippet_code") not in (None, state["code_lab_source"]):
    del st.query_params["snippet"]

# Capped before anything parses, shares or runs it, whichever way it came (the editor cuts what
# it is sent as well).
state["code_lab_source"] = _ui.capped(
    state["code_lab_source"], sandbox.MAX_SOURCE_CHARS, _("The code")
)


def _edited(text: str) -> None:
    state["code_lab_source"] = text


def _reset() -> None:
    state["code_lab_source"] = DEFAULT
    state.pop("code_lab_result", None)


refusal = sandbox.refusal()
st.caption(":material/shield: " + _("Each run: {limits}").format(limits=code_lab.describe_limits()))
if refusal:
    st.error(refusal, icon=":material/block:")

# The editor's actions sit above it, so Run is in view without scrolling; more (e.g. sharing)
# go in this row.
actions = st.container(horizontal=True, vertical_alignment="center", key="code_lab_actions")
run_clicked = actions.button(
    _("Run"),
    key="code_lab_run",
    type="primary",
    icon=":material/play_arrow:",
    disabled=bool(refusal),
)
actions.button(_("Reset"), key="code_lab_reset", on_click=_reset, icon=":material/undo:")
share = actions.button(_("Share"), key="code_lab_share", icon=":material/share:")
actions.caption(
    _("**Ctrl/⌘+Enter** runs · **Tab** indents · **Esc** then **Tab** leaves the editor")
)
# The editor is filled in below, after a run, so that it marks the line of that run's error.
editor_slot = st.container()
if share:
    shared = snippets.share(store, state["code_lab_source"], visitor=_ui.visitor_id())
    _code_lab.tell(shared)
    if shared.snippet is not None:
        st.success(_("Anyone with this link sees this code:"), icon=":material/link:")
        link = snippets.share_link(st.context.url, shared.snippet.id, _ui.linked())
        st.code(link, language=None)

source = state["code_lab_source"]


with st.expander(_("Inspect a function: its jaxpr, eager vs jit"), icon=":material/search:"):
    functions = sandbox.defined_functions(source)
    # Why the box is empty, read once (the code is parsed again for it): said here and below.
    empty_because = None if functions else code_lab.no_function_reason(source)
    if empty_because:
        st.caption(_("The Function box is empty: {reason}.").format(reason=empty_because))
    c1, c2, c3 = st.columns([2, 2, 1])
    function = c1.selectbox(_("Function"), functions, key="code_lab_function", bind="query-params")
    shapes = _ui.text_box(
        c2,
        _("Example argument shapes"),
        "(3,)",
        key="code_lab_args",
        bind="query-params",
        help=_("One shape per positional argument, e.g. `(3,), (4, 4)`; `()` is a scalar."),
    )
    dtype = c3.selectbox(
        "dtype",
        ["float32", "float16", "bfloat16", "int32", "bool"],
        key="code_lab_dtype",
        bind="query-params",
    )
    chosen = st.pills(
        _("Show"),
        code_lab.OFFERED,
        selection_mode="multi",
        key="code_lab_inspectors",
        format_func=code_lab.inspector_label,
        bind="query-params",
        on_change=lambda: state.update(code_lab_inspect_changed=True),
    )
    st.page_link(
        catalog.find("tracing").path,
        label=_("Every compile stage of a function (jaxpr, StableHLO, HLO) on the Tracing page"),
        icon=":material/account_tree:",
        query_params=_ui.linked({"tracing_preset": _("a function from the Code Lab")}),
    )

request = None
if chosen and not function:
    st.warning(
        _("Nothing to inspect: the Function box is empty because {reason}.").format(
            reason=empty_because or code_lab.no_function_reason(source)
        ),
        icon=":material/search_off:",
    )
if chosen and function:
    try:
        request = code_lab.inspect_request(function, shapes, dtype, chosen)
    except InputError as err:
        _ui.input_error(err, _("Not shapes:"))

# Ctrl/Cmd+Enter in the editor runs exactly as the Run button does; choosing an inspection runs
# the code with it at once (a presenter who presses "Show the jaxpr" expects to see one).
asked = run_requested("code_lab_editor")
inspect_now = state.pop("code_lab_inspect_changed", False) and request is not None
run = run_clicked or ((asked or inspect_now) and not refusal)
if asked and refusal:
    st.warning(
        _("Ctrl/⌘+Enter did not run the code: {reason}").format(reason=refusal),
        icon=":material/block:",
    )
if run:
    with _ui.sandbox_run(code_lab.running_label(sandbox.get_pool().isolated)) as box:
        result = sandbox.run_code(
            source, inspect=request, visitor=_ui.visitor_id(), on_queue=box.queued
        )
        box.finished(code_lab.run_summary(result), ok=result.ok)
    state["code_lab_result"] = (source, result)

with editor_slot:
    shown_line = code_lab.error_line(state.get("code_lab_result"), source)
    code_editor(source, key="code_lab_editor", height=380, error_line=shown_line, on_change=_edited)


if "code_lab_result" in state:
    _code_lab.show_result(*state["code_lab_result"], source=source, request=request)

"""Article walkthrough: the tutorial's eight sections, each snippet runnable, broken ones fixed."""

from pages import _ui  # every page imports it first: see its docstring

import streamlit as st

from jaxplay import article, sandbox
from jaxplay.core import i18n, markdown
from jaxplay.core.i18n import _

sandbox.warm_up()  # returns at once; spare workers start in the background


class _NotCached(Exception):
    """A run that says nothing about the example (refused, timed out): shown, never cached."""

    def __init__(self, result: sandbox.RunResult) -> None:
        self.result = result


@st.cache_data(max_entries=64, show_spinner=False)
def _run_example(example_id: str, source: str, language: str) -> sandbox.RunResult:
    """The example's run, kept per language: a failed run's explanation is in the words of the
    visitor whose run it was."""
    del language  # part of the cache key only; the run speaks the running script's language
    result = sandbox.run_code(source)
    if result.error is not None and result.error.kind in ("refused", "timeout", "crashed"):
        raise _NotCached(result)
    return result


def run_example(example: article.Example) -> sandbox.RunResult:
    try:
        return _run_example(example.id, example.source, i18n.current())
    except _NotCached as skipped:
        return skipped.result


st.title(":material/menu_book: " + _("Article walkthrough"))
st.caption(
    _(
        "The tutorial article “{title}” ({about}) section by section: its code "
        "reformatted so it runs, what it shows, and where it fails on today's JAX, the real error "
        "and the fix. Any snippet opens in the Code Lab with one click."
    ).format(title=_(article.TITLE), about=_(article.ABOUT))
)

# Short names as options: the label is what travels in a shared link (?walkthrough_section=prng).
slug = st.pills(
    _("Section"),
    [s.slug for s in article.SECTIONS],
    default="jit",
    key="walkthrough_section",
    bind="query-params",
)
section = article.section(slug or "jit")
st.header(f"{section.number}. {_(section.title)}")
st.markdown(_(section.summary))

for example in article.in_section(section.number):
    with st.container(border=True):
        badge = _("The article's code") if example.as_written else _("Fixed / completed")
        if example.expected_error:
            badge = _("{badge} · fails with `{error}`").format(
                badge=badge, error=example.expected_error
            )
        st.subheader(_(example.title))
        st.caption(badge)
        st.code(example.source, language="python", line_numbers=True)
        st.markdown(_(example.explanation))
        if example.expected_error:
            with st.spinner(_("Running it in the sandbox to show the real error…")):
                result = run_example(example)
            if result.error is not None and result.error.exc_type:
                st.error(
                    _("What it really raises on this server ({kind}):").format(
                        kind=result.error.kind
                    ),
                    icon=":material/bug_report:",
                )
                message = f"{result.error.exc_type}: {result.error.message}"
                st.code(
                    message,
                    language=None,
                    height=_ui.box_height(message, box=220, lines=8, chars=1200),
                )
            elif result.error is not None:
                st.warning(  # the worker's words: shown as text
                    _("Could not show the real error: {message}").format(
                        message=markdown.escape(result.error.message)
                    ),
                    icon=":material/warning:",
                )
            else:
                st.success(_("It ran without an error here (for example on a machine with a GPU)."))
            if example.fixed_by:
                st.caption(
                    _("The fix: “{title}” below.").format(
                        title=_(article.by_id(example.fixed_by).title)
                    )
                )
        actions = st.container(horizontal=True)
        if actions.button(
            _("Open in Code Lab"), key=f"walkthrough_open_{example.id}", icon=":material/terminal:"
        ):
            _ui.open_in_code_lab(example.source)
        if not example.expected_error and actions.button(
            _("Run here"), key=f"walkthrough_run_{example.id}", icon=":material/play_arrow:"
        ):
            with st.spinner(_("Running in the sandbox…")):
                result = run_example(example)
            if result.ok:
                st.code(result.stdout or (result.value_repr or _("(no output)")), language=None)
            else:
                st.error(_("It failed:"), icon=":material/error:")
                st.code(
                    f"{result.error.exc_type or result.error.kind}: {result.error.message}",
                    language=None,
                )

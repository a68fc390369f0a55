"""jaxplay's entry point: page config, navigation over the registered pages, shared chrome."""

# First: the server process's start-up, once (JAX's settings before anything touches its backend,
# and Streamlit's legacy pages/ mode left: see pages/_startup.py).
import pages._ui
from pages import _protocol

from contextlib import suppress

import streamlit as st
from streamlit.errors import StreamlitAPIException

from jaxplay import article, jit, sandbox
from jaxplay.core import claims, i18n, markdown, measure_lock
from jaxplay.core.i18n import _
from jaxplay.hosting import catalog, environment, links, publicmode, settings, warm_up

# The tab icon is a file of the app's (sent inline as a data: URL): a Material icon name would
# make every browser fetch it from fonts.gstatic.com, which an offline room cannot reach.
ICON = catalog.ROOT / "frontend" / "favicon.svg"
# The visitor's language (?lang=, the sidebar's switch, else the browser's), for every sentence
# of this run, whether a page or jaxplay builds it; then present mode (?present=1, kept by the
# session across pages): the projector view.
arrived = st.query_params.to_dict()  # the link as it came (language() drops a bad ?lang=)
i18n.use(pages._ui.language())
presenting = pages._ui.present_mode()
st.set_page_config(
    page_title="jaxplay",
    page_icon=str(ICON),
    layout="wide",
    initial_sidebar_state="collapsed" if presenting else "auto",
)
pages._ui.wrap_styles()
if presenting:
    pages._ui.present_styles()

# Public mode: the client messages that change shared state (clear_cache...) are ignored.
_protocol.install()
# Public mode and the visitor, settled before any page runs code: every sandboxed run in this
# script run (this thread's context) counts against this visitor's limit. A measurement names
# its visitor itself, through the page's progress box (pages/_ui.py).
public = publicmode.apply()
sandbox.current_visitor.set(pages._ui.visitor_id())
# The pages' statements about JAX, checked once per process against the JAX it runs, in the
# background (the first run starts it); each page then shows how its own statements fared.
TOPICS = sorted({spec.url_path.replace("-", "_") for spec in catalog.TOPICS} - {"article"})
if settings.check_claims():
    claims.start_checking(TOPICS)
if public.public:
    # The jit page's default view costs seconds to measure: measure it once, in the background,
    # when the server serves its first page, for every visitor (the first call starts it).
    jit.warm_up()
# Every page's views, opened once in the background by a visitor that is not a person, so the
# room's first visits find them computed (JAXPLAY_WARM_UP: in public mode unless told; the first
# run starts it, one per host for a room's processes; see jaxplay/hosting/warm_up.py).
warm_up.start(
    warm_up.server_url(
        st.get_option("server.address") or "",
        int(st.get_option("server.port")),
        st.get_option("server.baseUrlPath") or "",
    )
)


def _page(spec: catalog.PageSpec) -> st.Page:
    return st.Page(
        spec.path,
        title=_(spec.title),
        icon=spec.icon,
        url_path=spec.url_path,
        default=spec is catalog.HOME,
    )


sections: dict[str, list[st.Page]] = {"": [_page(catalog.HOME)]}
for section, specs in catalog.pages_by_section().items():
    sections[_(section)] = [_page(spec) for spec in specs]
# Every page listed: Streamlit folds a menu of more than twelve pages behind "View more".
page = st.navigation(sections, expanded=True)


@st.cache_resource
def _environment() -> environment.EnvironmentInfo:
    return environment.describe_environment()


def _queue_line() -> None:
    """The live queues: Code Lab runs and measurements running and waiting (also when the
    fragment reruns alone, which does not run this file: hence the language again)."""
    i18n.use(pages._ui.spoken())
    st.caption(
        ":material/queue: "
        + publicmode.queue_text(sandbox.current_status(), measure_lock.waiting_count())
    )


def _public_panel() -> None:
    """The limits every visitor meets here and the queues, refreshed only while there is one.

    A full run clears the browser's fragment timers, so once the queue has emptied the refresh
    stops at the visitor's next run.
    """
    limits = sandbox.RunnerConfig.from_env().limits
    st.caption(
        ":material/public: **"
        + _("Public server.")
        + "** "
        + publicmode.limits_text(public, limits.timeout_s, limits.cpu_s, limits.memory_mb)
    )
    refresh = publicmode.queue_refresh_s(sandbox.current_status(), measure_lock.waiting_count())
    if refresh is None:
        _queue_line()
    else:
        st.fragment(run_every=refresh)(_queue_line)()


with st.sidebar:
    pages._ui.language_switch()
    pages._ui.present_toggle()
    st.caption(f":material/memory: {_environment().summary}")
    st.caption(
        _("Source: “{title}”, {about} · [JAX docs](https://docs.jax.dev)").format(
            title=_(article.TITLE), about=_(article.ABOUT)
        )
    )
    if public.public:
        _public_panel()
    else:
        status = sandbox.current_status()
        if status is not None and status["queued"]:
            queued = _("Code runs queued: {n}").format(n=status["queued"])
            st.caption(f":material/queue: {queued}")

# Shared links: note (and drop) the parts of a link this page could not honour.
link_params = arrived
settled = list(st.session_state.to_dict())
link_notice = st.empty()


def _claims_line(topic: str) -> None:
    """One unobtrusive line: how this page's statements fared against this server's JAX."""
    mark = claims.page_mark(topic)
    if not (mark.checked or mark.pending) or not settings.check_claims():
        return
    st.caption(":material/fact_check: " + mark.line)
    if mark.failed:
        with st.expander(_("Statements that did not hold on this server's JAX")):
            for failed in mark.failed:
                here = _("JAX {version} here:").format(version=failed.jax_version)
                st.markdown(
                    f"- {_(claims.REGISTRY[failed.key].statement)} "
                    f"{here} {markdown.escape(failed.observed)}"
                )


st.session_state.pop(pages._ui.WAITING_KEYS, None)
try:
    page.run()
    _claims_line(page.url_path.replace("-", "_"))
except pages._ui.Stopped:
    pass  # the page said why it ended early (pages._ui.stop)
finally:
    # Also when the page ended early after a bad input: the note still shows.
    waiting = st.session_state.get(pages._ui.WAITING_KEYS, [])
    ignored = links.ignored_params(
        link_params,
        st.query_params.to_dict(),
        st.session_state.to_dict(),
        list(st.session_state.to_dict()),
        settled,
        waiting,
    )
    if ignored:
        link_notice.warning(links.notice(ignored), icon=":material/link_off:")
        for name in link_params:
            if name not in st.session_state and name not in {*links.APP_PARAMS, *waiting}:
                with suppress(StreamlitAPIException):  # gone already, or bound to a widget
                    del st.query_params[name]

"""jaxplay's entry point: page config, navigation over the registered pages, shared chrome."""

from jaxplay import environment

# Before anything touches JAX's backend: simulated CPU devices and no GPU preallocation.
environment.configure()

import streamlit as st  # noqa: E402

import pages._ui  # noqa: E402, F401  (leaves Streamlit's legacy pages/ mode; see its docstring)
from jaxplay import catalog, links  # noqa: E402

st.set_page_config(page_title="jaxplay", page_icon=":material/bolt:", layout="wide")


def _page(spec: catalog.PageSpec) -> st.Page:
    return st.Page(
        spec.path,
        title=spec.title,
        icon=spec.icon,
        url_path=spec.url_path,
        default=spec is catalog.HOME,
    )


sections: dict[str, list[st.Page]] = {"": [_page(catalog.HOME)]}
for section, specs in catalog.pages_by_section().items():
    sections[section] = [_page(spec) for spec in specs]
page = st.navigation(sections)


@st.cache_resource
def _environment() -> environment.EnvironmentInfo:
    return environment.describe_environment()


with st.sidebar:
    st.caption(f":material/memory: {_environment().summary}")
    st.caption("Source: the tutorial article in `shared/seed/` · [JAX docs](https://docs.jax.dev)")

# Shared links: note (and drop) the parts of a link this page could not honour.
link_params = st.query_params.to_dict()
link_notice = st.empty()
page.run()
ignored = links.ignored_params(
    link_params,
    st.query_params.to_dict(),
    st.session_state.to_dict(),
    list(st.session_state.to_dict()),
)
if ignored:
    link_notice.warning(
        "Parts of this link were ignored: " + "; ".join(ignored) + ".", icon=":material/link_off:"
    )
    for name in link_params:
        if name not in st.session_state and name not in links.APP_PARAMS:
            del st.query_params[name]

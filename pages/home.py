"""Home: what jaxplay is, a path for a learner and one for an instructor, a card per topic, and
the JAX this server runs.

Both paths are built from the page registry and the article's sections: a topic page whose
address is a section's short name (``/jit`` for section ``jit``) follows that section, in the
article's order; every other topic page (say, one registered under "Beyond the article") comes
after, in navigation order. A new page appears here without a change to this file.
"""

from pages import _ui  # every page imports it first: see its docstring

import pandas as pd
import streamlit as st

from jaxplay import article
from jaxplay.core.i18n import _
from jaxplay.hosting import catalog, environment

st.title(":material/bolt: jaxplay")
st.markdown(
    _(
        "An interactive playground for JAX's composable transforms — `jit`, `grad`, `vmap` and "
        "their compositions, PRNG keys, tracing, devices and sharding. Pick a topic, change the "
        "code or the parameters, and see what JAX really does: values, jaxprs and compiled HLO, "
        "and timings measured honestly (warmed up, blocked on the result, median and spread)."
    )
)

registered = {spec.url_path: spec for spec in catalog.TOPICS}
# The article's sections that have a page here, in the article's order, with their page.
tour = [(s, registered[s.slug]) for s in article.SECTIONS if s.slug in registered]
walkthrough = registered.get("article")
lab = registered.get("code-lab")
beyond = [
    spec
    for spec in catalog.TOPICS
    if spec not in {page for _, page in tour} and spec not in (walkthrough, lab)
]


def step(number: int, text: str, *links: tuple[catalog.PageSpec, str, dict[str, str]]) -> None:
    """A numbered step: what to do, then a link per page to open (label, query parameters)."""
    row = st.container(horizontal=True, vertical_alignment="center", gap="small")
    row.markdown(f"**{number}.** {text}")
    for spec, label, params in links:
        row.page_link(spec.path, label=label, icon=spec.icon, query_params=_ui.linked(params))


with st.expander(_("New to JAX? Follow the article, page by page"), icon=":material/school:"):
    st.markdown(
        _(
            "The path of the tutorial “{title}”: read a section in the walkthrough (its "
            "code, what fails on today's JAX, and the fix), then explore the same topic live."
        ).format(title=_(article.TITLE))
    )
    n = 0
    for n, (section, page) in enumerate(tour, start=1):
        where = {"walkthrough_section": section.slug}
        read = [(walkthrough, _("Read"), where)] if walkthrough else []
        explore = _("Explore: {page}").format(page=_(page.title))
        step(n, _(section.title), *read, (page, explore, {}))
    if lab:
        n += 1
        step(n, _("Write your own: every snippet opens in the Code Lab."), (lab, _(lab.title), {}))
    for spec in beyond:
        n += 1
        beyond_text = _("Beyond the article: {summary}").format(summary=_(spec.summary))
        step(n, beyond_text, (spec, _(spec.title), {}))

with st.expander(_("Teaching a room? What to project, in order"), icon=":material/co_present:"):
    st.markdown(
        _(
            "Every link below opens in **present mode**: larger type, the sidebar folded away, "
            "side notes folded to one line (point at one to read it all). The address keeps "
            "`{param}=1`, so a link you paste into the room's chat opens the same view; "
            "add it to any address, or open the page without it to leave present mode."
        ).format(param=_ui.PRESENT_PARAM)
    )
    on = {_ui.PRESENT_PARAM: "1"}
    n = 0
    for n, (section, page) in enumerate(tour, start=1):
        where = {**on, "walkthrough_section": section.slug}
        show = [(walkthrough, _("The article's code"), where)]
        step(n, _(page.summary), *(show if walkthrough else []), (page, _(page.title), on))
    if lab:
        n += 1
        step(n, _("Live coding: type, Ctrl/⌘+Enter runs."), (lab, _(lab.title), on))
    for spec in beyond:
        n += 1
        step(n, _(spec.summary), (spec, _(spec.title), on))

# Cards and figures in rows that wrap: as many side by side as the window holds (a projector at
# 150% zoom shows two cards a row), none squeezed until its text is cut off.
for section, specs in catalog.pages_by_section().items():
    st.subheader(_(section))
    cards = st.container(horizontal=True, gap="medium")
    for spec in specs:
        with cards.container(border=True, width=280):
            st.page_link(spec.path, label=_(spec.title), icon=spec.icon, query_params=_ui.linked())
            st.caption(_(spec.summary))

st.subheader(_("This server's JAX"))
info = environment.describe_environment()
figures = st.container(horizontal=True, gap="large")
figures.metric("jax", info.jax_version, width="content")
figures.metric("jaxlib", info.jaxlib_version, width="content")
figures.metric(_("Backend"), info.backend, width="content")
figures.metric("x64", _("on") if info.x64_enabled else _("off"), width="content")
figures.metric(_("Simulated CPU devices"), info.simulated_cpu_devices, width="content")
st.dataframe(
    pd.DataFrame(
        [
            {"id": d.id, "platform": d.platform, "kind": d.kind, "process": d.process_index}
            for d in info.devices
        ]
    ),
    hide_index=True,
    key="home_devices",
)
st.caption(
    _(
        "Simulated CPU devices come from `JAXPLAY_CPU_DEVICES` (default 8): they share this "
        "machine's cores, so they show how sharding works, not what separate devices would "
        "gain."
    )
)

"""Home: what jaxplay is, a card per topic, and the JAX this server runs."""

import pandas as pd
import streamlit as st

import pages._ui  # noqa: F401  (every page imports it first: see its docstring)
from jaxplay.hosting import catalog, environment

st.title(":material/bolt: jaxplay")
st.markdown(
    "An interactive playground for JAX's composable transforms — `jit`, `grad`, `vmap` and "
    "their compositions, PRNG keys, tracing, devices and sharding. Pick a topic, change the "
    "code or the parameters, and see what JAX really does: values, jaxprs and compiled HLO, "
    "and timings measured honestly (warmed up, blocked on the result, median and spread)."
)

for section, specs in catalog.pages_by_section().items():
    st.subheader(section)
    columns = st.columns(min(4, len(specs)))
    for i, spec in enumerate(specs):
        with columns[i % len(columns)].container(border=True):
            st.page_link(spec.path, label=spec.title, icon=spec.icon)
            st.caption(spec.summary)

st.subheader("This server's JAX")
info = environment.describe_environment()
cols = st.columns(5)
cols[0].metric("jax", info.jax_version)
cols[1].metric("jaxlib", info.jaxlib_version)
cols[2].metric("Backend", info.backend)
cols[3].metric("x64", "on" if info.x64_enabled else "off")
cols[4].metric("Simulated CPU devices", info.simulated_cpu_devices)
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
    "Simulated CPU devices come from `JAXPLAY_CPU_DEVICES` (default 8): they share this "
    "machine's cores, so they show how sharding works, not a speedup."
)

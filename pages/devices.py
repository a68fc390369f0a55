"""Devices & sharding: device lists, placement, sharding, collectives, scaling, many processes."""

import pandas as pd
import streamlit as st

from jaxplay import devices
from jaxplay.core import markdown, roofline, words
from jaxplay.core.capture import Outcome
from jaxplay.core.timing import format_seconds
from pages import _ui

st.title(":material/grid_view: Devices & sharding")
st.write(
    "JAX runs on *devices* (CPU, GPU or TPU chips). Arrays live on one device or are split "
    "(*sharded*) across many, and devices cooperate through *collectives*. Here you see each step "
    "on this server's devices, from the article's `pmap` code to a real multi-process run."
)

DEVICES = devices.inventory()
KEYS = [d.key for d in DEVICES]
PLATFORMS = devices.platforms()
COUNTS = {p: len(devices.devices_of(p)) for p in PLATFORMS}
platform = PLATFORMS[0]
if len(PLATFORMS) > 1:  # e.g. one GPU and eight simulated CPUs: let the visitor pick
    platform = st.selectbox(
        "Devices for sharding, collectives and scaling",
        PLATFORMS,
        index=PLATFORMS.index(max(PLATFORMS, key=COUNTS.__getitem__)),
        format_func=lambda p: f"{p}: {words.count(COUNTS[p], 'device')}",
        key="devices_platform",
        bind="query-params",
    )
N = COUNTS[platform]
WHERE = f"{N} × {roofline.platform_label(platform, devices.devices_of(platform)[0].device_kind)}"
SIMULATED = platform == "cpu"
if N == 1:
    hint = (
        "Pick `cpu` above for the simulated CPU devices."
        if COUNTS.get("cpu", 1) > 1
        else "Start the app with `JAXPLAY_CPU_DEVICES=8` to simulate eight."
    )
    st.info(
        f"This process has **one {platform} device**: sharding and collectives still run, on a "
        f"1-device mesh. {hint}",
        icon=":material/info:",
    )


def wrapped(text: str, language: str | None = "python") -> None:
    """A code block whose long lines wrap: cut off at the right edge, they hid the code."""
    st.code(_ui.scrub(text), language=language, wrap_lines=True)


def show_attempt(title: str, a: Outcome) -> None:
    """Code that ran, then its value or the real exception it raised."""
    st.markdown(f"**{title}**")
    wrapped(a.code)
    for w in a.warnings:
        st.warning(markdown.escape(w))
    if a.ok:
        st.success(f"Returned: {markdown.code(a.value)}", icon=":material/check:")
    else:
        st.error(f"**{a.error_type}:**", icon=":material/error:")
        wrapped(a.detail, None)


@st.cache_data(max_entries=1, show_spinner="Running the article's placement code…")
def placement_runs() -> tuple[Outcome, Outcome]:
    return devices.article_placement()


@st.cache_data(max_entries=8, show_spinner="Running the article's pmap code…")
def pmap_runs(n: int) -> dict[str, Outcome]:
    return devices.article_examples(n)


@_ui.cached(max_entries=64, show_spinner="Placing the array…")
def layout(mesh: tuple, names: tuple, shape: tuple, spec: tuple, on: str) -> devices.ShardLayout:
    return devices.shard_layout(mesh, names, shape, spec, platform=on)


@_ui.cached(max_entries=16, show_spinner="Running the collective under shard_map…")
def collective(name: str, n: int, on: str) -> devices.CollectiveRun:
    return devices.run_collective(name, n, platform=on)


@_ui.cached(max_entries=16, show_spinner="Compiling on the sharded array…")
def compiled(index: int, n: int, on: str) -> devices.CompiledCollectives:
    return devices.compiled_collectives(devices.XLA_EXAMPLES[index], n, platform=on)


@st.cache_data(max_entries=2, show_spinner="Running each step on this server's devices…")
def explicit_steps(on: str) -> tuple[devices.StepRun, ...]:
    return devices.run_explicit_steps(on)


def inventory_tab() -> None:
    st.dataframe(
        pd.DataFrame(devices.inventory_rows(DEVICES)), hide_index=True, key="devices_inventory"
    )
    silent = devices.silent_platforms(DEVICES)
    if devices.reports_memory(DEVICES):
        st.button("Refresh memory counters", key="devices_refresh", icon=":material/refresh:")
    if silent:
        st.caption(
            f"{', '.join(silent)}: no memory counters reported (`memory_stats()` is None), "
            "so none are shown. A GPU reports bytes in use, its limit and the peak. "
            "Simulated CPU devices share this machine's cores and memory."
        )
    placement = placement_runs()
    show_attempt("The article's placement code, as written", placement[0])
    show_attempt("Guarded: a missing backend raises, so ask inside try", placement[1])


def placement_tab() -> None:
    dev = st.selectbox(
        "Put a float32 vector on device", KEYS, key="devices_place_device", bind="query-params"
    )
    size = st.select_slider(
        "Elements",
        [10**k for k in range(1, 8) if 10**k <= devices.MAX_PLACE_ELEMENTS],
        value=1000,
        key="devices_place_size",
        bind="query-params",
        help=f"Up to {devices.MAX_PLACE_ELEMENTS:,} float32 "
        f"({devices.MAX_PLACE_ELEMENTS * 4 / 2**20:.0f} MiB).",
    )
    p = devices.place(dev, size)
    st.markdown(
        f"`jax.device_put(np.ones({size}, np.float32), device)` with device `{dev}` "
        f"lives on **{', '.join(p.devices)}** ({p.nbytes:,} bytes, committed: {p.committed}); "
        f"its sharding is `{p.sharding}`."
    )
    st.subheader("Transfer bandwidth")
    c1, c2, c3 = st.columns(3)
    src = c1.selectbox("Source device", KEYS, key="devices_src", bind="query-params")
    dst = c2.selectbox(
        "Destination device",
        KEYS,
        index=min(1, len(KEYS) - 1),
        key="devices_dst",
        bind="query-params",
    )
    top_mib = devices.MAX_TRANSFER_BYTES // 2**20
    top = c3.select_slider(
        "Largest transfer (MiB)",
        [m for m in (1, 4, 16, 64, 256) if m <= top_mib],
        value=16,
        key="devices_top_mib",
        bind="query-params",
        help=f"Up to {top_mib} MiB, so the copies a measurement makes stay small.",
    )
    if src == dst:
        st.caption("Source and destination are the same device: device → device is left out.")
    sizes = tuple(4**k * 1024 for k in range(20) if 4**k * 1024 <= top * 2**20)
    if st.button("Measure transfers", key="devices_measure_transfers", icon=":material/speed:"):
        timing_sizes = f"Timing transfers of {words.count(len(sizes), 'size')}…"
        with _ui.progress(timing_sizes, "Transfers timed") as step:
            points = devices.transfer_sweep(
                src, dst, sizes, on_step=lambda i, n: step(i, n, f"{i} of {n} sizes")
            )
        st.session_state["devices_transfers"] = (src, dst, points)
    if "devices_transfers" in st.session_state:
        s, d, points = st.session_state["devices_transfers"]
        _ui.chart(
            devices.transfer_figure(points, f"{s} → {d}"),
            key="devices_transfer_chart",
        )
        if s.startswith("cpu") and d.startswith("cpu"):
            st.caption(
                "Simulated CPU devices share one memory: these are memory-copy speeds, "
                "not a bus. On a GPU, host ↔ device crosses PCIe or NVLink."
            )
    _ui.show_code(devices.place, devices.transfer_calls)


def sharding_tab() -> None:
    default_mesh = "2, 4" if N >= 8 else (f"2, {N // 2}" if N % 2 == 0 else str(N))
    c1, c2, c3, c4 = st.columns(4)
    mesh_text = _ui.text_box(
        c1, "Mesh shape", default_mesh, key="devices_mesh", bind="query-params"
    )
    names_text = _ui.text_box(
        c2,
        "Mesh axis names",
        "x, y" if "," in default_mesh else "x",
        key="devices_axes",
        bind="query-params",
    )
    shape_text = _ui.text_box(c3, "Array shape", "8, 8", key="devices_shape", bind="query-params")
    spec_src = _ui.text_box(
        c4,
        "PartitionSpec",
        "P('x', None)",
        key="devices_spec",
        bind="query-params",
        help="e.g. P('x', 'y'), P(('x', 'y'), None), P() (replicated)",
    )
    try:
        spec = devices.parse_spec(spec_src)
        result = layout(
            devices.parse_ints(mesh_text, "mesh shape"),
            devices.parse_names(names_text),
            devices.parse_ints(shape_text, "array shape"),
            spec,
            platform,
        )
    except devices.ShardingProblem as err:
        _ui.input_error(err, "This sharding cannot work.", spec_src)
        if err.jax_error:
            st.caption("JAX's own message:")
            wrapped(err.jax_error, None)
    else:
        _ui.chart(devices.layout_figure(result), key="devices_layout_chart")
        st.caption(
            f"{words.count(len(result.blocks), 'distinct block')}, each held by "
            f"{words.count(result.copies, 'device')}."
        )
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "device": s.device_id,
                        "mesh position": str(s.mesh_coords),
                        "index": " × ".join(f"{a}:{b}" for a, b in s.index),
                        "shard shape": str(s.shape),
                        "replica": s.replica_id,
                    }
                    for s in result.shards
                ]
            ),
            hide_index=True,
            key="devices_shards",
        )
    _ui.show_code(devices.shard_layout)


def explicit_tab(runs: tuple[devices.StepRun, ...]) -> None:
    """Each step of explicit sharding: the code that ran, what JAX said, and the types read."""
    shape = runs[0].mesh_shape
    st.write(
        f"Every step below ran on a {shape[0]} × {shape[1]} mesh of this server's {platform} "
        "devices with axes `i` and `j`, on a 32 × 16 float32 array. Each step names the "
        "exception its code raises as written, and JAX raised exactly that here. Not every one "
        "is a difference between Auto and Explicit axes: a step's note says when the same code "
        "raises on an Auto mesh too."
    )
    for run in runs:
        step, outcome = run.step, run.outcome
        st.markdown(f"**{step.title}**")
        wrapped(outcome.code)
        if outcome.ok:
            st.success(f"Returned: {markdown.code(outcome.value)}", icon=":material/check:")
            for said in devices.describe_step(run):
                st.markdown(said)
        elif run.as_named:
            st.error(f"Raises `{outcome.error_type}`, as written:", icon=":material/error:")
            wrapped(outcome.message, None)
        else:
            st.warning(
                f"Expected `{step.raises or 'no error'}`, but this JAX gave "
                f"{markdown.code(outcome.headline)}.",
                icon=":material/warning:",
            )
        st.caption(step.lesson)
    script = devices.explicit_script(shape)
    _ui.show_code(script, label="All the steps as one script")
    _ui.code_lab_button(script, key="devices_explicit_open", label="Open in the Code Lab")


def explicit_view() -> None:
    explicit_tab(explicit_steps(platform))


def collectives_tab() -> None:
    """The article's pmap code as written, a collective under shard_map, then the collectives
    XLA inserts into a jitted function of a sharded array."""
    n = (
        st.slider("Devices in the mesh", 1, N, N, key="devices_coll_n", bind="query-params")
        if N > 1
        else 1
    )
    # pmap maps over the default backend's devices, whichever platform is picked above.
    article = pmap_runs(min(n, COUNTS[PLATFORMS[0]]))
    for title, a in article.items():
        show_attempt(title, a)
    st.caption(
        "The all-reduce needs `axis_name='batch'` on `pmap`: without it the name is unbound. "
        "`pmap` is in maintenance mode (now built on `shard_map`); `jax.shard_map` is the way."
    )
    name = (
        st.segmented_control(
            "Collective under `jax.shard_map`",
            list(devices.COLLECTIVES),
            default="psum",
            key="devices_collective",
            bind="query-params",
        )
        or "psum"
    )
    run = collective(name, n, platform)
    st.write(devices.COLLECTIVES[name].what + ".")
    st.dataframe(pd.DataFrame(run.rows()), hide_index=True, key="devices_collective_table")
    (st.success if run.matches else st.error)(
        f"Every device's output {'equals' if run.matches else 'differs from'} numpy's."
    )
    wrapped(run.code)
    inserted_collectives(n)


def inserted_collectives(n: int) -> None:
    """A jitted function of a row-sharded array, compiled: which collectives XLA put in."""
    st.subheader("Collectives XLA inserts itself")
    pick = st.selectbox(
        "A jitted function of an array sharded by rows",
        range(len(devices.XLA_EXAMPLES)),
        format_func=lambda i: devices.XLA_EXAMPLES[i].name,
        key="devices_xla",
        bind="query-params",
    )
    c = compiled(pick, n, platform)
    wrapped(c.code)
    why = c.why if c.ops else "with one device there is nothing to communicate"
    st.markdown(
        f"Compiled on {words.count(n, 'device')}: **{', '.join(c.ops) or 'no collectives'}**: "
        f"{why}. The output equals numpy's: {c.matches}. Its type, "
        + (devices.read_type(c.output_sharding, (n,), (devices.AXIS,)) or f"`{c.output_sharding}`")
        + " (the mesh's axes are Explicit, so the sharding is part of the type: see "
        "*Explicit sharding*)."
    )
    if c.hlo_lines:
        wrapped("\n".join(c.hlo_lines), None)


def scaling_tab() -> None:
    counts = devices.device_counts(N)
    st.write(
        "A 2-layer MLP's loss and gradient (`jax.value_and_grad`, batch 1024), the batch "
        f"split over {', '.join(map(str, counts))} devices, parameters replicated."
    )
    if st.button("Time the data-parallel step", key="devices_scale", icon=":material/speed:"):
        with _ui.progress(f"Timing the step on {len(counts)} device counts…", "Timed") as step:
            st.session_state["devices_scaling"] = (
                WHERE,
                devices.scaling_sweep(
                    counts,
                    on_step=lambda i, k: step(i, k, f"{i} of {k} counts"),
                    platform=platform,
                ),
            )
    if SIMULATED:
        st.warning(
            "Simulated CPU devices share this machine's cores: more devices add no compute "
            "here, so no speedup is to be expected. On a multi-GPU machine the chart shows "
            "the real thing."
        )
    if "devices_scaling" in st.session_state:
        where, points = st.session_state["devices_scaling"]
        _ui.chart(devices.scaling_figure(points, where), key="devices_scaling_chart")
        one, most = points[0], points[-1]
        ratio = most.timing.median / one.timing.median
        st.caption(
            f"Measured: {words.count(one.devices, 'device')} "
            f"{format_seconds(one.timing.median)} per step, "
            f"{words.count(most.devices, 'device')} "
            f"{format_seconds(most.timing.median)}: "
            + (
                f"{ratio:.2f}× slower (the overhead of splitting)"
                if ratio > 1
                else f"{1 / ratio:.2f}× faster"
            )
            + "."
        )
    _ui.show_code(devices.mlp_loss, devices.data_parallel_step)


def multiprocess_tab() -> None:
    """The story: choose a cluster, launch it for real, show what each process saw."""
    st.write(
        "A cluster is several processes, each owning its devices, that meet through "
        "`jax.distributed.initialize`. This launches them for real on localhost (CPU "
        "collectives over gloo)."
    )
    c1, c2, c3 = st.columns(3)
    procs = c1.slider("Processes", 2, 4, 2, key="devices_procs", bind="query-params")
    local = c2.slider("Devices per process", 1, 4, 2, key="devices_local", bind="query-params")
    missing = c3.checkbox(
        "Leave one process out",
        key="devices_missing",
        help="The others wait for it in initialize; the app kills them after 10 s.",
    )
    if st.button(
        f"Launch {procs} processes",
        key="devices_launch",
        icon=":material/rocket_launch:",
        help="Counts as one Code Lab run: one at a time per visitor, and on a public "
        "server the same per-minute limit and queue.",
    ):
        launch_cluster(procs, local, missing)
    res = st.session_state.get("devices_cluster")
    if res is not None:
        show_cluster(res)
    st.code(
        _ui.scrub(" ".join(devices.worker_command("127.0.0.1:PORT", procs, 0, local))),
        language="bash",
        wrap_lines=True,
    )
    _ui.show_code(devices.run_process, devices.launch_cluster, devices.run_local_cluster)


def launch_cluster(procs: int, local: int, missing: bool) -> None:
    """Run the cluster (it counts as a Code Lab run: rate limit, one at a time per visitor, a
    runner slot, the queue cap) and keep its outcome in the session."""
    st.session_state.pop("devices_cluster", None)
    refused = None
    with st.status(f"Running {procs} JAX processes…") as status:
        try:
            res = devices.launch_cluster(
                procs,
                local,
                timeout_s=10 if missing else 90,
                launch=procs - 1 if missing else None,
                visitor=_ui.visitor_id(),
                on_queue=lambda n: status.update(
                    label=f"Waiting for a free runner: you are number {n}…"
                ),
            )
        except devices.Refused as err:
            refused = err
            status.update(label="Not started", state="error")
        else:
            status.update(
                label=f"{res.status} after {format_seconds(res.elapsed_s)}",
                state="complete" if res.status == "ok" else "error",
            )
            st.session_state["devices_cluster"] = res
    if refused is not None:
        st.error(markdown.escape(refused), icon=":material/block:")


def show_cluster(res: devices.ClusterRun) -> None:
    """Which processes ran and how they ended, the devices they saw, and the psum each got."""
    indices = ", ".join(str(i) for i in range(res.launched))
    codes = ", ".join(f"{i}: {c}" for i, c in enumerate(res.returncodes))
    st.caption(
        f"{words.count(res.launched, 'process', 'processes')} started (process index "
        f"{indices}); all reaped, exit status by process {codes}."
    )
    if res.reports:
        st.dataframe(pd.DataFrame(res.device_rows()), hide_index=True, key="devices_global")
        st.dataframe(pd.DataFrame(res.psum_rows()), hide_index=True, key="devices_psums")
        n_all = res.num_processes * res.local_devices
        total = f"{res.expected_psum:g} (numpy: 1 + 2 + … + {n_all})"
        if res.psum_correct:
            st.success(f"Every process got psum = {total}.")
        else:
            got = ", ".join(f"process {r.process_id}: {r.psum:g}" for r in res.reports)
            st.error(f"Not every process got {total}: {got}.")
    if res.status == "timeout":
        st.warning(
            f"No result within the timeout: {res.launched} of {res.num_processes} "
            "processes started, and `jax.distributed.initialize` waits for all of them. "
            "The app killed each process group and reaped every process.",
            icon=":material/timer_off:",
        )
    elif res.status == "failed":
        st.error("A process failed; the others were stopped.", icon=":material/error:")
    if res.errors:
        with st.expander("What the stopped processes printed (stderr)"):
            wrapped("\n\n".join(res.errors), None)


_ui.lazy_tabs(
    {
        "Devices": inventory_tab,
        "Placement": placement_tab,
        "Sharding": sharding_tab,
        "Explicit sharding": explicit_view,
        "Collectives": collectives_tab,
        "Scaling": scaling_tab,
        "Multi-process": multiprocess_tab,
    },
    key="devices_tab",
    keep={
        "Placement": (
            "devices_place_device",
            "devices_place_size",
            "devices_src",
            "devices_dst",
            "devices_top_mib",
        ),
        "Sharding": ("devices_mesh", "devices_axes", "devices_shape", "devices_spec"),
        "Collectives": ("devices_coll_n", "devices_collective", "devices_xla"),
        "Multi-process": ("devices_procs", "devices_local", "devices_missing"),
    },
)

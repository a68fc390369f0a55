"""Devices & sharding: device lists, placement, sharding, collectives, scaling, many processes."""

from pages import _ui

import pandas as pd
import streamlit as st

from jaxplay import devices, sandbox
from jaxplay.core import figures, markdown, roofline
from jaxplay.core.capture import Outcome
from jaxplay.core.i18n import N_, _, ngettext
from jaxplay.core.timing import format_seconds

st.title(":material/grid_view: " + _("Devices & sharding"))
st.write(
    _(
        "JAX runs on *devices* (CPU, GPU or TPU chips). Arrays live on one device or are split "
        "(*sharded*) across many, and devices cooperate through *collectives*. Here you see each "
        "step on this server's devices, from the article's `pmap` code to a real multi-process "
        "run."
    )
)

DEVICES = devices.inventory()
KEYS = [d.key for d in DEVICES]
PLATFORMS = devices.platforms()
COUNTS = {p: len(devices.devices_of(p)) for p in PLATFORMS}
platform = PLATFORMS[0]
if len(PLATFORMS) > 1:  # e.g. one GPU and eight simulated CPUs: let the visitor pick
    platform = st.selectbox(
        _("Devices for sharding, collectives and scaling"),
        PLATFORMS,
        index=PLATFORMS.index(max(PLATFORMS, key=COUNTS.__getitem__)),
        format_func=lambda p: f"{p}: {devices.devices_count(COUNTS[p])}",
        key="devices_platform",
        bind="query-params",
    )
N = COUNTS[platform]
WHERE = f"{N} × {roofline.platform_label(platform, devices.devices_of(platform)[0].device_kind)}"
SIMULATED = platform == "cpu"
if N == 1:
    hint = (
        _("Pick `cpu` above for the simulated CPU devices.")
        if COUNTS.get("cpu", 1) > 1
        else _("Start the app with `JAXPLAY_CPU_DEVICES=8` to simulate eight.")
    )
    st.info(
        _(
            "This process has **one {platform} device**: sharding and collectives still run, on "
            "a 1-device mesh. {hint}"
        ).format(platform=platform, hint=hint),
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
        st.success(returned(a.value), icon=":material/check:")
    else:
        st.error(f"**{a.error_type}:**", icon=":material/error:")
        wrapped(a.detail, None)


def returned(value: str) -> str:
    """``Returned: `value```, in the visitor's language (the value stays as JAX gave it)."""
    return _("Returned: {value}").format(value=markdown.code(value))


@st.cache_data(max_entries=1, show_spinner=_("Running the article's placement code…"))
def placement_runs() -> tuple[Outcome, Outcome]:
    return devices.article_placement()


@st.cache_data(max_entries=8, show_spinner=_("Running the article's pmap code…"))
def pmap_runs(n: int) -> dict[str, Outcome]:
    return devices.article_examples(n)


@_ui.cached(max_entries=64, show_spinner=_("Placing the array…"))
def layout(mesh: tuple, names: tuple, shape: tuple, spec: tuple, on: str) -> devices.ShardLayout:
    return devices.shard_layout(mesh, names, shape, spec, platform=on)


@_ui.cached(max_entries=16, show_spinner=_("Running the collective under shard_map…"))
def collective(name: str, n: int, on: str) -> devices.CollectiveRun:
    return devices.run_collective(name, n, platform=on)


@_ui.cached(max_entries=16, show_spinner=_("Compiling on the sharded array…"))
def compiled(index: int, n: int, on: str) -> devices.CompiledCollectives:
    return devices.compiled_collectives(devices.XLA_EXAMPLES[index], n, platform=on)


@st.cache_data(max_entries=2, show_spinner=_("Running each step on this server's devices…"))
def explicit_steps(on: str) -> tuple[devices.StepRun, ...]:
    return devices.run_explicit_steps(on)


def inventory_tab() -> None:
    st.dataframe(
        pd.DataFrame(devices.inventory_rows(DEVICES)), hide_index=True, key="devices_inventory"
    )
    silent = devices.silent_platforms(DEVICES)
    if devices.reports_memory(DEVICES):
        st.button(_("Refresh memory counters"), key="devices_refresh", icon=":material/refresh:")
    if silent:
        st.caption(
            _(
                "{platforms}: no memory counters reported (`memory_stats()` is None), so none are "
                "shown. A GPU reports bytes in use, its limit and the peak. Simulated CPU devices "
                "share this machine's cores and memory."
            ).format(platforms=", ".join(silent))
        )
    placement = placement_runs()
    show_attempt(_("The article's placement code, as written"), placement[0])
    show_attempt(_("Guarded: a missing backend raises, so ask inside try"), placement[1])


def placement_tab() -> None:
    dev = st.selectbox(
        _("Put a float32 vector on device"), KEYS, key="devices_place_device", bind="query-params"
    )
    size = st.select_slider(
        _("Elements"),
        [10**k for k in range(1, 8) if 10**k <= devices.MAX_PLACE_ELEMENTS],
        value=1000,
        key="devices_place_size",
        bind="query-params",
        help=_("Up to {n} float32 ({mib} MiB).").format(
            n=f"{devices.MAX_PLACE_ELEMENTS:,}",
            mib=f"{devices.MAX_PLACE_ELEMENTS * 4 / 2**20:.0f}",
        ),
    )
    p = devices.place(dev, size)
    st.markdown(
        _(
            "`jax.device_put(np.ones({size}, np.float32), device)` with device `{device}` lives "
            "on **{devices}** ({nbytes} bytes, {committed}); its sharding is `{sharding}`."
        ).format(
            size=size,
            device=dev,
            devices=", ".join(p.devices),
            nbytes=f"{p.nbytes:,}",
            committed=_("committed") if p.committed else _("not committed"),
            sharding=p.sharding,
        )
    )
    transfer_section()
    _ui.show_code(devices.place, devices.transfer_calls, label=_("Show the code that ran"))


def transfer_section() -> None:
    """Time host → device, device → device and device → host copies between two devices."""
    st.subheader(_("Transfer bandwidth"))
    c1, c2, c3 = st.columns(3)
    src = c1.selectbox(_("Source device"), KEYS, key="devices_src", bind="query-params")
    dst = c2.selectbox(
        _("Destination device"),
        KEYS,
        index=min(1, len(KEYS) - 1),
        key="devices_dst",
        bind="query-params",
    )
    top_mib = devices.MAX_TRANSFER_BYTES // 2**20
    top = c3.select_slider(
        _("Largest transfer (MiB)"),
        [m for m in (1, 4, 16, 64, 256) if m <= top_mib],
        value=16,
        key="devices_top_mib",
        bind="query-params",
        help=_("Up to {mib} MiB, so the copies a measurement makes stay small.").format(
            mib=top_mib
        ),
    )
    if src == dst:
        st.caption(_("Source and destination are the same device: device → device is left out."))
    sizes = tuple(4**k * 1024 for k in range(20) if 4**k * 1024 <= top * 2**20)
    if st.button(_("Measure transfers"), key="devices_measure_transfers", icon=":material/speed:"):
        timing_sizes = ngettext(
            "Timing transfers of {n} size…", "Timing transfers of {n} sizes…", len(sizes)
        ).format(n=f"{len(sizes):,}")
        points = _ui.measure_points(
            timing_sizes,
            _("Transfers timed"),
            sizes,
            lambda nbytes, turn: sandbox.timed(devices.transfer_point, src, dst, nbytes, turn=turn),
            figures.format_bytes,
        )
        st.session_state["devices_transfers"] = (src, dst, tuple(p for ps in points for p in ps))
    if "devices_transfers" in st.session_state:
        s, d, points = st.session_state["devices_transfers"]
        _ui.chart(
            devices.transfer_figure,
            points,
            f"{s} → {d}",
            key="devices_transfer_chart",
        )
        if s.startswith("cpu") and d.startswith("cpu"):
            st.caption(
                _(
                    "Simulated CPU devices share one memory: these are memory-copy speeds, not a "
                    "bus. On a GPU, host ↔ device crosses PCIe or NVLink."
                )
            )


def sharding_tab() -> None:
    default_mesh = "2, 4" if N >= 8 else (f"2, {N // 2}" if N % 2 == 0 else str(N))
    c1, c2, c3, c4 = st.columns(4)
    mesh_text = _ui.text_box(
        c1, _("Mesh shape"), default_mesh, key="devices_mesh", bind="query-params"
    )
    names_text = _ui.text_box(
        c2,
        _("Mesh axis names"),
        "x, y" if "," in default_mesh else "x",
        key="devices_axes",
        bind="query-params",
    )
    # Rows the default mesh's first axis splits (3 devices: a mesh of 3, which 8 rows defy).
    rows = 8 if 8 % int(default_mesh.split(",")[0]) == 0 else 2 * N
    shape_text = _ui.text_box(
        c3, _("Array shape"), f"{rows}, 8", key="devices_shape", bind="query-params"
    )
    spec_src = _ui.text_box(
        c4,
        "PartitionSpec",
        "P('x', None)",
        key="devices_spec",
        bind="query-params",
        help=_("e.g. P('x', 'y'), P(('x', 'y'), None), P() (replicated)"),
    )
    try:
        spec = devices.parse_spec(spec_src)
        result = layout(
            devices.parse_ints(mesh_text, _("mesh shape")),
            devices.parse_names(names_text),
            devices.parse_ints(shape_text, _("array shape")),
            spec,
            platform,
        )
    except devices.ShardingProblem as err:
        _ui.input_error(err, _("This sharding cannot work."), spec_src)
        if err.jax_error:
            st.caption(_("JAX's own message:"))
            wrapped(err.jax_error, None)
    else:
        _ui.chart(devices.layout_figure, result, key="devices_layout_chart")
        blocks = len(result.blocks)
        st.caption(
            ngettext(
                "{n} distinct block, each held by {devices}.",
                "{n} distinct blocks, each held by {devices}.",
                blocks,
            ).format(n=f"{blocks:,}", devices=devices.devices_count(result.copies))
        )
        shards_table(result)
    _ui.show_code(devices.shard_layout, label=_("Show the code that ran"))


def shards_table(result: devices.ShardLayout) -> None:
    """One row per device: where it sits in the mesh and which part of the array it holds."""
    device, position, index = _("device"), _("mesh position"), _("index")
    shape, replica = _("shard shape"), _("replica")
    st.dataframe(
        pd.DataFrame(
            [
                {
                    device: s.device_id,
                    position: str(s.mesh_coords),
                    index: " × ".join(f"{a}:{b}" for a, b in s.index),
                    shape: str(s.shape),
                    replica: s.replica_id,
                }
                for s in result.shards
            ]
        ),
        hide_index=True,
        key="devices_shards",
    )


def explicit_tab(runs: tuple[devices.StepRun, ...]) -> None:
    """Each step of explicit sharding: the code that ran, what JAX said, and the types read."""
    shape = runs[0].mesh_shape
    st.write(
        _(
            "Every step below ran on a {rows} × {cols} mesh of this server's {platform} devices "
            "with axes `i` and `j`, on a 32 × 16 float32 array. Each step names the exception its "
            "code raises as written, and JAX raised exactly that here. Not every one is a "
            "difference between Auto and Explicit axes: a step's note says when the same code "
            "raises on an Auto mesh too."
        ).format(rows=shape[0], cols=shape[1], platform=platform)
    )
    for run in runs:
        step, outcome = run.step, run.outcome
        st.markdown(f"**{_(step.title)}**")
        wrapped(outcome.code)
        if outcome.ok:
            st.success(returned(outcome.value), icon=":material/check:")
            for said in devices.describe_step(run):
                st.markdown(said)
        elif run.as_named:
            st.error(
                _("Raises `{error}`, as written:").format(error=outcome.error_type),
                icon=":material/error:",
            )
            wrapped(outcome.message, None)
        else:
            expected = f"`{step.raises}`" if step.raises else _("`no error`")
            st.warning(
                _("Expected {expected}, but this JAX gave {got}.").format(
                    expected=expected, got=markdown.code(outcome.headline)
                ),
                icon=":material/warning:",
            )
        st.caption(_(step.lesson))
    script = devices.explicit_script(shape)
    _ui.show_code(script, label=_("All the steps as one script"))
    _ui.code_lab_button(script, key="devices_explicit_open", label=_("Open in the Code Lab"))


def explicit_view() -> None:
    explicit_tab(explicit_steps(platform))


def collectives_tab() -> None:
    """The article's pmap code as written, a collective under shard_map, then the collectives
    XLA inserts into a jitted function of a sharded array."""
    n = (
        st.slider(_("Devices in the mesh"), 1, N, N, key="devices_coll_n", bind="query-params")
        if N > 1
        else 1
    )
    # pmap maps over the default backend's devices, whichever platform is picked above.
    article = pmap_runs(min(n, COUNTS[PLATFORMS[0]]))
    for title, a in article.items():
        show_attempt(_(title), a)
    st.caption(
        _(
            "The all-reduce needs `axis_name='batch'` on `pmap`: without it the name is unbound. "
            "`pmap` is in maintenance mode (now built on `shard_map`); `jax.shard_map` is the way."
        )
    )
    name = (
        st.segmented_control(
            _("Collective under `jax.shard_map`"),
            list(devices.COLLECTIVES),
            default="psum",
            key="devices_collective",
            bind="query-params",
        )
        or "psum"
    )
    run = collective(name, n, platform)
    st.write(_(devices.COLLECTIVES[name].what) + _("."))
    st.dataframe(pd.DataFrame(run.rows()), hide_index=True, key="devices_collective_table")
    if run.matches:
        st.success(_("Every device's output equals numpy's."))
    else:
        st.error(_("Not every device's output equals numpy's: see the table."))
    wrapped(run.code)
    inserted_collectives(n)


def inserted_collectives(n: int) -> None:
    """A jitted function of a row-sharded array, compiled: which collectives XLA put in."""
    st.subheader(_("Collectives XLA inserts itself"))
    pick = st.selectbox(
        _("A jitted function of an array sharded by rows"),
        range(len(devices.XLA_EXAMPLES)),
        format_func=lambda i: _(devices.XLA_EXAMPLES[i].name),
        key="devices_xla",
        bind="query-params",
    )
    c = compiled(pick, n, platform)
    wrapped(c.code)
    why = _(c.why) if c.ops else _("with one device there is nothing to communicate")
    typed = devices.read_type(c.output_sharding, (n,), (devices.AXIS,))
    st.markdown(
        _(
            "Compiled on {devices}: **{ops}**: {why}. {agreement} Its type, {type} (the mesh's "
            "axes are Explicit, so the sharding is part of the type: see *{tab}*)."
        ).format(
            devices=devices.devices_count(n),
            ops=", ".join(c.ops) or _("no collectives"),
            why=why,
            agreement=(
                _("The output equals numpy's.")
                if c.matches
                else _("**The output differs from numpy's.**")
            ),
            type=typed or f"`{c.output_sharding}`",
            tab=_("Explicit sharding"),
        )
    )
    if c.hlo_lines:
        wrapped("\n".join(c.hlo_lines), None)


def scaling_tab() -> None:
    counts = devices.device_counts(N)
    if len(counts) < 2:
        st.info(
            _(
                "Scaling compares the step on one device with the same step split over "
                "several: with {devices} there is nothing to compare."
            ).format(devices=devices.devices_count(N)),
            icon=":material/info:",
        )
        return
    st.write(
        _(
            "A 2-layer MLP's loss and gradient (`jax.value_and_grad`, batch {batch}), the batch "
            "split over {counts} devices, parameters replicated."
        ).format(batch=f"{devices.SCALING_BATCH:,}", counts=_(", ").join(map(str, counts)))
    )
    if st.button(_("Time the data-parallel step"), key="devices_scale", icon=":material/speed:"):
        timing_counts = ngettext(
            "Timing the step on {n} device count…",
            "Timing the step on {n} device counts…",
            len(counts),
        ).format(n=len(counts))
        points = _ui.measure_points(
            timing_counts,
            _("Timed"),
            counts,
            lambda n, turn: sandbox.timed(devices.scaling_point, n, platform=platform, turn=turn),
            devices.devices_count,
        )
        st.session_state["devices_scaling"] = (WHERE, tuple(points))
    if SIMULATED:
        st.warning(
            _(
                "Simulated CPU devices share this machine's cores: more devices add no cores, "
                "so the chart measures these cores shared out among the devices, not what "
                "separate devices would gain. On a multi-GPU machine it shows the real thing."
            )
        )
    if "devices_scaling" in st.session_state:
        where, points = st.session_state["devices_scaling"]
        _ui.chart(devices.scaling_figure, points, where, key="devices_scaling_chart")
        st.caption(devices.scaling_sentence(points))
    _ui.show_code(devices.mlp_loss, devices.data_parallel_step, label=_("Show the code that ran"))


def multiprocess_tab() -> None:
    """The story: choose a cluster, launch it for real, show what each process saw."""
    st.write(
        _(
            "A cluster is several processes, each owning its devices, that meet through "
            "`jax.distributed.initialize`. This launches them for real on localhost (CPU "
            "collectives over gloo)."
        )
    )
    c1, c2, c3 = st.columns(3)
    procs = c1.slider(_("Processes"), 2, 4, 2, key="devices_procs", bind="query-params")
    local = c2.slider(_("Devices per process"), 1, 4, 2, key="devices_local", bind="query-params")
    missing = c3.checkbox(
        _("Leave one process out"),
        key="devices_missing",
        help=_("The others wait for it in initialize; the app kills them after 10 s."),
    )
    if st.button(
        ngettext("Launch {n} process", "Launch {n} processes", procs).format(n=procs),
        key="devices_launch",
        icon=":material/rocket_launch:",
        help=_(
            "Counts as one Code Lab run: one at a time per visitor, and on a public server the "
            "same per-minute limit and queue."
        ),
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
    _ui.show_code(
        devices.run_process,
        devices.launch_cluster,
        devices.run_local_cluster,
        label=_("Show the code that ran"),
    )


#: How a cluster run ended (``ClusterRun.status``), as the status box names it.
STATUS = {"ok": N_("ok"), "timeout": N_("timeout"), "failed": N_("failed")}


def launch_cluster(procs: int, local: int, missing: bool) -> None:
    """Run the cluster (it counts as a Code Lab run: rate limit, one at a time per visitor, a
    runner slot, the queue cap) and keep its outcome in the session."""
    st.session_state.pop("devices_cluster", None)
    refused = None
    running = ngettext("Running {n} JAX process…", "Running {n} JAX processes…", procs)
    with _ui.sandbox_run(running.format(n=procs)) as box:
        try:
            res = devices.launch_cluster(
                procs,
                local,
                timeout_s=10 if missing else 90,
                launch=procs - 1 if missing else None,
                visitor=_ui.visitor_id(),
                on_queue=box.queued,
            )
        except devices.Refused as err:
            refused = err
            box.finished(_("Not started"), ok=False)
        else:
            box.finished(
                _("{status} after {elapsed}").format(
                    status=_(STATUS.get(res.status, res.status)),
                    elapsed=format_seconds(res.elapsed_s),
                ),
                ok=res.status == "ok",
            )
            st.session_state["devices_cluster"] = res
    if refused is not None:
        st.error(markdown.escape(refused), icon=":material/block:")


def show_cluster(res: devices.ClusterRun) -> None:
    """Which processes ran and how they ended, the devices they saw, and the psum each got."""
    indices = _(", ").join(str(i) for i in range(res.launched))
    codes = _(", ").join(f"{i}: {c}" for i, c in enumerate(res.returncodes))
    st.caption(
        ngettext(
            "{n} process started (process index {indices}); all reaped, exit status by process "
            "{codes}.",
            "{n} processes started (process index {indices}); all reaped, exit status by process "
            "{codes}.",
            res.launched,
        ).format(n=f"{res.launched:,}", indices=indices, codes=codes)
    )
    if res.reports:
        st.dataframe(pd.DataFrame(res.device_rows()), hide_index=True, key="devices_global")
        st.dataframe(pd.DataFrame(res.psum_rows()), hide_index=True, key="devices_psums")
        n_all = res.num_processes * res.local_devices
        terms = " + ".join(map(str, range(1, n_all + 1))) if n_all <= 4 else f"1 + 2 + … + {n_all}"
        total = f"{res.expected_psum:g} ({terms})"
        if res.psum_correct:
            st.success(_("Every process got psum = {total}.").format(total=total))
        else:
            got = _(", ").join(
                _("process {i}: {psum}").format(i=r.process_id, psum=f"{r.psum:g}")
                for r in res.reports
            )
            st.error(_("Not every process got {total}: {got}.").format(total=total, got=got))
    if res.status == "timeout":
        st.warning(
            _(
                "No result within the timeout: {launched} of {n} processes started, and "
                "`jax.distributed.initialize` waits for all of them. The app killed each process "
                "group and reaped every process."
            ).format(launched=res.launched, n=res.num_processes),
            icon=":material/timer_off:",
        )
    elif res.status == "failed":
        st.error(_("A process failed; the others were stopped."), icon=":material/error:")
    if res.errors:
        with st.expander(_("What the stopped processes printed (stderr)")):
            wrapped("\n\n".join(res.errors), None)


_ui.lazy_tabs(
    {
        _("Devices"): inventory_tab,
        _("Placement"): placement_tab,
        _("Sharding"): sharding_tab,
        _("Explicit sharding"): explicit_view,
        _("Collectives"): collectives_tab,
        _("Scaling"): scaling_tab,
        _("Multi-process"): multiprocess_tab,
    },
    key="devices_tab",
    keep={
        _("Placement"): (
            "devices_place_device",
            "devices_place_size",
            "devices_src",
            "devices_dst",
            "devices_top_mib",
        ),
        _("Sharding"): ("devices_mesh", "devices_axes", "devices_shape", "devices_spec"),
        _("Collectives"): ("devices_coll_n", "devices_collective", "devices_xla"),
        _("Multi-process"): ("devices_procs", "devices_local", "devices_missing"),
    },
)

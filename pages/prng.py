"""PRNG keys: seeds, splits, key trees, implementations and the pitfalls of randomness in JAX."""

from pages import _ui

from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from jaxplay import prng, sandbox
from jaxplay.core import markdown
from jaxplay.core.i18n import _, ngettext

st.title(":material/casino: " + _("PRNG keys"))
st.write(prng.intro(_("Typed keys & implementations")))


@st.cache_data(max_entries=64)
def describe(seed: int) -> prng.SeedInfo:
    return prng.describe_seed(seed)


@st.cache_data(max_entries=32)
def tree(seed: int, depth: int, branching: int, method: str, fold: int) -> prng.KeyTree:
    return prng.key_tree(seed, depth, branching, method, fold)


def pick_node() -> None:
    """A click on a node of the tree selects it in the "Node" box."""
    points = st.session_state["prng_tree_chart"].selection.points
    name = points[0].get("customdata") if points else None  # a point's node name, or its list
    if isinstance(name, list):
        name = name[0] if name else None
    if isinstance(name, str):  # anything else is no click of a browser's: nothing picked
        st.session_state["prng_node"] = name


@st.cache_data(max_entries=64, show_spinner=_("Running the demo with JAX…"))
def cached(name: str, *args: int) -> object:
    """The result of ``prng.<name>(*args)`` for the small, deterministic demos below."""
    return getattr(prng, name)(*args)


@_ui.cached(max_entries=16, show_spinner=False)
def parallel(
    seed: int, n_keys: int, n_per: int, reuse: bool, _turn: _ui.Turn | None = None
) -> prng.ParallelStats:
    """In the compute worker: each new count compiled programs (5 MB) JAX kept in the server.
    Only the summaries the page shows come back (the samples are up to 8 MB)."""
    return sandbox.timed(prng.parallel_stats, seed, n_keys, n_per, 8, reuse, turn=_turn)


@_ui.cached(max_entries=8, show_spinner=False)
def training(
    seed: int, steps: int, _turn: _ui.Turn | None = None
) -> tuple[prng.TrainingRun, prng.TrainingRun]:
    """The threaded and the dropped key's training, in the compute worker (each step count
    compiled a program of 15 MB, kept for the process, in the server)."""
    return sandbox.timed(prng.training_runs, seed, steps, turn=_turn)


@st.cache_data(max_entries=8, show_spinner=False)
def impl_timing(impl: str, n: int, _turn: _ui.Turn | None = None) -> prng.ImplTiming:
    return sandbox.timed(prng.time_impl, impl=impl, n=n, turn=_turn)


def seed_section(seed: int) -> None:
    """What JAX makes of the seed with x64 off and on."""
    info = describe(seed)
    left, right = st.columns(2)
    left.metric(_("PRNGKey(seed), x64 off"), str(list(info.x32.key_data or ())))
    right.metric(_("PRNGKey(seed), x64 on"), str(list(info.x64.key_data or ())))
    left.code(prng.key_hex(info.x32.key_data or ()), language=None)
    right.code(prng.key_hex(info.x64.key_data or ()), language=None)
    # One box: what this seed means (the page's one warning about it, on this tab). Never a
    # success: with the same key, x64 still changes the numbers drawn.
    (st.warning if info.differs else st.info)("\n\n".join(info.notes))
    st.caption(
        _(
            "{rule} Computed by JAX in thread-local `jax.enable_x64(...)` contexts: this "
            "server's global x64 setting is untouched."
        ).format(rule=prng.seed_rule(info))
    )
    _ui.show_code(prng.describe_seed, prng.threefry_seed_words)


def tree_section(seed: int) -> None:
    """Keys derived from the seed, as a tree, and chained vs wide derivation."""
    key_tree_view(seed)
    derivation_view(seed)


def key_tree_view(seed: int) -> None:
    """The keys split or folded from the seed, as a tree: pick one to see its numbers."""
    method, depth, branching, fold = key_tree_settings()
    try:
        key_tree = tree(seed, depth, branching, method, fold)
    except ValueError as err:
        st.error(str(err), icon=":material/error:")
        return
    names = [n.name for n in key_tree.nodes]
    picked = st.selectbox(
        _("Node"),
        names,
        key="prng_node",
        bind="query-params",
        format_func=lambda name: key_tree.node(name).label,
    )
    _ui.chart(
        prng.key_tree_figure,
        key_tree,
        picked,
        key="prng_tree_chart",
        on_select=pick_node,
        selection_mode="points",
    )
    node = key_tree.node(picked or "root")
    st.markdown(
        _("**{node}** · key data `{data}` · `normal(key, (8,))`:").format(
            node=node.label, data=prng.key_hex(node.data)
        )
    )
    samples = cached("node_samples", node.data, 8)
    st.dataframe(pd.DataFrame([samples]), hide_index=True, key="prng_node_samples")
    n_nodes = len(key_tree.nodes)
    st.caption(
        ngettext("{n} key, {distinct} distinct.", "{n} keys, {distinct} distinct.", n_nodes).format(
            n=f"{n_nodes:,}", distinct=f"{key_tree.unique_keys:,}"
        )
    )
    _ui.show_code(prng.key_tree, prng.node_samples)


def key_tree_settings() -> tuple[str, int, int, int]:
    """How children are derived, the depth, the branching and the first fold_in datum; the
    depth and datum offered are those key_tree accepts for the branching chosen."""
    c1, c2, c3, c4 = st.columns(4)
    method = c1.segmented_control(
        _("Derive children by"),
        ["split", "fold_in"],
        default="split",
        required=True,
        key="prng_method",
        bind="query-params",
    )
    branching = c3.slider(
        _("Branching"), 1, prng.MAX_TREE_BRANCHING, 3, key="prng_branching", bind="query-params"
    )
    # The depth and the fold_in datum offered are exactly those key_tree accepts for this
    # branching (a tree stays within MAX_TREE_NODES keys; its data fit a uint32).
    deepest, fold_max = prng.max_depth(branching), prng.max_fold_data(branching)
    if st.session_state.get("prng_depth", 0) > deepest:
        st.session_state["prng_depth"] = deepest
    if st.session_state.get("prng_fold", 0) > fold_max:
        st.session_state["prng_fold"] = fold_max
    depth = c2.slider(
        _("Depth"),
        0,
        deepest,
        min(2, deepest),
        key="prng_depth",
        bind="query-params",
        help=_(
            "Up to {deepest} with branching {branching}: at most {limit} keys, so the tree "
            "stays readable."
        ).format(deepest=deepest, branching=branching, limit=prng.MAX_TREE_NODES),
    )
    fold = c4.number_input(
        _("fold_in data (first child)"),
        0,
        fold_max,
        0,
        key="prng_fold",
        bind="query-params",
        disabled=method != "fold_in",
        help=_("0 to {most}: the {branching} consecutive data must fit a uint32.").format(
            most=f"{fold_max:,}", branching=branching
        ),
    )
    return method or "split", int(depth), int(branching), int(fold)


def derivation_view(seed: int) -> None:
    """Many keys from one: a chain of splits against one wide split or fold_in."""
    st.subheader(_("Chained or wide derivation"))
    n_derive = st.slider(_("Keys to derive"), 2, 16, 6, key="prng_n_derive", bind="query-params")
    derived = cached("derive_keys", seed, n_derive)
    st.dataframe(
        pd.DataFrame(
            {scheme_label(k): [prng.key_hex(r) for r in v] for k, v in derived.keys.items()}
        ),
        key="prng_derived",
    )
    same = (derived.keys["split(key, n)"] == derived.keys["fold_in(key, i)"]).all()
    shared = derived.shared("chained split", "split(key, n)")
    relation = (
        _(
            "`split(key, n)[i]` equals `fold_in(key, i)` here (with "
            "`jax_threefry_partitionable`, the default)."
        )
        if same
        else _(
            "`split(key, n)[i]` differs from `fold_in(key, i)` here (with "
            "`jax_threefry_partitionable`, the default)."
        )
    )
    chain = (
        ngettext(
            "The chain's first subkey is `split(key)[1]`: the two schemes share {n} key, so "
            "mixing them on one parent reuses randomness.",
            "The chain's first subkey is `split(key)[1]`: the two schemes share {n} keys, so "
            "mixing them on one parent reuses randomness.",
            shared,
        )
        if shared
        else ngettext(
            "The chain's first subkey is `split(key)[1]`: the two schemes share {n} key.",
            "The chain's first subkey is `split(key)[1]`: the two schemes share {n} keys.",
            shared,
        )
    ).format(n=f"{shared:,}")
    advice = _("{relation} {chain} Prefer one wide call: it needs no sequential chain of splits.")
    st.info(advice.format(relation=relation, chain=chain))
    if st.button(_("Time deriving 1000 keys"), key="prng_time_derive"):
        with _ui.measuring(_("Timing three derivation schemes (jitted)…")) as status:
            try:
                timed = sandbox.timed(prng.time_derivations, n=1000, turn=status.turn)
            except sandbox.TaskFailed as err:  # the compute worker ran out of time or memory
                status.update(label=_("Failed"), state="error")
                _ui.show_error(err, _("**The measurement failed:** "))
            else:
                st.session_state["prng_derive_timings"] = timed
                status.update(label=_("Timed"), state="complete")
    if rows := st.session_state.get("prng_derive_timings"):
        fig = prng.timing_figure(
            [(scheme_label(r.scheme), r.timing) for r in rows],
            ngettext("{n} key", "{n} keys", 1000).format(n=1000),
            _("this server"),
        )
        _ui.chart(fig, key="prng_derive_chart")
    _ui.show_code(prng.chained_keys, prng.wide_split_keys, prng.wide_fold_in_keys)


def scheme_label(scheme: str) -> str:
    """A derivation scheme's name for the visitor (the wide ones are code, kept as they are)."""
    return _("chained split") if scheme == "chained split" else scheme


def impl_section(seed: int) -> None:
    """Typed vs legacy keys; every implementation JAX registers."""
    st.markdown(_("**Legacy `PRNGKey` arrays and typed keys** hold the same words:"))
    forms = cached("key_forms", seed)
    st.dataframe(
        pd.DataFrame(
            {
                _("code"): f.code,
                "dtype": f.dtype,
                _("shape"): str(f.shape),
                _("key data"): str(f.data),
                "normal(key, (4,))": str(np.round(f.samples, 4)),
            }
            for f in forms
        ),
        hide_index=True,
        key="prng_forms",
    )
    st.markdown(_("**PRNG implementations**, seeded with the same integer:"))
    impls = cached("impl_infos", seed)
    st.dataframe(
        pd.DataFrame(
            {
                _("impl"): i.impl,
                "dtype": i.dtype,
                _("key data shape"): str(i.data_shape),
                _("key data"): str(i.data),
                "normal(key, (4,))": str(np.round(i.samples, 4)),
                "split(key)[0]": prng.key_hex(i.split_data),
                "fold_in(key, 1)": prng.key_hex(i.fold_data),
                _("vmap = loop over keys"): _("yes") if i.vmap_exact else _("no"),
            }
            for i in impls
        ),
        hide_index=True,
        key="prng_impls",
    )
    st.caption(prng.explain_impls(impls))
    n_time = st.select_slider(
        _("Numbers per draw"),
        [10_000, 100_000, 1_000_000, 10_000_000],
        1_000_000,
        key="prng_n_time",
        bind="query-params",
    )
    if _ui.measure_button(_("Time the implementations"), "prng_time_impls", int(n_time)):
        # One cached call per implementation, the progress drawn here between them.
        rows = _ui.measure_points(
            _("Timing `jit(normal)` of {n} numbers…").format(n=f"{int(n_time):,}"),
            ngettext(
                "{n} implementation timed", "{n} implementations timed", len(prng.IMPLS)
            ).format(n=f"{len(prng.IMPLS):,}"),
            prng.IMPLS,
            lambda impl, turn: impl_timing(impl, int(n_time), _turn=turn),
            str,
        )
        title = f"jit(normal)(key, ({rows[0].n:,},))"
        fig = prng.timing_figure([(r.impl, r.timing) for r in rows], title, rows[0].device)
        _ui.chart(fig, key="prng_impl_chart")
    _ui.show_code(prng.key_forms, prng.impl_infos, prng.time_impl)


def parallel_section(seed: int) -> None:
    """The article's 1000 keys and vmap(normal), and how independent they look."""
    c1, c2, c3 = st.columns(3)
    total = prng.MAX_PARALLEL_VALUES
    most_keys = total // 2
    n_keys = c1.number_input(
        _("Keys"),
        2,
        most_keys,
        1000,
        key="prng_n_keys",
        bind="query-params",
        help=_("2 to {most}; keys × samples per key is at most {total}.").format(
            most=f"{most_keys:,}", total=f"{total:,}"
        ),
    )
    # Samples per key offered: only as many as fit the total with this many keys.
    most_per = total // int(n_keys)
    if st.session_state.get("prng_n_per", 0) > most_per:
        st.session_state["prng_n_per"] = most_per
    n_per = c2.number_input(
        _("Samples per key"),
        2,
        most_per,
        min(10, most_per),
        key="prng_n_per",
        bind="query-params",
        help=_("2 to {most} with {keys} keys ({total} numbers at most).").format(
            most=f"{most_per:,}", keys=f"{int(n_keys):,}", total=f"{total:,}"
        ),
    )
    reuse = c3.toggle(_("Reuse one key for every stream"), key="prng_reuse", bind="query-params")
    try:  # refused here, in the visitor's language, before the worker draws
        prng.check_parallel(int(n_keys), int(n_per))
    except ValueError as err:
        st.error(markdown.escape(err), icon=":material/error:")
    else:
        chosen = (seed, int(n_keys), int(n_per), reuse)
        stats = _ui.computed(_("Drawing the streams…"), _("Drawn"), parallel, *chosen)
        cols = st.columns(5)
        cols[0].metric(_("mean"), f"{stats.mean:.4f}")
        cols[1].metric(_("std"), f"{stats.std:.4f}")
        cols[2].metric(_("skewness"), f"{stats.skewness:.3f}")
        cols[3].metric(_("excess kurtosis"), f"{stats.excess_kurtosis:.3f}")
        within = stats.within_band
        cols[4].metric(
            _("correlations inside ±1.96/√n"), "—" if within is None else f"{within:.0%}"
        )
        if within is None:
            st.caption(prng.band_caption(int(n_per), stats.band))
        _ui.chart(prng.samples_heatmap, stats, key="prng_heatmap")
        _ui.chart(prng.histograms_figure, stats, key="prng_hist")
        corr_title = _("Correlation of the first {m} streams (* outside ±{band})").format(
            m=stats.corr.shape[0], band=f"{stats.band:.2f}"
        )
        _ui.chart(prng.correlation_figure, stats.corr, stats.band, corr_title, key="prng_corr")
        _ui.show_code(prng.article_parallel)


def pitfalls_section(seed: int) -> None:
    """Reuse, transforms, the article's stochastic layer, key threading."""
    reuse_pitfall(seed)
    transforms_pitfall(seed)
    stochastic_layer_pitfall()
    threading_pitfall(seed)


def reuse_pitfall(seed: int) -> None:
    """Reusing a key repeats the numbers; the key-reuse checker turns that into an error."""
    st.subheader(_("1 · Reusing a key repeats the numbers"))
    demo = cached("reuse_demo", seed)
    st.dataframe(
        pd.DataFrame(
            {
                "normal(key)": demo.first,
                _("normal(key) again"): demo.again,
                "normal(split(key)[0])": demo.split_a,
                "normal(split(key)[1])": demo.split_b,
            }
        ),
        hide_index=True,
        key="prng_reuse_table",
    )
    st.markdown(_("JAX's **key-reuse checker** (`jax_debug_key_reuse`) turns this into an error:"))
    source = prng.key_reuse_source(seed)
    st.code(source, language="python", line_numbers=True)
    if st.button(_("Run it in the sandbox"), key="prng_run_checker", icon=":material/play_arrow:"):
        with _ui.sandbox_run(_("Running in a fresh sandboxed worker…")) as box:
            outcome = prng.check_key_reuse_sandboxed(
                seed, visitor=_ui.visitor_id(), on_queue=box.queued
            )
            box.finished(_("Ran"))
        st.session_state["prng_checker"] = (seed, outcome)
    checked_seed, outcome = st.session_state.get("prng_checker", (None, None))
    if outcome is not None and checked_seed == seed:
        if outcome.stdout:
            st.code(outcome.stdout, language=None)
        if outcome.raised:
            st.error(
                _("{error} at line {line}: {message}").format(
                    error=markdown.code(outcome.exc_type),
                    line=outcome.line,
                    message=markdown.escape(outcome.message),
                ),
                icon=":material/error:",
            )
        else:
            st.warning(_("The checker did not raise."))
        st.caption(where_ran(outcome.where))


#: How :func:`prng.check_key_reuse_sandboxed` says it fell back to running in this process.
FALLBACK = "in-process, because the sandbox did not run it ("


def where_ran(where: str) -> str:
    """Where the checker ran, in a sentence (the sandbox's own reason kept as it said it)."""
    if where == "sandbox":
        return _("Ran in a fresh sandboxed worker.")
    if where.startswith(FALLBACK) and where.endswith(")"):
        return _("Ran in-process, because the sandbox did not run it ({why}).").format(
            why=where[len(FALLBACK) : -1]
        )
    return _("Ran {where}.").format(where=where)


def transforms_pitfall(seed: int) -> None:
    """The same key gives the same numbers under jit, vmap and both."""
    st.subheader(_("2 · Same key, same numbers under any transform (threefry2x32)"))
    agreement = cached("transform_agreement", seed)
    for name, values in agreement.results.items():
        st.text(f"{name:>10}: {values[0].round(5)}")
    st.metric(
        _("Largest difference across eager, jit, vmap, jit(vmap)"), agreement.max_abs_difference
    )


def stochastic_layer_pitfall() -> None:
    """The article's layer under @jit @vmap: parameters mapped too, unless in_axes says not."""
    st.subheader(_("3 · The article's `stochastic_layer` under `@jit @vmap`"))
    batch = st.slider(
        _("Batch size (the layer has 4 outputs)"), 1, 8, 5, key="prng_batch", bind="query-params"
    )
    written, fixed = cached("stochastic_layer_runs", batch)
    if written.error:
        st.error(
            _("**{name}** raises `{error_type}`:").format(
                name=layer_name(written), error_type=written.error_type
            )
            + f"\n\n```\n{written.error}\n```",
            icon=":material/error:",
        )
    elif written.shape != fixed.shape:
        st.warning(
            _(
                "**{name}** runs *silently wrong*: output shape `{shape}`, not `{expected}`. "
                "With batch = output size, `@vmap` maps W and b too and pairs example i with "
                "row i of W."
            ).format(name=layer_name(written), shape=written.shape, expected=fixed.shape),
            icon=":material/warning:",
        )
    st.success(
        _("**{name}** runs: output shape `{shape}`").format(
            name=layer_name(fixed), shape=fixed.shape
        )
    )
    st.caption(
        _(
            "`@vmap` maps every argument over axis 0, the parameters too; per-sample noise "
            "with shared parameters needs `in_axes=(None, 0, 0)`."
        )
    )
    _ui.show_code(prng.stochastic_layer, prng.stochastic_layer_fixed)


def layer_name(run: prng.LayerRun) -> str:
    """The article's layer named in the visitor's language; the fixed one is named by its code."""
    return _("as written") if run.name == "as written" else run.name


def threading_pitfall(seed: int) -> None:
    """A training loop that threads its key, against one that drops it."""
    st.subheader(_("4 · Threading the key through a training loop"))
    steps = st.slider(_("Steps"), 10, 300, 60, key="prng_steps", bind="query-params")
    runs = _ui.computed(_("Training both loops…"), _("Trained"), training, seed, steps)
    _ui.chart(prng.training_figure, runs, key="prng_training_chart")
    threaded, dropped = runs
    st.caption(
        _(
            "Over {steps}: the threaded key drew {threaded_masks} and its loss moved by "
            "{threaded_jump} a step on average; the dropped key drew {dropped_masks}, its loss "
            "moving {dropped_jump} a step. Every step of the dropped run splits the same key, so "
            "nothing is random any more: the model fits one fixed corruption of the data instead "
            "of averaging over dropout."
        ).format(
            steps=ngettext("{n} step", "{n} steps", steps).format(n=f"{steps:,}"),
            threaded_masks=ngettext(
                "{n} distinct dropout mask", "{n} distinct dropout masks", threaded.unique_masks
            ).format(n=f"{threaded.unique_masks:,}"),
            threaded_jump=f"{threaded.mean_jump:.3g}",
            dropped_masks=ngettext(
                "{n} distinct mask", "{n} distinct masks", dropped.unique_masks
            ).format(n=f"{dropped.unique_masks:,}"),
            dropped_jump=f"{dropped.mean_jump:.3g}",
        )
    )
    _ui.show_code(prng.training_step, prng.train_threading_key, prng.train_dropping_key)


seed_text = _ui.text_box(
    st,
    _("Seed"),
    value=str(prng.ARTICLE_SEED),
    key="prng_seed",
    bind="query-params",
    help=_("A whole number. Try 42, 4294967296, -1 or 9223372036854775808."),
)
seed: int | None = None
try:
    seed = prng.parse_seed(seed_text or "")
except prng.SeedError as err:
    _ui.input_error(err, _("Not a seed:"))
else:
    info = describe(seed)
    if not info.in_range:
        st.error(
            _("**Seed out of range.** {note}").format(note=info.notes[0]), icon=":material/error:"
        )
        seed = None
# Filled below only when the Seed → key tab (which explains the seed itself) is not the open one.
seed_warning = st.empty()

# The tabs' labels, in the visitor's language (a link names the open tab by its label).
SEED_TAB, TREE_TAB, IMPLS_TAB = _("Seed → key"), _("Key tree"), _("Typed keys & implementations")
STREAMS_TAB, PITFALLS_TAB = _("Parallel streams"), _("Pitfalls")
SECTIONS = {
    SEED_TAB: seed_section,
    TREE_TAB: tree_section,
    IMPLS_TAB: impl_section,
    STREAMS_TAB: parallel_section,
    PITFALLS_TAB: pitfalls_section,
}


def needs_seed(section: Callable[[int], None]) -> Callable[[], None]:
    """``section`` drawn from the seed; without a valid one the tab stays (a bad seed does not
    hide where the tabs lead) and says what it needs."""

    def draw() -> None:
        if seed is None:
            st.info(_("This tab starts from the seed: fix the Seed box above to see it."))
        else:
            section(seed)

    return draw


opened = _ui.lazy_tabs(
    {label: needs_seed(s) for label, s in SECTIONS.items()},
    key="prng_tab",
    keep={
        TREE_TAB: (
            "prng_method",
            "prng_branching",
            "prng_depth",
            "prng_fold",
            "prng_node",
            "prng_n_derive",
        ),
        IMPLS_TAB: ("prng_n_time",),
        STREAMS_TAB: ("prng_n_keys", "prng_n_per", "prng_reuse"),
        PITFALLS_TAB: ("prng_batch", "prng_steps"),
    },
)
if seed is not None and info.differs and opened != SEED_TAB:
    seed_warning.warning(
        _(
            "With x64 off (JAX's default) seed {seed} keeps only its low 32 bits: it gives the "
            "same key as seed {twin}, and another key with x64 on. See *{seed_tab}*."
        ).format(seed=seed, twin=info.x32_twin, seed_tab=SEED_TAB),
        icon=":material/warning:",
    )

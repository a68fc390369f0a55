"""jit: what compiling buys and costs, measured honestly (blocked, warmed up, median and spread)."""

from pages import _ui  # every page imports it first: see its docstring

import re

import pandas as pd
import streamlit as st

from jaxplay import jit, sandbox
from jaxplay.core import expr, markdown, roofline, timing
from jaxplay.core.i18n import N_, _, ngettext

DEFAULT = jit.DEFAULT_WORKLOAD

st.title(":material/speed: jit")
st.write(
    _(
        "`jax.jit` traces a function once per new input signature (the arguments' pytree "
        "structure, shapes, dtypes, weak types, static arguments' values), hands the whole "
        "program to XLA, and reuses the compiled result. Inputs on another device are compiled "
        "again without a new trace; inputs on another mesh, or sharded otherwise over a mesh's "
        "Explicit axes (`jax.make_mesh`'s default), are traced again too. Pick a function and a "
        "size: see each stage, eager against jit, where jit starts to pay, and why the article's "
        "stopwatch got a different answer."
    )
)


@_ui.cached(max_entries=64, show_spinner=False)
def sweep_point(*key: object, _turn: _ui.Turn | None = None) -> jit.SweepPoint:
    preset, rows, cols, dtype, formula, _measurement = key
    workload = jit.Workload(preset, rows, cols, dtype, formula)
    return sandbox.timed(jit.sweep_point, workload=workload, turn=_turn)


@st.cache_data(max_entries=8, show_spinner=False)
def side_effects(calls: int) -> tuple:
    return jit.impure_counter_demo(calls), jit.debug_print_demo()


@st.cache_data(max_entries=16, show_spinner=False)
def in_sandbox(demo: str, key: tuple, **options: object) -> object:
    """A demo of the Beyond tabs, run in a sandboxed worker (a fresh process); data only."""
    function, returns, timeout_s = jit.SANDBOXED[demo]
    preset, rows, cols, dtype, formula = key
    return sandbox.call(
        function,
        isolate=True,
        returns=returns,
        timeout_s=timeout_s,
        preset=preset,
        rows=rows,
        cols=cols,
        dtype=dtype,
        formula=formula,
        **options,
    )


c1, c2, c3, c4 = st.columns([2, 1, 1, 1])
preset = c1.selectbox(
    _("Function"),
    list(jit.PRESETS),
    format_func=lambda k: _(jit.PRESETS[k].label),
    key="jit_preset",
    bind="query-params",
)
rows = int(
    c2.number_input(_("rows"), 1, 1_000_000, DEFAULT.rows, key="jit_rows", bind="query-params")
)
cols = int(
    c3.number_input(_("cols"), 1, 1_000_000, DEFAULT.cols, key="jit_cols", bind="query-params")
)
dtype = c4.selectbox("dtype", jit.DTYPES, key="jit_dtype", bind="query-params")
formula = jit.DEFAULT_FORMULA
if preset == "formula":
    formula = _ui.text_box(
        st,
        "f(x) =",
        jit.DEFAULT_FORMULA,
        key="jit_formula",
        bind="query-params",
        help=_("Allowed: {functions}").format(functions=", ".join(expr.allowed_functions())),
    )
st.caption(
    _("{story} (from {origin})").format(
        story=_(jit.PRESETS[preset].story), origin=_(jit.PRESETS[preset].origin)
    )
)
workload = jit.Workload(preset, rows, cols, dtype, formula)

# One measurement per setting, shared by every visitor: kept, joined while another visitor (or
# the server's start-up) measures it, or measured here; its stages are shown as they happen.
force = st.session_state.pop("jit_force", None) == jit.key_of(workload)
shared = None if force else jit.shared_measurement(workload)
failure: Exception | None = None
if shared is None:
    with _ui.staged(_("Measuring")) as stages:
        try:
            shared = jit.measure_shared(workload, stages, force=force, owner=N_("another visitor"))
        except Exception as err:  # a formula can parse yet fail on this shape (x @ x)
            failure = err
    if failure is None:
        m = shared.value
        cut = _(" (cut at its time budget)") if m.cut else ""
        stages.done(
            _("Measured on {device}, {where}, in {seconds}").format(
                device=m.device, where=m.where(), seconds=timing.format_seconds(m.seconds)
            )
            + cut
        )
    else:
        stages.clear()  # nothing was measured: no box beside the refusal
if isinstance(failure, expr.ExprError):
    _ui.input_error(failure, _("This formula is not allowed:"), formula)
elif isinstance(failure, jit.SizeError):
    _ui.input_error(failure, _("Not timed:"), icon=":material/block:")
elif isinstance(failure, sandbox.TaskFailed) and failure.error.kind != "exception":  # not raised
    _ui.show_error(markdown.escape(failure.explain(_("Measuring this function"))))
elif failure is not None:
    _ui.show_error(failure, _("**The function failed:** "))


def stages_tab(m: jit.Measurement, shared: jit.SharedResult, workload: jit.Workload) -> None:
    prof = m.profile
    if m.cut:
        st.warning(m.cut_note(), icon=":material/timer_off:")
    _ui.chart(jit.stage_figure, prof, m.device, key="jit_stage_chart")
    a, b, c = st.columns(3)
    a.metric(_("trace + lower + compile"), timing.format_seconds(prof.compile_total_s))
    b.metric(_("first call"), timing.format_seconds(prof.first_call_s))
    c.metric(_("steady call (median)"), timing.format_seconds(prof.steady.median))
    st.caption(
        _("Steady state: {summary}. A fresh function is compiled each time.").format(
            summary=prof.steady.describe()
        )
    )
    if m.first_call is not None:
        st.markdown(jit.first_call_sentence(m.first_call, prof.first_call_s, prof.steady.median))
    st.markdown(jit.program_sentence(m.program))
    with st.expander(_("The compiled program's kernels"), icon=":material/view_list:"):
        st.dataframe(
            jit.kernel_table(m.program),
            hide_index=True,
            key="jit_kernels",
            # A fused kernel's name is long (loop_exponential_reduce_fusion): shown whole.
            column_config={
                "kernel": st.column_config.TextColumn(_("kernel"), width="large"),
                "kind": _("kind"),
                "ops inside": _("ops inside"),
                "output": _("output"),
            },
        )
    with st.expander(_("jaxpr, StableHLO and optimized HLO"), icon=":material/account_tree:"):
        for text in (prof.jaxpr_text, prof.stablehlo_text, prof.hlo_text):
            st.code(_ui.scrub(text), language=None)
    _ui.show_code(
        jit.function_source(workload),
        jit.timing_code(workload, len(m.first_call.first) if m.first_call else 0),
        label=_("Show the code that ran"),
    )
    st.caption(jit.provenance(shared, _ui.visitor_id()))
    st.button(
        _("Measure again"),
        key="jit_remeasure",
        on_click=st.session_state.__setitem__,
        args=("jit_force", jit.key_of(workload)),
    )


def compare_tab(kept: jit.SharedResult, workload: jit.Workload) -> None:
    r = kept.value
    comp = r.comparison
    if r.cut:
        st.warning(r.cut_note(), icon=":material/timer_off:")
    a, b = st.columns(2)
    a.metric(_("speedup: eager median / jit median"), f"{comp.speedup:.2f}×")
    b.metric(_("from the quartiles"), f"{comp.speedup_low:.2f}× – {comp.speedup_high:.2f}×")
    _ui.chart(jit.distribution_figure, comp, r.device, key="jit_dist_chart")
    st.caption(
        _("Eager: {eager}. jit: {jitted}.").format(
            eager=comp.eager.describe(), jitted=comp.jitted.describe()
        )
    )
    _ui.show_code(
        jit.function_source(workload), jit.race_code(workload), label=_("Show the code that ran")
    )
    race_footer(kept, workload, "jit_race_remeasure")


def race_footer(kept: jit.SharedResult, workload: jit.Workload, key: str) -> None:
    """Who measured eager against jit when, and its own Measure again (the Stages tab's measures
    the stages anew, not this)."""
    st.caption(jit.provenance(kept, _ui.visitor_id()))
    st.button(
        _("Measure again"),
        key=key,
        on_click=st.session_state.__setitem__,
        args=("jit_race_force", jit.key_of(workload)),
    )


def sweep_tab(workload: jit.Workload, number: int, device: str) -> None:
    sizes = jit.sweep_rows(workload)
    if len(sizes) < 2:
        st.info(_("A sweep needs two sizes or more: set rows above 1."), icon=":material/info:")
        return
    calls = st.select_slider(
        _("Calls that share one compile"),
        [1, 3, 10, 30, 100, 1000, 10000],
        10,
        key="jit_sweep_calls",
        bind="query-params",
    )
    w = workload
    swept = (w.preset, w.rows, w.cols, w.dtype, w.formula, number)
    label = ngettext(
        "Sweep rows {first}…{last} (× {cols} col)",
        "Sweep rows {first}…{last} (× {cols} cols)",
        w.cols,
    ).format(first=sizes[0], last=sizes[-1], cols=w.cols)
    if not _ui.measure_button(label, "jit_sweep_run", swept, icon=None):
        st.info(
            _("The sweep times eager and jit at {n} sizes, one after the other.").format(
                n=len(sizes)
            )
        )
        return
    points = _ui.measure_points(
        _("Sweeping {n} sizes…").format(n=len(sizes)),
        _("{n} sizes measured on {device}").format(n=len(sizes), device=device),
        sizes,
        lambda r, turn: sweep_point(w.preset, r, w.cols, w.dtype, w.formula, number, _turn=turn),
        lambda r: _("rows = {rows}").format(rows=r),
    )
    _ui.chart(jit.sweep_figure, points, calls, device, key="jit_sweep_chart")
    st.markdown(jit.sweep_verdict(points, calls))
    _ui.show_code(jit.sweep_point, jit.crossover, label=_("Show the code that ran"))


def article_tab(m: jit.Measurement, kept: jit.SharedResult) -> None:
    r = kept.value
    art, comp = r.article, r.comparison
    if art is None:
        st.info(r.cut_note(), icon=":material/timer_off:")
        race_footer(kept, m.workload, "jit_article_remeasure")
        return
    if r.cut:
        st.warning(r.cut_note(), icon=":material/timer_off:")
    a, b, c = st.columns(3)
    a.metric(
        _("article: naive loop ({n} calls)").format(n=art.loops),
        timing.format_seconds(art.naive_s),
    )
    b.metric(
        _("article: jit loop ({n} calls)").format(n=art.loops), timing.format_seconds(art.jitted_s)
    )
    c.metric(
        _("article's speedup"),
        f"{art.speedup:.3g}×",
        _("honest: {speedup}").format(speedup=f"{comp.speedup:.3g}×"),
        "off",
    )
    _ui.chart(jit.article_figure, art, comp, key="jit_article_chart")
    st.markdown(jit.article_explanation(art, comp.eager.median, m.profile.compile_total_s))
    st.caption(_("Both measured on the function and size chosen above."))
    _ui.show_code(jit.ARTICLE_TIMING_CODE, label=_("The article's code, as written"))
    _ui.show_code(jit.article_timing, label=_("Show the code that ran"))
    race_footer(kept, m.workload, "jit_article_remeasure")


def roofline_tab(m: jit.Measurement, preset: str) -> None:
    prof, reference = m.profile, m.reference
    gbps, gflops = roofline.roofline_point(prof.cost, prof.steady.median)
    if prof.cost is None:
        st.info(
            _("XLA gave no cost analysis on this backend: {notes}").format(
                notes="; ".join(prof.notes)
            )
        )
    else:
        a, b, c = st.columns(3)
        bw, peak = reference.copy_bandwidth_gbps, reference.matmul_gflops
        a.metric(
            _("achieved GB/s"),
            f"{gbps:.3g}",
            _("{share} of copy").format(share=f"{gbps / bw:.0%}"),
            "off",
        )
        b.metric(
            _("achieved GFLOP/s"),
            f"{gflops:.3g}",
            _("{share} of matmul").format(share=f"{gflops / peak:.1%}"),
            "off",
        )
        c.metric(_("transcendentals per call"), f"{prof.cost.get('transcendentals', 0):,.0f}")
        fig = jit.roofline_figure(reference, prof.cost, prof.steady.median, preset)
        _ui.chart(fig, key="jit_roof_chart")
    st.caption(
        _(
            "Roofs measured on {device}: {method}. Bytes and flops are XLA's estimates for the "
            "compiled program divided by the steady median; data that fits in cache can beat the "
            "memory roof."
        ).format(device=reference.device, method=reference.method_text)
    )
    if prof.cost is not None and (library := jit.library_calls_note(m.program)):
        st.warning(library, icon=":material/functions:")
    if prof.memory:
        st.markdown(_("**The compiled program's memory** (`memory_analysis()`, per call):"))
        st.dataframe(
            jit.memory_table(prof.memory),
            hide_index=True,
            key="jit_memory",
            column_config={"what": _("what"), "size": _("size"), "bytes": _("bytes")},
        )
    for note in prof.notes:
        st.caption(note)


def cache_tab() -> None:
    st.markdown(
        _(
            "The article's `static_argnums` example: a Python `if` on a static argument picks the "
            "branch at trace time, so each value of `use_tanh` is its own compiled program. "
            "Change the flag, the length or the dtype and watch the counter and JAX's own "
            "explanation."
        )
    )
    if "jit_cache_lab" not in st.session_state or st.button(_("Start over"), key="jit_cache_reset"):
        st.session_state["jit_cache_lab"] = jit.CacheLab()
    lab = st.session_state["jit_cache_lab"]
    a, b, c = st.columns(3)
    use_tanh = a.toggle(_("use_tanh (static)"), True, key="jit_cache_tanh", bind="query-params")
    length = b.number_input(
        _("length of x"), 1, jit.CACHE_LAB_MAX_LENGTH, 5, key="jit_cache_len", bind="query-params"
    )
    kind = c.selectbox(_("dtype of x"), jit.DTYPES, key="jit_cache_dtype", bind="query-params")
    signature = (bool(use_tanh), int(length), kind)
    again = st.button(_("Call again with the same arguments"), key="jit_cache_again")
    view = lab.visit(*signature, again=again)
    last = view.history[-1]
    if view.restarts and len(view.history) == 1 and last.previous is None:
        st.info(jit.cache_lab_restarted(view.released), icon=":material/restart_alt:")
    before = view.history[-2].cache_size if len(view.history) > 1 else 0
    delta = None if last.cache_size is None or before is None else last.cache_size - before
    size = _("unknown") if last.cache_size is None else last.cache_size
    st.metric(_("compiled versions: `dynamic_control_flow._cache_size()`"), size, delta)
    if last.compiled:
        st.warning(
            _("This call **compiled** (a cache miss). JAX explains:"), icon=":material/build:"
        )
        _ui.error_code("\n\n".join(last.reasons) or "\n".join(last.log) or _("(nothing logged)"))
    else:
        st.success(
            _("This call reused a compiled version: nothing to log."), icon=":material/bolt:"
        )
    st.dataframe(
        pd.DataFrame(jit.history_table(list(view.history), view.dropped)),
        hide_index=True,
        key="jit_cache_history",
        column_config={
            "call": _("call"),
            "what changed": _("what changed"),
            "result": _("result"),
            "cache size": _("cache size"),
        },
    )
    st.caption(
        _(
            "Captured from the `jax` logger under `jax.log_compiles` and "
            "`jax.explain_cache_misses` (thread-local: your calls only). JAX compares a miss "
            "with the one cached key it finds closest, which may differ in another argument "
            "than the one you changed; *what changed* compares with your previous call. "
            "`_cache_size()` is private JAX API."
        )
    )
    _ui.show_code(jit.dynamic_control_flow, jit.CacheLab.call, label=_("Show the code that ran"))


def side_effects_tab() -> None:
    calls = st.slider(_("jitted calls"), 1, 10, 2, key="jit_counter_calls", bind="query-params")
    counter, printed = side_effects(calls)
    a, b, c = st.columns(3)
    a.metric(
        ngettext("counter after {n} eager call", "counter after {n} eager calls", calls).format(
            n=calls
        ),
        counter.eager_count,
    )
    b.metric(
        ngettext("counter after {n} jitted call", "counter after {n} jitted calls", calls).format(
            n=calls
        ),
        counter.jit_count,
    )
    c.metric(_("… then one call with a new shape"), counter.jit_count_after_new_shape)
    st.markdown(jit.side_effects_sentence(counter, printed))
    for i, text in enumerate(printed.outputs, start=1):
        st.code(f"# call {i}\n{text}", language=None)
    _ui.show_code(jit.impure_counter_demo, jit.debug_printed, label=_("Show the code that ran"))


def sandboxed(demo: str, workload: jit.Workload, label: str, **options: object) -> object | None:
    """Run a Beyond demo in the sandbox when its button is pressed; its result, or None."""
    key = jit.key_of(workload)
    note = _(jit.SANDBOXED_NOTES[demo])
    if not _ui.measure_button(label, f"jit_{demo}_run", (key, tuple(options.items()))):
        st.info(_("{note} It runs in a sandboxed worker when you press it.").format(note=note))
        return None
    with _ui.staged(re.split("[:：]", note)[0]) as stages:
        stages.stage(N_("waiting for a sandboxed worker, then running"), None)
        try:
            result = in_sandbox(demo, key, **options)
        except sandbox.TaskFailed as err:
            stages.clear()
            _ui.show_error(
                _("**It did not finish:** {message}").format(
                    message=markdown.escape(err.error.message)
                )
            )
            return None
        stages.done(_("Ran in a sandboxed worker"))
    return result


def donation_tab(workload: jit.Workload) -> None:
    st.markdown(
        _(
            "`jax.jit(f, donate_argnums=0)` hands `x`'s buffer to XLA, which may write the result "
            "into it. Measured on the function and size above, compiled without and with "
            "donation:"
        )
    )
    result = sandboxed("donation", workload, _("Compare with and without donation"))
    if result is not None:
        st.dataframe(
            jit.donation_table(result),
            hide_index=True,
            key="jit_donation_table",
            column_config={"figure": _("figure"), "without donation": _("without donation")},
        )
        st.caption(" · ".join(_(source) for source in jit.DONATION_SOURCES))
        st.markdown(jit.donation_sentence(result))
        for warning in result.donated.warnings:
            st.caption(_("JAX warned: {warning}").format(warning=markdown.escape(warning)))
        if result.reuse_error:
            st.markdown(
                _("Using `x` after donating it raises **{error}**:").format(
                    error=result.reuse_error
                )
            )
            shown = f"{result.reuse_code}\n# {result.reuse_error}:\n# {result.reuse_message}"
            st.code(_ui.scrub(shown), language=None, wrap_lines=True)
        else:
            st.markdown(jit.reuse_sentence(result))
    _ui.show_code(jit.donation_demo, jit.DonationRun, label=_("Show the code that ran"))


def persistent_cache_tab(workload: jit.Workload) -> None:
    st.markdown(
        _(
            "With `jax_compilation_cache_dir` set, compiled programs are kept on disk (those "
            "whose compile took at least `jax_persistent_cache_min_compile_time_secs`: 1 s by "
            "default, so a quick compile is not kept; this demo sets it to 0), so a **new "
            "process** compiling the same function reads them instead of compiling. Two "
            "fresh Python processes per round, one after the other, share an empty cache "
            "directory."
        )
    )
    rounds = st.slider(_("rounds"), 1, 5, 2, key="jit_cache_rounds", bind="query-params")
    demo = sandboxed("compile_cache", workload, _("Compile in two processes"), rounds=rounds)
    if demo is not None:
        _ui.chart(jit.cache_figure, demo, key="jit_pcache_chart")
        st.markdown(jit.cache_sentence(demo))
        st.caption(
            _("Settings of each process: {settings}").format(
                settings=", ".join(
                    f"`{k}={_(v) if isinstance(v, str) else v}`"
                    for k, v in jit.CACHE_SETTINGS.items()
                )
            )
        )
    _ui.show_code(jit.CACHE_CHILD, jit.persistent_cache_demo, label=_("Show the code that ran"))


def trace_tab(workload: jit.Workload) -> None:
    st.markdown(
        _(
            "`jax.profiler.trace` records every XLA kernel that ran, with its program and op. "
            "Traced here: one eager call, then jitted calls, of the function and size above."
        )
    )
    demo = sandboxed("trace", workload, _("Record a profiler trace"))
    if demo is None:
        _ui.show_code(jit.trace_demo, label=_("Show the code that ran"))
        return
    st.markdown(jit.trace_sentence(demo))
    st.dataframe(
        jit.trace_table(demo),
        hide_index=True,
        key="jit_trace_table",
        column_config={
            "program": _("program"),
            "kernel (HLO op)": _("kernel (HLO op)"),
            "runs": _("runs"),
            "total": _("total"),
            "per run": _("per run"),
        },
    )
    data = demo.download_data()
    if data:
        st.download_button(
            _("Download the trace ({size} kB, opens in ui.perfetto.dev)").format(
                size=f"{demo.download_bytes / 1e3:.0f}"
            ),
            data,
            file_name=demo.download_name,
            mime="application/gzip",
            key="jit_trace_download",
            icon=":material/download:",
        )
    else:
        st.caption(
            _(
                "The trace is {size} MB compressed, over the {limit} MiB this page sends: "
                "summary only."
            ).format(
                size=f"{demo.download_bytes / 1e6:.1f}",
                limit=f"{jit.TRACE_MAX_DOWNLOAD_BYTES / 2**20:.0f}",
            )
        )
    st.caption(
        _("Files JAX wrote: {files}").format(
            files=", ".join(f"`{n}` ({b:,} B)" for n, b in demo.files)
        )
    )
    _ui.show_code(jit.trace_demo, jit.summarise_trace, label=_("Show the code that ran"))


def measured(draw):
    """A view that needs this setting's measurement: drawn from it, or a note that there is none
    (the refusal above says why)."""

    def view() -> None:
        if failure is None and shared is not None:
            draw(shared.value)
        else:
            st.caption(_("Nothing measured: fix the input above."))

    return view


def race_of(m: jit.Measurement) -> jit.SharedResult | None:
    """Eager against jit and the article's stopwatch of this setting: kept, or measured now,
    its stages shown (``None``: it failed, and the page said why)."""
    force = st.session_state.pop("jit_race_force", None) == jit.key_of(m.workload)
    kept = None if force else jit.shared_race(m.workload)
    if kept is not None:
        return kept
    with _ui.staged(_("Measuring eager against jit")) as stages:
        try:
            kept = jit.race_shared(m, stages, force=force, owner=N_("another visitor"))
        except sandbox.TaskFailed as err:
            stages.clear()
            _ui.show_error(markdown.escape(err.explain(_("Measuring this function"))))
            return None
        except Exception as err:  # the function raised at this size after all
            stages.clear()
            _ui.show_error(err, _("**The function failed:** "))
            return None
    r = kept.value
    cut = _(" (cut at its time budget)") if r.cut else ""
    stages.done(
        _("Eager against jit measured on {device}, {where}, in {seconds}").format(
            device=r.device, where=r.where(), seconds=timing.format_seconds(r.seconds)
        )
        + cut
    )
    return kept


def raced(draw):
    """A view that needs eager against jit: measured when such a view first opens for this
    setting (most of a new setting's cost, so not before), then kept like the measurement."""

    def view() -> None:
        if failure is not None or shared is None:
            st.caption(_("Nothing measured: fix the input above."))
        elif (kept := race_of(shared.value)) is not None:
            draw(shared.value, kept)

    return view


#: The page's views, in the order of its tabs: what XLA and the clock show of this setting,
#: two of the article's examples, and three demos beyond the article, each in a fresh process.
VIEWS = {
    _("Stages"): measured(lambda m: stages_tab(m, shared, workload)),
    _("Eager vs jit"): raced(lambda m, r: compare_tab(r, workload)),
    _("Size sweep"): measured(lambda m: sweep_tab(workload, shared.number, m.device)),
    _("Article vs honest"): raced(article_tab),
    _("Roofline"): measured(lambda m: roofline_tab(m, preset)),
    _("Compile cache"): cache_tab,
    _("Side effects"): side_effects_tab,
    _("Donation"): measured(lambda m: donation_tab(workload)),
    _("Persistent cache"): measured(lambda m: persistent_cache_tab(workload)),
    _("Profiler trace"): measured(lambda m: trace_tab(workload)),
}
_ui.lazy_tabs(
    VIEWS,
    key="jit_tab",
    keep={
        _("Size sweep"): ("jit_sweep_calls",),
        _("Compile cache"): ("jit_cache_tanh", "jit_cache_len", "jit_cache_dtype"),
        _("Side effects"): ("jit_counter_calls",),
        _("Persistent cache"): ("jit_cache_rounds",),
    },
)

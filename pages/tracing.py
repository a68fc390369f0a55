"""Tracing & jaxpr: one function at every stage, what tracers are, recompilation, and loops."""

from pages import _ui  # every page imports it first: see its docstring

import inspect
import re
from collections.abc import Callable

import pandas as pd
import streamlit as st

from jaxplay import sandbox, tracing
from jaxplay.core import capture, markdown
from jaxplay.core.i18n import _, ngettext
from jaxplay.hosting import catalog

st.title(":material/account_tree: " + _("Tracing & jaxpr"))
st.write(
    _(
        "`jit` runs your Python with **tracers** in place of arrays, once per new input signature "
        "(shapes, dtypes, weak types, static arguments' values), and records a **jaxpr**; "
        "JAX lowers it to **StableHLO**, and XLA optimizes that into the **HLO** it runs. Pick a "
        "function and a source line to see what each stage made of it."
    )
)

CODE_LAB = "code_lab"
EXAMPLE_CODE = "import jax.numpy as jnp\n\n\ndef f(x, y):\n    z = x * y\n    return z + 1\n"
TITLES = {p.key: _(p.title) for p in tracing.PRESETS} | {
    CODE_LAB: _("a function from the Code Lab")
}
Args = tuple[tuple[tuple[int, ...], str], ...]


@_ui.cached(max_entries=64, show_spinner=False)
def preset_stages(key: str, args: Args, _turn: _ui.Turn | None = None) -> tracing.SandboxStages:
    """In the compute worker: each new shape compiled programs (1.6 MB) JAX kept in the server
    for as long as the preset's function lives (the whole process)."""
    return sandbox.timed(tracing.preset_stages, key, args, turn=_turn)


class SandboxFailed(Exception):
    """A sandbox run that failed (not cached: the next rerun tries again)."""


@st.cache_data(max_entries=16, show_spinner=_("Staging your function in the sandbox…"))
def sandboxed(
    source: str, function: str, args: Args, _visitor: str | None
) -> tracing.SandboxStages:
    specs = [tracing.InputSpec(s, d) for s, d in args]
    result = tracing.sandbox_stages(source, function, specs, visitor=_visitor)
    if result.error:
        raise SandboxFailed(result.error)
    return result


def arg_inputs(
    prefix: str, names: tuple[str, ...], defaults: Args, dtypes: tuple[str, ...]
) -> Args | None:
    """A shape box and a dtype picker per argument; ``None`` (with the message shown) if bad."""
    if not defaults:
        return ()
    specs, ok = [], True
    labels = {d: tracing.dtype_label(d) for d in dtypes}  # computed now, in the visitor's language
    columns = st.columns(len(defaults))
    for i, (col, (shape, dtype)) in enumerate(zip(columns, defaults, strict=True)):
        name = names[i] if i < len(names) else _("arg {i}").format(i=i)
        text = _ui.text_box(
            col,
            _("`{name}` shape").format(name=name),
            ", ".join(map(str, shape)) or "()",
            key=f"tracing_{prefix}_shape_{i}",
            bind="query-params",
            help=_("Sizes separated by commas; () for a scalar."),
        )
        dt = col.selectbox(
            _("`{name}` dtype").format(name=name),
            dtypes,
            index=dtypes.index(dtype),
            format_func=labels.get,
            key=f"tracing_{prefix}_dtype_{i}",
            bind="query-params",
        )
        try:
            specs.append((tracing.parse_shape(text), dt))
        except ValueError as err:
            col.error(
                _("**Shape of `{name}`:** {reason}").format(
                    name=name, reason=markdown.escape(_ui.scrub(err))
                ),
                icon=":material/error:",
            )
            ok = False
    return tuple(specs) if ok else None


def show_error(error: str) -> None:
    """JAX's error, as raised, and what an error of its type means for any code, if known."""
    st.error(_("JAX raised an error while staging this function:"), icon=":material/error:")
    st.code(_ui.scrub(error), language=None, wrap_lines=True)
    if hint := tracing.error_hint(error):
        st.info(
            _("**{title}.** {why}\n\n**Fix:** {fix}").format(
                title=_(hint.title), why=_(hint.why), fix=_(hint.fix)
            )
        )


def pick_by_labels() -> dict[str, str]:
    """The ways to pick the highlighted line: option values (kept in links) and their labels."""
    return {
        "source line": _("source line"),
        "jaxpr equation": _("jaxpr equation"),
        "HLO instruction": _("HLO instruction"),
    }


def pick_line(staged: tracing.Staged, lines: list[str], first: int) -> int | None:
    """The source line to highlight, chosen by line, by jaxpr equation or by HLO instruction."""
    maps = (staged.jaxpr_lines, staged.stablehlo_lines, staged.hlo_lines)
    mapped = sorted({n for m in maps for n in m if n is not None})
    ways = pick_by_labels()
    if not mapped:
        st.info(_("JAX recorded no location in the shown source for this function."))
        return None
    left, right = st.columns([1, 2])
    by = left.radio(
        _("Highlight by"),
        list(ways),
        format_func=ways.get,
        horizontal=True,
        key="tracing_pick_by",
        bind="query-params",
    )
    if by == "jaxpr equation":
        rows = [r for r in staged.equations if r.source_line is not None]
        row = right.selectbox(
            _("Equation"),
            rows,
            format_func=lambda r: f"eqn {r.path}: {r.primitive} → {r.outputs}",
            key="tracing_pick_eqn",
            bind="query-params",
        )
        return row.source_line if row else None
    if by == "HLO instruction":
        hlo = _ui.scrub(staged.hlo_text).splitlines()
        idx = [i for i, n in enumerate(staged.hlo_lines) if n is not None]
        i = right.selectbox(
            _("Instruction"),
            idx,
            format_func=lambda i: hlo[i].strip()[:100],
            key="tracing_pick_hlo",
            bind="query-params",
        )
        return staged.hlo_lines[i] if i is not None else None
    return right.selectbox(
        _("Source line"),
        mapped,
        format_func=lambda n: (
            f"{n}: {lines[n - first].strip() if 0 <= n - first < len(lines) else ''}"
        ),
        key="tracing_line",
        bind="query-params",
    )


def pane(col, title: str, text: str, sources, selected, first: int = 1, only=False) -> None:
    count, text = tracing.highlighted(sources, selected), _ui.scrub(text)
    lit = ngettext("{n} line from line {line}", "{n} lines from line {line}", count)
    col.markdown(
        f"**{title}**" + (" · " + lit.format(n=f"{count:,}", line=selected) if selected else "")
    )
    col.html(tracing.pane_html(text, sources, selected, first_number=first, only_marked=only))


def stages_tab() -> None:
    key = st.selectbox(
        _("Function"),
        list(TITLES),
        format_func=TITLES.get,
        key="tracing_preset",
        bind="query-params",
    )
    name = ""
    if key == CODE_LAB:
        chosen = lab_function()
        if chosen is None:
            return
        source, name, arity = chosen
        names = tuple(_("arg {i}").format(i=i) for i in range(arity))
        defaults: Args = (((3,), "float32"),) * arity
        dtypes = tracing.DTYPES  # the sandbox stages real dtypes only
        first = 1
        st.caption(tracing.lab_caption(sandbox.get_pool().isolated))
    else:
        preset = tracing.find_preset(key)
        st.caption(_(preset.blurb))
        source, first, _last = tracing.preset_source(preset)
        names, defaults, dtypes = preset.arg_names, preset.args, tracing.PRESET_DTYPES
    args = arg_inputs(key, names, defaults, dtypes)
    if args is None:
        return

    doing, done = _("Tracing, lowering and compiling…"), _("Staged")
    staged = None if key == CODE_LAB else _ui.computed(doing, done, preset_stages, key, args)

    def variant(vname: str) -> tracing.Variant:
        if staged is not None:  # a preset, every variant staged above
            found = staged.variant(vname)
        else:
            found = sandboxed(source, name, args, _ui.visitor_id()).variant(vname)
        missing = _("the sandbox returned no such variant")
        return found or tracing.Variant(vname, "", None, missing)

    try:
        main = variant("f")
    except SandboxFailed as err:
        # The visitor's own exception text: shown as code, never as Markdown.
        st.error(_("**Running your code and staging it failed:**"), icon=":material/error:")
        st.code(_ui.scrub(err), language=None, wrap_lines=True)
        return
    if main.staged is None:
        st.code(source, language="python", line_numbers=True)
        show_error(main.error or "")
        return
    show_stages(main.staged, source, first, args, names, variant)


def lab_function() -> tuple[str, str, int] | None:
    """The Code Lab's code (or an example when it is empty), the function of it to stage and
    how many arguments it takes; ``None`` after saying why there is none."""
    lab_source = _ui.capped(
        st.session_state.get("code_lab_source") or "", sandbox.MAX_SOURCE_CHARS, _("The code")
    )
    source = lab_source or EXAMPLE_CODE
    if not lab_source:
        st.info(_("The Code Lab is empty: staging this example. Write your own there."))
    try:
        functions = dict(sandbox.function_arities(source))
    except SyntaxError as err:
        st.error(
            _("**The Code Lab's code does not parse** (line {line}): {reason}").format(
                line=err.lineno, reason=markdown.escape(err.msg)
            )
        )
        return None
    if not functions:
        st.warning(_("The Code Lab's code defines no top-level function to stage."))
        return None
    name = st.selectbox(
        _("Function to stage"), list(functions), key="tracing_function", bind="query-params"
    )
    if problem := tracing.arity_problem(name, functions[name]):
        st.error(problem, icon=":material/block:")
        return None
    return source, name, functions[name]


def show_stages(
    staged: tracing.Staged,
    source: str,
    first: int,
    args: Args,
    names: tuple[str, ...],
    variant: Callable[[str], tracing.Variant],
) -> None:
    """The function beside its jaxpr, StableHLO and optimized HLO, a picked line lit in all."""
    lines = source.splitlines()
    selected = pick_line(staged, lines, first)
    only = st.toggle(
        _("Only the highlighted lines"),
        False,
        key="tracing_only",
        bind="query-params",
        disabled=selected is None,
    )
    top, bottom = st.columns(2), st.columns(2)
    pane(top[0], "Python", source, range(first, first + len(lines)), selected, first)
    pane(top[1], "jaxpr", staged.jaxpr_text, staged.jaxpr_lines, selected, only=only)
    pane(bottom[0], "StableHLO", staged.stablehlo_text, staged.stablehlo_lines, selected, only=only)
    pane(bottom[1], _("Optimized HLO"), staged.hlo_text, staged.hlo_lines, selected, only=only)
    st.markdown(tracing.jaxpr_story(staged, [tracing.InputSpec(s, d) for s, d in args], names))
    for note in staged.notes:
        st.caption(f":material/info: {markdown.escape(tracing.note_text(note))}")
    views(staged, selected, variant)
    _ui.show_code(tracing.stage)


def views(staged: tracing.Staged, selected: int | None, variant) -> None:
    graph, diff = _("Graph"), _("Diff")
    _ui.lazy_tabs(
        {
            _("Equations"): lambda: equations_view(staged),
            _("XLA fusions"): lambda: fusions_view(staged),
            graph: lambda: graph_view(staged, selected),
            diff: lambda: diff_view(variant),
        },
        key="tracing_view",
        keep={
            graph: ("tracing_expand",),
            diff: ("tracing_diff_left", "tracing_diff_right", "tracing_diff_mode"),
        },
    )


def equations_view(staged: tracing.Staged) -> None:
    rows = staged.equations
    top = sum(1 for r in rows if r.depth == 0)
    st.caption(
        ngettext(
            "{n} equation ({top} at the top level, the rest in sub-jaxprs).",
            "{n} equations ({top} at the top level, the rest in sub-jaxprs).",
            len(rows),
        ).format(n=f"{len(rows):,}", top=top)
        if top < len(rows)
        else ngettext("{n} equation.", "{n} equations, all at the top level.", len(rows)).format(
            n=f"{len(rows):,}"
        )
    )
    frame = pd.DataFrame(
        {
            "eqn": [r.path for r in rows],
            "primitive": ["› " * r.depth + r.primitive for r in rows],
            "inputs": [r.inputs for r in rows],
            "outputs": [r.outputs for r in rows],
            "params": [r.params for r in rows],
            "line": [r.source_line for r in rows],
        }
    )
    st.dataframe(
        frame,
        hide_index=True,
        key="tracing_equations",
        column_config={
            "eqn": st.column_config.TextColumn(width="small", pinned=True),
            "primitive": st.column_config.TextColumn(_("primitive")),
            "inputs": st.column_config.TextColumn(_("inputs")),
            "outputs": st.column_config.TextColumn(_("outputs")),
            "line": st.column_config.NumberColumn(_("line"), width="small"),
            "params": st.column_config.TextColumn(
                width="large", help=_("Scroll sideways, or hover a cell, for all of it")
            ),
        },
    )


def fusions_view(staged: tracing.Staged) -> None:
    st.caption(
        ngettext(
            "{n} fusion: each is one kernel, whose intermediates never go to memory. Ops left "
            "outside fusions run as kernels of their own.",
            "{n} fusions: each is one kernel, whose intermediates never go to memory. Ops left "
            "outside fusions run as kernels of their own.",
            len(staged.fusions),
        ).format(n=f"{len(staged.fusions):,}")
    )
    frame = pd.DataFrame(
        {
            "fusion": [f.name for f in staged.fusions],
            "kind": [f.kind for f in staged.fusions],
            "ops inside": [" → ".join(f.ops) for f in staged.fusions],
            "output": [f.shape for f in staged.fusions],
            "lines": [", ".join(map(str, f.source_lines)) for f in staged.fusions],
        }
    )
    st.dataframe(
        frame,
        hide_index=True,
        key="tracing_fusions",
        column_config={
            "fusion": st.column_config.TextColumn(_("fusion")),
            "kind": st.column_config.TextColumn(_("kind")),
            "ops inside": st.column_config.TextColumn(_("ops inside")),
            "output": st.column_config.TextColumn(_("output")),
            "lines": st.column_config.TextColumn(_("lines")),
        },
    )


def graph_view(staged: tracing.Staged, selected: int | None) -> None:
    options = dict(tracing.expandable(staged.jaxpr))
    expand = st.multiselect(
        _("Expand sub-jaxprs"),
        list(options),
        format_func=options.get,
        key="tracing_expand",
        bind="query-params",
    )
    graph = tracing.build_graph(
        staged.jaxpr, expand=expand, arg_names=staged.arg_names, mark_line=selected
    )
    if graph.message:
        st.warning(markdown.escape(graph.message), icon=":material/warning:")
    drawn = ngettext("{n} equation", "{n} equations", graph.nodes).format(n=f"{graph.nodes:,}")
    edges = len(graph.edges)
    st.caption(
        _(
            "{equations}, {edges}. Arrows carry the variables' types; purple boxes hold "
            "sub-jaxprs; the highlighted line's equations are yellow."
        ).format(
            equations=drawn,
            edges=ngettext("{n} edge", "{n} edges", edges).format(n=f"{edges:,}"),
        )
    )
    st.graphviz_chart(graph.dot)


def diff_view(variant) -> None:
    choices = [f"{v} · {s}" for v in tracing.VARIANTS for s, _attr in tracing.STAGES]
    labels = {c: tracing.choice_label(c) for c in choices}
    c1, c2, c3 = st.columns([2, 2, 2])
    left = c1.selectbox(
        _("Left"),
        choices,
        index=0,
        format_func=labels.get,
        key="tracing_diff_left",
        bind="query-params",
    )
    right = c2.selectbox(
        _("Right"),
        choices,
        index=6,
        format_func=labels.get,
        key="tracing_diff_right",
        bind="query-params",
    )
    modes = {"side by side": _("side by side"), "unified": _("unified")}
    mode = c3.radio(
        _("Show"),
        list(modes),
        format_func=modes.get,
        key="tracing_diff_mode",
        bind="query-params",
        horizontal=True,
    )
    plain = c3.toggle(
        _("Hide source locations"), True, key="tracing_diff_plain", bind="query-params"
    )
    texts = []
    for choice in (left, right):
        vname, stage = choice.split(" · ")
        found = variant(vname)
        if found.staged is None:
            st.error(
                _("**{variant}** could not be staged:").format(variant=vname),
                icon=":material/error:",
            )
            st.code(_ui.scrub(found.error), language=None, wrap_lines=True)
            return
        st.caption(f"**{vname}:** {markdown.escape(tracing.note_text(found.note))}")
        text = found.staged.text_of(stage)
        texts.append(tracing.without_locations(text) if plain else text)
    end = _(".")
    for note in tracing.diff(*texts).notes:  # what the bounded diff left out, if anything
        st.caption(f":material/content_cut: {note[0].upper()}{note[1:]}{end}")
    if mode == "unified":
        st.code(tracing.unified_diff(*texts, left, right) or _("(identical)"), language="diff")
    else:
        rows = tracing.side_by_side(*texts)
        changed = sum(r.tag != "equal" for r in rows)
        st.caption(_("{n} of {total} rows differ.").format(n=changed, total=len(rows)))
        st.html(tracing.diff_html(rows))


@st.cache_data(max_entries=1, show_spinner=_("Calling peek under each transform…"))
def trace_views() -> tuple[tracing.TraceView, ...]:
    return tracing.trace_views()


@st.cache_data(max_entries=32, show_spinner=_("Running the pitfall's code…"))
def outcome(key: str, fix: int) -> capture.Outcome:
    pitfall = tracing.find_pitfall(key)
    return capture.run(pitfall.broken if fix < 0 else pitfall.fixes[fix])


def show_outcome(result: capture.Outcome) -> None:
    if result.ok:
        st.success(
            _("Returns `{value}`").format(value=result.value), icon=":material/check_circle:"
        )
    else:
        st.error(
            _("**{error}** (raised, caught here)").format(error=result.error_type),
            icon=":material/error:",
        )
        st.code(_ui.scrub(result.message or ""), language=None, wrap_lines=True)
    if result.stdout:
        st.code(result.stdout.rstrip(), language=None)


def tracers_tab() -> None:
    st.subheader(_("What a function sees"))
    st.write(_("`peek` prints the type and shape of what it receives; `x = jnp.arange(3.0)`."))
    st.code(inspect.getsource(tracing.peek), language="python")
    printed = "\n\n".join(
        f"# {v.how}\n{v.outcome.stdout.rstrip() or v.outcome.error_type}" for v in trace_views()
    )
    st.code(printed, language=None)
    st.caption(
        _("Under `vmap`, the tracer has the shape of *one* example: the batch axis is hidden.")
    )
    st.subheader(_("Pitfalls, run for real"))
    for pitfall in tracing.PITFALLS:
        with st.expander(_(pitfall.title), expanded=pitfall.key == "if"):
            st.code(pitfall.broken_source, language="python")
            show_outcome(outcome(pitfall.key, -1))
            st.markdown(
                _("**Why.** {why}\n\n**Fix.** {fix}").format(
                    why=_(pitfall.why), fix=_(pitfall.fix_note)
                )
            )
            for i, source in enumerate(pitfall.fix_sources):
                st.code(source, language="python")
                show_outcome(outcome(pitfall.key, i))


@_ui.cached(max_entries=32, show_spinner=False)
def lab(
    calls: tuple[tracing.LabCall, ...], redefine: bool, _turn: _ui.Turn | None = None
) -> tracing.LabRun:
    """In the compute worker: a table of new shapes is a dozen compiles (1 CPU-s) JAX kept."""
    return sandbox.timed(tracing.run_recompilation_lab, calls, redefine=redefine, turn=_turn)


def recompilation_tab() -> None:
    scenarios = {s.key: s for s in tracing.SCENARIOS}
    titles = {k: _(s.title) for k, s in scenarios.items()}
    key = st.selectbox(
        _("Scenario"),
        list(scenarios),
        format_func=titles.get,
        key="tracing_scenario",
        bind="query-params",
    )
    scenario = scenarios[key]
    st.caption(_("Edit the calls below: add rows, change shapes, dtypes, values."))
    table = _ui.table_editor(
        pd.DataFrame(scenario.editor_columns()),
        num_rows="dynamic",
        column_config={
            "x shape": st.column_config.TextColumn(_("x shape")),
            "x dtype": st.column_config.SelectboxColumn(
                _("x dtype"), options=tracing.LAB_DTYPES, required=True
            ),
            "use_tanh": st.column_config.SelectboxColumn(
                options=list(tracing.STATIC_VALUES), required=True
            ),
        },
        key=f"tracing_calls_{key}",
        rows=tracing.MAX_LAB_CALLS,
    )
    redefine = st.toggle(
        _("Redefine the function before each call"),
        scenario.redefine,
        key=f"tracing_redefine_{key}",
        bind="query-params",
    )
    try:
        calls = tracing.lab_calls(list(table.itertuples(index=False)))
    except ValueError as err:
        st.error(
            _("**Not run:** {reason}.").format(reason=markdown.escape(_ui.scrub(err))),
            icon=":material/error:",
        )
        return
    # The lesson counts the scenario's own calls: said only while they are the ones run.
    if calls == scenario.calls and redefine == scenario.redefine:
        st.caption(_(scenario.lesson))
    else:
        st.caption(_("These are your calls, not the scenario's: the counts below are theirs."))
    doing = _("Calling the jitted function, logging each compilation…")
    run = _ui.computed(doing, _("Called"), lab, calls, redefine)
    show_lab(run)


def show_lab(run: tracing.LabRun) -> None:
    """How many compilations the calls made, each call's outcome, and JAX's reasons and log."""
    c1, c2 = st.columns(2)
    c1.metric(_("Compilations"), run.compilations)
    c2.metric(_("Cache size after the last call"), run.rows[-1].cache_size if run.rows else 0)
    st.dataframe(pd.DataFrame(run.table()), hide_index=True, key="tracing_lab_table")
    for r in run.rows:
        if r.error or r.explanation:
            said = (
                _("**Call {call}** ({arguments}): error")
                if r.error
                else _("**Call {call}** ({arguments}): JAX's reason")
            )
            st.markdown(said.format(call=r.call, arguments=r.arguments))
            st.code(_ui.scrub(r.error or r.explanation), language=None, wrap_lines=True)
    with st.expander(_("JAX's compile log (jax_log_compiles, jax_explain_cache_misses)")):
        _ui.error_code(run.log or _("(nothing compiled)"))  # it names files: paths scrubbed
    _ui.show_code(tracing.define_function, tracing.run_recompilation_lab)


@st.cache_data(max_entries=8, show_spinner=False)
def growth(lengths: tuple[int, ...]) -> tuple[tracing.GrowthRow, ...]:
    return tracing.loop_growth(lengths)


def loops_tab() -> None:
    st.write(
        _(
            "A Python loop runs while tracing: each turn appends its equations, so the jaxpr grows "
            "with the length (and XLA compiles all of it). `fori_loop` and `scan` trace the body "
            "once."
        )
    )
    longest = st.select_slider(
        _("Longest loop"),
        [2**k for k in range(1, 11)],
        value=256,
        key="tracing_loop_max",
        bind="query-params",
    )
    lengths = tuple(2**k for k in range(0, 11) if 2**k <= longest)
    with st.spinner(_("Tracing each loop at each length…")):
        rows = growth(lengths)
    _ui.chart(tracing.loop_growth_figure, rows, key="tracing_loop_chart")
    ends = sorted({r.length for r in rows})
    for length in dict.fromkeys((ends[0], ends[-1])):
        counts = _(", ").join(
            f"{_(r.loop)} "
            + ngettext("{n} equation", "{n} equations", r.equations).format(n=f"{r.equations:,}")
            for r in rows
            if r.length == length
        )
        st.caption(_("Length {length}: {counts}.").format(length=length, counts=counts))
    wide = pd.DataFrame([r.__dict__ for r in rows]).pivot(
        index="length", columns="loop", values="equations"
    )
    wide = wide.rename(columns=lambda loop: _(loop)).rename_axis(
        index=_("length"), columns=_("loop")
    )
    st.dataframe(wide, key="tracing_loop_table")
    _ui.show_code(tracing.python_loop, tracing.fori_loop_version, tracing.scan_version)


STAGES, RECOMPILATION, LOOPS = _("Stages"), _("Recompilation"), _("Python vs lax loops")
#: The widgets of each tab (some named by the function or scenario chosen), kept while closed.
KEEP = {
    STAGES: r"tracing_(preset|function|only|pick_\w+|line|view|expand|diff_\w+"
    r"|\w+_(shape|dtype)_\d+)",
    RECOMPILATION: r"tracing_(scenario|redefine_\w+)",
    LOOPS: r"tracing_loop_max",
}
_ui.lazy_tabs(
    {
        STAGES: stages_tab,
        # pages/sharp-bits.py links to this tab by its label: the same message there.
        _("Tracers"): tracers_tab,
        RECOMPILATION: recompilation_tab,
        LOOPS: loops_tab,
    },
    key="tracing_tab",
    keep={
        label: tuple(k for k in st.session_state if re.fullmatch(pattern, k))
        for label, pattern in KEEP.items()
    },
)
if any(p.url_path == "code-lab" for p in catalog.PAGES):
    st.page_link(
        catalog.find("code-lab").path,
        label=_("Write your own in the Code Lab"),
        query_params=_ui.linked(),
    )

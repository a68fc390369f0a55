"""Pytrees: what JAX sees in nested containers, your own classes, static fields and jit's cache."""

from pages import _ui  # every page imports it first: see its docstring

import pandas as pd
import streamlit as st

from jaxplay import pytrees, sandbox
from jaxplay.core import markdown
from jaxplay.core.i18n import _, ngettext

st.title(":material/park: " + _("Pytrees"))
st.write(
    _(
        "Every JAX transform takes and returns **pytrees**: any nesting of registered containers "
        "(lists, tuples, dicts, `None`, your own registered classes) with **leaves**, usually "
        "arrays, at the ends. Transforms act on the leaves; the containers, the tree's "
        "**structure**, travel along unchanged."
    )
)


def leaves_text(n: int) -> str:
    return ngettext("{n} leaf", "{n} leaves", n).format(n=f"{n:,}")


def times_text(n: int) -> str:
    return ngettext("{n} time", "{n} times", n).format(n=f"{n:,}")


@st.cache_data(max_entries=64, show_spinner=_("Asking JAX what it sees in the tree…"))
def anatomy(example: str, literal: str, fn_name: str) -> pytrees.Anatomy:
    tree = (
        pytrees.parse_literal(literal)
        if example == pytrees.LITERAL
        else pytrees.find_example(example).build()
    )
    return pytrees.describe(tree, pytrees.MAP_FUNCTIONS[fn_name])


def basics_tab() -> None:
    """The story: pick a tree (or type one) and a function, see the tree as JAX sees it."""
    example, fn_name, literal = basics_settings()
    try:
        found = anatomy(example or pytrees.EXAMPLES[0].key, literal or "", fn_name or "double")
    except pytrees.LiteralError as err:
        _ui.input_error(err, _("Not accepted:"))
        return
    show_anatomy(found)
    fn = pytrees.MAP_FUNCTIONS[found.fn_name]
    if example == pytrees.LITERAL:
        _ui.show_code(pytrees.tree_functions, fn, f"tree = {literal.strip()}")
        source = pytrees.snippet(literal.strip(), fn)
    else:
        build = pytrees.find_example(example).build
        _ui.show_code(pytrees.tree_functions, fn, build)
        source = pytrees.snippet(build, fn)
    _ui.code_lab_button(source, key="pytrees_open_basics")


def basics_settings() -> tuple[str, str, str]:
    """The example (or the typed literal) and the function ``jax.tree.map`` applies."""
    titles = {e.key: _(e.title) for e in pytrees.EXAMPLES} | {pytrees.LITERAL: _("Type your own…")}
    left, right = st.columns([3, 2])
    example = left.selectbox(
        _("Tree"),
        list(titles),
        format_func=titles.get,
        key="pytrees_example",
        bind="query-params",
    )
    fn_name = right.segmented_control(
        _("jax.tree.map applies"),
        list(pytrees.MAP_FUNCTIONS),
        default="double",
        required=True,
        key="pytrees_fn",
        bind="query-params",
    )
    literal = ""
    if example == pytrees.LITERAL:
        literal = _ui.text_box(
            st,
            _("Your pytree, as a Python literal"),
            pytrees.DEFAULT_LITERAL,
            max_chars=pytrees.MAX_LITERAL_CHARS,
            key="pytrees_literal",
            bind="query-params",
            help=_(
                "Numbers, True/False, None, [lists], (tuples) and {{dicts}}; at most {nodes} "
                "nodes, {depth} levels deep. Read with ast.literal_eval, never run."
            ).format(nodes=pytrees.MAX_LITERAL_NODES, depth=pytrees.MAX_LITERAL_DEPTH),
        )
    return example, fn_name, literal


def show_anatomy(found: pytrees.Anatomy) -> None:
    """What JAX sees: the counts, the tree, the flattened leaves, the mapped and rebuilt tree."""
    empty = (
        ngettext(
            ", {n} of which holds no leaf (`None`, an empty container, or one holding only those)",
            ", {n} of which hold no leaf (`None`, an empty container, or one holding only those)",
            found.n_empty,
        ).format(n=found.n_empty)
        if found.n_empty
        else ""
    )
    st.markdown(
        _(
            "JAX sees **{leaves}** and {others}{empty}. Transforms see only the leaves: "
            "`jax.tree.map({fn}, tree)` called `{fn}` {times}, once per leaf."
        ).format(
            leaves=leaves_text(found.n_leaves),
            others=ngettext("{n} other node", "{n} other nodes", found.n_containers).format(
                n=f"{found.n_containers:,}"
            ),
            empty=empty,
            fn=found.fn_name,
            times=times_text(found.n_leaves),
        )
    )
    if found.dict_orders:  # one note for every dict whose keys flatten in another order
        orders = _("; ").join(
            _("at {where} they were written {written} and come out {flattened}").format(
                where=markdown.code(_("the root") if where == "the root" else where),
                written=markdown.code(", ".join(written)),
                flattened=markdown.code(", ".join(flattened)),
            )
            for where, written, flattened in found.dict_orders
        )
        st.info(
            _("`flatten` sorts dict keys: {orders}.").format(orders=orders),
            icon=":material/sort_by_alpha:",
        )
    _ui.chart(
        pytrees.tree_figure,
        found.nodes,
        _("The tree as jax.tree.structure sees it"),
        key="pytrees_tree_chart",
    )
    st.markdown(_("**`jax.tree.flatten(tree)`**: the leaves in order, and the structure"))
    st.dataframe(
        pd.DataFrame(
            {
                "#": range(found.n_leaves),
                _("key path"): found.leaf_paths,
                _("leaf"): found.leaf_texts,
            }
        ),
        hide_index=True,
        key="pytrees_leaves",
    )
    st.code(found.structure, language=None, wrap_lines=True)
    st.markdown(
        _("**`jax.tree.map({fn}, tree)`**: same structure, new leaves").format(fn=found.fn_name)
    )
    st.code(found.mapped, language=None, wrap_lines=True)
    st.markdown(
        _("**`jax.tree.unflatten(treedef, range(n))`**: each leaf replaced by its position")
    )
    st.code(found.positions, language=None, wrap_lines=True)


@st.cache_data(max_entries=8, show_spinner=_("Trying the class with JAX…"))
def class_demo(key: str) -> pytrees.ClassDemo:
    return pytrees.class_demo(key)


def classes_tab() -> None:
    titles = {r.key: _(r.title) for r in pytrees.REGISTRATIONS}
    key = st.segmented_control(
        _("The layer's class"),
        list(titles),
        format_func=titles.get,
        default="dataclass",
        required=True,
        key="pytrees_class",
        bind="query-params",
    )
    registration = pytrees.find_registration(key or "dataclass")
    demo = class_demo(registration.key)
    failed = [(text, o) for text, o in demo.outcomes if not o.ok]
    name = registration.cls.__name__
    if failed:
        raised = ", ".join(f"{text.split('(')[0]}: {o.error_type}" for text, o in failed)
        st.warning(
            _(
                "Not registered, a `{name}` is **{leaves}** itself: {failed} of {total} calls "
                "below raise ({raised})."
            ).format(
                name=name,
                leaves=leaves_text(demo.n_leaves),
                failed=len(failed),
                total=len(demo.outcomes),
                raised=raised,
            ),
            icon=":material/warning:",
        )
    else:
        st.success(
            _(
                "Registered, a `{name}` is a node with **{leaves}**, `w` and `b`: all {total} "
                "calls below work, and `grad` returns a `{name}` of gradients."
            ).format(name=name, leaves=leaves_text(demo.n_leaves), total=len(demo.outcomes)),
            icon=":material/check_circle:",
        )
    st.code(f"jax.tree.structure(layer) = {demo.structure}", language=None, wrap_lines=True)
    _ui.chart(
        pytrees.tree_figure,
        demo.nodes,
        f"layer = make_layer({name})",
        key="pytrees_class_chart",
    )
    for text, outcome in demo.outcomes:
        _ui.show_outcome(outcome, what=f"`{text}`")
    _ui.show_code(
        *registration.parts, pytrees.affine, pytrees.layer_loss, *(fn for _, fn in pytrees.CALLS)
    )
    _ui.code_lab_button(pytrees.class_snippet(registration.key), key="pytrees_open_class")


@st.cache_data(max_entries=64, show_spinner=_("Calling a fresh jitted function…"))
def static_lab(change: str, calls: int, distinct: int) -> pytrees.StaticLab:
    return pytrees.static_lab(change, calls, distinct)


def static_tab() -> None:
    st.write(
        _(
            "A registered dataclass splits its fields: **data** fields are leaves, traced by "
            "`jit`; **meta** (static) fields belong to the structure, which is part of `jit`'s "
            "cache key."
        )
    )
    titles = {c.key: _(c.title) for c in pytrees.CHANGES}
    change = st.selectbox(
        _("From one call to the next, change"),
        list(titles),
        format_func=titles.get,
        key="pytrees_change",
        bind="query-params",
    )
    left, right = st.columns(2)
    calls = left.slider(
        _("Calls"), 1, pytrees.MAX_CALLS, 4, key="pytrees_calls", bind="query-params"
    )
    distinct = right.slider(
        _("Distinct static values (activations)"),
        1,
        len(pytrees.ACTIVATIONS),
        2,
        key="pytrees_distinct",
        bind="query-params",
        disabled=change != "static",
    )
    lab = static_lab(change or "dynamic", int(calls), int(distinct))
    st.dataframe(static_table(lab), hide_index=True, key="pytrees_static_table")
    failed = lab.failed
    if failed is not None:
        st.error(pytrees.explain_failure(lab), icon=":material/error:")
        _ui.error_code(failed.error)
    elif lab.compilations is None:
        st.info(_("This JAX does not say how many programs a jitted function holds."))
    else:
        st.success(pytrees.explain_compiles(lab), icon=":material/memory:")
        st.caption(
            _(
                "One program per distinct meta value and per leaf type (shape, dtype, weak type): "
                "a new value of a data field reuses the program. A Python float is weakly typed, "
                "a `jnp.float32` is not, so the two get a program each."
            )
        )
    chosen = pytrees.find_change(lab.change)
    _ui.show_code(pytrees.Scaled, chosen.fn, chosen.build)
    _ui.code_lab_button(
        pytrees.static_snippet(lab.change, int(calls), int(distinct)), key="pytrees_open_static"
    )


def static_table(lab: pytrees.StaticLab) -> pd.DataFrame:
    """One row per call: the fields passed, the programs jit held after it, the error raised."""
    return pd.DataFrame(
        {
            _("call"): range(1, lab.calls + 1),
            _("scale (data field)"): [r.scale for r in lab.rows],
            _("activation (meta field)"): [r.activation for r in lab.rows],
            _("programs after the call"): [
                _("raised") if r.error else (_("unknown") if r.programs is None else r.programs)
                for r in lab.rows
            ],
            _("error"): [r.error.split(".")[0] if r.error else "" for r in lab.rows],
        }
    )


@st.cache_data(max_entries=4, show_spinner=_("Mapping and differentiating…"))
def empty_demo(none_is_leaf: bool) -> pytrees.EmptyDemo:
    return pytrees.empty_demo(none_is_leaf)


def empty_tab() -> None:
    found = anatomy("none", "", "double")
    _ui.chart(
        pytrees.tree_figure,
        found.nodes,
        _("none_and_empty(): grey nodes hold no leaf"),
        key="pytrees_empty_chart",
    )
    none_is_leaf = st.toggle(
        _("Treat None as a leaf (is_leaf=lambda x: x is None)"),
        key="pytrees_none_is_leaf",
        bind="query-params",
    )
    demo = empty_demo(bool(none_is_leaf))
    if demo.none_is_leaf:
        st.markdown(
            _(
                "With `is_leaf`, `None` is a leaf: **{leaves}**, and `jax.tree.map` called "
                "`show_leaf` {times}, once with `None`, which the function must handle. `[]`, "
                "`()` and {braces} still hold no leaf."
            ).format(
                leaves=leaves_text(len(demo.leaves)), times=times_text(demo.calls), braces="`{}`"
            )
        )
    else:
        st.markdown(
            _(
                "**{leaves}** in a tree of {nodes}: `None`, `[]`, `()` and {braces} are nodes "
                "without children, so `jax.tree.map` called `show_leaf` {times} and left them in "
                "place."
            ).format(
                braces="`{}`",
                leaves=leaves_text(len(demo.leaves)),
                nodes=ngettext("{n} node", "{n} nodes", len(found.nodes)).format(
                    n=f"{len(found.nodes):,}"
                ),
                times=times_text(demo.calls),
            )
        )
    st.markdown(_("**Leaves**"))
    st.code("\n".join(demo.leaves), language=None)
    st.markdown("**`jax.tree.map(show_leaf, tree, is_leaf=…)`**")
    st.code(demo.described, language=None, wrap_lines=True)
    st.markdown(_("**`jax.grad` of a loss of `weights`, with respect to the whole tree**"))
    st.code(demo.grads, language=None, wrap_lines=True)
    st.caption(
        _("`grad` hands the leafless nodes back as they were: optional parameters ride along.")
    )
    _ui.show_code(pytrees.none_leaves, pytrees.show_leaf)
    _ui.code_lab_button(pytrees.empty_snippet(demo.none_is_leaf), key="pytrees_open_empty")


@_ui.cached(max_entries=64, show_spinner=False)
def params_run(
    axes: str, features: int, hidden: int, batch: int, members: int, _turn: _ui.Turn | None = None
) -> pytrees.ParamsRun:
    # In the compute worker: each new size compiled programs (23 MB) JAX kept in the server.
    run = pytrees.params_run
    return sandbox.timed(run, axes, features, hidden, batch, members, turn=_turn)


def params_tab() -> None:
    """The story: a model's parameters through grad (same tree back) and vmap (in_axes as a
    tree), for the in_axes and sizes chosen."""
    choice, sizes = params_settings()
    doing, done = _("Differentiating and vmapping…"), _("Differentiated and vmapped")
    run = _ui.computed(doing, done, params_run, choice.key, *sizes)
    show_params(run, choice)
    _ui.show_code(pytrees.init_params, pytrees.predict, pytrees.loss, pytrees.vmapped_predict)
    _ui.code_lab_button(pytrees.params_snippet(choice.key, *sizes), key="pytrees_open_params")


def params_settings() -> tuple[pytrees.AxesChoice, tuple[int, int, int, int]]:
    """The in_axes chosen, and the features, hidden units, batch and ensemble members."""
    titles = {a.key: f"in_axes={a.written}" for a in pytrees.AXES}
    axes = st.selectbox(
        "vmap(predict, in_axes=…)",
        list(titles),
        format_func=titles.get,
        key="pytrees_axes",
        bind="query-params",
    )
    choice = pytrees.find_axes(axes or "shared")
    cols = st.columns(4)
    features = cols[0].slider(
        _("Features"), 1, pytrees.MAX_FEATURES, 3, key="pytrees_features", bind="query-params"
    )
    hidden = cols[1].slider(
        _("Hidden units"), 1, pytrees.MAX_HIDDEN, 4, key="pytrees_hidden", bind="query-params"
    )
    batch = cols[2].slider(
        _("Batch"), 1, pytrees.MAX_BATCH, 5, key="pytrees_batch", bind="query-params"
    )
    members = cols[3].slider(
        _("Ensemble members"),
        1,
        pytrees.MAX_MEMBERS,
        2,
        key="pytrees_members",
        bind="query-params",
        disabled=not choice.ensemble,
    )
    return choice, (int(features), int(hidden), int(batch), int(members))


def show_params(run: pytrees.ParamsRun, choice: pytrees.AxesChoice) -> None:
    """What grad returned, each leaf's shape and mapped axis, and what vmap returned or raised."""
    if run.grad_same_structure and run.grad_same_shapes:
        returned = _(
            "`jax.grad(loss)(params, xs, ys)` returned **the same tree as `params`**, every leaf "
            "with its parameter's shape (loss {loss})."
        )
    elif run.grad_same_structure:
        returned = _(
            "`jax.grad(loss)(params, xs, ys)` returned **the same tree as `params`** (loss {loss})."
        )
    else:
        returned = _(
            "`jax.grad(loss)(params, xs, ys)` returned a tree **unlike** `params` (loss {loss})."
        )
    st.markdown(returned.format(loss=f"{run.loss_value:.4f}"))
    st.markdown(
        _("`in_axes={written}`: {meaning}.").format(
            written=choice.written, meaning=_(choice.meaning)
        )
    )
    st.dataframe(pd.DataFrame(run.table()), hide_index=True, key="pytrees_params_table")
    if run.vmap.ok:
        st.success(
            _("`vmap(predict, in_axes={written})` returned shape **{shape}**.").format(
                written=choice.written, shape=run.vmap.value
            ),
            icon=":material/check_circle:",
        )
    else:
        st.error(
            _("`vmap(predict, in_axes={written})` raises **{error}**:").format(
                written=choice.written, error=run.vmap.error_type
            ),
            icon=":material/error:",
        )
        _ui.error_code(run.vmap.message)


# The tabs' labels, in the visitor's language (a link names the open tab by its label).
BASICS_TAB, CLASSES_TAB = _("What a pytree is"), _("Your own classes")
STATIC_TAB, EMPTY_TAB, PARAMS_TAB = (
    _("Static vs dynamic fields"),
    _("None & empty"),
    _("grad & vmap"),
)
TABS = {
    BASICS_TAB: basics_tab,
    CLASSES_TAB: classes_tab,
    STATIC_TAB: static_tab,
    EMPTY_TAB: empty_tab,
    PARAMS_TAB: params_tab,
}
_ui.lazy_tabs(
    TABS,
    key="pytrees_tab",
    keep={
        BASICS_TAB: ("pytrees_example", "pytrees_fn", "pytrees_literal"),
        CLASSES_TAB: ("pytrees_class",),
        STATIC_TAB: ("pytrees_change", "pytrees_calls", "pytrees_distinct"),
        EMPTY_TAB: ("pytrees_none_is_leaf",),
        PARAMS_TAB: (
            "pytrees_axes",
            "pytrees_features",
            "pytrees_hidden",
            "pytrees_batch",
            "pytrees_members",
        ),
    },
)

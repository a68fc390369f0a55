"""Compose: stack transforms in any order; the article's compositions as written and fixed."""

import numpy as np
import pandas as pd
import streamlit as st

from jaxplay import compose, sandbox
from jaxplay.core import expr, markdown, timing, words
from jaxplay.core.i18n import N_, _, ngettext
from pages import _ui

NONE = "—"
AGREEMENT_N = 100
FORMULA = N_("type a formula")
BUILDER_KEYS = (
    "compose_preset",
    *(f"compose_t{i}" for i in range(compose.MAX_STACK)),
    "compose_function",
    "compose_shape",
    "compose_formula",
)

st.title(":material/stacks: " + _("Compose"))
st.write(
    _(
        "JAX's transforms take a function and return a function, so they stack: "
        "`jit(vmap(grad(f)))` is a compiled, batched gradient. Build a stack, see its result and "
        "jaxpr, and see the article's compositions run as written and fixed."
    )
)


@_ui.cached(max_entries=64, show_spinner=False)
def pipeline(stack: tuple[str, ...], source: str, shape: tuple[int, ...]) -> compose.PipelineResult:
    return compose.pipeline(stack, source, shape)


@st.cache_data(max_entries=16, show_spinner=False)
def samples(batch: int, features: int) -> compose.PerSample:
    return compose.per_sample(batch, features)


@_ui.cached(max_entries=64, show_spinner=False)
def jacobian_point(sweep: str, width: int) -> compose.JacobianPoint:
    return compose.jacobian_point(sweep, width)


@_ui.cached(max_entries=64, show_spinner=False)
def hvp_point(method: str, n: int) -> compose.HvpPoint:
    return compose.hvp_point(method, n)


@st.cache_data(max_entries=1, show_spinner=False)
def jacobian_check() -> tuple[tuple[int, ...], float]:
    return compose.jacobians_agree(64, 8)


@st.cache_data(max_entries=1, show_spinner=False)
def jit_hvp() -> tuple[compose.JitHvp, float]:
    return compose.jit_hvp(), compose.hvp_agreement(AGREEMENT_N)


def preset_state(name: str) -> dict[str, str]:
    preset = compose.STACK_PRESETS[name]
    state = {f"compose_t{i}": NONE for i in range(compose.MAX_STACK)}
    state.update({f"compose_t{i}": t for i, t in enumerate(preset.stack)})
    return {**state, "compose_function": preset.function, "compose_shape": preset.shape}


def apply_preset() -> None:
    st.session_state.update(preset_state(st.session_state["compose_preset"]))


# The first preset is the widgets' default, so a link names only what differs from it.
DEFAULT = preset_state(next(iter(compose.STACK_PRESETS)))


def builder_tab() -> None:
    """The story: stack transforms on f, apply them at x, show what came out (or why not)."""
    stack, source, shape = builder_settings()
    isolated = not compose.is_preset(stack, source, shape)
    doing = _("Applying {stack} to f").format(stack=" ∘ ".join(stack) or _("no transform"))
    if isolated:
        deadline = sandbox.RunnerConfig.from_env().limits.timeout_s
        doing = _("{doing} in a sandboxed worker (at most {seconds} s)").format(
            doing=doing, seconds=f"{deadline:g}"
        )
    try:
        with st.spinner(doing + "…", show_time=True):
            result = pipeline(stack, source, shape)
    except expr.ExprError as err:
        _ui.input_error(err, _("This formula is not allowed:"), source)
    except ValueError as err:
        st.warning(markdown.escape(err), icon=":material/block:")
    except sandbox.TaskFailed as err:
        if err.error.exc_type == "ValueError":  # a limit, found once the stack was traced
            st.warning(markdown.escape(err.error.message), icon=":material/block:")
        else:
            hint = _("try fewer transforms (hessian counts twice) or a simpler formula")
            doing = ngettext(
                "Applying {n} transform to this formula",
                "Applying {n} transforms to this formula",
                len(stack),
            ).format(n=f"{len(stack):,}")
            st.error(markdown.escape(err.explain(doing, hint)), icon=":material/block:")
    else:
        show_pipeline(result, stack, shape)
    _ui.show_code(compose.pipeline, compose.compose, compose.stack_code)


def builder_settings() -> tuple[tuple[str, ...], str, tuple[int, ...]]:
    """The transform stack (outermost first), f's source and x's shape the visitor chose."""
    st.selectbox(
        _("Preset"),
        list(compose.STACK_PRESETS),
        format_func=_,
        key="compose_preset",
        on_change=apply_preset,
        bind="query-params",
    )
    slots = st.columns(compose.MAX_STACK)
    options = [NONE, *compose.TRANSFORMS]
    stack = tuple(
        t
        for i, col in enumerate(slots)
        for t in [
            col.selectbox(
                _("outermost") if i == 0 else _("then {n}").format(n=i + 1),
                options,
                index=options.index(DEFAULT[f"compose_t{i}"]),
                key=f"compose_t{i}",
                bind="query-params",
            )
        ]
        if t != NONE
    )
    a, b = st.columns(2)
    choices = [*compose.FUNCTIONS, FORMULA]
    function = a.selectbox(
        "f(x)",
        choices,
        format_func=_,
        index=choices.index(DEFAULT["compose_function"]),
        key="compose_function",
        bind="query-params",
    )
    shape_names = list(compose.INPUT_SHAPES)
    shape_name = b.selectbox(
        "x",
        shape_names,
        format_func=_,
        index=shape_names.index(DEFAULT["compose_shape"]),
        key="compose_shape",
        bind="query-params",
    )
    source = compose.FUNCTIONS.get(function, "")
    if function == FORMULA:
        source = _ui.text_box(
            a,
            "f(x) =",
            "jnp.sum(x * jnp.tanh(x))",
            key="compose_formula",
            bind="query-params",
            help=_("Allowed: {functions}").format(functions=", ".join(expr.allowed_functions())),
        )
    st.caption(
        " · ".join(f"**{t}** {_(compose.TRANSFORMS[t].does)}" for t in stack)
        or _("No transform: f itself.")
    )
    return stack, source, compose.INPUT_SHAPES[shape_name]


def show_pipeline(
    result: compose.PipelineResult, stack: tuple[str, ...], shape: tuple[int, ...]
) -> None:
    """The composed function's code and values (or JAX's refusal), and what the run showed."""
    st.code(result.code, language="python")
    if result.error is not None:
        st.error(
            _("**JAX refuses:** {reason}").format(
                reason=markdown.escape(compose.plain_words(result.error))
            ),
            icon=":material/error:",
        )
        with st.expander(_("JAX's own message")):
            _ui.error_code(f"{result.error.error_type}: {result.error.message}")
    else:
        st.markdown(
            _("x has shape `{x}`; the result has shape `{result}`:").format(
                x=result.input_shape, result=result.output_shape
            )
        )
        st.code(np.array2string(result.values, precision=4, threshold=200), language=None)
        notes = []
        if "vmap" in stack:
            notes.append(
                _(
                    "f's Python code ran {times} while the whole stack was traced, for x's "
                    "{rows} rows: vmap traces once for one row and turns each operation into its "
                    "batched form."
                ).format(times=words.times(result.traced_calls), rows=shape[0] if shape else 0)
            )
        if result.eager_max_abs_diff is not None:
            d = result.eager_max_abs_diff
            notes.append(
                _("The same stack without jit, run op by op, gives identical values.")
                if d == 0
                else _(
                    "The same stack without jit, run op by op, gives values that differ by at "
                    "most {diff} (XLA fuses and reorders float operations, so the last bits can "
                    "change)."
                ).format(diff=f"{d:.2g}")
            )
        for note in notes:
            st.caption(note)
        with st.expander(_("jaxpr of the composed function"), icon=":material/account_tree:"):
            st.code(result.jaxpr, language=None)


def per_sample_tab() -> None:
    a, b = st.columns(2)
    batch = a.slider(
        _("samples B"), 1, compose.MAX_SAMPLES, 8, key="compose_batch", bind="query-params"
    )
    features = b.slider(
        _("features D"), 1, compose.MAX_FEATURES, 3, key="compose_features", bind="query-params"
    )
    ps = samples(batch, features)
    st.markdown(f"params `{ps.params_shape}`, X `{ps.x_shape}`, Y `{ps.y_shape}`")
    for label, outcome in (
        (
            _("As written (`@jit @vmap`), B = {batch}, D = {features}").format(
                batch=batch, features=features
            ),
            ps.as_written,
        ),
        (
            _("As written with as many samples as weights, B = D = {features}").format(
                features=features
            ),
            ps.square,
        ),
    ):
        if outcome.ok:
            st.info(_("**{label}:** it runs.").format(label=label), icon=":material/info:")
        else:
            st.error(
                _("**{label}:** {error}").format(
                    label=label, error=markdown.code(outcome.headline)
                ),
                icon=":material/error:",
            )
            with st.expander(_("JAX's full message")):
                _ui.error_code(outcome.message)
    st.markdown(
        _(
            "**Why:** a bare `vmap` maps axis 0 of *every* argument, `params` included. With "
            "params of shape {params} and B = {batch} samples {sizes}; with B = D each sample "
            "gets one *element* of params, its prediction `jnp.dot(p, xi)` is a vector, and "
            "`grad` refuses it (`{error}`). Only 2-D parameters run: with a ({batch}, "
            "{features}) matrix of different rows the call returns shape {rows_shape} without "
            "an error, each sample paired with its own row — equal to the per-sample gradients "
            "of one model (the first row's): **{rows_match}**. With every row a copy of params "
            "it equals the loop: **{tiled_match}**. **Fix:** `vmap(grad(loss), in_axes=(None, "
            "0, 0))` shares params across samples."
        ).format(
            params=ps.params_shape,
            batch=batch,
            features=features,
            sizes=_("the sizes agree") if batch == features else _("the sizes disagree"),
            error=ps.square.error_type or _("no error"),
            rows_shape=ps.rows_shape,
            rows_match=ps.rows_match_model0,
            tiled_match=ps.tiled_matches_loop,
        )
    )
    st.success(
        _("Fixed: shape {shape}; equal to a Python loop over the samples: **{matches}**.").format(
            shape=ps.fixed.shape, matches=ps.fixed_matches_loop
        ),
        icon=":material/check_circle:",
    )
    st.dataframe(pd.DataFrame(ps.fixed).head(8), key="compose_per_sample_table")
    _ui.show_code(compose.per_sample_gradient, compose.loss_for_sample, compose.per_sample)


def jac_tab() -> None:
    widths = st.multiselect(
        _("Widths"),
        [4, 16, 64, 256, 1024, compose.MAX_WIDTH],
        [4, 64, 1024],
        key="compose_widths",
        bind="query-params",
    )
    chosen = tuple(sorted(widths))
    shape_, diff = jacobian_check()
    st.caption(
        _("jacfwd and jacrev agree: Jacobian {shape}, max |difference| {diff}.").format(
            shape=shape_, diff=f"{diff:.2g}"
        )
    )
    if _ui.measure_button(_("Measure"), "compose_jac_measure", chosen):
        steps = [(s, w) for s in compose.SWEEPS for w in chosen]
        n = len(chosen)
        points = _ui.measure_points(
            ngettext(
                "Timing jit(jacfwd) and jit(jacrev) at {n} width",
                "Timing jit(jacfwd) and jit(jacrev) at {n} widths",
                n,
            ).format(n=f"{n:,}"),
            ngettext("Timed both modes at {n} width", "Timed both modes at {n} widths", n).format(
                n=f"{n:,}"
            ),
            steps,
            lambda step: jacobian_point(*step),
            lambda step: _("{sweep}, width {width}").format(sweep=_(step[0]), width=step[1]),
        )
        sweep = compose.jacobian_sweep(points)
        _ui.chart(compose.jacobian_figure(sweep), key="compose_jac_chart")
        wide = len(sweep.widths) - 1
        for name in compose.SWEEPS:
            winner, factor = sweep.faster(name, wide)
            st.markdown(
                _("{sweep} ({width}): **{winner}** is {factor}× faster.").format(
                    sweep=_(name), width=sweep.widths[wide], winner=winner, factor=f"{factor:.1f}"
                )
            )
    elif chosen:
        st.info(
            _(
                "Times jit(jacfwd) and jit(jacrev) at each width, with a narrow side of {narrow}."
            ).format(narrow=compose.NARROW)
        )
    _ui.show_code(compose.neural_network, compose.jacobian_point)


def hvp_summary(sweep: compose.HvpSweep) -> str:
    """The largest dimension's times, the fastest way, and how far the ways are apart."""
    last = len(sweep.dims) - 1
    best, spread = sweep.fastest(last)
    return _(
        "At n={n}: {times}. Fastest: {best}, {spread}× faster than the slowest. Largest "
        "relative difference from the full Hessian's H·v: {diff}."
    ).format(
        n=sweep.dims[last],
        times=_("; ").join(
            _("{method}: {time}").format(
                method=_(m), time=timing.format_seconds(sweep.timings[m][last].median)
            )
            for m in compose.HVP_METHODS
        ),
        best=_(best),
        spread=f"{spread:.1f}",
        diff=f"{sweep.max_rel_diff:.1g}",
    )


def hvp_tab() -> None:
    jh, agreement = jit_hvp()
    st.code(jh.as_written.code, language="python")
    st.error(
        _("**As written:** {error}").format(error=markdown.code(jh.as_written.headline)),
        icon=":material/error:",
    )
    st.markdown(
        _(
            "**Why:** `jit` traces every argument as an array; a function is not one. **Fix:** "
            "`jit(hvp, static_argnums=0)` (f becomes part of the cache key) or a closure "
            "`jit(lambda x, v: hvp(f, x, v))`. Both equal the un-jitted hvp: **{agree}**. hvp "
            "vs `hessian(f)(x) @ v` at n={n}: relative difference {diff}."
        ).format(agree=jh.fixes_agree, n=AGREEMENT_N, diff=f"{agreement:.1g}")
    )
    st.markdown(
        _(
            "Three ways to H·v: **forward over reverse**, `jvp(grad(f), (x,), (v,))` (one "
            "forward pass through the gradient); the article's **reverse over reverse**, "
            "`grad(lambda x: vdot(grad(f)(x), v))`; and the **full Hessian** times v."
        )
    )
    dims = st.multiselect(
        _("Dimensions n"),
        [16, 64, 256, 1024, 2048, compose.MAX_HVP_DIM],
        [16, 256, 1024],
        key="compose_dims",
        bind="query-params",
    )
    chosen_dims = tuple(sorted(dims))
    if _ui.measure_button(_("Measure"), "compose_hvp_measure", chosen_dims):
        steps = [(m, n) for n in chosen_dims for m in compose.HVP_METHODS]
        k = len(chosen_dims)
        points = _ui.measure_points(
            ngettext(
                "Timing three ways to H·v at {n} dimension",
                "Timing three ways to H·v at {n} dimensions",
                k,
            ).format(n=f"{k:,}"),
            ngettext(
                "Timed three ways at {n} dimension", "Timed three ways at {n} dimensions", k
            ).format(n=f"{k:,}"),
            steps,
            lambda step: hvp_point(*step),
            lambda step: f"{_(step[0])}, n={step[1]}",
        )
        sweep_h = compose.hvp_sweep(points)
        _ui.chart(compose.hvp_figure(sweep_h), key="compose_hvp_chart")
        st.caption(hvp_summary(sweep_h))
    _ui.show_code(
        compose.forward_over_reverse_hvp, compose.hvp, compose.optimized_hvp, compose.hvp_point
    )


BUILDER, PER_SAMPLE, JACOBIANS, HVPS = (
    _("Pipeline builder"),
    _("Per-sample gradients"),
    _("jacfwd vs jacrev"),
    _("Hessian-vector products"),
)
_ui.lazy_tabs(
    {BUILDER: builder_tab, PER_SAMPLE: per_sample_tab, JACOBIANS: jac_tab, HVPS: hvp_tab},
    key="compose_tab",
    keep={
        BUILDER: BUILDER_KEYS,
        PER_SAMPLE: ("compose_batch", "compose_features"),
        JACOBIANS: ("compose_widths",),
        HVPS: ("compose_dims",),
    },
)

"""Compose: stack transforms in any order; the article's compositions as written and fixed."""

import numpy as np
import pandas as pd
import streamlit as st

from jaxplay import compose as cp
from jaxplay.core import expr, timing
from pages import _ui

NONE = "—"
FORMULA = "type a formula"

st.title(":material/stacks: Compose")
st.write(
    "JAX's transforms take a function and return a function, so they stack: "
    "`jit(vmap(grad(f)))` is a compiled, batched gradient. Build a stack, see its result and "
    "jaxpr, and see the article's compositions run as written and fixed."
)


@st.cache_data(max_entries=64, show_spinner="Transforming…")
def pipeline(stack: tuple[str, ...], source: str, shape: tuple[int, ...]) -> cp.PipelineResult:
    return cp.compose(stack, source, shape)


@st.cache_data(max_entries=16, show_spinner=False)
def samples(batch: int, features: int) -> cp.PerSample:
    return cp.per_sample(batch, features)


@st.cache_data(max_entries=8, show_spinner=False)
def jacobians(widths: tuple[int, ...], _progress: object = None) -> cp.JacobianSweep:
    return cp.time_jacobians(widths, on_progress=_progress)


@st.cache_data(max_entries=8, show_spinner=False)
def hvps(dims: tuple[int, ...], _progress: object = None) -> cp.HvpSweep:
    return cp.time_hvp(dims, on_progress=_progress)


@st.cache_data(max_entries=1, show_spinner=False)
def jacobian_check() -> tuple[tuple[int, ...], float]:
    return cp.jacobians_agree(64, 8)


@st.cache_data(max_entries=1, show_spinner=False)
def jit_hvp() -> tuple[cp.JitHvp, float]:
    return cp.jit_hvp(), cp.hvp_agreement(100)


def preset_state(name: str) -> dict[str, str]:
    preset = cp.STACK_PRESETS[name]
    state = {f"compose_t{i}": NONE for i in range(cp.MAX_STACK)}
    state.update({f"compose_t{i}": t for i, t in enumerate(preset.stack)})
    return {**state, "compose_function": preset.function, "compose_shape": preset.shape}


def apply_preset() -> None:
    st.session_state.update(preset_state(st.session_state["compose_preset"]))


builder, per_sample, jac, hvp = st.tabs(
    ["Pipeline builder", "Per-sample gradients", "jacfwd vs jacrev", "Hessian-vector products"],
    key="compose_tab",
    bind="query-params",
)

# The first preset is the widgets' default, so a link names only what differs from it.
DEFAULT = preset_state(next(iter(cp.STACK_PRESETS)))

with builder:
    st.selectbox("Preset", list(cp.STACK_PRESETS), key="compose_preset", on_change=apply_preset)
    slots = st.columns(cp.MAX_STACK)
    options = [NONE, *cp.TRANSFORMS]
    stack = tuple(
        t
        for i, col in enumerate(slots)
        for t in [
            col.selectbox(
                "outermost" if i == 0 else f"then {i + 1}",
                options,
                index=options.index(DEFAULT[f"compose_t{i}"]),
                key=f"compose_t{i}",
                bind="query-params",
            )
        ]
        if t != NONE
    )
    a, b = st.columns(2)
    choices = [*cp.FUNCTIONS, FORMULA]
    function = a.selectbox(
        "f(x)",
        choices,
        index=choices.index(DEFAULT["compose_function"]),
        key="compose_function",
        bind="query-params",
    )
    shape_names = list(cp.INPUT_SHAPES)
    shape = b.selectbox(
        "x",
        shape_names,
        index=shape_names.index(DEFAULT["compose_shape"]),
        key="compose_shape",
        bind="query-params",
    )
    source = cp.FUNCTIONS.get(function, "")
    if function == FORMULA:
        source = a.text_input(
            "f(x) =",
            "jnp.sum(x * jnp.tanh(x))",
            key="compose_formula",
            bind="query-params",
            help="Allowed: " + ", ".join(expr.allowed_functions()),
        )
    st.caption(
        " · ".join(f"**{t}** {cp.TRANSFORMS[t].does}" for t in stack) or "No transform: f itself."
    )
    try:
        result = pipeline(stack, source, cp.INPUT_SHAPES[shape])
    except expr.ExprError as err:
        _ui.expr_error(err, source)
    except ValueError as err:
        st.warning(str(err), icon=":material/block:")
    else:
        st.code(result.code, language="python")
        if result.error is not None:
            st.error(f"**JAX refuses:** {result.error.plain}", icon=":material/error:")
            with st.expander("JAX's own message"):
                _ui.error_code(f"{result.error.error_type}: {result.error.message}")
        else:
            st.markdown(
                f"x has shape `{result.input_shape}`; the result has shape `{result.output_shape}`:"
            )
            st.code(np.array2string(result.values, precision=4, threshold=200), language=None)
            with st.expander("jaxpr of the composed function", icon=":material/account_tree:"):
                st.code(result.jaxpr, language=None)
    _ui.show_code(cp.compose, cp.stack_code)

with per_sample:
    a, b = st.columns(2)
    batch = a.slider("samples B", 1, cp.MAX_SAMPLES, 8, key="compose_batch", bind="query-params")
    features = b.slider("features D", 1, 16, 3, key="compose_features", bind="query-params")
    ps = samples(batch, features)
    st.markdown(f"params `{ps.params_shape}`, X `{ps.x_shape}`, Y `{ps.y_shape}`")
    st.error(f"**As written** (`@jit @vmap`): `{ps.as_written.headline}`", icon=":material/error:")
    with st.expander("JAX's full message"):
        _ui.error_code(ps.as_written.message)
    st.markdown(
        "**Why:** `vmap` maps axis 0 of *every* argument, `params` included, so each sample "
        "gets one element of params. It only runs if you copy params once per sample "
        f"(`{ps.tiled_shape}` result, equal to the loop: **{ps.tiled_matches_loop}**). **Fix:** "
        "`vmap(grad(loss), in_axes=(None, 0, 0))` shares params across samples."
    )
    st.success(
        f"Fixed: shape {ps.fixed.shape}; equal to a Python loop over the samples: "
        f"**{ps.fixed_matches_loop}**.",
        icon=":material/check_circle:",
    )
    st.dataframe(pd.DataFrame(ps.fixed).head(8), key="compose_per_sample_table")
    _ui.show_code(cp.per_sample_gradient, cp.loss_for_sample, cp.per_sample)

with jac:
    widths = st.multiselect(
        "Widths",
        [4, 16, 64, 256, 1024, cp.MAX_WIDTH],
        [4, 64, 1024],
        key="compose_widths",
        bind="query-params",
    )
    chosen = tuple(sorted(widths))
    shape_, diff = jacobian_check()
    st.caption(f"jacfwd and jacrev agree: Jacobian {shape_}, max |difference| {diff:.2g}.")
    if _ui.measure_button("Measure", "compose_jac_measure", chosen):
        bar = st.progress(0.0, "Timing…")
        sweep = jacobians(chosen, lambda f, label: bar.progress(f, label))
        bar.empty()
        st.plotly_chart(cp.jacobian_figure(sweep), key="compose_jac_chart")
        wide = len(sweep.widths) - 1
        for name in cp.SWEEPS:
            winner, factor = sweep.faster(name, wide)
            st.markdown(f"{name} ({sweep.widths[wide]}): **{winner}** is {factor:.1f}× faster.")
    elif chosen:
        st.info("Times jit(jacfwd) and jit(jacrev) at each width, with a narrow side of 4.")
    _ui.show_code(cp.neural_network, cp.time_jacobians)

with hvp:
    jh, agreement = jit_hvp()
    st.code(jh.as_written.code, language="python")
    st.error(f"**As written:** `{jh.as_written.headline}`", icon=":material/error:")
    st.markdown(
        "**Why:** `jit` traces every argument as an array; a function is not one. **Fix:** "
        "`jit(hvp, static_argnums=0)` (f becomes part of the cache key) or a closure "
        f"`jit(lambda x, v: hvp(f, x, v))`. Both equal the un-jitted hvp: **{jh.fixes_agree}**. "
        f"hvp vs `hessian(f)(x) @ v` at n=100: relative difference {agreement:.1g}."
    )
    dims = st.multiselect(
        "Dimensions n",
        [16, 64, 256, 1024, 2048, cp.MAX_HVP_DIM],
        [16, 256, 1024],
        key="compose_dims",
        bind="query-params",
    )
    chosen_dims = tuple(sorted(dims))
    if _ui.measure_button("Measure", "compose_hvp_measure", chosen_dims):
        bar = st.progress(0.0, "Timing…")
        sweep_h = hvps(chosen_dims, lambda f, label: bar.progress(f, label))
        bar.empty()
        st.plotly_chart(cp.hvp_figure(sweep_h), key="compose_hvp_chart")
        st.caption(
            f"Largest relative difference between the two: {sweep_h.max_rel_diff:.1g}. Times: "
            + "; ".join(
                f"{m}: {timing.format_seconds(sweep_h.timings[m][-1].median)}"
                for m in cp.HVP_METHODS
            )
            + f" at n={sweep_h.dims[-1]}."
        )
    _ui.show_code(cp.hvp, cp.optimized_hvp, cp.jit_hvp, cp.time_hvp)

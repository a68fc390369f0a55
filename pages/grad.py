"""grad: derivatives you can see, checked, in both modes, with custom rules and pytrees."""

import pandas as pd
import streamlit as st

from jaxplay import grad as ad
from jaxplay.core import expr
from pages import _ui

FORMULA = "type a formula"

st.title(":material/trending_up: grad")
st.write(
    "`jax.grad` turns a function into the function that computes its derivative, so you can "
    "nest it, vmap it and compare it. Pick f: see f, f′, f″… where autodiff is exact and where "
    "f is not differentiable, checked against finite differences."
)


@st.cache_data(max_entries=32, show_spinner="Differentiating on the grid…")
def curves(source: str, order: int, lo: float, hi: float, points: int) -> ad.DerivativeCurves:
    return ad.derivative_curves(source, order, lo, hi, points)


@st.cache_data(max_entries=32, show_spinner="Checking against finite differences…")
def checks(source: str, x0: float, order: int) -> tuple[ad.GradCheck, ad.ModesAtPoint]:
    return ad.check_derivatives(source, x0, order), ad.modes_at_point(source, x0)


@st.cache_data(max_entries=1, show_spinner=False)
def vectors() -> ad.ModesOnVectors:
    return ad.modes_on_vectors()


@st.cache_data(max_entries=16, show_spinner=False)
def custom(factor: float, rule: str) -> ad.CustomVsAutodiff:
    return ad.custom_vs_autodiff(factor, rule)


@st.cache_data(max_entries=8, show_spinner="Differentiating complex_loss…")
def tree(init: str, argnums: str) -> ad.GradientTree:
    return ad.gradient_tree(init, ad.ARGNUMS[argnums])


@st.cache_data(max_entries=2, show_spinner="Computing the Hessian diagonal…")
def hessians(init: str) -> tuple[ad.AuxResult, ad.HessianDiagonal]:
    return ad.value_and_grad_with_aux(init), ad.hessian_diagonal(init)


c1, c2, c3, c4 = st.columns([3, 1, 1, 1])
preset = c1.selectbox("f(x)", [*ad.PRESETS, FORMULA], key="grad_preset", bind="query-params")
source = ad.PRESETS.get(preset, "")
if preset == FORMULA:
    source = c1.text_input(
        "f(x) =",
        "jnp.abs(x) * jnp.cos(x)",
        key="grad_formula",
        bind="query-params",
        help="Allowed: " + ", ".join(expr.allowed_functions()),
    )
order = c2.slider("up to order", 0, ad.MAX_ORDER, 2, key="grad_order", bind="query-params")
lo = c3.number_input(
    "x from", -ad.MAX_ABS_X, ad.MAX_ABS_X, -3.0, key="grad_lo", bind="query-params"
)
hi = c4.number_input("x to", -ad.MAX_ABS_X, ad.MAX_ABS_X, 3.0, key="grad_hi", bind="query-params")

try:
    drawn = curves(source, order, float(lo), float(hi), 801)
except expr.ExprError as err:
    _ui.expr_error(err, source)
    st.stop()
except ValueError as err:
    st.error(f"**Not drawn:** {_ui.scrub(err)}", icon=":material/block:")
    st.stop()

plot, check, modes, rule, pytrees = st.tabs(
    ["f, f′, f″…", "Check", "value_and_grad, jvp, vjp", "custom_vjp", "Pytrees & Hessian"],
    key="grad_tab",
    bind="query-params",
)
with plot:
    st.plotly_chart(ad.derivative_figure(drawn), key="grad_curves")
    for kink in drawn.kinks:
        st.warning(kink.describe(), icon=":material/warning:")
    if drawn.kinks_total > len(drawn.kinks):
        st.caption(f"…and {drawn.kinks_total - len(drawn.kinks)} more.")
    st.caption(
        "Each curve is `vmap(grad(grad(…f)))` over 801 points. Autodiff differentiates the branch "
        "it took, so at a kink it reports one side's value; a circle pair marks where a curve "
        "jumps by more than its own slope explains."
    )
    _ui.show_code(ad.nth_derivative, ad.derivative_curves, ad.find_kinks)

with check:
    x0 = st.number_input(
        "at x₀ =", -ad.MAX_ABS_X, ad.MAX_ABS_X, 0.7, key="grad_x0", bind="query-params"
    )
    gc, at_point = checks(source, float(x0), max(order, 1))
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "order": ad.ORDER_NAMES[r.order],
                    "autodiff": r.autodiff,
                    "central difference": r.finite_difference,
                    "|error|": r.abs_error,
                    "relative error": r.rel_error,
                }
                for r in gc.rows
            ]
        ),
        hide_index=True,
        key="grad_check_table",
    )
    st.plotly_chart(ad.check_figure(gc), key="grad_check_chart")
    st.caption(
        f"Central difference of the previous autodiff derivative, step h = {gc.rows[0].step:g}. "
        "Try x₀ = 0 on the article's function: the difference straddles the kink."
    )
    if gc.check_grads_passed:
        st.success(
            f"`jax.test_util.check_grads` passes up to order {gc.check_grads_order} (fwd and rev)."
        )
    else:
        st.warning(f"`jax.test_util.check_grads` fails up to order {gc.check_grads_order}:")
        st.code(gc.check_grads_message, language=None)
    _ui.show_code(ad.check_derivatives, ad.central_difference)

with modes:
    st.dataframe(pd.DataFrame(at_point.rows()), hide_index=True, key="grad_modes_table")
    vec = vectors()
    st.markdown(
        f"On the two-layer network R⁴ → R³: `jvp` pushes a tangent v forward and returns **J v** "
        f"{vec.jvp.round(4).tolist()}; `vjp` pulls a cotangent u back and returns **uᵀ J** "
        f"{vec.vjp.round(4).tolist()}. Same J: u·(J v) = {vec.u_dot_jv:.6f}, "
        f"(uᵀ J)·v = {vec.ujt_dot_v:.6f}."
    )
    aux, _ = hessians(ad.INITS[0])
    st.markdown(
        f"`value_and_grad(loss_with_aux, has_aux=True)` returns `((loss, aux), grads)`: loss "
        f"{aux.loss:.4f}, aux {aux.aux_shapes} (not differentiated); grads equal plain `grad`: "
        f"**{aux.grads_equal_plain}**."
    )
    _ui.show_code(ad.modes_at_point, ad.modes_on_vectors, ad.loss_with_aux)

with rule:
    a, b = st.columns(2)
    factor = a.slider(
        "x > 0 branch: factor · x", -4.0, 4.0, 2.0, 0.5, key="grad_factor", bind="query-params"
    )
    neg = b.selectbox(
        "x ≤ 0 branch", list(ad.NEGATIVE_BRANCH_RULES), key="grad_rule", bind="query-params"
    )
    cmp = custom(float(factor), neg)
    st.plotly_chart(ad.custom_vjp_figure(cmp), key="grad_custom_chart")
    if cmp.agree:
        st.success("The custom rule agrees with JAX's own derivative of the same forward.")
    else:
        st.error(
            f"The custom rule disagrees with JAX by up to {cmp.max_abs_diff:.3g}; "
            "JAX trusts it anyway."
        )
    _ui.show_code(ad.my_special_op, ad.my_special_op_fwd, ad.my_special_op_bwd, ad.make_special_op)

with pytrees:
    a, b = st.columns(2)
    init = a.selectbox("params", ad.INITS, key="grad_init", bind="query-params")
    argnums = b.selectbox(
        "grad(complex_loss, …)", list(ad.ARGNUMS), key="grad_argnums", bind="query-params"
    )
    grads = tree(init, argnums)
    _, diag = hessians(init)
    st.markdown(f"loss = {grads.loss:.4f}; gradient structure `{grads.structure}`")
    st.dataframe(
        pd.DataFrame([vars(leaf) for leaf in grads.leaves]), hide_index=True, key="grad_tree_table"
    )
    st.subheader('The article\'s "Hessian diagonal"')
    st.code(diag.as_written.code, language="python")
    st.error(f"**As written:** `{diag.as_written.headline}`", icon=":material/error:")
    with st.expander("JAX's full message"):
        _ui.error_code(diag.as_written.message[:3000])
    st.markdown(
        "**Why:** `grad(complex_loss)` returns a tuple of four arrays, and `grad` only "
        "differentiates functions that return one number. **Fix:** take the diagonal of "
        "`jax.hessian`, or one Hessian-vector product per basis vector (no 241×241 matrix)."
    )
    st.plotly_chart(ad.hessian_diagonal_figure(diag), key="grad_hessian_chart")
    _ui.show_code(ad.complex_loss, ad.gradient_tree, ad.hvp, ad.hessian_diagonal)

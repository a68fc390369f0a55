"""grad: derivatives you can see, checked, in both modes, with custom rules and pytrees."""

import pandas as pd
import streamlit as st

from jaxplay import grad, sandbox
from jaxplay.core import expr, markdown, words
from pages import _ui

FORMULA = "type a formula"
POINTS = 801
HINT = "try a lower order or a simpler formula"

st.title(":material/trending_up: grad")
st.write(
    "`jax.grad` turns a function into the function that computes its derivative, so you can "
    "nest it, vmap it and compare it. Pick f: see f, f′, f″… where autodiff is exact and where "
    "f is not differentiable, checked against finite differences."
)


@_ui.cached(max_entries=32, show_spinner=False)
def curves(source: str, order: int, lo: float, hi: float, points: int) -> grad.DerivativeCurves:
    return grad.curves(source, order, lo, hi, points)


@_ui.cached(max_entries=32, show_spinner=False)
def checks(source: str, x0: float, order: int) -> grad.PointChecks:
    return grad.checks(source, x0, order)


@st.cache_data(max_entries=1, show_spinner=False)
def vectors() -> grad.ModesOnVectors:
    return grad.modes_on_vectors()


@st.cache_data(max_entries=16, show_spinner=False)
def custom(factor: float, rule: str) -> grad.CustomVsAutodiff:
    return grad.custom_vs_autodiff(factor, rule)


@st.cache_data(max_entries=16, show_spinner=False)
def rules(x: float) -> grad.CustomRules:
    return grad.custom_rules(x)


@st.cache_data(max_entries=16, show_spinner=False)
def stops(x: float) -> grad.StopGradient:
    return grad.stop_gradient_demo(x)


@st.cache_data(max_entries=1, show_spinner=False)
def linearized() -> grad.Linearized:
    return grad.linearize_vs_jvp()


@st.cache_data(max_entries=8, show_spinner=False)
def tree(init: str, argnums: str) -> grad.GradientTree:
    return grad.gradient_tree(init, grad.ARGNUMS[argnums])


@st.cache_data(max_entries=2, show_spinner=False)
def hessians(init: str) -> tuple[grad.AuxResult, grad.HessianDiagonal]:
    return grad.value_and_grad_with_aux(init), grad.hessian_diagonal(init)


def working(doing: str, typed: bool) -> object:
    """A spinner (shown after half a second) that says what runs, and where."""
    if typed:
        deadline = sandbox.RunnerConfig.from_env().limits.timeout_s
        doing += f" in a sandboxed worker (at most {deadline:g} s)"
    return st.spinner(doing + "…", show_time=True)


def power(n: int) -> str:
    """``n`` as superscript digits (R⁴)."""
    return str(n).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))


def failed(err: sandbox.TaskFailed, doing: str) -> None:
    st.error(markdown.escape(err.explain(doing, HINT)), icon=":material/block:")


c1, c2, c3, c4, c5 = st.columns([3, 1, 1, 1, 1])
preset = c1.selectbox("f(x)", [*grad.PRESETS, FORMULA], key="grad_preset", bind="query-params")
source = grad.PRESETS.get(preset, "")
if preset == FORMULA:
    source = _ui.text_box(
        c1,
        "f(x) =",
        "jnp.abs(x) * jnp.cos(x)",
        key="grad_formula",
        bind="query-params",
        help="Allowed: " + ", ".join(expr.allowed_functions()),
    )
order = c2.slider("up to order", 0, grad.MAX_ORDER, 2, key="grad_order", bind="query-params")
lo = c3.number_input(
    "x from", -grad.MAX_ABS_X, grad.MAX_ABS_X, -3.0, key="grad_lo", bind="query-params"
)
hi = c4.number_input(
    "x to", -grad.MAX_ABS_X, grad.MAX_ABS_X, 3.0, key="grad_hi", bind="query-params"
)
x0 = c5.number_input(
    "checked at x₀",
    -grad.MAX_ABS_X,
    grad.MAX_ABS_X,
    0.7,
    key="grad_x0",
    bind="query-params",
    help="Where the Check and value_and_grad tabs evaluate the derivatives.",
)

# Checked here, at once (parsing and tracing f at a number is cheap); differentiating a typed
# formula runs in a worker (jaxplay.grad._formulas says why).
try:
    grad.scalar_function(source)
    grad.check_grid(float(lo), float(hi), POINTS)
except expr.ExprError as err:
    _ui.input_error(err, "This formula is not allowed:", source)
    _ui.stop()
except ValueError as err:
    st.error(f"**Not drawn:** {markdown.escape(_ui.scrub(err))}", icon=":material/block:")
    _ui.stop()
typed = not grad.is_preset(source)


def plot_tab() -> None:
    try:
        with working(f"Differentiating f to order {order} on {POINTS} points", typed):
            drawn = curves(source, order, float(lo), float(hi), POINTS)
    except sandbox.TaskFailed as err:
        failed(err, f"Differentiating this formula to order {order}")
    else:
        _ui.chart(grad.derivative_figure(drawn), key="grad_curves")
        for kink in drawn.kinks:
            st.warning(markdown.escape(kink.describe()), icon=":material/warning:")
        if drawn.kinks_total > len(drawn.kinks):
            st.caption(f"…and {drawn.kinks_total - len(drawn.kinks)} more.")
        st.caption(
            f"Each curve is `vmap(grad(grad(…f)))` over {drawn.x.size} points. Autodiff "
            "differentiates the branch it took, so at a kink it reports one side's value; a "
            "circle pair marks where a curve jumps by more than its own slope explains."
        )
        _ui.show_code(grad.nth_derivative, grad.derivative_curves, grad.find_kinks)


def at_point(x0: float) -> grad.PointChecks | None:
    """The checks at x₀ (for the Check and modes tabs), or None after showing why not."""
    try:
        with working(f"Checking every order up to {max(order, 1)} at x₀ = {x0:g}", typed):
            return checks(source, x0, max(order, 1))
    except sandbox.TaskFailed as err:
        failed(err, f"Checking this formula's derivatives up to order {max(order, 1)}")
        return None


def check_tab() -> None:
    found = at_point(float(x0))
    if found is not None:
        gc = found.check
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "order": grad.ORDER_NAMES[r.order],
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
        _ui.chart(grad.check_figure(gc), key="grad_check_chart")
        st.caption(
            f"Central difference of the previous autodiff derivative, step h = "
            f"{gc.rows[0].step:g}. Try x₀ = 0 on the article's function: the difference "
            "straddles the kink."
        )
        if gc.check_grads_passed:
            st.success(
                f"`jax.test_util.check_grads` passes up to order {gc.check_grads_order} "
                "(fwd and rev)."
            )
        else:
            st.warning(f"`jax.test_util.check_grads` fails up to order {gc.check_grads_order}:")
            st.code(gc.check_grads_message, language=None)
        _ui.show_code(grad.check_derivatives, grad.central_difference)


def modes_tab() -> None:
    found = at_point(float(x0))
    if found is not None:
        st.caption(f"f and its derivative at x₀ = {x0:g}, four ways:")
        st.dataframe(pd.DataFrame(found.modes.rows()), hide_index=True, key="grad_modes_table")
    vec = vectors()
    st.markdown(
        f"On the two-layer network R{power(vec.v.size)} → R{power(vec.u.size)}: `jvp` pushes "
        "a tangent v forward and returns "
        f"**J v** {words.numbers(vec.jvp)}; `vjp` pulls a cotangent u back and returns "
        f"**uᵀ J** {words.numbers(vec.vjp)}. Same J: u·(J v) = {vec.u_dot_jv:.6f}, "
        f"(uᵀ J)·v = {vec.ujt_dot_v:.6f}."
    )
    aux, _ = hessians(grad.INITS[0])
    st.markdown(
        f"`value_and_grad(loss_with_aux, has_aux=True)` returns `((loss, aux), grads)`: loss "
        f"{aux.loss:.4f}, aux {aux.aux_shapes} (not differentiated); grads equal plain "
        f"`grad`: **{aux.grads_equal_plain}**."
    )
    _ui.show_code(grad.modes_at_point, grad.modes_on_vectors, grad.loss_with_aux)


def rule_tab() -> None:
    a, b = st.columns(2)
    factor = a.slider(
        "x > 0 branch: factor · x", -4.0, 4.0, 2.0, 0.5, key="grad_factor", bind="query-params"
    )
    neg = b.selectbox(
        "x ≤ 0 branch", list(grad.NEGATIVE_BRANCH_RULES), key="grad_rule", bind="query-params"
    )
    cmp = custom(float(factor), neg)
    _ui.chart(grad.custom_vjp_figure(cmp), key="grad_custom_chart")
    if cmp.agree:
        st.success("The custom rule agrees with JAX's own derivative of the same forward.")
    else:
        st.error(
            f"The custom rule disagrees with JAX by up to {cmp.max_abs_diff:.3g}; "
            "JAX trusts it anyway."
        )
    _ui.show_code(
        grad.my_special_op, grad.my_special_op_fwd, grad.my_special_op_bwd, grad.make_special_op
    )


def jvp_rule_tab() -> None:
    st.markdown(
        "The same derivative as a **forward-mode** rule: `custom_jvp` returns the output and "
        "its tangent f′(x)·t. JAX transposes that linear rule for reverse mode, so one rule "
        "serves every transform. `custom_vjp` (the article's) gives a reverse-mode rule only."
    )
    x_at = st.slider("at x =", -3.0, 3.0, 0.5, 0.25, key="grad_at", bind="query-params")
    both = rules(float(x_at))
    st.dataframe(pd.DataFrame(both.table()), hide_index=True, key="grad_rules_table")
    refused = both.vjp_refusals
    st.markdown(
        f"Both answer {len(both.agree)} of {len(both.rows)} calls with the same value. The "
        f"`custom_vjp` function refuses {len(refused)}: "
        + ", ".join(f"`{c}`" for c in refused)
        + " — every call that needs forward mode (`hessian` is `jacfwd(jacrev(f))`). "
        f"The `custom_jvp` function refuses {len(both.jvp_refusals)}."
    )
    failure = next((r.custom_vjp for r in both.rows if not r.custom_vjp.ok), None)
    if failure is not None:
        st.error(
            f"**{markdown.escape(failure.code)}** of a `custom_vjp` function raises:",
            icon=":material/error:",
        )
        st.code(_ui.scrub(failure.headline), language=None, wrap_lines=True)
    _ui.show_code(grad.special_op_jvp, grad.special_op_jvp_rule, grad.custom_rules)


def stop_tab() -> None:
    st.markdown(
        "`jax.lax.stop_gradient(v)` is `v` on the way forward and a constant to autodiff: "
        "its derivative is 0."
    )
    x_at = st.slider("at x =", -3.0, 3.0, 0.7, 0.1, key="grad_stop_x", bind="query-params")
    demo = stops(float(x_at))
    st.dataframe(pd.DataFrame(demo.table()), hide_index=True, key="grad_stop_table")
    ste = demo.rows[-1]
    _ui.chart(grad.stop_gradient_figure(demo), key="grad_stop_chart")
    st.caption(
        f"The straight-through estimator: at x = {x_at:g} it returns round(x) = "
        f"{ste.value:g} and reports derivative {ste.grad:g}, where `jnp.round` alone reports "
        f"{ste.grad_without_stop:g}."
    )
    _ui.show_code(grad.round_straight_through, grad.stop_gradient_demo)

    st.subheader("jax.linearize")
    lin = linearized()
    nonlinear = grad.Linearized.nonlinear(lin.jvp_primitives)
    st.markdown(
        f"`y, f_jvp = jax.linearize(f, x)` runs f once at x (n = {lin.n}) and keeps "
        f"{lin.residuals} residual arrays ({lin.residual_bytes:,} bytes). `f_jvp(v)` then "
        f"runs {sum(lin.linear_primitives.values())} equations, all linear "
        f"({', '.join(f'{p} ×{c}' for p, c in sorted(lin.linear_primitives.items()))}), "
        f"where `jax.jvp(f, (x,), (v,))` runs {sum(lin.jvp_primitives.values())}, among "
        f"them {', '.join(f'{p} ×{c}' for p, c in nonlinear.items())} again for every v. "
        f"Both give the same J v: max |difference| {lin.max_abs_diff:.2g}."
    )
    a, b = st.columns(2)
    a.caption("jaxpr of jvp(f) (x and v)")
    a.code(lin.jvp_jaxpr, language=None)
    b.caption("jaxpr of f_jvp (v alone; the residuals are its constants)")
    b.code(lin.linear_jaxpr, language=None)
    _ui.show_code(grad.linearize_example, grad.linearize_vs_jvp)


def pytrees_tab() -> None:
    a, b = st.columns(2)
    init = a.selectbox("params", grad.INITS, key="grad_init", bind="query-params")
    argnums = b.selectbox(
        "grad(complex_loss, …)", list(grad.ARGNUMS), key="grad_argnums", bind="query-params"
    )
    with st.spinner("Differentiating complex_loss and its Hessian diagonal…", show_time=True):
        grads = tree(init, argnums)
        _, diag = hessians(init)
    st.markdown(f"loss = {grads.loss:.4f}; gradient structure `{grads.structure}`")
    st.dataframe(
        pd.DataFrame([vars(leaf) for leaf in grads.leaves]),
        hide_index=True,
        key="grad_tree_table",
    )
    st.subheader('The article\'s "Hessian diagonal"')
    st.code(diag.as_written.code, language="python")
    st.error(f"**As written:** {markdown.code(diag.as_written.headline)}", icon=":material/error:")
    with st.expander("JAX's full message"):
        _ui.error_code(diag.as_written.message[:3000])
    n = diag.via_hessian.size
    st.markdown(
        f"**Why:** `grad(complex_loss)` returns a tuple of {len(diag.blocks)} arrays, and "
        "`grad` only "
        "differentiates functions that return one number. **Fix:** take the diagonal of "
        f"`jax.hessian`, or one Hessian-vector product per basis vector (no {n}×{n} matrix)."
    )
    _ui.chart(grad.hessian_diagonal_figure(diag), key="grad_hessian_chart")
    _ui.show_code(grad.complex_loss, grad.gradient_tree, grad.hvp, grad.hessian_diagonal)


_ui.lazy_tabs(
    {
        "f, f′, f″…": plot_tab,
        "Check": check_tab,
        "value_and_grad, jvp, vjp": modes_tab,
        "custom_vjp": rule_tab,
        "custom_jvp": jvp_rule_tab,
        "stop_gradient, linearize": stop_tab,
        "Pytrees & Hessian": pytrees_tab,
    },
    key="grad_tab",
    keep={
        "custom_vjp": ("grad_factor", "grad_rule"),
        "custom_jvp": ("grad_at",),
        "stop_gradient, linearize": ("grad_stop_x",),
        "Pytrees & Hessian": ("grad_init", "grad_argnums"),
    },
)

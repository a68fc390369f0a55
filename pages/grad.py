"""grad: derivatives you can see, checked, in both modes, with custom rules and pytrees."""

from pages import _ui

import pandas as pd
import streamlit as st

from jaxplay import grad, sandbox
from jaxplay.core import expr, markdown, words
from jaxplay.core.i18n import N_, _

FORMULA = N_("type a formula")
POINTS = 801

st.title(":material/trending_up: grad")
st.write(
    _(
        "`jax.grad` turns a function into the function that computes its derivative, so you can "
        "nest it, vmap it and compare it. Pick f: see f, f′, f″… where autodiff is exact and "
        "where f is not differentiable, checked against finite differences."
    )
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
        doing = _("{doing} in a sandboxed worker (at most {seconds} s)").format(
            doing=doing, seconds=f"{deadline:g}"
        )
    return st.spinner(doing + "…", show_time=True)


def power(n: int) -> str:
    """``n`` as superscript digits (R⁴)."""
    return str(n).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))


def failed(err: sandbox.TaskFailed, doing: str) -> None:
    hint = _("try a lower order or a simpler formula")
    st.error(markdown.escape(err.explain(doing, hint)), icon=":material/block:")


c1, c2, c3, c4, c5 = st.columns([3, 1, 1, 1, 1])
preset = c1.selectbox(
    "f(x)", [*grad.PRESETS, FORMULA], format_func=_, key="grad_preset", bind="query-params"
)
source = grad.PRESETS.get(preset, "")
if preset == FORMULA:
    source = _ui.text_box(
        c1,
        "f(x) =",
        "jnp.abs(x) * jnp.cos(x)",
        key="grad_formula",
        bind="query-params",
        help=_("Allowed: {functions}").format(functions=", ".join(expr.allowed_functions())),
    )
order = c2.slider(_("up to order"), 0, grad.MAX_ORDER, 2, key="grad_order", bind="query-params")
lo = c3.number_input(
    _("x from"), -grad.MAX_ABS_X, grad.MAX_ABS_X, -3.0, key="grad_lo", bind="query-params"
)
hi = c4.number_input(
    _("x to"), -grad.MAX_ABS_X, grad.MAX_ABS_X, 3.0, key="grad_hi", bind="query-params"
)
x0 = c5.number_input(
    _("checked at x₀"),
    -grad.MAX_ABS_X,
    grad.MAX_ABS_X,
    0.7,
    key="grad_x0",
    bind="query-params",
    help=_("Where the Check and value_and_grad tabs evaluate the derivatives."),
)

# Checked here, at once (parsing and tracing f at a number is cheap); differentiating a typed
# formula runs in a worker (jaxplay.grad._formulas says why).
try:
    grad.scalar_function(source)
    grad.check_grid(float(lo), float(hi), POINTS)
except expr.ExprError as err:
    _ui.input_error(err, _("This formula is not allowed:"), source)
    _ui.stop()
except ValueError as err:
    st.error(
        _("**Not drawn:** {reason}").format(reason=markdown.escape(_ui.scrub(err))),
        icon=":material/block:",
    )
    _ui.stop()
typed = not grad.is_preset(source)


def plot_tab() -> None:
    doing = _("Differentiating f to order {order} on {points} points")
    try:
        with working(doing.format(order=order, points=POINTS), typed):
            drawn = curves(source, order, float(lo), float(hi), POINTS)
    except sandbox.TaskFailed as err:
        failed(err, _("Differentiating this formula to order {order}").format(order=order))
    else:
        _ui.chart(grad.derivative_figure, drawn, key="grad_curves")
        for kink in drawn.kinks:
            st.warning(markdown.escape(kink.describe()), icon=":material/warning:")
        if drawn.kinks_total > len(drawn.kinks):
            st.caption(_("…and {n} more.").format(n=drawn.kinks_total - len(drawn.kinks)))
        st.caption(grad.curves_caption(drawn.x.size))
        _ui.show_code(grad.nth_derivative, grad.derivative_curves, grad.find_kinks)


def at_point(x0: float) -> grad.PointChecks | None:
    """The checks at x₀ (for the Check and modes tabs), or None after showing why not."""
    top = max(order, 1)
    try:
        doing = _("Checking every order up to {order} at x₀ = {x0}")
        with working(doing.format(order=top, x0=f"{x0:g}"), typed):
            return checks(source, x0, top)
    except sandbox.TaskFailed as err:
        failed(err, _("Checking this formula's derivatives up to order {order}").format(order=top))
        return None


def check_tab() -> None:
    found = at_point(float(x0))
    if found is not None:
        gc = found.check
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        _("order"): grad.ORDER_NAMES[r.order],
                        _("autodiff"): r.autodiff,
                        _("central difference"): r.finite_difference,
                        "|error|": r.abs_error,
                        _("error / max(1, |autodiff|)"): r.rel_error,
                    }
                    for r in gc.rows
                ]
            ),
            hide_index=True,
            key="grad_check_table",
        )
        _ui.chart(grad.check_figure, gc, key="grad_check_chart")
        st.caption(
            _(
                "Central difference of the previous autodiff derivative, step h = {step} (it "
                "grows with |x₀|: where the curve bends within h, the difference itself is "
                "off). Try x₀ = 0 on the article's function: the difference straddles the kink."
            ).format(step=f"{gc.rows[0].step:g}")
        )
        if gc.check_grads_passed:
            st.success(
                _("`jax.test_util.check_grads` passes up to order {order} (fwd and rev).").format(
                    order=gc.check_grads_order
                )
            )
        else:
            st.warning(grad.check_grads_failure(gc))
            st.code(gc.check_grads_message, language=None)
        _ui.show_code(grad.check_derivatives, grad.central_difference)


def modes_tab() -> None:
    found = at_point(float(x0))
    if found is not None:
        st.caption(_("f and its derivative at x₀ = {x0}, four ways:").format(x0=f"{x0:g}"))
        st.dataframe(pd.DataFrame(found.modes.rows()), hide_index=True, key="grad_modes_table")
    vec = vectors()
    st.markdown(
        _(
            "On the two-layer network R{n_in} → R{n_out}: `jvp` pushes a tangent v forward and "
            "returns **J v** {jv}; `vjp` pulls a cotangent u back and returns **uᵀ J** {ujt}. "
            "Same J: u·(J v) = {u_jv}, (uᵀ J)·v = {ujt_v}."
        ).format(
            n_in=power(vec.v.size),
            n_out=power(vec.u.size),
            jv=words.numbers(vec.jvp),
            ujt=words.numbers(vec.vjp),
            u_jv=f"{vec.u_dot_jv:.6f}",
            ujt_v=f"{vec.ujt_dot_v:.6f}",
        )
    )
    aux, _diag = hessians(grad.INITS[0])
    st.markdown(
        _(
            "`value_and_grad(loss_with_aux, has_aux=True)` returns `((loss, aux), grads)`: loss "
            "{loss}, aux {aux} (not differentiated); {agreement}"
        ).format(
            loss=f"{aux.loss:.4f}",
            aux=aux.aux_shapes,
            agreement=(
                _("the grads equal plain `grad`'s.")
                if aux.grads_equal_plain
                else _("**the grads differ from plain `grad`'s.**")
            ),
        )
    )
    _ui.show_code(grad.modes_at_point, grad.modes_on_vectors, grad.loss_with_aux)


def rule_tab() -> None:
    a, b = st.columns(2)
    factor = a.slider(
        _("x > 0 branch: factor · x"),
        -4.0,
        4.0,
        2.0,
        0.5,
        key="grad_factor",
        bind="query-params",
    )
    neg = b.selectbox(
        _("x ≤ 0 branch"),
        list(grad.NEGATIVE_BRANCH_RULES),
        format_func=_,
        key="grad_rule",
        bind="query-params",
    )
    cmp = custom(float(factor), neg)
    _ui.chart(grad.custom_vjp_figure, cmp, key="grad_custom_chart")
    if cmp.agree:
        st.success(_("The custom rule agrees with JAX's own derivative of the same forward."))
    else:
        st.error(
            _("The custom rule disagrees with JAX by up to {diff}; JAX trusts it anyway.").format(
                diff=f"{cmp.max_abs_diff:.3g}"
            )
        )
    _ui.show_code(
        grad.my_special_op, grad.my_special_op_fwd, grad.my_special_op_bwd, grad.make_special_op
    )


def jvp_rule_tab() -> None:
    st.markdown(
        _(
            "The same derivative as a **forward-mode** rule: `custom_jvp` returns the output and "
            "its tangent f′(x)·t. JAX transposes that linear rule for reverse mode, so one rule "
            "serves every transform. `custom_vjp` (the article's) gives a reverse-mode rule only."
        )
    )
    x_at = st.slider(_("at x ="), -3.0, 3.0, 0.5, 0.25, key="grad_at", bind="query-params")
    both = rules(float(x_at))
    st.dataframe(pd.DataFrame(both.table()), hide_index=True, key="grad_rules_table")
    refused = both.vjp_refusals
    st.markdown(
        _(
            "Both answer {agree} of {total} calls with the same value. The `custom_vjp` function "
            "refuses {refused}: {calls}. `jvp`, `jacfwd` and `linearize` need a forward rule it "
            "does not have; `hessian` (`jacfwd(jacrev(f))`) differentiates the backward pass "
            "forward, and fails here only because the article's forward rule calls the "
            "`custom_vjp` function itself. The `custom_jvp` "
            "function refuses {jvp_refused}."
        ).format(
            agree=len(both.agree),
            total=len(both.rows),
            refused=len(refused),
            calls=", ".join(f"`{c}`" for c in refused),
            jvp_refused=len(both.jvp_refusals),
        )
    )
    failure = next((r.custom_vjp for r in both.rows if not r.custom_vjp.ok), None)
    if failure is not None:
        st.error(
            _("**{call}** of a `custom_vjp` function raises:").format(
                call=markdown.escape(failure.code)
            ),
            icon=":material/error:",
        )
        st.code(_ui.scrub(failure.headline), language=None, wrap_lines=True)
    _ui.show_code(grad.special_op_jvp, grad.special_op_jvp_rule, grad.custom_rules)


def stop_tab() -> None:
    st.markdown(
        _(
            "`jax.lax.stop_gradient(v)` is `v` on the way forward and a constant to autodiff: "
            "its derivative is 0."
        )
    )
    x_at = st.slider(_("at x ="), -3.0, 3.0, 0.7, 0.1, key="grad_stop_x", bind="query-params")
    demo = stops(float(x_at))
    st.dataframe(pd.DataFrame(demo.table()), hide_index=True, key="grad_stop_table")
    ste = demo.rows[-1]
    _ui.chart(grad.stop_gradient_figure, demo, key="grad_stop_chart")
    st.caption(
        _(
            "The straight-through estimator: at x = {x} it returns round(x) = {value} and "
            "reports derivative {grad}, where `jnp.round` alone reports {grad_round}."
        ).format(
            x=f"{x_at:g}",
            value=f"{ste.value:g}",
            grad=f"{ste.grad:g}",
            grad_round=f"{ste.grad_without_stop:g}",
        )
    )
    _ui.show_code(grad.round_straight_through, grad.stop_gradient_demo)

    st.subheader("jax.linearize")
    lin = linearized()
    nonlinear = grad.Linearized.nonlinear(lin.jvp_primitives)
    st.markdown(
        _(
            "`y, f_jvp = jax.linearize(f, x)` runs f once at x (n = {n}) and keeps {residuals} "
            "residual arrays ({bytes} bytes). `f_jvp(v)` then runs {linear} equations, all "
            "linear ({linear_counts}), where `jax.jvp(f, (x,), (v,))` runs {jvp}, among them "
            "{nonlinear_counts} again for every v. Both give the same J v: max |difference| "
            "{diff}."
        ).format(
            n=lin.n,
            residuals=lin.residuals,
            bytes=f"{lin.residual_bytes:,}",
            linear=sum(lin.linear_primitives.values()),
            linear_counts=", ".join(f"{p} ×{c}" for p, c in sorted(lin.linear_primitives.items())),
            jvp=sum(lin.jvp_primitives.values()),
            nonlinear_counts=", ".join(f"{p} ×{c}" for p, c in nonlinear.items()),
            diff=f"{lin.max_abs_diff:.2g}",
        )
    )
    a, b = st.columns(2)
    a.caption(_("jaxpr of jvp(f) (x and v)"))
    a.code(lin.jvp_jaxpr, language=None)
    b.caption(_("jaxpr of f_jvp (v alone; the residuals are its constants)"))
    b.code(lin.linear_jaxpr, language=None)
    _ui.show_code(grad.linearize_example, grad.linearize_vs_jvp)


def pytrees_tab() -> None:
    a, b = st.columns(2)
    init = a.selectbox("params", grad.INITS, format_func=_, key="grad_init", bind="query-params")
    argnums = b.selectbox(
        "grad(complex_loss, …)",
        list(grad.ARGNUMS),
        format_func=_,
        key="grad_argnums",
        bind="query-params",
    )
    with st.spinner(_("Differentiating complex_loss and its Hessian diagonal…"), show_time=True):
        grads = tree(init, argnums)
        _aux, diag = hessians(init)
    st.markdown(
        _("loss = {loss}; gradient structure `{structure}`").format(
            loss=f"{grads.loss:.4f}", structure=grads.structure
        )
    )
    st.dataframe(
        pd.DataFrame([vars(leaf) for leaf in grads.leaves]),
        hide_index=True,
        key="grad_tree_table",
    )
    st.subheader(_('The article\'s "Hessian diagonal"'))
    st.code(diag.as_written.code, language="python")
    st.error(
        _("**As written:** {error}").format(error=markdown.code(diag.as_written.headline)),
        icon=":material/error:",
    )
    with st.expander(_("JAX's full message")):
        _ui.error_code(diag.as_written.message[:3000])
    n = diag.via_hessian.size
    st.markdown(
        _(
            "**Why:** `grad(complex_loss)` returns a tuple of {arrays} arrays, and `grad` only "
            "differentiates functions that return a scalar. **Fix:** take the diagonal of "
            "`jax.hessian`, or one Hessian-vector product per basis vector: one at a time "
            "(`jax.lax.map` over the index i, each basis vector built inside the loop with "
            "`jax.nn.one_hot(i, {n})`), nothing {n}×{n} is ever held; the code below batches "
            "them with `vmap` over `np.eye({n})`, which computes all of the matrix at once."
        ).format(arrays=len(diag.blocks), n=n)
    )
    _ui.chart(grad.hessian_diagonal_figure, diag, key="grad_hessian_chart")
    _ui.show_code(grad.complex_loss, grad.gradient_tree, grad.hvp, grad.hessian_diagonal)


CHECK = _("Check")
PYTREES = _("Pytrees & Hessian")
_ui.lazy_tabs(
    {
        "f, f′, f″…": plot_tab,
        CHECK: check_tab,
        "value_and_grad, jvp, vjp": modes_tab,
        "custom_vjp": rule_tab,
        "custom_jvp": jvp_rule_tab,
        "stop_gradient, linearize": stop_tab,
        PYTREES: pytrees_tab,
    },
    key="grad_tab",
    keep={
        "custom_vjp": ("grad_factor", "grad_rule"),
        "custom_jvp": ("grad_at",),
        "stop_gradient, linearize": ("grad_stop_x",),
        PYTREES: ("grad_init", "grad_argnums"),
    },
)

"""The Compose page's statements about JAX, each checked against JAX itself."""

from __future__ import annotations

from jaxplay.compose import _hvp, _jacobians, _per_sample, _pipeline
from jaxplay.core import claims
from jaxplay.core.claims import Verdict
from jaxplay.core.i18n import N_


@claims.claim(
    "compose.jacfwd_equals_jacrev",
    N_(
        "`jacfwd` and `jacrev` compute the same Jacobian (they differ in cost, not in result), of "
        "shape (outputs, inputs), for tall and wide networks alike."
    ),
    cases=((3, 12), (12, 3)),
)
def _jacobians_agree(case: tuple[int, int]) -> Verdict:
    import jax

    n_in, n_out = case
    # At float32's full matmul precision: the claim is about the two modes' math, and a TPU's
    # (or a GPU's TF32) default precision rounds their different products differently (0.002
    # apart on a TPU v5e), which is the device's matmul, not jacfwd or jacrev.
    with jax.default_matmul_precision("highest"):
        shape, diff = _jacobians.jacobians_agree(n_in, n_out)
    return Verdict(
        tuple(shape) == (n_out, n_in) and diff < 1e-4,
        f"Jacobian {shape}, max |jacfwd - jacrev| {diff:.3g}",
    )


@claims.claim(
    "compose.hvp_ways_agree",
    N_(
        "Forward over reverse, reverse over reverse and the full Hessian times v give the same "
        "Hessian-vector product."
    ),
    cases=(4, 16),
)
def _hvp_agree(n: int) -> Verdict:
    """Every pair of the three ways the page times (:data:`_hvp.HVP_FUNCTIONS`), each jitted,
    relative to the largest entry of the full Hessian's. At float32's full matmul precision:
    the Hessian times v is a matmul, which a TPU or a GPU's TF32 rounds by default."""
    import jax
    import jax.numpy as jnp

    x, v = _hvp.hvp_inputs(n)
    with jax.default_matmul_precision("highest"):
        made = {
            name: jax.jit(lambda x, v, way=way: way(_hvp.hvp_test_function, x, v))(x, v)
            for name, way in _hvp.HVP_FUNCTIONS.items()
        }
    scale = max(1.0, float(jnp.max(jnp.abs(made["hessian(f)(x) @ v"]))))
    gap = max(
        float(jnp.max(jnp.abs(a - b))) / scale
        for i, a in enumerate(made.values())
        for b in list(made.values())[i + 1 :]
    )
    return Verdict(
        len(made) == 3 and gap < 1e-3,
        f"largest gap between the {len(made)} ways at n = {n}: {gap:.3g}",
    )


@claims.claim(
    "compose.jit_of_hvp_taking_f_raises",
    N_(
        "The article's `jit` of an `hvp` that takes the function `f` as an argument raises as "
        "written (a function is not an array), and runs with `f` static or closed over."
    ),
)
def _jit_hvp(_: None) -> Verdict:
    made = _hvp.jit_hvp(5)
    return Verdict(
        made.as_written.error_type == "TypeError" and made.fixes_agree,
        f"as written: {made.as_written.headline}; the fixes agree: {made.fixes_agree}",
    )


@claims.claim(
    "compose.bare_vmap_maps_the_parameters",
    N_(
        "A bare `vmap(grad(loss))` maps axis 0 of every argument, the parameters too: with as "
        "many samples as weights each sample gets one weight, `grad` refuses the vector "
        "prediction, and with different sizes the call fails; `in_axes=(None, 0, 0)` shares "
        "the parameters and equals a loop over the samples."
    ),
    cases=((8, 3), (5, 5)),
)
def _bare_vmap(case: tuple[int, int]) -> Verdict:
    batch, features = case
    ps = _per_sample.per_sample(batch, features)
    square_refused = ps.square.error_type == "TypeError" and "scalar" in ps.square.message
    disagree_fails = batch == features or not ps.as_written.ok
    return Verdict(
        square_refused and disagree_fails and ps.fixed_matches_loop and ps.tiled_matches_loop,
        f"B = D: {ps.square.headline}; B = {batch}, D = {features}: "
        f"{'runs' if ps.as_written.ok else ps.as_written.headline}; "
        f"the fix equals the loop: {ps.fixed_matches_loop}",
    )


#: Stacks with ``vmap`` the page offers, each at a few rows and a few more.
VMAP_STACKS = (("vmap",), ("jit", "vmap"), ("vmap", "grad"))


@claims.claim(
    "compose.vmap_traces_f_once",
    N_(
        "`vmap` runs f's Python once, for one row, whatever the number of rows, and stages "
        "batched operations rather than a loop over the rows."
    ),
    cases=VMAP_STACKS,
)
def _vmap_traces_once(stack: tuple[str, ...]) -> Verdict:
    runs = {
        rows: _pipeline.compose(stack, "jnp.sum(jnp.sin(x) ** 2)", (rows, 3)) for rows in (2, 40)
    }
    traced = {rows: r.traced_calls for rows, r in runs.items()}
    loops = [
        rows
        for rows, r in runs.items()
        if r.jaxpr is None or any(f" {loop}[" in r.jaxpr for loop in ("scan", "while"))
    ]
    return Verdict(
        set(traced.values()) == {1} and not loops,
        f"f's Python ran {traced} times by rows; a loop in the jaxpr at rows {loops}",
    )

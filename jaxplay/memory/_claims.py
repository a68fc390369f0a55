"""The memory page's statements about JAX, each checked against JAX itself."""

from __future__ import annotations

from typing import cast

from jaxplay.core import claims
from jaxplay.core.claims import Verdict
from jaxplay.core.i18n import N_
from jaxplay.memory import _fusion


@claims.claim(
    "memory.eager_dispatches_from_trace",
    N_(
        "Eager JAX dispatches one small program per call of the chain (a `jnp` or `jax.nn` "
        "function), not one per jaxpr operation (the "
        "row max with `keepdims` is a reduction and a broadcast in one program); the page counts "
        "them from a profiler trace."
    ),
    cases=tuple(_fusion.CHAIN_PRESETS),
)
def _eager(preset: str) -> Verdict:
    import jax.numpy as jnp

    from jaxplay.core import timing

    ops = _fusion.CHAIN_PRESETS[preset]
    x = jnp.ones((16, 16), jnp.float32)
    runs = timing.traced_dispatches(lambda v: _fusion.run_chain(ops, v), x)
    operations = len(_fusion.eager_dispatches(ops, x))
    # The sentence as the page builds it, on a report holding what the trace counted.
    report = _report(ops, tuple(sorted(runs.items())), operations)
    text = _fusion.fusion_story(report)
    said = f"as {sum(runs.values())} dispatched program"
    one_per = "one per primitive" in text or "one per operation" in text
    return Verdict(
        said in text and not (one_per and sum(runs.values()) != operations),
        f"{operations} jaxpr operations, {sum(runs.values())} dispatches {runs}; page: {text!r}",
    )


def _report(
    ops: tuple[str, ...], programs: tuple[tuple[str, int], ...], n: int
) -> _fusion.ChainReport:
    """A :class:`_fusion.ChainReport` for the sentence only (no timing: a story needs none):
    a stand-in holding just what :func:`_fusion.fusion_story` reads, typed as what it stands for."""
    import types

    dispatches = tuple(_fusion.Dispatch("op", 1024, 1024) for _ in range(n))
    stand_in = types.SimpleNamespace(
        ops=ops,
        size=16,
        dispatches=dispatches,
        programs=programs,
        kernels=1,
        jit_bytes=2048.0,
        eager_bytes=sum(d.read_bytes + d.written_bytes for d in dispatches),
    )
    return cast("_fusion.ChainReport", stand_in)


@claims.claim(
    "memory.fusion_bytes_are_xlas",
    N_(
        "The fused chain's bytes are XLA's `cost_analysis()['bytes accessed']`: for a chain of "
        "elementwise ops fused into one kernel, one read of the input and one write of the result."
    ),
    cases=("The article's chain, completed", "Cheap ops: memory-bound, where fusion pays"),
)
def _fused_bytes(preset: str) -> Verdict:
    import jax
    import jax.numpy as jnp

    ops = _fusion.CHAIN_PRESETS[preset]
    x = jnp.ones((64, 64), jnp.float32)
    compiled = jax.jit(lambda v: _fusion.run_chain(ops, v)).lower(x).compile()
    cost = compiled.cost_analysis()
    if cost is None:
        raise RuntimeError("XLA reported no cost_analysis() for the fused chain")
    cost = cost[0] if isinstance(cost, list) else cost
    got = float(cost["bytes accessed"])
    return Verdict(got == 2 * x.nbytes, f"XLA counts {got:,.0f} bytes for a {x.nbytes:,}-byte x")


@claims.claim(
    "memory.checkpoint_lowers_to_barriers",
    N_(
        "`jax.checkpoint` puts its recomputation behind optimization barriers in JAX's lowered "
        "program (which XLA may remove when it compiles); without it there are none."
    ),
)
def _barriers(_: None) -> Verdict:
    import jax
    import jax.numpy as jnp

    def f(x):
        return jnp.sum(jnp.sin(jnp.sin(x)))

    x = jnp.ones(8)
    lowered = jax.jit(jax.grad(jax.checkpoint(f))).lower(x).as_text()
    plain = jax.jit(jax.grad(f)).lower(x).as_text()
    barriers = lowered.count("optimization_barrier")
    return Verdict(
        barriers > 0 and "optimization_barrier" not in plain,
        f"{barriers} optimization barriers with checkpoint, "
        f"{plain.count('optimization_barrier')} without",
    )


@claims.claim(
    "memory.checkpoint_under_grad_drops_the_forward_pass",
    N_(
        "Under `grad`, a function checkpointed whole lowers to as many of its ops as without "
        "checkpoint: the loss's value is not used, so JAX leaves out the forward pass and the "
        "recomputation is the only one; `value_and_grad`, which uses the value, lowers both."
    ),
)
def _forward_dropped(_: None) -> Verdict:
    import jax
    import jax.numpy as jnp

    def f(x):
        return jnp.sum(jnp.sin(jnp.sin(x) @ jnp.sin(x).T))

    def sines(transform, fn):
        return jax.jit(transform(fn)).lower(jnp.ones((4, 4))).as_text().count("stablehlo.sine")

    plain, whole = sines(jax.grad, f), sines(jax.grad, jax.checkpoint(f))
    valued = sines(jax.value_and_grad, jax.checkpoint(f))
    plain_valued = sines(jax.value_and_grad, f)
    return Verdict(
        whole == plain and valued > plain_valued,
        f"sine ops lowered: grad {plain} plain, {whole} checkpointed; value_and_grad "
        f"{plain_valued} plain, {valued} checkpointed",
    )


@claims.claim(
    "memory.checkpoint_saves_fewer_residuals",
    N_(
        "Under `jax.checkpoint` with its default policy (nothing_saveable) the backward pass "
        "saves fewer residuals, only the checkpointed function's inputs, and recomputes the "
        "rest; another policy may save more (on the MLP, dots_saveable saves as many as no "
        "checkpoint). The counts are JAX's own saved residuals for the page's gradient."
    ),
    cases=(("seed", "unrolled"), ("seed", "scan"), ("mlp", "unrolled"), ("mlp", "scan")),
)
def _residuals(case: tuple[str, str]) -> Verdict:
    """Each model and loop the page offers: the whole layer checkpointed saves only its
    arguments, each block checkpointed with the default policy saves fewer than no checkpoint,
    and dots_saveable never fewer than the default, on the MLP as many as no checkpoint (traced
    only: JAX's residual list for the page's gradient, by the argument it differentiates)."""
    import jax

    from jaxplay.memory import _remat

    model_key, loop = case
    shapes = jax.eval_shape(lambda: _remat.MODELS[model_key].inputs(8, 3))
    saved = {
        key: _remat.gradient_residuals(
            model_key, _remat.build_loss(model_key, key, loop, 3), *shapes
        )
        for key in ("none", "whole", "per_round", "per_round_dots")
    }
    n = {key: len(r) for key, r in saved.items()}
    whole_origins = sorted({r.origin for r in saved["whole"]})
    return Verdict(
        whole_origins == ["argument"]
        and n["whole"] < n["none"]
        and n["per_round"] < n["none"]
        and n["per_round_dots"] >= n["per_round"]
        and (model_key != "mlp" or n["per_round_dots"] == n["none"]),
        f"{model_key}, {loop}: residuals {n}; the whole layer's are {whole_origins}",
    )

"""Gradient checkpointing (remat): what each variant saves for the backward pass, and what it costs.

``jax.grad`` keeps the forward pass's intermediates ("residuals") alive until the backward pass
uses them; inside ``jax.checkpoint`` only what its *policy* allows is saved and the rest is
recomputed then. The article wraps its ``memory_intensive_layer`` in ``checkpoint`` and says
"observe the memory difference"; this module shows it three ways for each variant: the residuals
JAX saves (``print_saved_residuals``, as a table), XLA's ``memory_analysis()`` of the compiled
gradient (temp, argument, output bytes), and the device's peak memory where the backend reports
it, with the gradient's time. The first is JAX's plan, the second what XLA made of it. They can
disagree: XLA may merge a recomputation with the forward computation it repeats (common
subexpression elimination), so an unrolled loop can compile to the same program whatever the
policy, while a ``lax.scan`` keeps the saving: XLA cannot merge work across loop iterations.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.ad_checkpoint import checkpoint_name

from jaxplay import article
from jaxplay.core import claims, compilation, timing
from jaxplay.core.i18n import N_, _
from jaxplay.memory._residuals import Residual, saved_residuals

#: Largest matrix side analysed (compile only: nothing of this size is allocated).
MAX_SIZE = 4096
#: Largest matrix side whose gradients are run and timed, per platform (2 shared CPU cores are
#: slow: the seed layer's gradient at 512 is ~8 GFLOP per call).
MAX_RUN_SIZE: dict[str, int] = {"cpu": 512}
#: Default run limit on accelerators.
MAX_RUN_SIZE_ACCELERATOR = 4096
#: Most rounds / layers (the seed's gradient grows like size**rounds; float32 ends near 3e38).
MAX_DEPTH = 12
#: Relative gradient difference still counted as "equal" (recomputation may round differently).
GRAD_RTOL = 1e-3
#: Most entries of each gradient leaf kept (evenly spaced) to compare variants: a cached result
#: then holds at most 1 MiB per leaf, whatever the size (a 4096-wide MLP's gradient is 800 MB).
GRADIENT_SAMPLE = 1 << 18
#: Wall-clock budget of timing one variant (:class:`jaxplay.core.timing.Deadline`): past it no
#: further sample starts, and the time shown is the median of the samples taken.
VARIANT_BUDGET_S = 10.0
#: Variants the page starts with (the rest are one click away).
DEFAULT_VARIANTS: tuple[str, ...] = ("none", "whole", "per_round", "per_round_names")


#: The article's code as written, as the article package's example shows it.
ARTICLE_CODE = article.by_id("memory-checkpoint-as-written").source

# --- the models -----------------------------------------------------------------------------------


def seed_round(params: None, x: Any) -> Any:
    """One round of the seed article's ``memory_intensive_layer``: ``sin(x) @ cos(x).T``.

    ``checkpoint_name`` tags ``sin(x)`` so ``save_only_these_names("sin")`` can keep it; without a
    policy that names it, the tag does nothing.
    """
    del params  # the seed's rounds have no parameters
    return checkpoint_name(jnp.sin(x), "sin") @ jnp.cos(x).T


def mlp_layer(params: tuple[Any, Any], x: Any) -> Any:
    """One dense layer ``tanh(x @ w + b)``, its output tagged ``"activation"``."""
    w, b = params
    return checkpoint_name(jnp.tanh(x @ w + b), "activation")


def seed_inputs(size: int, depth: int) -> tuple[None, Any]:
    """The article's input ``jnp.ones((size, size))``; rounds have no parameters."""
    del depth
    return None, jnp.ones((size, size), jnp.float32)


def mlp_inputs(size: int, depth: int) -> tuple[tuple[Any, Any], Any]:
    """``depth`` layers of ``size``×``size`` weights (stacked on a leading axis) and a batch of
    ``size`` rows, from a fixed key so every variant sees the same numbers."""
    kw, kx = jax.random.split(jax.random.key(0))
    w = jax.random.normal(kw, (depth, size, size), jnp.float32) / np.sqrt(size)
    b = jnp.zeros((depth, size), jnp.float32)
    x = jax.random.normal(kx, (size, size), jnp.float32)
    return (w, b), x


@dataclass(frozen=True)
class Model:
    """A stack of identical blocks whose gradient we checkpoint in different ways.

    Attributes:
        key: identifier used in links and caches.
        title: what the page calls it (English, marked with ``N_``: the page shows it with ``_``).
        block: one round / layer, ``block(params_i, x) -> x``.
        inputs: ``inputs(size, depth) -> (params, x)``; params stacked on a leading axis or None.
        argnums: which argument of ``loss(params, x)`` the gradient is taken with respect to.
        name: the ``checkpoint_name`` its block tags (for ``save_only_these_names``).
        depth_label: "rounds" or "layers" (English, marked with ``N_``).
        op: the block's elementwise op as StableHLO and HLO name it (``sine``): counted in the
            lowered and the compiled gradient, it shows whether XLA kept a recomputation.
    """

    key: str
    title: str
    block: Callable[[Any, Any], Any]
    inputs: Callable[[int, int], tuple[Any, Any]]
    argnums: int
    name: str
    depth_label: str
    op: str


MODELS: dict[str, Model] = {
    "seed": Model(
        "seed",
        "memory_intensive_layer",
        seed_round,
        seed_inputs,
        argnums=1,
        name="sin",
        depth_label=N_("rounds"),
        op="sine",
    ),
    "mlp": Model(
        "mlp",
        N_("A stack of dense tanh layers (MLP)"),
        mlp_layer,
        mlp_inputs,
        argnums=0,
        name="activation",
        depth_label=N_("layers"),
        op="tanh",
    ),
}

#: How the rounds are looped: the article's Python loop (unrolled into one long program) or a
#: ``lax.scan`` (one compiled loop body). The labels are English, marked with ``N_``.
LOOPS: dict[str, str] = {
    "unrolled": N_("Python loop (unrolled)"),
    "scan": N_("lax.scan (one loop body)"),
}


# --- the variants ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One way of checkpointing the stack.

    Attributes:
        key: identifier.
        label: name for tables (English, as ``short`` and ``explanation``: marked with ``N_``).
        short: shorter name for the chart's point labels.
        scope: ``None`` (no checkpoint), ``"layer"`` (around the whole stack) or ``"round"``
            (around each block: a round of the seed layer, a layer of the MLP).
        policy: name of the ``jax.checkpoint_policies`` entry used, or None for the default.
        code: the line that applies it, as shown on the page.
        explanation: what it saves and recomputes.
    """

    key: str
    label: str
    short: str
    scope: str | None
    policy: str | None
    code: str
    explanation: str


VARIANTS: dict[str, Variant] = {
    v.key: v
    for v in (
        Variant(
            "none",
            N_("no checkpoint"),
            N_("none"),
            None,
            None,
            "jax.grad(loss)",
            N_("Every intermediate the backward pass needs is saved."),
        ),
        Variant(
            "whole",
            N_("checkpoint(whole layer)"),
            N_("whole layer"),
            "layer",
            None,
            "layer = jax.checkpoint(layer)",
            N_(
                "The article's checkpointed_fn. Only the layer's arguments (x, the MLP's weights "
                "and biases) are saved; the backward pass reruns it, holding all intermediates."
            ),
        ),
        Variant(
            "per_round",
            N_("checkpoint(each block), nothing_saveable"),
            N_("each block"),
            "round",
            "nothing_saveable",
            "block = jax.checkpoint(block, policy=jax.checkpoint_policies.nothing_saveable)",
            N_(
                "Each block's input is saved; each block is recomputed just before its backward "
                "step (nothing_saveable is also jax.checkpoint's default)."
            ),
        ),
        Variant(
            "per_round_dots",
            N_("checkpoint(each block), dots_saveable"),
            N_("each block, dots"),
            "round",
            "dots_saveable",
            "block = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)",
            N_(
                "Matrix-product outputs may be saved too, so only the elementwise ops are "
                "recomputed. Where a block's product is the next block's input, which every "
                "policy saves (the seed layer), this saves nothing more than nothing_saveable."
            ),
        ),
        Variant(
            "per_round_names",
            N_("checkpoint(each block), save_only_these_names"),
            N_("each block, names"),
            "round",
            "save_only_these_names",
            "block = jax.checkpoint(block, policy=jax.checkpoint_policies.save_only_these_names("
            "NAME))",
            N_(
                "Values tagged with checkpoint_name(..., NAME) are saved; the rest is recomputed. "
                "A tag on the block's output (the MLP's: the next block's input, which every "
                "policy saves) saves no more than nothing_saveable."
            ),
        ),
    )
}


def _policy(variant: Variant, model: Model) -> Any:
    if variant.policy is None:
        return None
    if variant.policy == "save_only_these_names":
        return jax.checkpoint_policies.save_only_these_names(model.name)
    return getattr(jax.checkpoint_policies, variant.policy)


def variant_code(variant: Variant, model: Model) -> str:
    """The variant's line of code with the model's ``checkpoint_name`` filled in."""
    return variant.code.replace("NAME", repr(model.name))


def build_loss(model_key: str, variant_key: str, loop: str, depth: int) -> Callable[..., Any]:
    """``loss(params, x) = sum(stack(params, x))`` with the variant's checkpointing applied.

    Arguments:
        model_key: a key of :data:`MODELS`.
        variant_key: a key of :data:`VARIANTS`.
        loop: a key of :data:`LOOPS`.
        depth: number of rounds / layers.
    """
    model, variant = MODELS[model_key], VARIANTS[variant_key]
    block = model.block
    if variant.scope == "round":
        block = jax.checkpoint(block, policy=_policy(variant, model))

    def layer(params: Any, x: Any) -> Any:
        if loop == "scan":
            step = lambda carry, p: (block(p, carry), None)
            return jax.lax.scan(step, x, params, length=depth)[0]
        for i in range(depth):
            p = None if params is None else jax.tree_util.tree_map(lambda a, i=i: a[i], params)
            x = block(p, x)
        return x

    if variant.scope == "layer":
        layer = jax.checkpoint(layer, policy=_policy(variant, model))

    def loss(params: Any, x: Any) -> Any:
        return jnp.sum(layer(params, x))

    return loss


# --- saved residuals ------------------------------------------------------------------------------


def gradient_residuals(
    model_key: str, loss: Callable[..., Any], *args: Any
) -> tuple[Residual, ...]:
    """What the page's gradient, ``jax.grad(loss, argnums=model.argnums)``, saves.

    A backward pass planned for both arguments kept the MLP's first-layer weights a second time,
    to differentiate by ``x``, which the page never does (12 rows where its gradient saves 11).
    """
    return saved_residuals(loss, *args, argnums=MODELS[model_key].argnums)


# --- one variant, compiled and (optionally) run ---------------------------------------------------


@dataclass(frozen=True, eq=False)
class RematResult:
    """Everything measured about one checkpointing variant.

    Attributes:
        variant: the :class:`Variant`.
        residuals: the saved residuals (JAX's plan).
        memory: ``memory_analysis()`` byte counts (argument/output/temp/alias/generated code) of
            the compiled gradient, or None where the backend gives none.
        notes: why something is missing.
        time: the gradient's blocked steady-state time, or None if it was not run.
        peak_bytes: ``peak_bytes_in_use`` from ``device.memory_stats()`` after the runs, or None
            (CPU reports no memory statistics).
        gradient: the gradient's leaves as numpy arrays, or None if it was not run.
        barriers: optimization barriers in the lowered StableHLO and in the compiled HLO. JAX
            places them so XLA cannot merge a recomputation with the forward op it repeats; a
            backend that drops them before its simplifier may undo the checkpointing.
        ops: the model's elementwise op (:attr:`Model.op`) counted in the lowered StableHLO and
            in the compiled HLO: recomputation adds to the first; if XLA merged it back, the
            second equals the count without checkpointing.
        roles: how the gradient uses the saved residuals (see :func:`residual_roles`), or None
            where that could not be matched to them.
        gradient: up to :data:`GRADIENT_SAMPLE` evenly spaced entries of each gradient leaf.
    """

    variant: Variant
    residuals: tuple[Residual, ...]
    memory: dict[str, int] | None
    notes: tuple[str, ...] = ()
    time: timing.Timing | None = None
    peak_bytes: int | None = None
    barriers: tuple[int, int] = (0, 0)
    ops: tuple[int, int] = (0, 0)
    roles: dict[str, int] | None = None
    gradient: tuple[np.ndarray, ...] | None = field(default=None, repr=False)

    @property
    def residual_bytes(self) -> int:
        return sum(r.bytes for r in self.residuals)

    @property
    def temp_bytes(self) -> int | None:
        """XLA's scratch memory for the compiled gradient: where saved intermediates live."""
        return None if self.memory is None else self.memory.get("temp")


def platform() -> str:
    """JAX's platform of the default device (``cpu``, ``gpu``, ``tpu``): limits depend on it."""
    return str(jax.devices()[0].platform)


def run_limit(platform: str) -> int:
    """Largest size whose gradients are run and timed on ``platform``."""
    return MAX_RUN_SIZE.get(platform, MAX_RUN_SIZE_ACCELERATOR)


@claims.states_nothing("a limit's message")
def check_size(size: int, depth: int) -> str | None:
    """Why ``size``/``depth`` cannot be analysed (a message naming the limit), or None if fine."""
    if not 1 <= size <= MAX_SIZE:
        message = _("Size {size} is outside 1…{limit} (the largest matrix side analysed here).")
        return message.format(size=size, limit=MAX_SIZE)
    message = _("Depth {depth} is outside 1…{limit} (the most rounds or layers here).")
    return None if 1 <= depth <= MAX_DEPTH else message.format(depth=depth, limit=MAX_DEPTH)


def peak_memory() -> int | None:
    """``peak_bytes_in_use`` of the first device, or None where the backend reports nothing."""
    try:
        stats = jax.devices()[0].memory_stats()
    except Exception:  # some backends raise rather than return None
        return None
    if not stats:
        return None
    peak = stats.get("peak_bytes_in_use")
    return int(peak) if peak is not None else None


def analyse_variant(
    model_key: str,
    variant_key: str,
    loop: str,
    size: int,
    depth: int,
    run: bool,
    budget_s: float = 0.2,
) -> RematResult:
    """Residuals and compiled memory of one variant's gradient; with ``run``, also its time,
    the device's peak memory and the gradient itself.

    Raises:
        ValueError: size or depth outside the limits (:func:`check_size`), or ``run`` above
            :func:`run_limit` for this platform.
    """
    problem = check_size(size, depth)
    if problem:
        raise ValueError(problem)
    where = platform()
    if run and size > run_limit(where):
        message = _("Size {size} is above {limit}, the largest run and timed on {platform}.")
        raise ValueError(message.format(size=size, limit=run_limit(where), platform=where))
    model = MODELS[model_key]
    loss = build_loss(model_key, variant_key, loop, depth)
    # Shapes only: tracing and compiling need no data, so a compile-only analysis allocates nothing.
    shapes = jax.eval_shape(lambda: model.inputs(size, depth))
    residuals = gradient_residuals(model_key, loss, *shapes)
    roles = dict(residual_roles(model_key, variant_key, loop, depth))
    if sum(roles.values()) != len(residuals):
        roles = None  # the small copy saved other values: say nothing rather than guess
    grad = jax.grad(loss, argnums=model.argnums)
    if not run:
        aot = compilation.compile_aot(grad, *shapes)
        return RematResult(
            VARIANTS[variant_key],
            residuals,
            aot.memory,
            aot.notes,
            barriers=_barriers(aot),
            ops=_op_counts(aot, model.op),
            roles=roles,
        )
    params, x = model.inputs(size, depth)
    deadline = timing.Deadline(VARIANT_BUDGET_S)
    profile = timing.profile_jit(grad, params, x, budget_s=budget_s, warmup=1, deadline=deadline)
    gradient = timing.block(profile.aot.compiled(*profile.aot.call_args))
    leaves = tuple(np.asarray(_sample(leaf)) for leaf in jax.tree_util.tree_leaves(gradient))
    return RematResult(
        VARIANTS[variant_key],
        residuals,
        profile.memory,
        profile.notes,
        time=profile.steady,
        peak_bytes=peak_memory(),
        barriers=_barriers(profile.aot),
        ops=_op_counts(profile.aot, model.op),
        roles=roles,
        gradient=leaves,
    )


def _sample(leaf: Any) -> Any:
    """At most :data:`GRADIENT_SAMPLE` evenly spaced entries of ``leaf``, taken on the device."""
    flat = jnp.ravel(leaf)
    stride = -(-flat.size // GRADIENT_SAMPLE)
    return flat[::stride]


def _barriers(aot: compilation.AotCompilation) -> tuple[int, int]:
    """Optimization barriers before and after XLA's optimizations."""
    return aot.stablehlo_text.count("optimization_barrier"), aot.hlo_text.count("opt-barrier(")


def _op_counts(aot: compilation.AotCompilation, op: str) -> tuple[int, int]:
    """The elementwise op ``op`` in the lowered StableHLO and in the compiled HLO."""
    lowered = len(re.findall(rf"stablehlo\.{op}\b", aot.stablehlo_text))
    return lowered, len(re.findall(rf"\b{op}\(", aot.hlo_text))


#: What the gradient does with a saved residual, by the primitives that read it in the
#: linearized gradient (the first rule that matches wins); English, marked with ``N_``.
ROLES: tuple[tuple[str, str], ...] = (
    ("dot_general", N_("matmul operands")),
    ("mul", N_("derivative factors")),
    ("remat2", N_("inputs of checkpointed blocks")),
    ("checkpoint", N_("inputs of checkpointed blocks")),
    ("scan", N_("values stacked by the scan")),
)


@functools.lru_cache(maxsize=64)
def residual_roles(model_key: str, variant_key: str, loop: str, depth: int) -> dict[str, int]:
    """How the gradient uses what is saved: residuals counted by role (:data:`ROLES`); the
    cache's own dict, once per setting in the measuring process, the compute worker while it
    lives (the size does not change it; about a tenth of a new size's analysis, docs/benchmarks.md,
    *The memory page's cost*): copy it to change it.

    ``jax.linearize`` of the same stack on a 2×2 copy (the residuals' structure does not depend
    on the size, and 2×2 costs nothing at any depth): its linear function closes over the saved
    residuals, and the equations that read each one say what it is for. A residual read by a
    ``dot_general`` is an operand of a backward matmul; one read by a ``mul`` is a derivative
    factor (what an elementwise op's derivative needs: ``cos x`` for ``sin``, ``sin x`` for
    ``cos``); checkpointed blocks and scans read theirs whole.
    """
    from jax.extend.core import Literal

    model = MODELS[model_key]
    loss = build_loss(model_key, variant_key, loop, depth)
    args = list(model.inputs(2, depth))

    def f(wrt: Any) -> Any:
        return loss(*[wrt if i == model.argnums else a for i, a in enumerate(args)])

    _, f_jvp = jax.linearize(f, args[model.argnums])
    closed = jax.make_jaxpr(f_jvp)(args[model.argnums])
    index = {v: i for i, v in enumerate(closed.jaxpr.constvars)}
    readers: list[set[str]] = [set() for _ in index]
    for eqn in closed.jaxpr.eqns:
        for v in eqn.invars:
            if not isinstance(v, Literal) and v in index:
                readers[index[v]].add(eqn.primitive.name)
    roles: dict[str, int] = {}
    for prims in readers:
        role = next((r for p, r in ROLES if p in prims), "other: " + ", ".join(sorted(prims)))
        roles[role] = roles.get(role, 0) + 1
    return roles

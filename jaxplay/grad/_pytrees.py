"""The article's ``complex_loss``: its gradient pytree, ``argnums``, ``has_aux``, Hessian diagonal.

Why: ``grad`` returns a pytree shaped like what it differentiates, and the article's
``grad(grad(complex_loss))`` "Hessian diagonal" raises, because the inner ``grad`` returns a tuple.
Here the gradient is shown leaf by leaf for each ``argnums``, the article's line is run as written
(its real ``TypeError``), and the diagonal is computed two ways that agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import plotly.graph_objects as go
from jax.flatten_util import ravel_pytree

from jaxplay.article import complex_loss, hvp
from jaxplay.core import capture
from jaxplay.core.capture import Outcome
from jaxplay.core.i18n import N_, _
from jaxplay.core.inputs import normal_arrays

PARAM_NAMES = ("W1", "b1", "W2", "b2")
INITS = (N_("random (key 0, scaled 1/√fan-in)"), N_("ones (as in the article)"))


def init_complex_loss(init: str, n_in: int = 10, hidden: int = 20) -> tuple[tuple[Any, ...], Any]:
    """``(params, x)`` for :func:`complex_loss` with the article's shapes.

    The article uses ``jnp.ones`` everywhere; then ``x @ W1 + b1 = 11`` and ``tanh`` is saturated,
    so most gradients and the whole Hessian are ~0. The random choice keeps them visible.
    """
    if init == INITS[1]:
        shapes = ((n_in, hidden), (hidden,), (hidden, 1), (1,))
        return tuple(jnp.asarray(np.ones(s, np.float32)) for s in shapes), jnp.asarray(
            np.ones(n_in, np.float32)
        )
    if init != INITS[0]:
        raise ValueError(f"unknown initialisation {init!r}; choose one of {list(INITS)}")
    w1, b1, w2, b2, x = normal_arrays(0, (n_in, hidden), (hidden,), (hidden, 1), (1,), (n_in,))
    params = (w1 / math.sqrt(n_in), b1 * 0.1, w2 / math.sqrt(hidden), b2 * 0.1)
    return tuple(jnp.asarray(p, dtype=jnp.float32) for p in params), jnp.asarray(x)


#: ``argnums`` choices for ``grad(complex_loss, argnums=...)``.
ARGNUMS: dict[str, int | tuple[int, ...]] = {
    "argnums=0 (params)": 0,
    "argnums=1 (x)": 1,
    N_("argnums=(0, 1) (both)"): (0, 1),
}
ARG_NAMES = ("params", "x")


@dataclass(frozen=True)
class LeafSummary:
    """One array of a gradient pytree, summarised (a gradient can be too big to print)."""

    path: str
    shape: tuple[int, ...]
    dtype: str
    mean: float
    min: float
    max: float
    norm: float


@dataclass(frozen=True)
class GradientTree:
    """``grad(complex_loss, argnums)`` as a structure: the treedef and a row per leaf."""

    argnums: int | tuple[int, ...]
    loss: float
    structure: str
    leaves: tuple[LeafSummary, ...]


def _leaf_name(path: tuple[Any, ...], argnums: int | tuple[int, ...]) -> str:
    """``params[0] (W1)`` rather than ``[0][0]``: the key path with the article's names."""
    indices = [getattr(p, "idx", getattr(p, "key", p)) for p in path]
    if isinstance(argnums, tuple):
        arg = argnums[indices[0]]
        indices = indices[1:]
    else:
        arg = argnums
    name = ARG_NAMES[arg] + "".join(f"[{i}]" for i in indices)
    if arg == 0 and indices:
        name += f" ({PARAM_NAMES[indices[0]]})"
    return name


def gradient_tree(init: str, argnums: int | tuple[int, ...]) -> GradientTree:
    """The gradient of the article's ``complex_loss`` for an ``argnums`` choice, leaf by leaf.

    ``grad`` returns a pytree shaped like the argument(s) it differentiates: a 4-tuple of arrays
    for ``params``, one array for ``x``, and a pair of both for ``(0, 1)``.
    """
    params, x = init_complex_loss(init)
    loss, grads = jax.jit(jax.value_and_grad(complex_loss, argnums=argnums))(params, x)
    flat, treedef = jax.tree_util.tree_flatten_with_path(grads)
    leaves = tuple(
        LeafSummary(
            path=_leaf_name(path, argnums),
            shape=tuple(leaf.shape),
            dtype=str(leaf.dtype),
            mean=float(np.mean(a)),
            min=float(np.min(a)),
            max=float(np.max(a)),
            norm=float(np.linalg.norm(a)),
        )
        for path, leaf in flat
        for a in (np.asarray(leaf),)
    )
    return GradientTree(argnums, float(loss), str(treedef), leaves)


def loss_with_aux(params, x):
    """complex_loss that also returns its intermediates: ``has_aux=True`` passes them through."""
    W1, b1, W2, b2 = params
    h = jnp.tanh(jnp.dot(x, W1) + b1)
    out = jnp.dot(h, W2) + b2
    return jnp.sum(out), {"hidden": h, "output": out}


@dataclass(frozen=True)
class AuxResult:
    """``value_and_grad(loss_with_aux, has_aux=True)``: the loss, the aux shapes, the grad check."""

    loss: float
    aux_shapes: dict[str, tuple[int, ...]]
    grads_equal_plain: bool


def value_and_grad_with_aux(init: str) -> AuxResult:
    """Run ``value_and_grad(..., has_aux=True)`` and check its gradient is the plain one."""
    params, x = init_complex_loss(init)
    (loss, aux), grads = jax.jit(jax.value_and_grad(loss_with_aux, has_aux=True))(params, x)
    plain = jax.jit(jax.grad(complex_loss))(params, x)
    same = all(
        bool(np.allclose(a, b))
        for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(plain), strict=True)
    )
    return AuxResult(float(loss), {k: tuple(v.shape) for k, v in aux.items()}, same)


HESSIAN_DIAG_AS_WRITTEN = (
    "grad_loss = grad(complex_loss, argnums=0)\n"
    "hessian_diag = grad(grad(complex_loss, argnums=0), argnums=0)\n"
    "hessian_diag(params, x_sample)"
)


@dataclass(frozen=True)
class HessianDiagonal:
    """The article's "Hessian diagonal" as written, and two correct ways that agree.

    Attributes:
        as_written: what ``grad(grad(complex_loss))`` really does (it raises).
        via_hessian: ``diag(jax.hessian(loss)(θ))`` over the flattened parameters θ.
        via_hvp: ``(H e_i)_i`` for every basis vector e_i, with the article's ``hvp``, under vmap.
        blocks: ``(name, start, stop)`` of each parameter array in θ.
    """

    as_written: Outcome
    via_hessian: np.ndarray
    via_hvp: np.ndarray
    blocks: tuple[tuple[str, int, int], ...]

    @property
    def max_abs_diff(self) -> float:
        return float(np.max(np.abs(self.via_hessian - self.via_hvp)))


def hessian_diagonal(init: str) -> HessianDiagonal:
    """Run the article's ``grad(grad(...))`` and compute the real diagonal two ways.

    ``grad`` needs a scalar output, but ``grad(complex_loss)`` returns a tuple of arrays, so the
    outer ``grad`` raises. The diagonal of the Hessian with respect to all 241 parameters is
    ``diag(jax.hessian(...))``, or ``e_iᵀ H e_i`` from one Hessian-vector product per basis
    vector. Batched with ``vmap`` as here, the products compute all of H at once (the jaxpr holds
    241×241 arrays); one at a time (``jax.lax.map`` over the index, each basis vector made in
    the loop by ``jax.nn.one_hot``) nothing 241×241 would be held, not even the basis.
    """
    params, x = init_complex_loss(init)
    as_written = capture.run(
        jax.grad(jax.grad(complex_loss, argnums=0), argnums=0),
        params,
        x,
        code=HESSIAN_DIAG_AS_WRITTEN,
    )
    theta, unravel = ravel_pytree(params)
    flat_loss = lambda t: complex_loss(unravel(t), x)
    via_hessian = jax.jit(lambda t: jnp.diag(jax.hessian(flat_loss)(t)))(theta)
    basis = np.eye(theta.size, dtype=np.float32)
    via_hvp = jax.jit(jax.vmap(lambda e: jnp.vdot(e, hvp(flat_loss, theta, e))))(basis)
    blocks, start = [], 0
    for name, p in zip(PARAM_NAMES, params, strict=True):
        blocks.append((name, start, start + p.size))
        start += p.size
    return HessianDiagonal(as_written, np.asarray(via_hessian), np.asarray(via_hvp), tuple(blocks))


def hessian_diagonal_figure(diag: HessianDiagonal) -> go.Figure:
    """The diagonal by parameter index, both ways, with the parameter arrays shaded."""
    index = np.arange(diag.via_hessian.size)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=index, y=diag.via_hessian, mode="lines", name="diag(jax.hessian)"))
    fig.add_trace(
        go.Scatter(x=index, y=diag.via_hvp, mode="markers", marker={"size": 5}, name="eᵢ·hvp(eᵢ)")
    )
    for i, (name, start, stop) in enumerate(diag.blocks):
        fig.add_vrect(
            x0=start - 0.5,
            x1=stop - 0.5,
            fillcolor="gray",
            opacity=0.08 if i % 2 else 0.0,
            line_width=0,
            annotation_text=name,
            annotation_position="top left",
        )
    fig.update_layout(
        title=_("Hessian diagonal of complex_loss (max |difference| {diff})").format(
            diff=f"{diag.max_abs_diff:.2g}"
        ),
        xaxis_title=_("parameter index (W1, b1, W2, b2 flattened)"),
        yaxis_title="∂²loss/∂θᵢ²",
        margin={"t": 50, "b": 40},
    )
    return fig

"""Per-sample gradients: the article's ``@jit @vmap`` as written (it maps the parameters too) and
fixed with ``in_axes``, and what the page says about a run (each sentence from the run's shapes
and outcomes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxplay.article import (
    per_sample_gradient,
)
from jaxplay.core import capture, claims, markdown
from jaxplay.core.capture import Outcome
from jaxplay.core.i18n import _, ngettext
from jaxplay.core.inputs import normal_arrays

# --- per-sample gradients ------------------------------------------------------------------------


def loss_for_sample(p, xi, yi):
    """The article's per-sample squared error, at module level so ``grad`` can be composed."""
    pred = jnp.dot(p, xi)
    return (pred - yi) ** 2


#: The fix: map over samples only; every sample sees the same ``params``.
per_sample_grads = jax.jit(jax.vmap(jax.grad(loss_for_sample), in_axes=(None, 0, 0)))

MAX_SAMPLES, MAX_FEATURES = 64, 64


@dataclass(frozen=True)
class PerSample:
    """The article's per-sample gradient as written, and the fix, against a Python loop.

    ``vmap`` maps axis 0 of every argument, ``params`` too, so what the article's function does
    depends on the shapes: with one weight vector (D,) and B ≠ D samples the sizes disagree; with
    B = D each sample gets one *element* of the weights, its prediction is a vector and ``grad``
    refuses it; only 2-D parameters (B, D) run, each sample paired with its own row.

    Attributes:
        as_written: calling the article's function with one shared ``params`` (D,), B samples.
        square: the same with as many samples as weights (D samples): the other failure.
        rows_shape: the result's shape with parameters of shape (B, D), one random row each.
        rows_match_model0: whether that result equals the per-sample gradients of the first row's
            model (it does not: each sample saw another row); ``False`` is the silent error.
        tiled_shape: the result's shape with ``params`` copied per sample (B, D).
        tiled_matches_loop: whether that equals the loop (it does: every row is the model).
        fixed: ``vmap(grad(loss), in_axes=(None, 0, 0))(params, X, Y)``, shape (B, D).
        loop: the same gradients by a Python loop over samples.
    """

    params_shape: tuple[int, ...]
    x_shape: tuple[int, ...]
    y_shape: tuple[int, ...]
    as_written: Outcome
    square: Outcome
    rows_shape: tuple[int, ...]
    rows_match_model0: bool
    tiled_shape: tuple[int, ...]
    tiled_matches_loop: bool
    fixed: np.ndarray
    loop: np.ndarray

    @property
    def fixed_matches_loop(self) -> bool:
        return bool(np.allclose(self.fixed, self.loop, rtol=1e-5, atol=1e-5))


def _close(a: Any, b: Any) -> bool:
    return bool(np.allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5))


def per_sample(batch: int = 8, features: int = 3) -> PerSample:
    """Run both versions on a regression batch (seed 0) and a Python loop over the samples."""
    if not 1 <= batch <= MAX_SAMPLES or not 1 <= features <= MAX_FEATURES:
        raise ValueError(
            f"batch must be 1 to {MAX_SAMPLES} and features 1 to {MAX_FEATURES} "
            f"(got {batch}, {features})"
        )
    arrays = normal_arrays(0, (features,), (batch, features), (batch,), (batch, features))
    params, X, Y, rows = (jnp.asarray(a) for a in arrays)
    as_written = capture.run(
        per_sample_gradient,
        params,
        X,
        Y,
        code=f"per_sample_gradient(params, X, Y)  # params {params.shape}, X {X.shape}",
    )
    square = capture.run(
        per_sample_gradient,
        params,
        jnp.resize(X, (features, features)),
        jnp.resize(Y, (features,)),
        code=f"per_sample_gradient(params, X, Y)  # params ({features},), X ({features}, "
        f"{features}): as many samples as weights",
    )
    grad_one = jax.jit(jax.grad(loss_for_sample))
    loop = np.stack([np.asarray(grad_one(params, X[i], Y[i])) for i in range(batch)])
    tiled = np.asarray(per_sample_gradient(jnp.tile(params, (batch, 1)), X, Y))
    by_row = np.asarray(per_sample_gradient(rows, X, Y))
    return PerSample(
        params_shape=tuple(params.shape),
        x_shape=tuple(X.shape),
        y_shape=tuple(Y.shape),
        as_written=as_written,
        square=square,
        rows_shape=tuple(by_row.shape),
        rows_match_model0=_close(by_row, per_sample_grads(rows[0], X, Y)),
        tiled_shape=tuple(tiled.shape),
        tiled_matches_loop=_close(tiled, loop),
        fixed=np.asarray(per_sample_grads(params, X, Y)),
        loop=loop,
    )


# --- what the page says about a run --------------------------------------------------------------


def shapes_line(ps: PerSample) -> str:
    """The arrays' shapes, as the article names them (Markdown)."""
    return f"params `{ps.params_shape}`, X `{ps.x_shape}`, Y `{ps.y_shape}`"


@claims.states_nothing("labels the cases; what each run did is its outcome's")
def per_sample_cases(ps: PerSample) -> tuple[tuple[str, Outcome], ...]:
    """The article's function as written, at the visitor's B and D and with B = D: each one's
    sentence (it runs, or its error in a code span; Markdown) and its outcome."""
    batch, features = ps.x_shape
    labels = (
        _("As written (`@jit @vmap`), B = {batch}, D = {features}").format(
            batch=batch, features=features
        ),
        _("As written with as many samples as weights, B = D = {features}").format(
            features=features
        ),
    )
    return tuple(
        (_case_sentence(label, outcome), outcome)
        for label, outcome in zip(labels, (ps.as_written, ps.square), strict=True)
    )


@claims.states_nothing("this run's outcome: it ran, or JAX's own error")
def _case_sentence(label: str, outcome: Outcome) -> str:
    if outcome.ok:
        return _("**{label}:** it runs.").format(label=label)
    return _("**{label}:** {error}").format(label=label, error=markdown.code(outcome.headline))


@claims.states("compose.bare_vmap_maps_the_parameters")
def per_sample_why(ps: PerSample) -> str:
    """Why the article's function fails, or runs and is wrong, at these shapes; and the fix
    (Markdown): every shape, error and match in it is this run's."""
    batch, features = ps.x_shape
    text = _(
        "**Why:** a bare `vmap` maps axis 0 of *every* argument, `params` included. With "
        "params of shape {params} and {samples} {sizes}; with B = D each sample "
        "gets one *element* of params, its prediction `jnp.dot(p, xi)` is a vector, and "
        "`grad` refuses it (`{error}`). Only 2-D parameters run: with a {matrix} the call "
        "returns shape {rows_shape} without "
        "an error, each sample paired with its own row — equal to the per-sample gradients "
        "of one model (the first row's): **{rows_match}**. With every row a copy of params "
        "it equals the loop: **{tiled_match}**. **Fix:** `vmap(grad(loss), in_axes=(None, "
        "0, 0))` shares params across samples."
    ).format(
        params=ps.params_shape,
        samples=ngettext("B = {n} sample", "B = {n} samples", batch).format(n=batch),
        matrix=(
            _("({batch}, {features}) matrix of different rows")
            if batch > 1
            else _("(1, {features}) matrix")
        ).format(batch=batch, features=features),
        sizes=_("the sizes agree") if batch == features else _("the sizes disagree"),
        error=ps.square.error_type or _("no error"),
        rows_shape=ps.rows_shape,
        rows_match=_("yes") if ps.rows_match_model0 else _("no"),
        tiled_match=_("yes") if ps.tiled_matches_loop else _("no"),
    )
    if batch > 1:
        return text
    one_row = _("With B = 1 there is one row, so this cannot show the mix-up: take B of 2 or more.")
    return _("{text} {sentence}").format(text=text, sentence=one_row)


@claims.states_nothing("this run's shape and its comparison with a loop")
def per_sample_fixed(ps: PerSample) -> str:
    """The fix's result: its shape, and whether it equals the loop (Markdown)."""
    return _(
        "Fixed: shape {shape}; equal to a Python loop over the samples: **{matches}**."
    ).format(shape=ps.fixed.shape, matches=_("yes") if ps.fixed_matches_loop else _("no"))


def fixed_rows(ps: PerSample, rows: int = 8) -> np.ndarray:
    """The fix's first ``rows`` per-sample gradients, one row per sample, for a table."""
    return ps.fixed[:rows]

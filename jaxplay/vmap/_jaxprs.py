"""The jaxprs of the article's loop and of ``vmap``: one ``dot_general`` instead of one per example.

Why: vmap does not loop; it batches each primitive. The jaxprs show it: the loop's grows with the
batch, vmap's has one ``dot_general`` whatever the batch size.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from jaxplay.article import (
    manual_batch_process,
    process_single_example,
)
from jaxplay.core import claims, jaxprs
from jaxplay.core.i18n import _
from jaxplay.vmap._axes import EDITOR_D, EDITOR_H

JAXPR_BATCH = 4


@dataclass(frozen=True)
class JaxprComparison:
    """The jaxprs of the article's loop and of ``vmap`` for one batch, with primitive counts."""

    batch: int
    loop_text: str
    vmap_text: str
    loop_counts: dict[str, int]
    vmap_counts: dict[str, int]


def batched_jaxprs(
    batch: int = JAXPR_BATCH, d_in: int = EDITOR_D, d_out: int = EDITOR_H
) -> JaxprComparison:
    """``make_jaxpr`` of the Python loop and of ``vmap(..., in_axes=(0, None))`` at one size.

    The loop's jaxpr grows with the batch: per example a ``slice`` and a ``squeeze`` (``X[i]``;
    at batch 1 the ``squeeze`` alone), a ``dot_general`` and an ``add``, then one ``stack``.
    vmap's has one ``dot_general`` for the whole batch, whatever its size.
    """
    if not 1 <= batch <= 16:
        raise ValueError(f"the jaxpr batch must be 1 to 16 (got {batch})")
    X = jnp.zeros((batch, d_in))
    params = (jnp.zeros((d_out, d_in)), jnp.zeros(d_out))
    loop = jax.make_jaxpr(manual_batch_process)(X, params)
    vm = jax.make_jaxpr(jax.vmap(process_single_example, in_axes=(0, None)))(X, params)
    return JaxprComparison(
        batch, str(loop), str(vm), jaxprs.count_primitives(loop), jaxprs.count_primitives(vm)
    )


@claims.states_nothing("counts the primitives of the two jaxprs printed beside the counts")
def jaxpr_panels(jc: JaxprComparison) -> tuple[tuple[str, str], tuple[str, str]]:
    """The loop's and vmap's jaxprs, each with its heading (Markdown, in the visitor's language):
    the count of ``dot_general`` is the point, one per example against one for the batch."""
    loop_dots = jc.loop_counts.get("dot_general", 0)
    vmap_dots = jc.vmap_counts.get("dot_general", 0)
    return (
        (_("**Python loop**: {n} × `dot_general`").format(n=loop_dots), jc.loop_text),
        (_("**vmap**: {n} × `dot_general`, for any batch").format(n=vmap_dots), jc.vmap_text),
    )

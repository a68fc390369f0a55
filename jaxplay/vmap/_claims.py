"""The vmap page's statements about JAX, each checked against JAX itself."""

from __future__ import annotations

from jaxplay.core import claims
from jaxplay.core.claims import Verdict
from jaxplay.core.i18n import N_


@claims.claim(
    "vmap.same_numbers_as_the_loop",
    N_(
        "`vmap(process_single_example, in_axes=(0, None))` and its `jit` give the article's Python "
        "loop's numbers, batched along axis 0, with the parameters shared."
    ),
    cases=(1, 5),
)
def _same_as_loop(n: int) -> Verdict:
    import jax
    import numpy as np

    from jaxplay.article import manual_batch_process, process_single_example

    key = jax.random.key(0)
    params = (jax.random.normal(key, (8, 6)), jax.random.normal(key, (8,)))
    X = jax.random.normal(key, (n, 6))
    batched = jax.vmap(process_single_example, in_axes=(0, None))
    # At float32's full matmul precision: a TPU's (or a GPU's TF32) default precision rounds a
    # batched matmul and the loop's matrix-vector products differently, which is the device's
    # matmul, not vmap.
    with jax.default_matmul_precision("highest"):
        loop = np.asarray(manual_batch_process(X, params))
        outs = [np.asarray(batched(X, params)), np.asarray(jax.jit(batched)(X, params))]
    holds = all(o.shape == loop.shape == (n, 8) and np.allclose(o, loop, atol=1e-5) for o in outs)
    gap = max(float(np.max(np.abs(o - loop))) for o in outs) if holds else float("nan")
    return Verdict(
        holds, f"loop {loop.shape}, vmap {[o.shape for o in outs]}, largest gap {gap:.3g}"
    )


@claims.claim(
    "vmap.outer_vmap_maps_axis_0",
    N_(
        "In the article's nested `vmap(vmap(conv2d_single, (None, 0)), (0, None))` the outer "
        "`vmap` maps axis 0 of the images and the inner one the kernels: out[i, k] is "
        "conv(image i, kernel k)."
    ),
)
def _nested(_: None) -> Verdict:
    import jax
    import numpy as np

    from jaxplay.article import batch_conv2d, conv2d_single

    key = jax.random.key(1)
    images = jax.random.normal(key, (2, 6, 6))
    kernels = jax.random.normal(jax.random.key(2), (3, 3, 3))
    out = np.asarray(batch_conv2d(images, kernels))
    one = np.asarray(conv2d_single(images[1], kernels[2]))
    holds = out.shape[:2] == (2, 3) and np.allclose(out[1, 2], one, atol=1e-5)
    return Verdict(holds, f"batched output {out.shape}; out[1, 2] equals conv(1, 2): {holds}")

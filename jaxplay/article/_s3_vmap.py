"""Section 3 of the article, ``jax.vmap``: one example's function batched, and a nested-vmap conv.

The article's functions live here as code: the vmap page runs ``process_single_example`` under
the visitor's axes and ``batch_conv2d`` on real images, and the examples below show the very same
source (:func:`~jaxplay.article._example.code`), kept token for token as the article writes it.
"""

import jax.numpy as jnp
from jax import vmap

from jaxplay.article._example import Example, Section, code
from jaxplay.core.i18n import N_

SECTION = Section(
    3,
    "vmap",
    N_("jax.vmap: batching as a function"),
    N_("Per-example code batched; a vmapped conv."),
)

# fmt: off

def process_single_example(x, params):
    W, b = params
    return jnp.dot(W, x) + b


def manual_batch_process(X, params):
    outputs = []
    for i in range(X.shape[0]):
        outputs.append(process_single_example(X[i], params))
    return jnp.stack(outputs)


def conv2d_single(image, kernel):
    """Single channel, single kernel, 'valid' convolution"""
    i_h, i_w = image.shape
    k_h, k_w = kernel.shape
    out_h, out_w = i_h - k_h + 1, i_w - k_w + 1
    def dot_patch(patch):
        return jnp.sum(patch * kernel)
    patches = jnp.stack([
        image[i:i+k_h, j:j+k_w] for i in range(out_h) for j in range(out_w)
    ])
    return vmap(dot_patch)(patches).reshape(out_h, out_w)


# Extend to multiple channels and multiple kernels
batch_conv2d = vmap(vmap(conv2d_single, in_axes=(None, 0)), in_axes=(0, None))
# The first vmap batches the channels, the second the kernels

# fmt: on

#: The article's line that builds ``batch_conv2d``, with its two comments as written (translated),
#: exactly as it stands above (a test checks): read left to right, the first ``vmap`` written (the
#: outer one, ``in_axes=(0, None)``) maps axis 0 of the images, the second the kernels.
BATCH_CONV2D_LINES = """\
# Extend to multiple channels and multiple kernels
batch_conv2d = vmap(vmap(conv2d_single, in_axes=(None, 0)), in_axes=(0, None))
# The first vmap batches the channels, the second the kernels
"""

EXAMPLES: tuple[Example, ...] = (
    Example(
        id="vmap-batch",
        section=3,
        title=N_("One example at a time, batched by vmap"),
        as_written=True,
        source=code(
            """\
import jax.numpy as jnp
from jax import vmap
import jax.random as jrandom

# Process a single example
""",
            process_single_example,
            """
# Manual batching
""",
            manual_batch_process,
            """
# Automatic batching with vmap
batch_process = vmap(process_single_example, in_axes=(0, None))

key = jrandom.PRNGKey(42)
X_batch = jrandom.normal(key, (1000, 784))
params = (jrandom.normal(key, (256, 784)), jrandom.normal(key, (256,)))

# Added: both give the same result (the Python loop on the first 20 rows only).
out = batch_process(X_batch, params)
loop = manual_batch_process(X_batch[:20], params)
print(out.shape, bool(jnp.allclose(out[:20], loop, atol=1e-3)))
""",
        ),
        explanation=N_(
            "Runs. `in_axes=(0, None)` maps over the rows of `X` and passes `params` whole: "
            "vmap turns the matrix-vector product into one matrix-matrix product instead of "
            "1000 small calls. (The added check runs the Python loop on 20 rows only: a loop "
            "of 1000 separate dispatches is exactly what vmap saves you.) The article reuses "
            "one key for X, W and b; see the PRNG section for why you split keys instead."
        ),
    ),
    Example(
        id="vmap-conv",
        section=3,
        title=N_("A 2-D convolution from nested vmaps"),
        as_written=True,
        source=code(
            """\
import jax
import jax.numpy as jnp
from jax import vmap

""",
            conv2d_single,
            "",
            BATCH_CONV2D_LINES,
            """
# Added: 3 images 8x8, 4 kernels 3x3, checked against XLA's convolution.
images = jax.random.normal(jax.random.key(0), (3, 8, 8))
kernels = jax.random.normal(jax.random.key(1), (4, 3, 3))
out = jax.jit(batch_conv2d)(images, kernels)
ref = jax.lax.conv_general_dilated(images[:, None], kernels[:, None], (1, 1), "VALID")
print(out.shape, bool(jnp.allclose(out, ref, atol=1e-4)))
""",
        ),
        explanation=N_(
            "Runs: the output is (3 images, 4 kernels, 6, 6). As the article's comment says, "
            "read left to right: the first `vmap` (the outer one, `in_axes=(0, None)`) maps "
            "axis 0 of the images, which the article calls channels (each is a single-channel "
            "image), and the second (`in_axes=(None, 0)`) maps the kernels. (What it computes "
            "is a cross-correlation, as in deep learning's 'convolution'; it matches "
            "`lax.conv_general_dilated`.) The added lines jit it: traced once, the 36 patch "
            "slices compile into one program instead of running one by one."
        ),
    ),
)

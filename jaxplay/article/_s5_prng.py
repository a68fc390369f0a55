"""Section 5 of the article, random numbers with explicit keys: seeds, splits, a stochastic layer.

The article's functions live here as code: the PRNG page runs ``stochastic_layer`` as written,
and the examples below show the very same source (:func:`~jaxplay.article._example.code`).
"""

import jax.numpy as jnp
import jax.random as jrandom
from jax import jit, vmap

from jaxplay.article._example import Example, Section, code
from jaxplay.core.i18n import N_

SECTION = Section(
    5,
    "prng",
    N_("Random numbers with explicit keys"),
    N_("Seeds, splits, keys under vmap and jit."),
)

# fmt: off

@jit
@vmap
def stochastic_layer(params, x, key):
    """A layer with noise, batched"""
    W, b = params
    noise = jrandom.normal(key, b.shape) * 0.1
    return jnp.dot(W, x) + b + noise

# fmt: on

EXAMPLES: tuple[Example, ...] = (
    Example(
        id="prng-as-written",
        section=5,
        title=N_("A key from a big seed, split, and 1000 keys under vmap"),
        as_written=True,
        fixed_by="prng-seed-fixed",
        source="""\
import jax.numpy as jnp
import jax.random as jrandom
from jax import vmap

# Explicit key management
key = jrandom.PRNGKey(1765663200070)  # the user's seed
print(f"Initial key: {key}")

# Splitting: independent streams
key, subkey1, subkey2 = jrandom.split(key, 3)
print(f"After split - key: {key}, subkey1: {subkey1}")

# Parallel random numbers
keys = jrandom.split(key, 1000)  # 1000 independent keys
parallel_randoms = vmap(lambda k: jrandom.normal(k, (10,)))(keys)
# Added: what came out.
print(parallel_randoms.shape)
""",
        explanation=N_(
            "Runs, but the seed is not what it looks like. 1765663200070 does not fit in 32 "
            "bits; with 64-bit mode off (the default) JAX keeps only the low 32 bits: this key "
            "equals `PRNGKey(431641414)`, with key data `[0, 431641414]`. With "
            "`jax_enable_x64` the same seed gives `[411, 431641414]`: the same code draws "
            "different numbers depending on a global flag."
        ),
    ),
    Example(
        id="prng-seed-fixed",
        section=5,
        title=N_("What the big seed becomes, and a seed that means what it says"),
        source="""\
import jax
import jax.numpy as jnp

seed = 1765663200070
print("low 32 bits:", seed % 2**32)
k_big = jax.random.key(seed)
k_low = jax.random.key(seed % 2**32)
print("key data:", jax.random.key_data(k_big))
print("same key as the low 32 bits:",
      bool((jax.random.key_data(k_big) == jax.random.key_data(k_low)).all()))

# Making the seed an array shows the problem loudly:
try:
    jnp.array(seed)
except OverflowError as err:
    print("OverflowError:", err)

# Fix: use a seed that fits in 32 bits (or derive one explicitly), and new-style keys.
key = jax.random.key(seed % 2**32)
key, sub = jax.random.split(key)
print(jax.random.normal(sub, (3,)))
""",
        explanation=N_(
            "`jax.random.key(seed)` with x64 off keeps the low 32 bits, silently. "
            "`jnp.array(seed)` raises `OverflowError` instead. Choose a seed from 0 to "
            "2**32 − 1 (the fix's `seed % 2**32` does so, visibly) so the key does not "
            "depend on `jax_enable_x64`. The numbers drawn still do: with x64 on, `normal` "
            "draws float64 by default, other numbers from the same key, unless you pass "
            "`dtype=jnp.float32`. `jax.random.key` makes typed keys, the recommended style."
        ),
    ),
    Example(
        id="prng-stochastic-layer-as-written",
        section=5,
        title=N_("A stochastic layer under @jit @vmap"),
        as_written=True,
        fixed_by="prng-stochastic-layer-fixed",
        source=code(
            """\
import jax.numpy as jnp
import jax.random as jrandom
from jax import jit, vmap

""",
            stochastic_layer,
            """
# Added: the article never calls it. 2 samples, a 4 -> 3 layer.
W, b = jnp.ones((3, 4)), jnp.zeros(3)
X = jnp.ones((2, 4))
keys = jrandom.split(jrandom.PRNGKey(0), 2)
stochastic_layer((W, b), X, keys)
""",
        ),
        explanation=N_(
            "Fails: a bare `@vmap` maps over `params` too, so it needs a batch of 2 weight "
            "matrices and 2 biases; the 3-row `W` is mapped over its 3 rows and the sizes "
            "disagree (`ValueError: vmap got inconsistent sizes for array axes to be mapped`). "
            "The layer's parameters should be shared: `in_axes=(None, 0, 0)`."
        ),
        expected_error="ValueError",
    ),
    Example(
        id="prng-stochastic-layer-fixed",
        section=5,
        title=N_("Shared parameters, one key per sample"),
        source="""\
from functools import partial
import jax
import jax.numpy as jnp

@jax.jit
@partial(jax.vmap, in_axes=(None, 0, 0))
def stochastic_layer(params, x, key):
    W, b = params
    noise = jax.random.normal(key, b.shape) * 0.1
    return jnp.dot(W, x) + b + noise

W, b = jnp.ones((3, 4)), jnp.zeros(3)
X = jnp.ones((2, 4))
keys = jax.random.split(jax.random.key(0), 2)
out = stochastic_layer((W, b), X, keys)
print(out)  # two rows near 4.0, with different noise per sample
""",
        explanation=N_(
            "The parameters are broadcast (`None`), inputs and keys mapped (`0`): each sample "
            "gets the same layer and its own noise."
        ),
    ),
    Example(
        id="prng-training-step-as-written",
        section=5,
        title=N_("Threading the key through a training step"),
        as_written=True,
        expected_error="NameError",
        fixed_by="prng-training-step-fixed",
        source="""\
import jax.random as jrandom

def training_step(params, batch, key):
    key, subkey = jrandom.split(key)
    # use subkey for the random parts of the forward pass
    loss = compute_loss(params, batch, subkey)
    # update the parameters...
    return new_params, key  # return the updated key

# Added: the article never calls it. Calling it:
training_step(None, None, jrandom.PRNGKey(0))
""",
        explanation=N_(
            "A sketch, not code: `compute_loss` and `new_params` are never defined, so calling "
            "it raises `NameError`. The fixed version fills in a loss with dropout and a "
            "gradient step, keeping the idea: split the key, use the subkey, return the key."
        ),
    ),
    Example(
        id="prng-training-step-fixed",
        section=5,
        title=N_("A real training step with dropout and key threading"),
        source="""\
import jax
import jax.numpy as jnp

def compute_loss(params, batch, key):
    x, y = batch
    keep = jax.random.bernoulli(key, 0.9, x.shape)   # dropout on the inputs
    pred = jnp.where(keep, x / 0.9, 0.0) @ params
    return jnp.mean((pred - y) ** 2)

@jax.jit
def training_step(params, batch, key):
    key, subkey = jax.random.split(key)
    loss, grads = jax.value_and_grad(compute_loss)(params, batch, subkey)
    new_params = params - 0.05 * grads
    return new_params, key, loss

key = jax.random.key(0)
key, k1, k2 = jax.random.split(key, 3)
true_w = jnp.array([2.0, -1.0, 0.5])
x = jax.random.normal(k1, (64, 3))
batch = (x, x @ true_w)
params = jnp.zeros(3)
for step in range(200):
    params, key, loss = training_step(params, batch, key)
print("loss:", float(loss), "params:", params)
""",
        explanation=N_(
            "Each step splits the key, uses the subkey for this step's dropout and returns the "
            "new key, so no two steps reuse randomness and the run is reproducible. The "
            "parameters approach the true weights (dropout keeps the loss above zero)."
        ),
    ),
)

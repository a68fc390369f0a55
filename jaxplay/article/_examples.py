"""The one registry of runnable examples: every snippet of the tutorial article, in order.

The article ("JAX core API in depth", ``shared/seed/``) has eight sections; its code is
flattened onto single lines and some of it fails on current JAX. Each snippet is here as
runnable code: the article's code *as written* (reformatted only, plus the call that exercises a
function it defines but never calls) and, where that fails or misleads, a *fixed* version.
``expected_error`` names the exception an as-written snippet raises; tests run every example in
the sandbox and check exactly that. Shapes are the article's unless an explanation says
otherwise (a few are shrunk so every example runs within the sandbox's default limits on a
small laptop).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Section:
    """One of the article's eight sections."""

    number: int
    slug: str
    title: str
    summary: str


@dataclass(frozen=True)
class Example:
    """A runnable snippet.

    Attributes:
        id: a stable key (used in links and tests).
        section: the :class:`Section` number (1-8).
        title: a short name for the snippet.
        source: the code, runnable as one Code Lab cell.
        explanation: what it shows; for a broken snippet, why it fails and what the fix does.
        as_written: the article's code (reformatted), not our version.
        expected_error: the exception class an as-written snippet raises, ``None`` if it runs.
        fixed_by: the id of the example that fixes this one.
        error_without_gpu_only: the error happens only on a machine without a GPU.
    """

    id: str
    section: int
    title: str
    source: str
    explanation: str
    as_written: bool = False
    expected_error: str | None = None
    fixed_by: str | None = None
    error_without_gpu_only: bool = False


SECTIONS: tuple[Section, ...] = (
    Section(
        1,
        "jit",
        "jax.jit: just-in-time compilation",
        "Naive vs jitted softmax, and how to time it.",
    ),
    Section(
        2, "grad", "jax.grad: differentiation as a function", "Gradients, Hessians, custom VJPs."
    ),
    Section(
        3, "vmap", "jax.vmap: batching as a function", "Per-example code batched; a vmapped conv."
    ),
    Section(
        4,
        "compose",
        "Composing transforms",
        "Per-sample gradients, Jacobians, Hessian-vector products.",
    ),
    Section(
        5, "prng", "Random numbers with explicit keys", "Seeds, splits, keys under vmap and jit."
    ),
    Section(
        6,
        "tracing",
        "Tracing and static arguments",
        "jaxprs, static_argnums, side effects under jit.",
    ),
    Section(
        7, "devices", "Devices and parallelism", "Device placement, pmap, all-reduce with psum."
    ),
    Section(8, "memory", "Memory and fusion", "Gradient checkpointing and XLA's operator fusion."),
)

_E = Example

EXAMPLES: tuple[Example, ...] = (
    # -- 1. jit ---------------------------------------------------------------------------
    _E(
        id="jit-softmax-as-written",
        section=1,
        title="Naive vs jitted softmax, timed with time.time()",
        as_written=True,
        fixed_by="jit-softmax-fixed",
        source="""\
import jax
import jax.numpy as jnp
from jax import jit
import time

# Un-optimised pure function
def naive_softmax(x):
    return jnp.exp(x) / jnp.sum(jnp.exp(x), axis=-1, keepdims=True)

# JIT-compiled version
@jit
def jitted_softmax(x):
    return jnp.exp(x) / jnp.sum(jnp.exp(x), axis=-1, keepdims=True)

# Performance comparison
x = jnp.ones((10000, 1000))
start = time.time()
for _ in range(10):
    y = naive_softmax(x)
print(f"Naive: {time.time() - start:.4f}s")
start = time.time()
for _ in range(10):
    y = jitted_softmax(x)
print(f"JIT compiled: {time.time() - start:.4f}s")

# Compilation
print("Compiling JIT function...")
compiled_fn = jit(naive_softmax)
first_call = compiled_fn(x)   # the first call traces and compiles
second_call = compiled_fn(x)  # later calls reuse the compiled program
""",
        explanation=(
            "Runs, but the numbers mislead twice. JAX dispatches asynchronously: without "
            "`block_until_ready()` the stopwatch can stop before the work is done. And the jit "
            "loop's first call traces and compiles, so compilation is counted as run time. "
            "The fixed version warms up, blocks, and reports medians."
        ),
    ),
    _E(
        id="jit-softmax-fixed",
        section=1,
        title="Timing softmax honestly: warm up, block, take the median",
        source="""\
import jax
import jax.numpy as jnp
from jaxplay.core.timing import measure

def naive_softmax(x):
    return jnp.exp(x) / jnp.sum(jnp.exp(x), axis=-1, keepdims=True)

jitted_softmax = jax.jit(naive_softmax)

x = jnp.ones((1000, 1000))
# measure() warms up (the first jitted call compiles), blocks on every result
# and repeats: the median and spread are steady-state numbers.
eager = measure(naive_softmax, x, budget_s=0.3)
jitted = measure(jitted_softmax, x, budget_s=0.3)
print("eager:", eager.describe())
print("jit:  ", jitted.describe())
print(f"speed-up: {eager.median / jitted.median:.1f}x")
print("rows sum to 1:", bool(jnp.allclose(jitted_softmax(x).sum(axis=-1), 1.0)))
""",
        explanation=(
            "`jaxplay.core.timing.measure` calls the function a few times first (the jitted one "
            "compiles there), blocks on every result, and reports the median of many samples. "
            "The jitted softmax fuses exp, sum and divide into one pass over memory. The input "
            "is 1000x1000 instead of the article's 10000x1000 so the sampling fits the "
            "sandbox's time limit; the ratio is the same."
        ),
    ),
    # -- 2. grad --------------------------------------------------------------------------
    _E(
        id="grad-as-written",
        section=2,
        title="Gradients of a two-layer loss, and the 'Hessian diagonal'",
        as_written=True,
        expected_error="TypeError",
        fixed_by="grad-hessian-fixed",
        source="""\
import jax.numpy as jnp
from jax import grad
import numpy as np

# Higher-order gradients
def complex_loss(params, x):
    W1, b1, W2, b2 = params
    h = jnp.tanh(jnp.dot(x, W1) + b1)
    return jnp.sum(jnp.dot(h, W2) + b2)

# First-order gradient
grad_loss = grad(complex_loss, argnums=0)
# Second-order gradient ("Hessian diagonal approximation")
hessian_diag = grad(grad(complex_loss, argnums=0), argnums=0)

params = (jnp.ones((10, 20)), jnp.ones(20), jnp.ones((20, 1)), jnp.ones(1))
x_sample = jnp.ones(10)
# Added: the article defines both but never calls them. Calling them:
print([g.shape for g in grad_loss(params, x_sample)])
hessian_diag(params, x_sample)
""",
        explanation=(
            "`grad` differentiates scalar-output functions only. The inner `grad(complex_loss)` "
            "returns a tuple of four arrays (one gradient per parameter), so the outer `grad` "
            "raises `TypeError: Gradient only defined for scalar-output functions`. Nesting "
            "`grad` gives higher derivatives of *scalar* functions of a scalar; a Hessian (or "
            "its diagonal) needs `jax.hessian`, or Hessian-vector products."
        ),
    ),
    _E(
        id="grad-hessian-fixed",
        section=2,
        title="The Hessian diagonal with jax.hessian",
        source="""\
import jax
import jax.numpy as jnp

def complex_loss(params, x):
    W1, b1, W2, b2 = params
    h = jnp.tanh(jnp.dot(x, W1) + b1)
    return jnp.sum(jnp.dot(h, W2) + b2)

key = jax.random.key(0)
k1, k2 = jax.random.split(key)
params = (0.3 * jax.random.normal(k1, (10, 20)), jnp.zeros(20),
          0.3 * jax.random.normal(k2, (20, 1)), jnp.zeros(1))
x_sample = jnp.ones(10)

# hessian = jacfwd(jacrev(f)): blocks H[i][j] for every pair of parameters.
H = jax.jit(jax.hessian(complex_loss))(params, x_sample)
# The diagonal of each parameter's own block, reshaped like the parameter.
diag = [jnp.diagonal(H[i][i].reshape(p.size, p.size)).reshape(p.shape)
        for i, p in enumerate(params)]
for name, d in zip(["W1", "b1", "W2", "b2"], diag):
    print(name, d.shape, float(jnp.abs(d).max()))

# Nested grad does work for a scalar function of a scalar: one diagonal entry.
W1, b1, W2, b2 = params
def along_w(w):
    return complex_loss((W1.at[3, 5].set(w), b1, W2, b2), x_sample)
second = jax.grad(jax.grad(along_w))(W1[3, 5])
print("d2 loss / dW1[3,5]^2 =", float(diag[0][3, 5]), "by nested grad:", float(second))
print("agree:", bool(jnp.allclose(diag[0][3, 5], second, rtol=1e-4, atol=1e-6)))
""",
        explanation=(
            "`jax.hessian` is forward-over-reverse differentiation; for a tuple of parameters "
            "it returns a tuple of tuples of blocks. The diagonal of each parameter's own block "
            "is the Hessian diagonal the article wanted (with all-ones parameters the loss is "
            "saturated, so random parameters make the numbers interesting). Nesting `grad` is "
            "right for a scalar function of one scalar: the last lines get one diagonal entry "
            "that way and compare."
        ),
    ),
    _E(
        id="grad-custom-vjp",
        section=2,
        title="A custom VJP rule, and value_and_grad",
        as_written=True,
        source='''\
import jax
import jax.numpy as jnp

def complex_loss(params, x):
    W1, b1, W2, b2 = params
    h = jnp.tanh(jnp.dot(x, W1) + b1)
    return jnp.sum(jnp.dot(h, W2) + b2)

# Custom gradient rule
from jax import custom_vjp

@custom_vjp
def my_special_op(x):
    """Forward definition"""
    return jnp.where(x > 0, x**2, jnp.sin(x))

def my_special_op_fwd(x):
    """Forward pass: output and residuals"""
    return my_special_op(x), (x,)

def my_special_op_bwd(res, g):
    """Backward pass"""
    x, = res
    grad = jnp.where(x > 0, 2*x, jnp.cos(x))
    return (grad * g,)

my_special_op.defvjp(my_special_op_fwd, my_special_op_bwd)

# Value and gradient together
from jax import value_and_grad
params = (jnp.ones((10, 20)), jnp.ones(20), jnp.ones((20, 1)), jnp.ones(1))
x_sample = jnp.ones(10)
loss_value, grad_value = value_and_grad(complex_loss)(params, x_sample)
print(f"Loss: {loss_value}")
print(f"Gradient structure: {type(grad_value)}")

# Added: the custom rule agrees with JAX's own derivative of the same formula.
xs = jnp.linspace(-2.0, 2.0, 9)
mine = jax.vmap(jax.grad(my_special_op))(xs)
auto = jax.vmap(jax.grad(lambda x: jnp.where(x > 0, x**2, jnp.sin(x))))(xs)
print("custom VJP matches autodiff:", bool(jnp.allclose(mine, auto)))
''',
        explanation=(
            "Runs as written. `custom_vjp` replaces JAX's derivative of a function by your own "
            "backward rule (useful for numerical stability or speed); the added lines check the "
            "rule against JAX's derivative. `value_and_grad` returns the loss and its gradient "
            "in one pass; the gradient has the structure of `params` (a tuple)."
        ),
    ),
    # -- 3. vmap --------------------------------------------------------------------------
    _E(
        id="vmap-batch",
        section=3,
        title="One example at a time, batched by vmap",
        as_written=True,
        source="""\
import jax.numpy as jnp
from jax import vmap
import jax.random as jrandom

# Process a single example
def process_single_example(x, params):
    W, b = params
    return jnp.dot(W, x) + b

# Manual batching
def manual_batch_process(X, params):
    outputs = []
    for i in range(X.shape[0]):
        outputs.append(process_single_example(X[i], params))
    return jnp.stack(outputs)

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
        explanation=(
            "Runs. `in_axes=(0, None)` maps over the rows of `X` and passes `params` whole: "
            "vmap turns the matrix-vector product into one matrix-matrix product instead of "
            "1000 small calls. (The added check runs the Python loop on 20 rows only: a loop "
            "of 1000 separate dispatches is exactly what vmap saves you.) The article reuses "
            "one key for X, W and b; see the PRNG section for why you split keys instead."
        ),
    ),
    _E(
        id="vmap-conv",
        section=3,
        title="A 2-D convolution from nested vmaps",
        as_written=True,
        source='''\
import jax
import jax.numpy as jnp
from jax import vmap

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

# Inner vmap: over kernels; outer vmap: over images
batch_conv2d = vmap(vmap(conv2d_single, in_axes=(None, 0)), in_axes=(0, None))

# Added: 3 images 8x8, 4 kernels 3x3, checked against XLA's convolution.
images = jax.random.normal(jax.random.key(0), (3, 8, 8))
kernels = jax.random.normal(jax.random.key(1), (4, 3, 3))
out = jax.jit(batch_conv2d)(images, kernels)
ref = jax.lax.conv_general_dilated(images[:, None], kernels[:, None], (1, 1), "VALID")
print(out.shape, bool(jnp.allclose(out, ref, atol=1e-4)))
''',
        explanation=(
            "Runs: the output is (3 images, 4 kernels, 6, 6). The article's comment has the "
            "axes backwards: the outer vmap batches the images, the inner one the kernels. "
            "(What it computes is a cross-correlation, as in deep learning's 'convolution'; it "
            "matches `lax.conv_general_dilated`.) The added lines jit it: traced once, the 36 "
            "patch slices compile into one program instead of running one by one."
        ),
    ),
    # -- 4. composition -------------------------------------------------------------------
    _E(
        id="compose-per-sample-as-written",
        section=4,
        title="Per-sample gradients with @jit @vmap",
        as_written=True,
        expected_error="ValueError",
        fixed_by="compose-per-sample-fixed",
        source='''\
import jax.numpy as jnp
from jax import jit, vmap, grad

@jit
@vmap
def per_sample_gradient(params, x, y):
    """Per-sample gradients instead of the batch gradient"""
    def loss_for_sample(p, xi, yi):
        pred = jnp.dot(p, xi)
        return (pred - yi) ** 2
    return grad(loss_for_sample)(params, x, y)

# Added: a batch of 4 samples with 3 features; the model is one weight vector.
params = jnp.array([1.0, -1.0, 0.5])
X = jnp.arange(12.0).reshape(4, 3)
Y = jnp.ones(4)
print(per_sample_gradient(params, X, Y))
''',
        explanation=(
            "A bare `@vmap` maps over axis 0 of *every* argument, `params` included: here the "
            "3 weights are mapped like the 4 samples and the sizes disagree (`ValueError: vmap "
            "got inconsistent sizes`). With as many samples as weights it would be worse: no "
            "error, and each sample would get one *element* of the weights instead of the "
            "model. Per-sample gradients need `in_axes=(None, 0, 0)`: the same params for "
            "every sample."
        ),
    ),
    _E(
        id="compose-per-sample-fixed",
        section=4,
        title="Per-sample gradients with in_axes=(None, 0, 0)",
        source="""\
from functools import partial
import jax
import jax.numpy as jnp

def loss_for_sample(p, xi, yi):
    return (jnp.dot(p, xi) - yi) ** 2

@jax.jit
@partial(jax.vmap, in_axes=(None, 0, 0))
def per_sample_gradient(params, x, y):
    return jax.grad(loss_for_sample)(params, x, y)

params = jnp.array([1.0, -1.0, 0.5])
X = jnp.arange(12.0).reshape(4, 3)
Y = jnp.ones(4)
G = per_sample_gradient(params, X, Y)
print(G.shape)  # (4 samples, 3 weights)
# The mean of per-sample gradients is the gradient of the mean loss.
batch = jax.grad(lambda p: jnp.mean(jax.vmap(loss_for_sample, (None, 0, 0))(p, X, Y)))(params)
print(bool(jnp.allclose(G.mean(axis=0), batch)))
""",
        explanation=(
            "`in_axes=(None, 0, 0)` broadcasts `params` and maps over samples: one gradient per "
            "sample with the model's shape, shape (4, 3). Their mean equals the gradient of the "
            "mean loss, which the last line checks."
        ),
    ),
    _E(
        id="compose-jacobians",
        section=4,
        title="Jacobians forward and reverse",
        as_written=True,
        source='''\
import jax
import jax.numpy as jnp
from jax import jacfwd, jacrev

def neural_network(params, x):
    """A small two-layer network"""
    W1, b1, W2, b2 = params
    h = jnp.tanh(jnp.dot(W1, x) + b1)
    return jnp.dot(W2, h) + b2

# Forward mode (efficient for wide outputs)
jac_forward = jacfwd(neural_network, argnums=1)
# Reverse mode (efficient for high-dimensional inputs)
jac_reverse = jacrev(neural_network, argnums=1)

# Added: a 5 -> 16 -> 3 network; both give the same 3x5 Jacobian.
k = jax.random.split(jax.random.key(0), 2)
params = (jax.random.normal(k[0], (16, 5)), jnp.zeros(16),
          jax.random.normal(k[1], (3, 16)), jnp.zeros(3))
x = jnp.linspace(-1.0, 1.0, 5)
J1, J2 = jax.jit(jac_forward)(params, x), jax.jit(jac_reverse)(params, x)
print(J1.shape, bool(jnp.allclose(J1, J2, atol=1e-5)))
''',
        explanation=(
            "Runs. `jacfwd` pushes one tangent per *input* through the function, `jacrev` pulls "
            "one cotangent per *output* back: the same Jacobian, at a cost that favours "
            "forward mode for few inputs and reverse mode for few outputs. (The article's "
            "comments swap the two.)"
        ),
    ),
    _E(
        id="compose-hvp-as-written",
        section=4,
        title="jit around a Hessian-vector product that takes f",
        as_written=True,
        expected_error="TypeError",
        fixed_by="compose-hvp-fixed",
        source='''\
import jax.numpy as jnp
from jax import jit, grad

def hvp(f, primals, tangents):
    """H v without building the Hessian"""
    return grad(lambda x: jnp.vdot(grad(f)(x), tangents))(primals)

@jit
def optimized_hvp(f, primals, tangents):
    return hvp(f, primals, tangents)

# Added: the article never calls it. Calling it:
f = lambda x: jnp.sum(jnp.sin(x) ** 2)
x = jnp.arange(3.0)
v = jnp.ones(3)
print(hvp(f, x, v))          # fine without jit
optimized_hvp(f, x, v)       # fails
''',
        explanation=(
            "`jit` traces every argument as an array, and a Python function is not one: "
            "`TypeError: Error interpreting argument to ... as an abstract array`. Mark `f` "
            "static (`static_argnums=0`: it is part of the compiled program, and each new "
            "function compiles again) or close over it."
        ),
    ),
    _E(
        id="compose-hvp-fixed",
        section=4,
        title="A jitted HVP with f static, checked against the Hessian",
        source="""\
from functools import partial
import jax
import jax.numpy as jnp

def hvp(f, primals, tangents):
    return jax.grad(lambda x: jnp.vdot(jax.grad(f)(x), tangents))(primals)

@partial(jax.jit, static_argnums=0)
def optimized_hvp(f, primals, tangents):
    return hvp(f, primals, tangents)

def f(x):
    return jnp.sum(jnp.sin(x) ** 2)

x = jnp.arange(3.0)
v = jnp.ones(3)
print(optimized_hvp(f, x, v))
print("matches hessian(f) @ v:", bool(jnp.allclose(optimized_hvp(f, x, v), jax.hessian(f)(x) @ v)))
""",
        explanation=(
            "With `static_argnums=0`, `f` is a compile-time constant: hashed into the cache "
            "key, never traced. Pass the same function object each time (a new lambda per call "
            "compiles again). The result matches the full Hessian times v."
        ),
    ),
    # -- 5. PRNG --------------------------------------------------------------------------
    _E(
        id="prng-as-written",
        section=5,
        title="A key from a big seed, split, and 1000 keys under vmap",
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
        explanation=(
            "Runs, but the seed is not what it looks like. 1765663200070 does not fit in 32 "
            "bits; with 64-bit mode off (the default) JAX keeps only the low 32 bits: this key "
            "equals `PRNGKey(431641414)`, with key data `[0, 431641414]`. With "
            "`jax_enable_x64` the same seed gives `[411, 431641414]`: the same code draws "
            "different numbers depending on a global flag."
        ),
    ),
    _E(
        id="prng-seed-fixed",
        section=5,
        title="What the big seed becomes, and a seed that means what it says",
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
        explanation=(
            "`jax.random.key(seed)` with x64 off keeps the low 32 bits, silently. "
            "`jnp.array(seed)` raises `OverflowError` instead. Choose a 32-bit seed (or reduce "
            "it yourself, visibly) so the stream does not depend on `jax_enable_x64`; "
            "`jax.random.key` makes typed keys, the recommended style."
        ),
    ),
    _E(
        id="prng-stochastic-layer-as-written",
        section=5,
        title="A stochastic layer under @jit @vmap",
        as_written=True,
        fixed_by="prng-stochastic-layer-fixed",
        source='''\
import jax.numpy as jnp
import jax.random as jrandom
from jax import jit, vmap

@jit
@vmap
def stochastic_layer(params, x, key):
    """A layer with noise, batched"""
    W, b = params
    noise = jrandom.normal(key, b.shape) * 0.1
    return jnp.dot(W, x) + b + noise

# Added: the article never calls it. 2 samples, a 4 -> 3 layer.
W, b = jnp.ones((3, 4)), jnp.zeros(3)
X = jnp.ones((2, 4))
keys = jrandom.split(jrandom.PRNGKey(0), 2)
stochastic_layer((W, b), X, keys)
''',
        explanation=(
            "Fails: a bare `@vmap` maps over `params` too, so it needs a batch of 2 weight "
            "matrices and 2 biases; the 3-row `W` is mapped over its 3 rows and the sizes "
            "disagree (`ValueError: vmap got inconsistent sizes for array axes to be mapped`). "
            "The layer's parameters should be shared: `in_axes=(None, 0, 0)`."
        ),
        expected_error="ValueError",
    ),
    _E(
        id="prng-stochastic-layer-fixed",
        section=5,
        title="Shared parameters, one key per sample",
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
        explanation=(
            "The parameters are broadcast (`None`), inputs and keys mapped (`0`): each sample "
            "gets the same layer and its own noise."
        ),
    ),
    _E(
        id="prng-training-step-as-written",
        section=5,
        title="Threading the key through a training step",
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
        explanation=(
            "A sketch, not code: `compute_loss` and `new_params` are never defined, so calling "
            "it raises `NameError`. The fixed version fills in a loss with dropout and a "
            "gradient step, keeping the idea: split the key, use the subkey, return the key."
        ),
    ),
    _E(
        id="prng-training-step-fixed",
        section=5,
        title="A real training step with dropout and key threading",
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
        explanation=(
            "Each step splits the key, uses the subkey for this step's dropout and returns the "
            "new key, so no two steps reuse randomness and the run is reproducible. The "
            "parameters approach the true weights (dropout keeps the loss above zero)."
        ),
    ),
    # -- 6. tracing -----------------------------------------------------------------------
    _E(
        id="tracing-as-written",
        section=6,
        title="make_jaxpr, static_argnums, and a side effect under jit",
        as_written=True,
        expected_error="ImportError",
        fixed_by="tracing-fixed",
        source='''\
import jax.numpy as jnp
from jax import jit, make_jaxpr

# Look at JAX's intermediate representation
def simple_function(x, y):
    z = x * y
    return z + 1

jaxpr_repr = make_jaxpr(simple_function)(jnp.ones(3), 2.0)
print("JAXPR representation:")
print(jaxpr_repr)

# Static vs dynamic arguments
from jax import partial

@partial(jit, static_argnums=(1,))
def dynamic_control_flow(x, use_tanh):
    """A static argument chooses the compiled branch"""
    if use_tanh:  # decided at compile time
        return jnp.tanh(x)
    else:
        return jnp.sin(x)
''',
        explanation=(
            "`jax.partial` was removed years ago: `ImportError: cannot import name 'partial' "
            "from 'jax'`. It was only ever `functools.partial`; import it from there. The jaxpr "
            "above the error still prints (the run stops at the failing line)."
        ),
    ),
    _E(
        id="tracing-fixed",
        section=6,
        title="Two compilations, a cache hit, and a counter that counts traces",
        source="""\
from functools import partial
import jax
import jax.numpy as jnp
from jax import jit, make_jaxpr

def simple_function(x, y):
    z = x * y
    return z + 1

print(make_jaxpr(simple_function)(jnp.ones(3), 2.0))

@partial(jit, static_argnums=(1,))
def dynamic_control_flow(x, use_tanh):
    if use_tanh:          # a Python bool: fixed when the function is traced
        return jnp.tanh(x)
    else:
        return jnp.sin(x)

result1 = dynamic_control_flow(jnp.ones(5), True)   # compiles (True)
result2 = dynamic_control_flow(jnp.ones(5), False)  # compiles (False)
result3 = dynamic_control_flow(jnp.ones(5), True)   # reuses the first program
cache_size = getattr(dynamic_control_flow, "_cache_size", None)  # private API: may vanish
print("compiled programs:", cache_size() if cache_size else "n/a")

counter = 0
def impure_function(x):
    global counter
    counter += 1  # a side effect: runs when traced, not when called
    return x * 2

jitted_impure = jit(impure_function)
print(f"Before JIT calls: counter = {counter}")
result = jitted_impure(jnp.ones(5))
result = jitted_impure(jnp.ones(5))
print(f"After 2 JIT calls: counter = {counter}")
""",
        explanation=(
            "With `functools.partial` it runs. Each distinct static value compiles once, so "
            "three calls give two programs. The counter ends at 1, not 2: under `jit` the "
            "Python body runs only while tracing; later calls run the compiled program, which "
            "has no Python side effects."
        ),
    ),
    # -- 7. devices -----------------------------------------------------------------------
    _E(
        id="devices-placement-as-written",
        section=7,
        title="Placing arrays on the GPU and the CPU",
        as_written=True,
        expected_error="RuntimeError",
        error_without_gpu_only=True,
        fixed_by="devices-placement-fixed",
        source="""\
import jax.numpy as jnp
from jax import devices, device_put

print(f"Available devices: {devices()}")

def manual_device_placement():
    gpu_device = devices('gpu')[0] if devices('gpu') else devices()[0]
    cpu_device = devices('cpu')[0]
    x_gpu = device_put(jnp.ones(1000), gpu_device)  # on the GPU
    x_cpu = device_put(jnp.ones(1000), cpu_device)  # on the CPU
    return x_gpu, x_cpu

# Added: the article never calls it. Calling it:
x_gpu, x_cpu = manual_device_placement()
print(x_gpu.devices(), x_cpu.devices())
""",
        explanation=(
            "The guard does not guard: `devices('gpu')` does not return an empty list when there "
            "is no GPU, it raises `RuntimeError: Unknown backend: 'gpu' requested`. (On a "
            "machine with a GPU it runs.) Ask for the device list once and filter by platform."
        ),
    ),
    _E(
        id="devices-placement-fixed",
        section=7,
        title="Device placement that works with or without a GPU",
        source='''\
import jax
import jax.numpy as jnp

def first_device(platform):
    """The first device of a platform, or None: never raises."""
    try:
        return jax.devices(platform)[0]
    except RuntimeError:
        return None

gpu_device = first_device("gpu") or jax.devices()[0]
cpu_device = first_device("cpu")
x_fast = jax.device_put(jnp.ones(1000), gpu_device)
x_cpu = jax.device_put(jnp.ones(1000), cpu_device)
print("default backend:", jax.default_backend())
print("x_fast on", x_fast.devices(), "| x_cpu on", x_cpu.devices())
''',
        explanation=(
            "Catch the `RuntimeError` (or filter `jax.devices()` by `d.platform`) and fall back "
            "to the default device. On this server's CPU both arrays land on CPU devices."
        ),
    ),
    _E(
        id="devices-pmap",
        section=7,
        title="pmap across (simulated) devices",
        as_written=True,
        source="""\
import jax.numpy as jnp
from jax import devices, pmap

def model_fn(x):
    return jnp.sin(x) ** 2 + jnp.cos(x) ** 2

if len(devices()) > 1:
    parallel_model = pmap(model_fn)  # one copy per device
    x_sharded = jnp.stack([jnp.ones(100) for _ in range(len(devices()))])
    results = parallel_model(x_sharded)
    print(f"Parallel computation shape: {results.shape}")
else:
    print("Single device detected, pmap will work but without parallelism")
""",
        explanation=(
            "Runs: this server simulates several CPU devices, so the leading axis is split one "
            "row per device. `pmap` still works but is in maintenance mode (it is now built on "
            "`shard_map`); new code uses `jax.shard_map` or `jit` with shardings."
        ),
    ),
    _E(
        id="devices-psum-as-written",
        section=7,
        title="An all-reduce with psum inside pmap",
        as_written=True,
        expected_error="NameError",
        fixed_by="devices-psum-fixed",
        source='''\
import jax.numpy as jnp
from jax import devices, pmap

def all_reduce_example(x):
    """Sum across all devices"""
    from jax.lax import psum
    @pmap
    def local_compute(x_local):
        local_sum = jnp.sum(x_local)
        global_sum = psum(local_sum, 'batch')  # sum across devices
        return global_sum
    return local_compute(x)

# Added: the article never calls it. Calling it:
n = len(devices())
all_reduce_example(jnp.ones((n, 4)))
''',
        explanation=(
            "`psum(..., 'batch')` names an axis that nothing defined: `NameError: Found an "
            "unbound axis name: batch`. The mapped axis gets its name from "
            "`pmap(..., axis_name='batch')` (or a mesh axis in `shard_map`)."
        ),
    ),
    _E(
        id="devices-psum-fixed",
        section=7,
        title="psum with a named axis: pmap and shard_map",
        source="""\
from functools import partial
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P

n = len(jax.devices())
x = jnp.arange(n * 4.0).reshape(n, 4)

@partial(jax.pmap, axis_name="batch")
def local_compute(x_local):
    return jax.lax.psum(jnp.sum(x_local), "batch")

print("pmap:", local_compute(x))  # every device holds the total

# The current way: a mesh, shard_map, and the same collective.
mesh = jax.make_mesh((n,), ("batch",))
x_sharded = jax.device_put(x, NamedSharding(mesh, P("batch")))  # one row per device

@jax.jit
@partial(jax.shard_map, mesh=mesh, in_specs=P("batch"), out_specs=P())
def total(x_block):
    return jax.lax.psum(jnp.sum(x_block), "batch")

print("shard_map:", total(x_sharded), "expected:", float(x.sum()))
""",
        explanation=(
            "Naming the axis fixes it: each device sums its row and `psum` adds the partial "
            "sums across devices. `shard_map` over a named mesh axis is the current API for "
            "the same collective. The input is placed on the mesh first: `shard_map` checks that "
            "the input's sharding matches `in_specs` rather than moving data behind your back."
        ),
    ),
    # -- 8. memory and fusion -------------------------------------------------------------
    _E(
        id="memory-checkpoint-as-written",
        section=8,
        title="Gradient checkpointing",
        as_written=True,
        fixed_by="memory-checkpoint-fixed",
        source='''\
import jax
import jax.numpy as jnp
from jax import checkpoint

def memory_intensive_layer(x):
    """Memory-hungry computation"""
    for _ in range(10):
        x = jnp.sin(x) @ jnp.cos(x).T
    return x

# Normal: keep every intermediate for the backward pass
normal_grad_fn = jax.grad(lambda x: jnp.sum(memory_intensive_layer(x)))

# Checkpointed: recompute intermediates to save memory
@jax.grad
def checkpointed_fn(x):
    @checkpoint
    def checkpointed_layer(x):
        return memory_intensive_layer(x)
    return jnp.sum(checkpointed_layer(x))

x = jnp.ones((1000, 1000))
# "Observe the memory difference (run it in a real environment)":
print("注意观察内存使用差异（在实际环境中运行）")
''',
        explanation=(
            "Runs, and shows nothing: the gradients are never computed and memory is never "
            "measured. The fixed version counts what each version saves for the backward pass "
            "and asks XLA for the compiled programs' temporary memory."
        ),
    ),
    _E(
        id="memory-checkpoint-fixed",
        section=8,
        title="What checkpointing saves, measured",
        source="""\
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import print_saved_residuals

def memory_intensive_layer(x):
    for _ in range(10):
        x = jnp.sin(x) @ jnp.cos(x).T
    return x

def loss(x):
    return jnp.sum(memory_intensive_layer(x))

def loss_checkpointed(x):
    return jnp.sum(jax.checkpoint(memory_intensive_layer)(x))

x = jnp.ones((300, 300)) / 300
print("saved for the backward pass, no checkpoint:")
print_saved_residuals(loss, x)
print("with checkpoint:")
print_saved_residuals(loss_checkpointed, x)

grads = []
for name, f in [("normal", loss), ("checkpointed", loss_checkpointed)]:
    compiled = jax.jit(jax.grad(f)).lower(x).compile()
    mem = compiled.memory_analysis()
    temp = getattr(mem, "temp_size_in_bytes", None) if mem is not None else None
    print(f"{name}: temporary bytes = {temp}")
    grads.append(compiled(x))

print("same gradients:", bool(jnp.allclose(grads[0], grads[1], rtol=1e-4)))
""",
        explanation=(
            "`print_saved_residuals` lists every array kept for the backward pass: about 40 "
            "without checkpointing (sin, cos and products of each round), only the input with "
            "it. XLA's `memory_analysis()` of the compiled gradients reports their temporary "
            "buffers; on a CPU both can come out the same, because under `jit` XLA plans the "
            "whole program's buffers itself, so the residual list is the clearer evidence. The "
            "gradients are equal: checkpointing trades compute for memory. The "
            "matrix is 300x300 instead of 1000x1000 (and scaled so the values stay finite) so "
            "the example runs quickly."
        ),
    ),
    _E(
        id="memory-fusion",
        section=8,
        title="Fusion: a chain of element-wise ops becomes one kernel",
        source='''\
import jax
import jax.numpy as jnp

# The article stops after `y = jnp.sin(x)`; a chain completed in its spirit:
@jax.jit
def unoptimized_chain(x):
    """An element-wise chain"""
    y = jnp.sin(x)
    z = jnp.cos(y)
    return z * 2.0 + 1.0

x = jnp.ones((1000, 1000))
compiled = unoptimized_chain.lower(x).compile()
hlo = compiled.as_text()
fusions = [line.strip() for line in hlo.splitlines() if " fusion(" in line]
print(f"{len(fusions)} fused kernel(s):")
for line in fusions:
    print(" ", line[:120])
cost = compiled.cost_analysis()
cost = cost[0] if isinstance(cost, list) else cost
print("bytes accessed:", cost.get("bytes accessed"))
''',
        explanation=(
            "The article's last snippet is cut off. Completed: sin, cos, multiply and add are "
            "element-wise, so XLA fuses them into one loop over memory. The compiled HLO shows "
            "the fusion, and its cost analysis counts bytes accessed near one read and one "
            "write of the array instead of four of each."
        ),
    ),
)


def by_id(example_id: str) -> Example:
    """The example with ``example_id``; ``KeyError`` if there is none."""
    for example in EXAMPLES:
        if example.id == example_id:
            return example
    raise KeyError(example_id)


def section(slug: str) -> Section:
    """The section with ``slug`` (``"jit"`` ... ``"memory"``); ``KeyError`` if none."""
    for s in SECTIONS:
        if s.slug == slug:
            return s
    raise KeyError(slug)


def in_section(number: int) -> tuple[Example, ...]:
    """The examples of section ``number``, in the article's order."""
    return tuple(e for e in EXAMPLES if e.section == number)


#: The example the Code Lab starts with.
DEFAULT_ID = "tracing-fixed"

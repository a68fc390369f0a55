"""Section 4 of the article, composing transforms: per-sample gradients, Jacobians, HVPs.

The article's functions live here as code: the compose page runs ``per_sample_gradient``,
``neural_network``'s Jacobians and ``optimized_hvp`` as written, and the examples below show the
very same source (:func:`~jaxplay.article._example.code`), kept token for token.
"""

import jax.numpy as jnp
from jax import grad, jacfwd, jacrev, jit, vmap

from jaxplay.article._example import Example, Section, code
from jaxplay.core.i18n import N_

SECTION = Section(
    4,
    "compose",
    N_("Composing transforms"),
    N_("Per-sample gradients, Jacobians, Hessian-vector products."),
)

# fmt: off

@jit
@vmap
def per_sample_gradient(params, x, y):
    """Per-sample gradients instead of the batch gradient"""
    def loss_for_sample(p, xi, yi):
        pred = jnp.dot(p, xi)
        return (pred - yi) ** 2
    return grad(loss_for_sample)(params, x, y)


def neural_network(params, x):
    """A small two-layer network"""
    W1, b1, W2, b2 = params
    h = jnp.tanh(jnp.dot(W1, x) + b1)
    return jnp.dot(W2, h) + b2


# Forward mode (efficient for wide outputs)
jac_forward = jacfwd(neural_network, argnums=1)
# Reverse mode (efficient for high-dimensional inputs)
jac_reverse = jacrev(neural_network, argnums=1)


def hvp(f, primals, tangents):
    """H v without building the Hessian"""
    return grad(lambda x: jnp.vdot(grad(f)(x), tangents))(primals)


@jit
def optimized_hvp(f, primals, tangents):
    return hvp(f, primals, tangents)

# fmt: on

EXAMPLES: tuple[Example, ...] = (
    Example(
        id="compose-per-sample-as-written",
        section=4,
        title=N_("Per-sample gradients with @jit @vmap"),
        as_written=True,
        expected_error="ValueError",
        fixed_by="compose-per-sample-fixed",
        source=code(
            """\
import jax.numpy as jnp
from jax import jit, vmap, grad

""",
            per_sample_gradient,
            """
# Added: a batch of 4 samples with 3 features; the model is one weight vector.
params = jnp.array([1.0, -1.0, 0.5])
X = jnp.arange(12.0).reshape(4, 3)
Y = jnp.ones(4)
print(per_sample_gradient(params, X, Y))
""",
        ),
        explanation=N_(
            "A bare `@vmap` maps over axis 0 of *every* argument, `params` included: here the "
            "3 weights are mapped like the 4 samples and the sizes disagree (`ValueError: vmap "
            "got inconsistent sizes`). With as many samples as weights the error changes: each "
            "sample gets one *element* of the weights, its prediction `jnp.dot(p, xi)` is a "
            "vector, and `grad` raises `TypeError: Gradient only defined for scalar-output "
            "functions`. Only 2-D parameters with one row per sample run without an error, each "
            "sample paired with its own row: no longer one model. Per-sample gradients need "
            "`in_axes=(None, 0, 0)`: the same params for every sample."
        ),
    ),
    Example(
        id="compose-per-sample-fixed",
        section=4,
        title=N_("Per-sample gradients with in_axes=(None, 0, 0)"),
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
        explanation=N_(
            "`in_axes=(None, 0, 0)` broadcasts `params` and maps over samples: one gradient per "
            "sample with the model's shape, shape (4, 3). Their mean equals the gradient of the "
            "mean loss, which the last line checks."
        ),
    ),
    Example(
        id="compose-jacobians",
        section=4,
        title=N_("Jacobians forward and reverse"),
        as_written=True,
        source=code(
            """\
import jax
import jax.numpy as jnp
from jax import jacfwd, jacrev

""",
            neural_network,
            """
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
""",
        ),
        explanation=N_(
            "Runs. `jacfwd` pushes one tangent per *input* through the function, `jacrev` pulls "
            "one cotangent per *output* back: the same Jacobian, at a cost that favours "
            "forward mode for few inputs and many outputs (a tall Jacobian) and reverse mode "
            "for many inputs and few outputs (a wide one), as the article's comments say: "
            "forward mode for wide outputs, reverse mode for high-dimensional inputs. The "
            "Compose page times both as the widths change."
        ),
    ),
    Example(
        id="compose-hvp-as-written",
        section=4,
        title=N_("jit around a Hessian-vector product that takes f"),
        as_written=True,
        expected_error="TypeError",
        fixed_by="compose-hvp-fixed",
        source=code(
            """\
import jax.numpy as jnp
from jax import jit, grad

""",
            hvp,
            """
""",
            optimized_hvp,
            """
# Added: the article never calls it. Calling it:
f = lambda x: jnp.sum(jnp.sin(x) ** 2)
x = jnp.arange(3.0)
v = jnp.ones(3)
print(hvp(f, x, v))          # fine without jit
optimized_hvp(f, x, v)       # fails
""",
        ),
        explanation=N_(
            "`jit` traces every argument as an array, and a Python function is not one: "
            "`TypeError: Error interpreting argument to ... as an abstract array`. Mark `f` "
            "static (`static_argnums=0`: it is part of the compiled program, and each new "
            "function compiles again) or close over it."
        ),
    ),
    Example(
        id="compose-hvp-fixed",
        section=4,
        title=N_("A jitted HVP with f static, checked against the Hessian"),
        source=code(
            """\
from functools import partial
import jax
import jax.numpy as jnp
from jax import grad

""",
            hvp,
            """
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
        ),
        explanation=N_(
            "With `static_argnums=0`, `f` is a compile-time constant: hashed into the cache "
            "key, never traced. Pass the same function object each time (a new lambda per call "
            "compiles again). The result matches the full Hessian times v."
        ),
    ),
)

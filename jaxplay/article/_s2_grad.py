"""Section 2 of the article, ``jax.grad``: a two-layer loss, its "Hessian diagonal", a custom VJP.

The article's functions live here as code: the grad page differentiates ``complex_loss`` and
breaks ``my_special_op``'s rule, and the examples below show the very same source
(:func:`~jaxplay.article._example.code`), kept token for token as the article writes it.
"""

import jax.numpy as jnp
from jax import custom_vjp

from jaxplay.article._example import Example, Section, code
from jaxplay.core.i18n import N_

SECTION = Section(
    2,
    "grad",
    N_("jax.grad: differentiation as a function"),
    N_("Gradients, Hessians, custom VJPs."),
)

# fmt: off

def complex_loss(params, x):
    W1, b1, W2, b2 = params
    h = jnp.tanh(jnp.dot(x, W1) + b1)
    return jnp.sum(jnp.dot(h, W2) + b2)


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

# fmt: on

EXAMPLES: tuple[Example, ...] = (
    Example(
        id="grad-as-written",
        section=2,
        title=N_("Gradients of a two-layer loss, and the 'Hessian diagonal'"),
        as_written=True,
        expected_error="TypeError",
        fixed_by="grad-hessian-fixed",
        source=code(
            """\
import jax.numpy as jnp
from jax import grad
import numpy as np

# Higher-order gradients
""",
            complex_loss,
            """
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
        ),
        explanation=N_(
            "`grad` differentiates scalar-output functions only. The inner `grad(complex_loss)` "
            "returns a tuple of four arrays (one gradient per parameter), so the outer `grad` "
            "raises `TypeError: Gradient only defined for scalar-output functions`. Nesting "
            "`grad` gives higher derivatives of *scalar* functions of a scalar; a Hessian (or "
            "its diagonal) needs `jax.hessian`, or Hessian-vector products."
        ),
    ),
    Example(
        id="grad-hessian-fixed",
        section=2,
        title=N_("The Hessian diagonal with jax.hessian"),
        source=code(
            """\
import jax
import jax.numpy as jnp

""",
            complex_loss,
            """
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
        ),
        explanation=N_(
            "`jax.hessian` is forward-over-reverse differentiation; for a tuple of parameters "
            "it returns a tuple of tuples of blocks. The diagonal of each parameter's own block "
            "is the Hessian diagonal the article wanted (with all-ones parameters the loss is "
            "saturated, so random parameters make the numbers interesting). Nesting `grad` is "
            "right for a scalar function of one scalar: the last lines get one diagonal entry "
            "that way and compare."
        ),
    ),
    Example(
        id="grad-custom-vjp",
        section=2,
        title=N_("A custom VJP rule, and value_and_grad"),
        as_written=True,
        source=code(
            """\
import jax
import jax.numpy as jnp

""",
            complex_loss,
            """
# Custom gradient rule
from jax import custom_vjp

""",
            my_special_op,
            """
""",
            my_special_op_fwd,
            """
""",
            my_special_op_bwd,
            """
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
""",
        ),
        explanation=N_(
            "Runs as written. `custom_vjp` replaces JAX's derivative of a function by your own "
            "backward rule (useful for numerical stability or speed); the added lines check the "
            "rule against JAX's derivative. A `custom_vjp` rule serves reverse mode only: "
            "`jax.jvp`, `jacfwd` or `hessian` of `my_special_op` raise `TypeError: can't apply "
            "forward-mode autodiff (jvp) to a custom_vjp function` (`hessian` only because "
            "`my_special_op_fwd` calls `my_special_op` itself: with a forward rule of plain `jnp` "
            "ops it differentiates through the backward rule; the grad page shows `custom_jvp` "
            "beside it, which serves both). `value_and_grad` returns the loss and its gradient "
            "in one pass; the gradient has the structure of `params` (a tuple)."
        ),
    ),
)

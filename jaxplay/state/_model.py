"""The training problem: synthetic data, the tiny MLP (:mod:`jaxplay.core.mlp`), and two
optimizers written in plain JAX.

Why a module of its own: the page's point is how a training loop carries its state, so the model
and the optimizers are deliberately small and plain (no optax): parameters are a dict of arrays,
an optimizer is a pair of functions ``init(params) -> state`` and
``update(grads, state, lr) -> (updates, state)``, and every function here is pure. Their sources
are what the page shows and what the Code Lab snippets are built from.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxplay.core.mlp import init_params as init_params
from jaxplay.core.mlp import predict

#: Examples in the synthetic data set, their features, and the minibatch size.
N_EXAMPLES = 256
FEATURES = 4
BATCH_SIZE = 32
NOISE = 0.1


def make_data(seed, n, features, noise):
    key_x, key_w, key_noise = jax.random.split(jax.random.key(seed), 3)
    x = jax.random.normal(key_x, (n, features))
    w_true = jax.random.normal(key_w, (features,))
    y = jnp.sin(x @ w_true) + noise * jax.random.normal(key_noise, (n,))
    return x, y


def loss_fn(params, x, y):
    return jnp.mean((predict(params, x) - y) ** 2)


def momentum_init(params):
    return {"velocity": jax.tree.map(jnp.zeros_like, params)}


def momentum_update(grads, state, lr, beta=0.9):
    velocity = jax.tree.map(lambda v, g: beta * v + g, state["velocity"], grads)
    updates = jax.tree.map(lambda v: -lr * v, velocity)
    return updates, {"velocity": velocity}


def adam_init(params):
    zeros = jax.tree.map(jnp.zeros_like, params)
    return {"m": zeros, "v": zeros, "step": jnp.zeros((), jnp.int32)}


def adam_update(grads, state, lr, b1=0.9, b2=0.999, eps=1e-8):
    step = state["step"] + 1
    m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, state["m"], grads)
    v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g**2, state["v"], grads)
    m_scale, v_scale = 1 / (1 - b1**step), 1 / (1 - b2**step)
    updates = jax.tree.map(lambda m, v: -lr * m * m_scale / (jnp.sqrt(v * v_scale) + eps), m, v)
    return updates, {"m": m, "v": v, "step": step}


#: The optimizers the page offers: name -> (init, update).
OPTIMIZERS = {"momentum": (momentum_init, momentum_update), "adam": (adam_init, adam_update)}

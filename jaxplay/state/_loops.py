"""The training loop three ways: state threaded through a jitted step, and two hidden-state
versions that look right and never learn.

Why a module of its own: ``jit`` compiles a pure function of its arguments. The threaded loop
passes params, optimizer state and the PRNG key in and gets the new ones back, so every step
computes on the current state. The hidden-state versions keep that state outside the arguments:
one reads "globals" inside the jitted step (read once, at trace time, and baked in as constants),
the other assigns to ``self`` inside ``jit`` (the first trace stores tracers there, later calls
never run the Python again). The server cannot use real module globals (every visitor shares
them), so the "globals" live in a dict made per run; the behaviour, and the snippet, are the same.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxplay.state._model import loss_fn


def make_step(update, batch_size):
    @jax.jit
    def step(params, opt_state, key, x, y, lr):
        key, batch_key = jax.random.split(key)
        idx = jax.random.choice(batch_key, x.shape[0], (batch_size,), replace=False)
        # The gradient of a minibatch; the loss of all the data, before the update.
        grads = jax.grad(loss_fn)(params, x[idx], y[idx])
        loss = loss_fn(params, x, y)
        updates, opt_state = update(grads, opt_state, lr)
        params = jax.tree.map(jnp.add, params, updates)
        return params, opt_state, key, loss

    return step


def train_threaded(params, key, x, y, init, update, lr, steps, batch_size):
    step = make_step(update, batch_size)
    opt_state = init(params)
    losses = []
    for _ in range(steps):
        params, opt_state, key, loss = step(params, opt_state, key, x, y, lr)
        losses.append(float(loss))
    return losses, step, params


def train_reading_globals(params, key, x, y, init, update, lr, steps, batch_size):
    state = {"params": params, "opt_state": init(params), "key": key}  # the "globals"

    @jax.jit
    def step(x, y):
        key, batch_key = jax.random.split(state["key"])
        idx = jax.random.choice(batch_key, x.shape[0], (batch_size,), replace=False)
        grads = jax.grad(loss_fn)(state["params"], x[idx], y[idx])
        loss = loss_fn(state["params"], x, y)
        updates, opt_state = update(grads, state["opt_state"], lr)
        params = jax.tree.map(jnp.add, state["params"], updates)
        return params, opt_state, key, loss

    losses = []
    for _ in range(steps):
        state["params"], state["opt_state"], state["key"], loss = step(x, y)
        losses.append(float(loss))
    return losses, step, state["params"]


class HiddenStateModel:
    def __init__(self, params, key, init, update, lr, batch_size):
        self.params = params
        self.opt_state = init(params)
        self.key = key
        self.update, self.lr, self.batch_size = update, lr, batch_size
        self.step = jax.jit(self._step)

    def _step(self, x, y):
        self.key, batch_key = jax.random.split(self.key)
        idx = jax.random.choice(batch_key, x.shape[0], (self.batch_size,), replace=False)
        grads = jax.grad(loss_fn)(self.params, x[idx], y[idx])
        loss = loss_fn(self.params, x, y)
        updates, self.opt_state = self.update(grads, self.opt_state, self.lr)
        # Stores tracers on self: they escape the trace.
        self.params = jax.tree.map(jnp.add, self.params, updates)
        return loss


def train_mutating_self(params, key, x, y, init, update, lr, steps, batch_size):
    model = HiddenStateModel(params, key, init, update, lr, batch_size)
    losses = [float(model.step(x, y)) for _ in range(steps)]
    return losses, model.step, model.params

"""The tiny multilayer perceptron two pages train and transform: a nested dict of parameters.

Why a module of its own: the Pytrees page sends these parameters through ``grad`` and ``vmap``
(a model's parameters are a pytree), and the Stateful computations page trains them (the state a
loop carries). One model, written once, so both pages show the same code. Plain on purpose: the
parameters are a dict of arrays, and both functions are pure; their sources are what the pages
show and what the Code Lab snippets are built from.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def init_params(key, features, hidden):
    key_hidden, key_out = jax.random.split(key)
    return {
        "hidden": {
            "w": jax.random.normal(key_hidden, (features, hidden)) / jnp.sqrt(features),
            "b": jnp.zeros(hidden),
        },
        "out": {"w": jax.random.normal(key_out, (hidden,)) / jnp.sqrt(hidden), "b": jnp.zeros(())},
    }


def predict(params, x):
    h = jnp.tanh(x @ params["hidden"]["w"] + params["hidden"]["b"])
    return h @ params["out"]["w"] + params["out"]["b"]

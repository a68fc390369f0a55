"""The core's tests run with Equinox's strictness (tests/conftest.py): a silent broadcast between
arrays of different ranks fails loudly here."""

from __future__ import annotations

import jax.numpy as jnp
import pytest


def test_an_implicit_rank_broadcast_raises_in_the_core_tests() -> None:
    with pytest.raises(ValueError, match="rank"):
        jnp.ones((2, 3)) + jnp.ones(3)
    assert (jnp.ones((2, 3)) + jnp.ones((1, 3))).shape == (2, 3)  # an explicit one is fine

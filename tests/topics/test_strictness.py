"""The topics' tests run with Equinox's strictness (tests/conftest.py), but for the files that run
the article's code, which broadcasts on purpose (``BROADCASTS_ON_PURPOSE``)."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from tests.conftest import BROADCASTS_ON_PURPOSE, TESTS


def test_an_implicit_rank_broadcast_raises_in_the_topics_tests() -> None:
    with pytest.raises(ValueError, match="rank"):
        jnp.ones((2, 3)) + jnp.ones(3)


def test_every_file_let_off_exists() -> None:
    assert all((TESTS / name).is_file() for name in BROADCASTS_ON_PURPOSE)

"""The article's stopwatch, reproduced: it counts the compile, and the page says why it misleads."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from jaxplay import jit
from jaxplay.core import timing


def _softmax(x):
    return jnp.exp(x) / jnp.sum(jnp.exp(x), axis=-1, keepdims=True)


def test_article_timing_includes_compile_time() -> None:
    """The article's jit loop contains the first call's trace and compile, so it dwarfs 10 calls."""
    x = jnp.ones((32, 16))
    article = jit.article_timing(_softmax, x, loops=10)
    honest = timing.profile_jit(_softmax, x, budget_s=0.05)
    assert article.jitted_s > 5 * article.loops * honest.steady.median
    assert article.jitted_s > 0.3 * honest.compile_total_s
    assert article.speedup == pytest.approx(article.naive_s / article.jitted_s)


def test_article_explanation_names_the_compile_time() -> None:
    text = jit.article_explanation(0.25)
    assert "250 ms" in text and "block" in text

"""The article's stopwatch, reproduced: it counts the compile, and the page says why it misleads."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from jaxplay import jit
from jaxplay.core import timing
from jaxplay.jit import _stopwatch


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


def test_article_explanation_is_made_of_both_measurements() -> None:
    spilled = jit.article_explanation(_stopwatch.ArticleTiming(0.002, 0.3, 10), 0.01, 0.25)
    assert "naive loop read 2 ms, 200 µs per call, against 10 ms" in spilled
    assert "the clock saw the dispatch" in spilled
    assert "the profile measured 250 ms" in spilled and "inside its 10 calls" in spilled
    # Only the jit loop holds a compile here; the article's fresh naive loop held its own.
    assert "so its loop holds no compile" in spilled
    waited = jit.article_explanation(_stopwatch.ArticleTiming(0.065, 0.3, 5), 0.012, 0.25)
    assert "13 ms per call, against 12 ms" in waited and "about the same here (1.1×)" in waited
    assert "inside its 5 calls" in waited
    # 1.7 times a waited-for call is not "about the same" (it was, up to 2×): disturbed.
    slow = jit.article_explanation(_stopwatch.ArticleTiming(0.1, 0.3, 5), 0.012, 0.25)
    assert "20 ms per call, against 12 ms" in slow and "about the same" not in slow
    assert "1.7× as long as a call that is waited for" in slow
    part = jit.article_explanation(_stopwatch.ArticleTiming(0.007, 0.05, 10), 0.001, 0.25)
    assert "0.7× as long, so the clock saw the dispatch" in part

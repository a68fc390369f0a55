"""The article's 1000 parallel streams: ``vmap(normal)`` over split keys, and how independent.

Why: the article draws one stream per key with ``vmap``; the streams' moments and correlations show
that split keys give independent-looking streams, and that one key reused gives identical ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import jax
import jax.numpy as jnp
import jax.random as jrandom
import numpy as np
from jax import vmap

from jaxplay.core import claims
from jaxplay.core.i18n import _
from jaxplay.prng._seeds import MAX_PARALLEL_VALUES


def article_parallel(seed: int, n_keys: int, n_per_key: int) -> jax.Array:
    """The article's code: split the key, then ``vmap(normal)`` over ``split(key, n_keys)``."""
    key = jrandom.PRNGKey(seed)
    key, subkey1, subkey2 = jrandom.split(key, 3)
    keys = jrandom.split(key, n_keys)
    return vmap(lambda k: jrandom.normal(k, (n_per_key,)))(keys)


@dataclass(frozen=True)
class ParallelStats:
    """Samples of parallel streams (one row per key) and simple checks of their quality.

    Attributes:
        samples: shape (n_keys, n_per_key).
        corr: Pearson correlation between the first ``n_streams`` rows.
        band: ``1.96 / sqrt(n_per_key)``: independent streams' correlations fall inside ±band
            about 95% of the time.
    """

    samples: np.ndarray
    corr: np.ndarray
    band: float

    @property
    def mean(self) -> float:
        return float(self.samples.mean())

    @property
    def std(self) -> float:
        return float(self.samples.std())

    @property
    def skewness(self) -> float:
        z = (self.samples - self.samples.mean()) / self.samples.std()
        return float((z**3).mean())

    @property
    def excess_kurtosis(self) -> float:
        z = (self.samples - self.samples.mean()) / self.samples.std()
        return float((z**4).mean() - 3.0)

    @property
    def off_diagonal(self) -> np.ndarray:
        m = self.corr.shape[0]
        return self.corr[~np.eye(m, dtype=bool)]

    @property
    def within_band(self) -> float | None:
        """Fraction of off-diagonal correlations inside ±band (about 0.95 if independent);
        ``None`` where the band holds every correlation there can be (±1.96/√n ≥ 1 below four
        samples a stream): 100% would be said of identical streams too."""
        if self.band >= 1:
            return None
        off = self.off_diagonal
        return float(np.mean(np.abs(off) <= self.band)) if off.size else 1.0


def parallel_stats(
    seed: int, n_keys: int = 1000, n_per_key: int = 10, n_streams: int = 8, reuse: bool = False
) -> ParallelStats:
    """Run :func:`article_parallel` and measure its streams.

    With ``reuse=True`` every stream gets the *same* key instead, the mistake the split prevents:
    all rows are identical and every correlation is 1.
    """
    if n_keys < 2 or n_per_key < 2 or n_keys * n_per_key > MAX_PARALLEL_VALUES:
        raise ValueError(
            f"Use at least 2 keys and 2 samples per key, and at most {MAX_PARALLEL_VALUES:,} "
            f"numbers in all (asked for {n_keys * n_per_key:,})."
        )
    if reuse:
        key = jrandom.PRNGKey(seed)
        samples = vmap(lambda k: jrandom.normal(k, (n_per_key,)))(
            jnp.broadcast_to(key, (n_keys, *key.shape))
        )
    else:
        samples = article_parallel(seed, n_keys, n_per_key)
    x = np.asarray(samples, dtype=np.float64)
    m = max(2, min(n_streams, n_keys))
    corr = cast("np.ndarray", np.corrcoef(x[:m]))  # m >= 2 rows: a matrix, never numpy's scalar
    return ParallelStats(x, corr, 1.96 / np.sqrt(n_per_key))


@claims.states_nothing("arithmetic of the band: every correlation lies in [-1, 1]")
def band_caption(n_per_key: int, band: float) -> str:
    """Why the band test says nothing at this many samples a stream (Markdown)."""
    return _(
        "With {n} samples a stream the band ±1.96/√n is ±{band}: every correlation lies inside "
        "it, identical streams' too, so this test cannot tell streams apart. Take 4 samples or "
        "more."
    ).format(n=n_per_key, band=f"{band:.2f}")

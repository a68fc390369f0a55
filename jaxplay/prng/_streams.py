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


#: The heatmap shows at most this many streams × samples (the browser, not JAX, is the limit).
HEATMAP_ROWS = 200
HEATMAP_COLS = 100
#: The histograms' bins, on [-4, 4].
BINS = 40


def density_histogram(values: np.ndarray, bins: int = BINS) -> tuple[np.ndarray, np.ndarray]:
    """Bin centres and densities of ``values`` on [-4, 4] (binned where they are drawn: a
    million samples stay a few dozen bars in the browser)."""
    density, edges = np.histogram(values, bins=bins, range=(-4.0, 4.0))
    density = density / (values.size * np.diff(edges))
    return (edges[:-1] + edges[1:]) / 2, density


@dataclass(frozen=True)
class ParallelStats:
    """Parallel streams (one row of samples per key), summarised where they were drawn, and
    simple checks of their quality.

    Why summaries: the streams are drawn in the compute worker (each new count of keys or
    samples compiled programs, about 5 MB, that JAX kept in the server process), and the whole
    matrix, up to 8 MB of samples, would be 20 MB of JSON on its way back. The page shows no
    more than these.

    Attributes:
        shape: the sample matrix's, (n_keys, n_per_key).
        corner: its first :data:`HEATMAP_ROWS` streams' first :data:`HEATMAP_COLS` samples.
        mean, std, skewness, excess_kurtosis: of all samples (float64).
        centres: the histograms' bin centres on [-4, 4].
        density: all samples' density in each bin.
        first_density: the density of each stream's first sample.
        corr: Pearson correlation between the first ``n_streams`` rows.
        band: ``1.96 / sqrt(n_per_key)``: independent streams' correlations fall inside ±band
            about 95% of the time.
    """

    shape: tuple[int, int]
    corner: np.ndarray
    mean: float
    std: float
    skewness: float
    excess_kurtosis: float
    centres: np.ndarray
    density: np.ndarray
    first_density: np.ndarray
    corr: np.ndarray
    band: float

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


def check_parallel(n_keys: int, n_per_key: int) -> None:
    """Refuse a count of keys or samples outside the page's limits (a page calls it first, in
    the visitor's language, before the streams are drawn in the compute worker).

    Raises:
        ValueError: naming the limits.
    """
    if n_keys < 2 or n_per_key < 2 or n_keys * n_per_key > MAX_PARALLEL_VALUES:
        message = _(
            "Use at least 2 keys and 2 samples per key, and at most {most} numbers in all "
            "(asked for {asked})."
        )
        raise ValueError(
            message.format(most=f"{MAX_PARALLEL_VALUES:,}", asked=f"{n_keys * n_per_key:,}")
        )


def streams(seed: int, n_keys: int, n_per_key: int, reuse: bool = False) -> np.ndarray:
    """The sample matrix (float64): :func:`article_parallel`'s, or with ``reuse=True`` every
    stream drawn from the *same* key, the mistake the split prevents (all rows identical)."""
    check_parallel(n_keys, n_per_key)
    if reuse:
        key = jrandom.PRNGKey(seed)
        samples = vmap(lambda k: jrandom.normal(k, (n_per_key,)))(
            jnp.broadcast_to(key, (n_keys, *key.shape))
        )
    else:
        samples = article_parallel(seed, n_keys, n_per_key)
    return np.asarray(samples, dtype=np.float64)


def parallel_stats(
    seed: int, n_keys: int = 1000, n_per_key: int = 10, n_streams: int = 8, reuse: bool = False
) -> ParallelStats:
    """Draw :func:`streams` and summarise them (see :class:`ParallelStats`).

    Each new ``n_keys`` or ``n_per_key`` compiles programs JAX keeps for the process: a server
    runs this in its compute worker (``sandbox.timed``), which is recycled.
    """
    x = streams(seed, n_keys, n_per_key, reuse)
    z = (x - x.mean()) / x.std()
    centres, density = density_histogram(x.reshape(-1))
    m = max(2, min(n_streams, n_keys))
    corr = cast("np.ndarray", np.corrcoef(x[:m]))  # m >= 2 rows: a matrix, never numpy's scalar
    return ParallelStats(
        shape=(n_keys, n_per_key),
        corner=x[:HEATMAP_ROWS, :HEATMAP_COLS].copy(),
        mean=float(x.mean()),
        std=float(x.std()),
        skewness=float((z**3).mean()),
        excess_kurtosis=float((z**4).mean() - 3.0),
        centres=centres,
        density=density,
        first_density=density_histogram(x[:, 0])[1],
        corr=corr,
        band=float(1.96 / np.sqrt(n_per_key)),
    )


@claims.states_nothing("arithmetic of the band: every correlation lies in [-1, 1]")
def band_caption(n_per_key: int, band: float) -> str:
    """Why the band test says nothing at this many samples a stream (Markdown)."""
    return _(
        "With {n} samples a stream the band ±1.96/√n is ±{band}: every correlation lies inside "
        "it, identical streams' too, so this test cannot tell streams apart. Take 4 samples or "
        "more."
    ).format(n=n_per_key, band=f"{band:.2f}")

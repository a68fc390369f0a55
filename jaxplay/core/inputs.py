"""Demo inputs: fixed, generic arrays that cost no compilation to make.

Why: the pages' demos need inputs that are the same on every run (so a cached result is the
result) and generic (no accidental symmetry). Drawing them with ``jax.random`` would compile one
small XLA program per call on a cold server; numpy's generator costs nothing.
"""

from __future__ import annotations

import numpy as np


def normal_arrays(seed: int, *shapes: tuple[int, ...]) -> list[np.ndarray]:
    """Standard-normal float32 arrays of the given shapes, drawn with numpy from ``seed``."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for shape in shapes]

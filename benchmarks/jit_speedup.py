"""Does jit beat eager on the article's softmax at the article's size? A benchmark, not a test.

The article claims ``jit(naive_softmax)`` is faster than the eager function on
``jnp.ones((10000, 1000))``. Whether it is, and by how much, depends on the machine and its load,
so the claim is measured here and printed (a test checks behaviour, never speed): the speedup of
each round of :func:`jaxplay.core.timing.compare_jit`, eager and jitted samples interleaved.
Run from the repository root:

    python benchmarks/jit_speedup.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxplay.hosting import environment

environment.configure()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from jaxplay.article import naive_softmax  # noqa: E402
from jaxplay.core import roofline, timing  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="independent comparisons")
    args = parser.parse_args()
    print(f"device: {roofline.device_label()}, jax {jax.__version__}")
    x = jnp.ones((10000, 1000))
    for i in range(args.rounds):
        comparison = timing.compare_jit(naive_softmax, x, budget_s=1.0, warmup=1)
        verdict = "jit faster" if comparison.speedup > 1 else "jit NOT faster"
        print(f"round {i + 1}: speedup {comparison.describe()}: {verdict}")
        print(f"    eager {comparison.eager.describe()}; jit {comparison.jitted.describe()}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"1-minute load average during the run: {load:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()

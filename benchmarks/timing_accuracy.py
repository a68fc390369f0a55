"""How close jaxplay.core.timing comes to an independent ``timeit`` reference.

Prints two ratios:

1. ``compare_jit`` speedup of the article's softmax on ``(10000, 1000)`` divided by a ``timeit``
   speedup measured in the same run, the two methods taking turns (goal: 0.8 to 1.25).
2. ``measure``'s per-call median of a tiny jitted op divided by the ``timeit`` floor for the same
   call (the best of many repeats; goal: at most 1.3). This is the harness's own overhead.

The ``timeit`` reference calls ``.block_until_ready()`` directly. For (1) it takes the median of
its batches (like ``compare_jit``); for (2) the floor is the fastest batch, as ``timeit``'s
documentation advises for a best case. Run from the repository root:

    python benchmarks/timing_accuracy.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxplay.hosting import environment

environment.configure()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from jaxplay.article import naive_softmax  # noqa: E402
from jaxplay.core import roofline, timing  # noqa: E402


def timeit_per_call(call, repeat: int) -> float:
    """The fastest per-call time of ``repeat`` timeit batches (batch size from ``autorange``)."""
    timer = timeit.Timer(call)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=repeat, number=number)) / number


def timeit_speedup(fn, x, repeat: int = 7) -> float:
    """eager / jit per-call time by timeit, the two sides interleaved batch by batch.

    The ratio of the medians of the batches: the statistic ``compare_jit`` reports, so the
    comparison is between the two ways of measuring, not between a median and a minimum.
    """
    jitted = jax.jit(fn)
    eager_call = lambda: fn(x).block_until_ready()
    jit_call = lambda: jitted(x).block_until_ready()
    eager_call()  # compiles each op, and warms up
    jit_call()  # compiles the program
    eager, jit = [], []
    for _ in range(repeat):
        eager.append(timeit_per_call(eager_call, 1))
        jit.append(timeit_per_call(jit_call, 1))
    return statistics.median(eager) / statistics.median(jit)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the two methods")
    args = parser.parse_args()

    print(f"device: {roofline.device_label()}, jax {jax.__version__}")
    x = jnp.ones((10000, 1000))
    ours, reference = [], []
    for _ in range(args.rounds):
        ours.append(timing.compare_jit(naive_softmax, x, budget_s=1.0).speedup)
        reference.append(timeit_speedup(naive_softmax, x))
    ratio1 = statistics.median(ours) / statistics.median(reference)
    print(
        f"(1) softmax (10000, 1000) speedup: compare_jit {statistics.median(ours):.2f}x, "
        f"timeit {statistics.median(reference):.2f}x (medians of {args.rounds} alternating "
        f"rounds) -> ratio {ratio1:.3f} (goal 0.8-1.25)"
    )

    tiny = jax.jit(lambda v: v + 1.0)
    v = jnp.ones(8)
    tiny(v).block_until_ready()
    medians, mins, floors = [], [], []
    for _ in range(args.rounds):
        t = timing.measure(tiny, v, budget_s=0.5)
        medians.append(t.median)
        mins.append(t.min)
        floors.append(timeit_per_call(lambda: tiny(v).block_until_ready(), repeat=20))
    median, floor = statistics.median(medians), min(floors)
    print(
        f"(2) tiny jitted op: measure median {timing.format_seconds(median)}, timeit floor "
        f"{timing.format_seconds(floor)} -> ratio {median / floor:.3f} (goal <= 1.3)"
    )
    best = min(mins)
    print(
        f"    diagnostic: measure's fastest sample / timeit floor = {best / floor:.3f} (the "
        "harness's own overhead; the median also carries the machine's noise)"
    )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"    1-minute load average during the run: {load:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()

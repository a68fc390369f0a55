"""What one unit of each kind of work costs on this machine: the table behind the cost model.

Why: :mod:`jaxplay.core.budget` predicts how long one call of a visitor's program takes before
it runs, from its jaxpr. Counting flops alone priced a 16×1,000,000 sort at 0.32 GFLOP (a
fraction of a second at matmul speed) while it took 12 s a call: a comparison sort, a prefix scan
or a loop step costs far more per counted unit than a fused multiply-add. This script times one
jitted kernel of each kind at a few sizes (blocked, warmed up, median of the samples, through
:func:`jaxplay.core.timing.measure`) and prints seconds per unit, the largest over the sizes
(the cost model should err towards refusing), as a dict to paste into
``budget.SECONDS_PER_UNIT``:

- ``elementwise``: per element written by a cheap op (``x * 1.0001 + 1``);
- ``transcendental``: per element of ``sin`` (divided by the flop weight the model charges);
- ``matmul``: per flop of a square ``dot_general``;
- ``conv``: per flop of a 2-D convolution;
- ``lapack``: per flop of ``jnp.linalg.inv`` (LU and triangular solves, as the model counts them);
- ``sort``: per element × log2(length) × operand of ``jnp.sort`` / ``jnp.argsort``;
- ``cumulative``: per element × log2(length) of ``jnp.cumsum`` (XLA's associative scan);
- ``top_k``: per element × log2(k) of ``lax.top_k``;
- ``scan_step``: per trip of a ``lax.scan`` with a trivial body (the loop's own overhead);
- ``dispatch``: per equation run eagerly (one dispatch of a tiny op).

    .venv/bin/python benchmarks/op_costs.py            # the table (a minute or two)
    .venv/bin/python benchmarks/op_costs.py --quick    # smaller sizes, a few seconds
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

from jaxplay.core import budget, timing  # noqa: E402


def _time(fn: Callable[..., Any], *args: Any) -> float:
    return timing.measure(fn, *args, budget_s=0.3, warmup=1, min_repeats=3).median


def _uniform(shape: tuple[int, ...]) -> Any:
    return timing.block(jax.random.uniform(jax.random.key(0), shape, jnp.float32, 0.5, 1.5))


def elementwise(n: int) -> float:
    x = _uniform((n,))
    return _time(jax.jit(lambda v: v * 1.0001 + 1.0), x) / n


def transcendental(n: int) -> float:
    x = _uniform((n,))
    return _time(jax.jit(jnp.sin), x) / (n * budget.TRANSCENDENTAL_COST)


def matmul(n: int) -> float:
    a = _uniform((n, n))
    return _time(jax.jit(jnp.matmul), a, a) / (2.0 * n**3)


def conv(n: int) -> float:
    image = _uniform((1, 8, n, n))
    kernel = _uniform((8, 8, 3, 3))
    fn = jax.jit(lambda i, k: lax.conv(i, k, (1, 1), "SAME"))
    return _time(fn, image, kernel) / (2.0 * n * n * 8 * 8 * 9)


def lapack(n: int) -> float:
    a = _uniform((n, n)) + n * jnp.eye(n)
    flops = budget.trace_footprint(jnp.linalg.inv, a).flops
    return _time(jax.jit(jnp.linalg.inv), a) / flops


def sort(n: int) -> float:
    x = _uniform((2, n))
    return _time(jax.jit(jnp.sort), x) / (2 * n * math.log2(n))


def argsort(n: int) -> float:
    x = _uniform((2, n))
    return _time(jax.jit(jnp.argsort), x) / (2 * 2 * n * math.log2(n))


def cumulative(n: int) -> float:
    x = _uniform((2, n))
    return _time(jax.jit(lambda v: jnp.cumsum(v, axis=1)), x) / (2 * n * math.log2(n))


def top_k(n: int) -> float:
    x = _uniform((2, n))
    k = max(2, n // 100)
    return _time(jax.jit(lambda v: lax.top_k(v, k)[0]), x) / (2 * n * math.log2(k))


def scan_step(n: int) -> float:
    def body(c: Any, _: Any) -> tuple[Any, None]:
        return c + 1.0, None

    fn = jax.jit(lambda c: lax.scan(body, c, None, length=n)[0])
    return _time(fn, jnp.float32(0)) / n


def dispatch(n: int) -> float:
    x = _uniform((4,))

    def eager(v: Any) -> Any:
        for _ in range(n):
            v = v + 1.0
        return v

    return _time(eager, x) / n


#: kind -> (how to time one size, sizes, quick sizes)
KINDS: dict[str, tuple[Callable[[int], float], tuple[int, ...], tuple[int, ...]]] = {
    "elementwise": (elementwise, (1 << 20, 1 << 23), (1 << 16,)),
    "transcendental": (transcendental, (1 << 20, 1 << 23), (1 << 16,)),
    "matmul": (matmul, (256, 1024), (128,)),
    "conv": (conv, (64, 256), (32,)),
    "lapack": (lapack, (256, 1024), (128,)),
    "sort": (sort, (10_000, 100_000, 1_000_000), (10_000,)),
    "argsort": (argsort, (10_000, 100_000, 1_000_000), (10_000,)),
    "cumulative": (cumulative, (10_000, 100_000, 1_000_000), (10_000,)),
    "top_k": (top_k, (10_000, 1_000_000), (10_000,)),
    "scan_step": (scan_step, (1_000, 100_000), (1_000,)),
    "dispatch": (dispatch, (100, 1_000), (50,)),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small size per kind")
    parser.add_argument("--only", nargs="*", choices=list(KINDS), help="just these kinds")
    args = parser.parse_args()
    print(f"# {jax.devices()[0].platform}, jax {jax.__version__}; seconds per unit (worst size)")
    table: dict[str, float] = {}
    for kind, (fn, sizes, quick) in KINDS.items():
        if args.only and kind not in args.only:
            continue
        per_size = {n: fn(n) for n in (quick if args.quick else sizes)}
        table[kind] = max(per_size.values())
        shown = ", ".join(f"{n:,}: {s:.3g}" for n, s in per_size.items())
        print(f"# {kind:<15} {shown}")
    print("SECONDS_PER_UNIT = {")
    for kind, seconds in table.items():
        print(f'    "{kind}": {seconds:.3g},')
    print("}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the jit page computes for one workload, part by part, in CPU and wall seconds.

``benchmarks/capacity.py`` says the jit page's first visit and each new workload (a changed
size, function or dtype, or "Measure again") are the costliest actions a visitor takes. This
splits that cost into the page's parts, each called as ``pages/jit.py`` calls it: the stages
(``profile_jit``), eager vs jit (``compare_jit``), the article's stopwatch (``article_timing``),
the roofline's machine reference, and the per-session compile-cache lab and side-effects demo.

Each repetition is a fresh Python process, like a fresh server whose home page already started
JAX: it warms JAX up (not counted), then measures the parts for the page's default workload
(the article's softmax, 10000 x 1000, float32), then for a new workload (rows + 1), which finds
the machine reference and the demos cached. CPU seconds are the process's (all threads).

    .venv/bin/python benchmarks/jit_page_cost.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: As pages/jit.py's PROFILE_BUDGET_S and COMPARE_BUDGET_S.
PROFILE_BUDGET_S = 0.3
COMPARE_BUDGET_S = 0.5


def _timed(call: Callable[[], Any]) -> dict[str, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    call()
    return {"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall}


def one_process() -> dict[str, dict[str, float]]:
    """The parts' costs in this (fresh) process, as JSON-ready numbers."""
    sys.path.insert(0, str(ROOT))
    from jaxplay.hosting import environment

    environment.configure()
    import jax.numpy as jnp

    from jaxplay import jit as jit_lab
    from jaxplay.core import roofline, timing

    (jnp.ones(8) * 2).block_until_ready()  # JAX started, as the server's home page leaves it

    def parts(rows: int, first: bool) -> dict[str, dict[str, float]]:
        w = jit_lab.Workload("softmax", rows, 1000, "float32", jit_lab.DEFAULT_FORMULA)
        fn = jit_lab.function_of(w)
        args: list[Any] = []
        out = {"inputs": _timed(lambda: args.extend(jit_lab.inputs(w)))}
        out["profile_jit (Stages, Roofline)"] = _timed(
            lambda: timing.profile_jit(fn, *args, budget_s=PROFILE_BUDGET_S)
        )
        out["compare_jit (Eager vs jit)"] = _timed(
            lambda: timing.compare_jit(fn, *args, budget_s=COMPARE_BUDGET_S)
        )
        out["article_timing (Article vs honest)"] = _timed(
            lambda: jit_lab.article_timing(fn, *args, loops=10)
        )
        if not first:
            # How the page drew its inputs until 2026-12-06: JAX's random program, compiled for
            # the new shape, then threefry. Drawn once at another shape first, so that what is
            # timed is what a new size cost the page then, not this process's first draw.
            import jax

            key_x = jax.random.split(jax.random.key(0), 3)[0]
            jax.random.uniform(key_x, (8, 1000), "float32", 0.5, 1.5).block_until_ready()
            out["(not on the page) jax.random inputs, as before"] = _timed(
                lambda: jax.random.uniform(
                    key_x, (rows, 1000), "float32", 0.5, 1.5
                ).block_until_ready()
            )
        if first:
            out["machine_reference (Roofline)"] = _timed(roofline.machine_reference)
            out["side effects demo"] = _timed(
                lambda: (
                    jit_lab.impure_counter_demo(2),
                    jit_lab.debug_print_demo(),
                )
            )
            out["compile-cache lab, per session"] = _timed(
                lambda: jit_lab.CacheLab().call(True, 5, "float32")
            )
        return out

    return {
        **{f"first visit: {k}": v for k, v in parts(10_000, True).items()},
        **{f"new workload: {k}": v for k, v in parts(10_001, False).items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="fresh processes")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_process()))
        return
    runs = []
    for _ in range(args.repeats):
        out = subprocess.run(
            [sys.executable, __file__, "--child"],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"median of {args.repeats} fresh processes (min-max); CPU of all threads, and wall")
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} cores, 1-minute load average {load:.1f} at the end")
    print(f"{'part':<68} {'CPU-s':>7} {'(min-max)':>13} {'wall s':>7}")
    totals: dict[str, list[float]] = {"first visit": [], "new workload": []}
    for name in runs[0]:
        cpu = [r[name]["cpu_s"] for r in runs]
        wall = [r[name]["wall_s"] for r in runs]
        print(
            f"{name[:68]:<68} {statistics.median(cpu):7.2f} ({min(cpu):5.2f}-{max(cpu):5.2f}) "
            f"{statistics.median(wall):7.2f}"
        )
    for prefix in totals:
        sums = [
            sum(v["cpu_s"] for k, v in r.items() if k.startswith(prefix) and "(not" not in k)
            for r in runs
        ]
        print(f"{prefix + ', all parts on the page':<68} {statistics.median(sums):7.2f}")


if __name__ == "__main__":
    main()

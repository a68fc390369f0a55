"""What the jit page computes for one workload, part by part, in CPU and wall seconds.

``benchmarks/capacity.py`` says the jit page's first visit and each new workload (a changed
size, function or dtype, or "Measure again") are the costliest actions a visitor takes. This
splits that cost into the page's parts, each called as the page calls it: its measurement
(``jaxplay.jit._measurement.measure``: the inputs, each stage of jit, the first call taken apart,
the compiled program), measured for every new setting; its race
(``jaxplay.jit._measurement.race``: eager against jit and the article's stopwatch), measured when
the "Eager vs jit" or "Article vs honest" tab opens; the roofline's machine reference (once per
server); and the per-session compile-cache lab and side-effects demo.

Each repetition is a fresh Python process, like a fresh server whose home page already started
JAX: it warms JAX up (not counted), then measures the parts for the page's default workload
(the article's softmax, 10000 x 1000, float32), then for a new workload (rows + 1), which finds
the machine reference and the demos cached. CPU seconds are the process's (all threads). The
measurements run in this process (as ``JAXPLAY_MEASURE_IN=server``), so the figures are the
work itself, without a compute worker's messages.

    .venv/bin/python benchmarks/jit_page_cost.py --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._fresh import child_runs  # noqa: E402


def _timed(call: Callable[[], Any]) -> dict[str, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    call()
    return {"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall}


def one_process() -> dict[str, dict[str, float]]:
    """The parts' costs in this (fresh) process, as JSON-ready numbers."""
    from jaxplay.hosting import environment

    environment.configure()
    import jax.numpy as jnp

    from jaxplay import jit as jit_lab
    from jaxplay.core import roofline
    from jaxplay.jit import _measurement

    (jnp.ones(8) * 2).block_until_ready()  # JAX started, as the server's home page leaves it
    reference: list[Any] = []

    def parts(rows: int, first: bool) -> dict[str, dict[str, float]]:
        w = jit_lab.Workload("softmax", rows, 1000, "float32", jit_lab.DEFAULT_FORMULA)
        out = {}
        if first:
            out[ROOFS] = _timed(lambda: reference.append(roofline.machine_reference()))
        measured: list[Any] = []
        out[MEASURE] = _timed(
            lambda: measured.append(_measurement.measure(w, reference=reference[0]))
        )
        compile_s = measured[0].profile.compile_total_s
        out[RACE] = _timed(lambda: _measurement.race(w, compile_s=compile_s))
        if first:
            out[SIDE_EFFECTS] = _timed(
                lambda: (
                    jit_lab.impure_counter_demo(2),
                    jit_lab.debug_print_demo(),
                )
            )
            out[CACHE_LAB] = _timed(lambda: jit_lab.CacheLab().call(True, 5, "float32"))
        return out

    return {
        **{f"first visit: {k}": v for k, v in parts(10_000, True).items()},
        **{f"new workload: {k}": v for k, v in parts(10_001, False).items()},
    }


ROOFS = "machine reference (Roofline, once per server)"
MEASURE = "measure (Stages, Roofline: every new setting)"
RACE = "race (Eager vs jit, Article vs honest: when one opens)"
SIDE_EFFECTS = "side effects demo (its tab)"
CACHE_LAB = "compile-cache lab, per session (its tab)"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="fresh processes")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_process()))
        return
    runs = child_runs(__file__, args.repeats)
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
        for total, left_out in (
            (", all parts on the page", ()),
            (", the Stages tab (the default) only", (RACE, SIDE_EFFECTS, CACHE_LAB)),
        ):
            sums = [
                sum(
                    v["cpu_s"]
                    for k, v in r.items()
                    if k.startswith(prefix) and not k.endswith(left_out)
                )
                for r in runs
            ]
            print(f"{prefix + total:<68} {statistics.median(sums):7.2f}")


if __name__ == "__main__":
    main()

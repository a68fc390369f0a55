"""How fast the sandboxed runner answers, and how it holds up under concurrent visitors.

Run: ``python benchmarks/runner_latency.py`` (from the repository root; ``--runs N`` to change
the number of round trips). It prints:

1. the round trip of ``print(jnp.ones(3).sum())`` through the warm pool (a spare ready), p50
   and p95, beside a fresh ``python`` process per run and an in-process ``exec`` (no isolation);
2. 20 runs submitted by 10 concurrent visitors: failures, wall time, and throughput against the
   ideal for this machine's cores (cores / CPU seconds one run costs, worker start included)
   where each run gets a fresh interpreter (``JAXPLAY_FORKSERVER=off``); a forked run's CPU is
   ``benchmarks/forkserver.py``'s to measure.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jaxplay.hosting import environment  # noqa: E402

environment.configure()

from jaxplay.sandbox import RunnerConfig, WorkerPool, worker_environment  # noqa: E402

SOURCE = "import jax.numpy as jnp\nprint(jnp.ones(3).sum())"


def percentiles(samples: list[float]) -> str:
    p50, p95 = np.percentile(samples, [50, 95])
    return f"p50 {p50 * 1e3:7.1f} ms   p95 {p95 * 1e3:7.1f} ms   (n={len(samples)})"


def wait_for_spare(pool: WorkerPool, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while pool.status()["spares_ready"] < 1:
        if time.monotonic() > deadline:
            raise RuntimeError(f"no spare became ready: {pool.status()}")
        time.sleep(0.02)


def warm_round_trips(pool: WorkerPool, runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        wait_for_spare(pool)
        start = time.perf_counter()
        result = pool.run(SOURCE)
        samples.append(time.perf_counter() - start)
        assert result.ok and result.stdout.strip() == "3.0", result
    return samples


def fresh_process_round_trips(runs: int) -> tuple[list[float], float]:
    """Wall times of a fresh interpreter per run, and the CPU seconds one such run costs."""
    env = worker_environment()
    samples = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", SOURCE], env=env, capture_output=True, text=True, check=True
        )
        samples.append(time.perf_counter() - start)
        assert out.stdout.strip() == "3.0"
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return samples, cpu / runs


def in_process_round_trips(runs: int) -> list[float]:
    code = compile(SOURCE, "<bench>", "exec")
    samples = []
    devnull = open(os.devnull, "w")  # noqa: SIM115
    for _ in range(runs + 1):
        start = time.perf_counter()
        stdout, sys.stdout = sys.stdout, devnull
        try:
            exec(code, {}, {})
        finally:
            sys.stdout = stdout
        samples.append(time.perf_counter() - start)
    return samples[1:]  # the first call warmed JAX up


def concurrent_visitors(
    pool: WorkerPool, cpu_per_run: float, visitors: int = 10, per_visitor: int = 2
) -> None:
    """``cpu_per_run``: CPU seconds of one fresh interpreter doing the run (what each run costs,
    since every run gets a new worker); the ideal throughput is cores / cpu_per_run."""
    failures: list[str] = []
    lock = threading.Lock()

    def visit(v: int) -> None:
        for _ in range(per_visitor):
            result = pool.run(SOURCE, visitor=f"visitor-{v}")
            if not (result.ok and result.stdout.strip() == "3.0"):
                with lock:
                    failures.append(str(result.error))

    wait_for_spare(pool)
    start = time.perf_counter()
    threads = [threading.Thread(target=visit, args=(v,)) for v in range(visitors)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    total = visitors * per_visitor
    cores = os.cpu_count() or 1
    ideal = cores / cpu_per_run if cpu_per_run > 0 else float("nan")
    actual = total / wall
    print(f"{visitors} visitors x {per_visitor} runs = {total} runs")
    print(f"  failures: {len(failures)}" + (f"  first: {failures[0]}" if failures else ""))
    print(f"  wall: {wall:.1f} s   throughput: {actual:.2f} runs/s")
    if pool.status()["forkserver"]:
        # A forked run costs far less than a fresh interpreter: that ideal does not bound it.
        print("  runs are forked from the zygote: CPU per run in benchmarks/forkserver.py")
        return
    print(
        f"  CPU per run (a fresh interpreter: start JAX + run): {cpu_per_run:.2f} s; "
        f"ideal for {cores} cores: {ideal:.2f} runs/s; achieved {actual / ideal:.0%} of ideal"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    config = RunnerConfig.from_env()
    pool = WorkerPool(config)
    pool.warm()
    load = os.getloadavg()
    print(
        f"machine: {os.cpu_count()} cores, load average {load[0]:.1f}; sandbox "
        f"{pool.sandbox.name}; spares {config.spares}, concurrency {config.max_concurrent}; "
        f"{environment.requested_cpu_devices()} simulated CPU devices; {pool.worker_kind()}"
    )
    print(f"code: {SOURCE!r}")
    try:
        print("warm pool (a spare ready):   " + percentiles(warm_round_trips(pool, args.runs)))
        fresh, cpu_per_run = fresh_process_round_trips(max(3, args.runs // 4))
        print("fresh python process per run: " + percentiles(fresh))
        print("in-process exec (no sandbox): " + percentiles(in_process_round_trips(args.runs)))
        concurrent_visitors(pool, cpu_per_run)
    finally:
        pool.shutdown()


if __name__ == "__main__":
    main()

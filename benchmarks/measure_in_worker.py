"""The jit page's measurement in the server's thread against in a compute worker: what the rest
of the server feels while one runs.

For each ``--mode`` a fresh server-like process (``JAXPLAY_MEASURE_IN``, started inside a CPU
cgroup that also counts its workers, ``benchmarks/_cpu.py``) first measures once to warm up (the
runner's pool, the machine's roofs), then measures ``--repeats`` distinct softmax workloads of
the page's default size (one more row each, so nothing is kept) at the page's full sampling
budgets, one after another. Meanwhile a bystander thread of the same process does what a
visitor's rerun does, Python work: the same small piece of it (about a millisecond when the
process is idle) again and again, then a 5 ms sleep. How much longer a piece takes than when
idle is how much the measurement slows everyone else's pages; how late the sleep wakes is how
long the interpreter was kept from them. Printed per mode, as the median over the repeats
(min-max): the bystander's piece when idle (measured before), its median and 99th-percentile
piece while measuring, its worst wake-up lateness, the server process's own CPU, the CPU of
everything (workers included), the wall time, and the measured steady jit call, which should be
the same kind of figure either way.

    .venv/bin/python benchmarks/measure_in_worker.py --repeats 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._cpu import CpuCgroup  # noqa: E402
from jaxplay.hosting import environment  # noqa: E402

CHILD = r"""
import json, sys, threading, time
from pathlib import Path
from jaxplay.hosting import environment, settings
environment.configure()
from jaxplay import jit
from jaxplay.jit import _measurement
from jaxplay.core import measure_lock

usage_file = Path(sys.argv[1]) if sys.argv[1] else None
repeats = int(sys.argv[2])


def usage():
    if usage_file is None:
        return float("nan")
    text = usage_file.read_text()
    if usage_file.name == "cpuacct.usage":
        return int(text) / 1e9
    return next(int(v) / 1e6 for k, _, v in (l.partition(" ") for l in text.splitlines())
                if k == "usage_usec")


def piece():
    start = time.perf_counter()
    sum(i * i for i in range(20_000))
    return time.perf_counter() - start


measure = _measurement.MEASURERS[settings.measure_in()]
measure(jit.Workload("softmax", 100, 100), measure_lock.UNWATCHED)  # the pool, the roofs
time.sleep(1.0)
idle = sorted(piece() for _ in range(200))[100]
for i in range(repeats):
    late, pieces = [], []
    stop = threading.Event()

    def bystander():
        while not stop.is_set():
            pieces.append(piece())
            asked = time.perf_counter()
            time.sleep(0.005)
            late.append(time.perf_counter() - asked - 0.005)

    thread = threading.Thread(target=bystander)
    cpu, all_cpu, wall = time.process_time(), usage(), time.perf_counter()
    thread.start()
    m = measure(jit.Workload("softmax", 10_000 + i, 1_000), measure_lock.UNWATCHED)
    stop.set()
    thread.join()
    late.sort()
    pieces.sort()
    print(json.dumps({
        "piece_median_ms": 1e3 * pieces[len(pieces) // 2],
        "piece_p99_ms": 1e3 * pieces[int(0.99 * (len(pieces) - 1))], "idle_piece_ms": 1e3 * idle,
        "where": m.where(), "wall_s": time.perf_counter() - wall,
        "server_cpu_s": time.process_time() - cpu, "all_cpu_s": usage() - all_cpu,
        "late_max_ms": 1e3 * late[-1],
        "steady_ms": 1e3 * m.profile.steady.median, "cut": m.cut,
    }), flush=True)
"""

FIELDS = (
    "idle_piece_ms",
    "piece_median_ms",
    "piece_p99_ms",
    "late_max_ms",
    "server_cpu_s",
    "all_cpu_s",
    "wall_s",
    "steady_ms",
)


def run_mode(mode: str, repeats: int) -> list[dict[str, object]]:
    group = CpuCgroup()
    usage = ""
    if group.available and group.path is not None:
        name = "cpuacct.usage" if group.kind == "v1" else "cpu.stat"
        usage = str(group.path / name)
    env = environment.child_environment()
    env.update({"JAXPLAY_MEASURE_IN": mode, "PYTHONPATH": str(ROOT)})
    prefix = group.prefix() if group.available else []
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", CHILD, usage, str(repeats)],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=600,
            check=False,
        )
    finally:
        group.remove()
    if done.returncode != 0:
        raise SystemExit(f"{mode}: exit {done.returncode}\n{done.stderr[-3000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def summary(rows: list[dict[str, object]], field: str) -> str:
    values = [float(r[field]) for r in rows]  # type: ignore[arg-type]
    return f"{statistics.median(values):.3g} ({min(values):.3g}-{max(values):.3g})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--mode", action="append", choices=("server", "worker"))
    parser.add_argument("--json", help="write every measurement here too")
    args = parser.parse_args(argv)
    results = {mode: run_mode(mode, args.repeats) for mode in args.mode or ["server", "worker"]}
    print("| where | " + " | ".join(FIELDS) + " |")
    print("|---" * (len(FIELDS) + 1) + "|")
    for mode, rows in results.items():
        print(f"| {mode} | " + " | ".join(summary(rows, f) for f in FIELDS) + " |")
        print(f"|  ({rows[0]['where']}; cut: {sum(bool(r['cut']) for r in rows)}) |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

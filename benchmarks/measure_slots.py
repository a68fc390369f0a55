"""Measurements on disjoint cores at once: the host-wide scheduler of ``core/measure_lock``.

Starts ``--processes`` measuring processes, each pinned to its share of this machine's cores as
the room's launcher would pin its servers (``serve.core_shares``, through ``JAXPLAY_CPUS``), and
one more spanning all of those cores, all sharing one measurement lock file. Each times a
``--size`` square float32 matmul on JAX's CPU backend (``core.timing.measure``, ``--budget-s``
of sampling) inside ``measure_lock.exclusive``. The pinned ones are started together; the
spanning one asks a moment later. Prints when each held its lock, its median per call and the
cores every one of its threads may run on (from the kernel): the pinned ones should hold theirs
at once, each on its own cores, and the spanning one after all of them.

    .venv/bin/python benchmarks/measure_slots.py --processes 3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jaxplay.hosting import serve, settings  # noqa: E402

CHILD = r"""
import json, os, sys, time
from jaxplay.hosting import environment, settings
environment.configure()
import jax.numpy as jnp
from jaxplay.core import measure_lock, timing
measure_lock.share_with_host(sys.argv[1])
size, budget = int(sys.argv[2]), float(sys.argv[3])
x = jnp.ones((size, size), dtype=jnp.float32)
def call():
    return x @ x
call().block_until_ready()
print("ready", flush=True)
sys.stdin.readline()
asked = time.time()
with measure_lock.exclusive():
    start = time.time()
    measured = timing.measure(call, budget_s=budget)
    end = time.time()
threads = {settings.cpu_list(os.sched_getaffinity(int(t))) for t in os.listdir("/proc/self/task")}
print(json.dumps({"asked": asked, "start": start, "end": end, "median_s": measured.median,
                  "spread_s": [measured.q1, measured.q3], "samples": measured.repeats,
                  "threads": sorted(threads)}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--size", type=int, default=1500)
    parser.add_argument("--budget-s", type=float, default=2.0)
    args = parser.parse_args(argv)
    cores = sorted(os.sched_getaffinity(0))
    shares = serve.core_shares(cores, args.processes)
    if not shares:
        print(f"{len(cores)} core(s): too few for {args.processes} disjoint shares")
        return 1
    spanning = frozenset().union(*shares)
    lock = str(Path(tempfile.mkdtemp(prefix="jaxplay-slots-")) / "measure.lock")
    children = []
    for share in [*shares, spanning]:
        env = {**os.environ, "JAXPLAY_CPUS": settings.cpu_list(share), "JAX_PLATFORMS": "cpu"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        command = [sys.executable, "-c", CHILD, lock, str(args.size), str(args.budget_s)]
        children.append(
            subprocess.Popen(
                command, env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
        )
    for child in children:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    for i, child in enumerate(children):
        if i == len(shares):
            time.sleep(0.3)  # the spanning one asks last
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    rows = [json.loads(c.communicate(timeout=600)[0].strip().splitlines()[-1]) for c in children]
    zero = min(r["asked"] for r in rows)
    what = f"{args.size}x{args.size} float32 matmul"
    print(f"{len(cores)} cores here; {what}, sampled for {args.budget_s} s in each process")
    for share, row in zip([*shares, spanning], rows, strict=True):
        low, high = (s * 1e3 for s in row["spread_s"])
        print(
            f"  cores {settings.cpu_list(share):>8}: held the lock {row['start'] - zero:5.2f}-"
            f"{row['end'] - zero:5.2f} s, median {row['median_s'] * 1e3:6.2f} ms "
            f"(IQR {low:.2f}-{high:.2f}, {row['samples']} samples), "
            f"threads on {', '.join(row['threads'])}"
        )
    at_once = max(r["start"] for r in rows[:-1]) < min(r["end"] for r in rows[:-1])
    after = rows[-1]["start"] >= max(r["end"] for r in rows[:-1])
    print(f"pinned ones at once: {at_once}; spanning one after them: {after}")
    return 0 if at_once and after else 1


if __name__ == "__main__":
    sys.exit(main())

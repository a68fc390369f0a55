"""The fork server against the exec'd worker: CPU per run, latency, throughput, memory.

Each figure is measured for both worker kinds in the same invocation (``JAXPLAY_FORKSERVER=on``
and ``off``, the sandbox as ``JAXPLAY_SANDBOX`` says):

* **CPU per run** — the machine's whole cost: a child process that starts a pool, waits for its
  spares, does ``--runs`` trivial runs (``print(jnp.ones(3).sum() + i)``), waits for the spares
  to be replaced and stops the pool runs inside a cgroup of its own (v1 ``cpuacct`` or v2
  ``cpu.stat``, :class:`benchmarks._cpu.CpuCgroup`), which counts every process it ever held
  (bubblewrap, the zygote, every forked or exec'd worker, killed or not). The same child with no
  runs is the baseline; CPU per run = (with runs - without) / runs. Repeated ``--repeats`` times:
  median and range.
* **warm round trip** — each run started with every spare ready: median and IQR, for the
  trivial run (beside its code's own time: a fresh process compiles its ``+ i``) and for
  ``print(jnp.ones(3).sum())``, whose operations the worker's warm-up compiled (the code
  ``benchmarks/runner_latency.py`` times), so that round trip is the pool's own.
* **fork** (fork server only) — how long the zygote takes to hand the pool a forked process
  (fork, the hello, the cgroup join), and how long that process takes to start its backend.
  This is why one zygote serves the whole pool: it is busy for the first figure only.
* **sustained** — ``--visitors`` threads, each its own visitor, run trivial code back to back
  for ``--seconds``: runs per second and failures.
* **memory** — the zygote's and a ready worker's resident (RSS), proportional (PSS) and unique
  (USS: private pages) memory, from ``/proc/<pid>/smaps_rollup``; a forked worker shares the
  zygote's pages copy-on-write.

On a machine that other work shares, the CPU figures hold better than the times::

    .venv/bin/python benchmarks/forkserver.py --runs 10 --repeats 2 --seconds 20
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._cpu import CpuCgroup  # noqa: E402

SNIPPET = "import jax.numpy as jnp\nprint(jnp.ones(3).sum() + {i})"
#: The code ``benchmarks/runner_latency.py`` times (the issue's "p50 ~15–30 ms" warm round trip):
#: the operations a worker's warm-up compiled, so the round trip is the pool's own.
SAME_SNIPPET = "import jax.numpy as jnp\nprint(jnp.ones(3).sum())"
KINDS = ("on", "off")


# --- inside a measured child -------------------------------------------------------------------


def _pool(kind: str) -> Any:
    from jaxplay.hosting import environment

    environment.configure()
    from jaxplay.sandbox import Limits, RunnerConfig, WorkerPool

    config = RunnerConfig.from_env()
    return WorkerPool(
        RunnerConfig(
            sandbox=config.sandbox,
            forkserver=kind,
            spares=2,
            max_concurrent=2,
            max_queued=64,
            limits=Limits(timeout_s=60.0),
        )
    )


def _wait_spares(pool: Any, timeout_s: float = 300.0) -> None:
    pool.warm()
    deadline = time.monotonic() + timeout_s
    while pool.status()["spares_ready"] < pool.config.spares:
        if time.monotonic() > deadline:
            raise RuntimeError(f"spares not ready: {pool.status()}")
        time.sleep(0.02)


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return out


def _descendants(pid: int) -> list[int]:
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo += _children(p)
    return seen


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def _memory(pid: int) -> dict[str, float]:
    """RSS, PSS and USS of ``pid`` in MB, from ``smaps_rollup``."""
    fields: dict[str, int] = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if rest.strip().endswith("kB"):
                fields[key] = int(rest.split()[0])
    uss = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
    return {"rss_mb": fields.get("Rss", 0) / 1024, "pss_mb": fields.get("Pss", 0) / 1024,
            "uss_mb": uss / 1024}  # fmt: skip


def _worker_pid(worker: Any, kind: str) -> int | None:
    """The process that runs the code: a forked worker's PID 2, or the exec'd interpreter."""
    tree = _descendants(worker.launch.process.pid)
    if kind == "on":
        return tree[-1] if len(tree) >= 3 else None  # C -> I -> R
    return next((p for p in tree if _cmdline(p).split()[:1] == [sys.executable]), None)


def child_cost(kind: str, runs: int) -> dict[str, Any]:
    """Start a pool, ``runs`` warm runs, the spares replaced, stop; the round trips."""
    pool = _pool(kind)
    trips, codes = [], []
    try:
        _wait_spares(pool)
        for i in range(runs):
            _wait_spares(pool)
            started = time.perf_counter()
            result = pool.run(SNIPPET.format(i=i), visitor="bench")
            trips.append(time.perf_counter() - started)
            codes.append(result.duration_s)
            if not result.ok:
                raise RuntimeError(f"run failed: {result.error}")
        _wait_spares(pool)
        kind_used = pool.worker_kind()
    finally:
        pool.shutdown()
    return {"trips_s": trips, "code_s": codes, "worker_kind": kind_used}


def child_extra(kind: str, visitors: int, seconds: float) -> dict[str, Any]:
    """Memory, fork times and sustained throughput (not counted as CPU per run)."""
    pool = _pool(kind)
    out: dict[str, Any] = {}
    try:
        _wait_spares(pool)
        spare = pool._spares[0]
        pid = _worker_pid(spare, kind)
        out["worker_memory"] = _memory(pid) if pid else None
        if kind == "on" and pool.forkserver is not None and pool.forkserver.zygote is not None:
            zygote = next(
                p
                for p in _descendants(pool.forkserver.zygote.process.pid)
                if "jaxplay.sandbox._zygote" in _cmdline(p)
                and not _cmdline(p).split()[0].endswith("bwrap")
            )
            out["zygote_memory"] = _memory(zygote)
            forks, readies = [], []
            for _ in range(5):
                started = time.perf_counter()
                worker = pool._new_worker()
                forked = time.perf_counter()
                worker.wait_ready(120)
                forks.append(forked - started)
                readies.append(time.perf_counter() - forked)
                worker.stop()
            out["fork_s"], out["ready_s"] = forks, readies
        same = []
        for _ in range(30):
            _wait_spares(pool)
            started = time.perf_counter()
            result = pool.run(SAME_SNIPPET, visitor="bench")
            same.append(time.perf_counter() - started)
            if not result.ok:
                raise RuntimeError(f"run failed: {result.error}")
        out["same_trips_s"] = same
        done, failed = [0], [0]
        lock = threading.Lock()
        stop_at = time.monotonic() + seconds

        def visitor(n: int) -> None:
            i = 0
            while time.monotonic() < stop_at:
                result = pool.run(SNIPPET.format(i=i), visitor=f"v{n}")
                i += 1
                with lock:
                    (done if result.ok else failed)[0] += 1

        started = time.monotonic()
        threads = [threading.Thread(target=visitor, args=(n,)) for n in range(visitors)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
        out["sustained"] = {"runs": done[0], "failed": failed[0], "seconds": elapsed,
                            "runs_per_s": done[0] / elapsed}  # fmt: skip
    finally:
        pool.shutdown()
    return out


# --- the parent --------------------------------------------------------------------------------


def _measured(args: list[str]) -> tuple[float, dict[str, Any]]:
    """Run this script's child mode in a fresh CPU cgroup: (its CPU-s, what it printed)."""
    cgroup = CpuCgroup()
    if not cgroup.available:
        raise SystemExit(f"no CPU cgroup: {cgroup.why}")
    try:
        before = cgroup.usage_s()
        proc = subprocess.run(
            [*cgroup.prefix(), sys.executable, __file__, "--child", *args],
            capture_output=True,
            text=True,
            timeout=1800,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        time.sleep(0.5)  # processes killed at shutdown finish exiting
        used = cgroup.usage_s() - before
    finally:
        cgroup.remove()
    if proc.returncode != 0:
        raise SystemExit(f"child {args} failed:\n{proc.stderr[-3000:]}")
    return used, json.loads(proc.stdout.strip().splitlines()[-1])


def _spread(values: list[float], scale: float = 1.0, unit: str = "") -> str:
    if not values:
        return "n/a"
    v = sorted(x * scale for x in values)
    med = statistics.median(v)
    if len(v) >= 4:
        q = statistics.quantiles(v, n=4)
        return f"{med:.3g}{unit} (IQR {q[0]:.3g}–{q[2]:.3g}, n={len(v)})"
    return f"{med:.3g}{unit} (range {v[0]:.3g}–{v[-1]:.3g}, n={len(v)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--visitors", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kind", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--extra", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        if opts.extra:
            data = child_extra(opts.kind, opts.visitors, opts.seconds)
        else:
            data = child_cost(opts.kind, opts.runs)
        print(json.dumps(data))
        return
    report: dict[str, Any] = {"runs": opts.runs, "repeats": opts.repeats}
    for kind in KINDS:
        per_run, trips, codes, base, label = [], [], [], [], ""
        for _ in range(opts.repeats):
            idle, _ = _measured(["--kind", kind, "--runs", "0"])
            busy, data = _measured(["--kind", kind, "--runs", str(opts.runs)])
            base.append(idle)
            per_run.append((busy - idle) / opts.runs)
            trips += data["trips_s"]
            codes += data["code_s"]
            label = data["worker_kind"]
        _, extra = _measured(
            ["--kind", kind, "--extra", "--visitors", str(opts.visitors),
             "--seconds", str(opts.seconds)]
        )  # fmt: skip
        report[kind] = {"worker_kind": label, "cpu_per_run_s": per_run, "baseline_cpu_s": base,
                        "trips_s": trips, "code_s": codes, **extra}  # fmt: skip
        print(f"\nJAXPLAY_FORKSERVER={kind}: {label}")
        print(f"  CPU per trivial run (cgroup, whole pool): {_spread(per_run, unit=' CPU-s')}")
        print(f"  pool start + stop without runs:           {_spread(base, unit=' CPU-s')}")
        print(f"  warm round trip, trivial run:             {_spread(trips, 1e3, ' ms')}")
        print(f"    of which its code (compiles its + i):   {_spread(codes, 1e3, ' ms')}")
        same = _spread(extra["same_trips_s"], 1e3, " ms")
        print(f"  warm round trip, nothing new to compile:  {same}")
        if "fork_s" in extra:
            fork = _spread(extra["fork_s"], 1e3, " ms")
            ready = _spread(extra["ready_s"], 1e3, " ms")
            print(f"  fork + cgroup join:                       {fork}")
            print(f"  forked worker's backend start:            {ready}")
        s = extra["sustained"]
        print(f"  sustained, {opts.visitors} visitors: {s['runs_per_s']:.2f} runs/s "
              f"({s['runs']} runs, {s['failed']} failed, {s['seconds']:.0f} s)")  # fmt: skip
        for who in ("zygote_memory", "worker_memory"):
            m = extra.get(who)
            if m:
                print(f"  {who.replace('_', ' ')}: RSS {m['rss_mb']:.0f} MB, "
                      f"PSS {m['pss_mb']:.0f} MB, USS {m['uss_mb']:.0f} MB")  # fmt: skip
    on, off = report["on"]["cpu_per_run_s"], report["off"]["cpu_per_run_s"]
    print(f"\nexec'd / forked CPU per run: {statistics.median(off) / statistics.median(on):.1f}×")
    if opts.json:
        opts.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

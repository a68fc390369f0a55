"""GPU check: does jaxplay work on this machine's NVIDIA GPU, and how fast is it there?

Run on a GPU VM with JAX's CUDA build installed (docs/hosting.md, "Checking the GPU"):

    .venv/bin/python benchmarks/gpu_check.py

It checks, and prints as a table:

1. JAX's default backend is the GPU;
2. every registered page renders under Streamlit's AppTest (``app.py``, then ``switch_page``,
   as ``tests/support/apptest.py``'s ``open_page`` does) with no exception, on the GPU backend;
3. a Code Lab run in the bubblewrap sandbox sees the GPU (``jax.devices()`` inside the run);
4. ``--concurrent`` sandbox runs at once each allocate ``--gib`` GiB on the GPU and hold it
   until all have it: all succeed (as the hosting guide says, with
   ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` no process takes the memory the others need); the
   per-process peak comes from each run's ``memory_stats()``;
5. the jit page's figures on the GPU: the speed-up of ``jit`` on the article's
   ``naive_softmax`` at (10000, 1000) (``timing.compare_jit``, as the page's "Eager vs jit" tab),
   and its achieved memory bandwidth as a fraction of the GPU's measured copy bandwidth
   (``timing.profile_jit``, ``machine_reference`` and ``roofline_point``, as the Roofline tab).

The exit status is 0 only when every check passed. On a machine without a GPU it checks
nothing, says "no GPU: skipped ...", and exits 0; where an NVIDIA GPU is present but JAX has no
CUDA backend it fails (exit 1) and says what to install.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGE_TIMEOUT_S = 300
MARK = "GPUCHECK "


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


class NoGpu(Exception):
    """This machine has no GPU for JAX: nothing to check."""


class Broken(Exception):
    """A GPU is present but JAX cannot use it."""


def find_gpu() -> str:
    """The GPUs JAX sees, as one line; raises :class:`NoGpu` or :class:`Broken`."""
    from jaxplay.hosting import environment

    platforms = os.environ.get("JAX_PLATFORMS", "").strip().lower()
    if platforms and not any(p in platforms for p in ("cuda", "gpu")):
        raise NoGpu(f"JAX_PLATFORMS={platforms} leaves the GPU out")
    environment.configure()  # the app's process settings, before JAX starts its backend
    import jax

    try:
        gpus = jax.devices("gpu")
        why = ""
    except RuntimeError as err:
        gpus, why = [], str(err).strip().splitlines()[0] if str(err).strip() else repr(err)
    if gpus:
        return ", ".join(f"{d.device_kind} (id {d.id})" for d in gpus)
    nodes = glob.glob("/dev/nvidia[0-9]*") + glob.glob("/proc/driver/nvidia/gpus/*")
    if nodes:
        raise Broken(
            f"an NVIDIA GPU is present ({nodes[0]}) but JAX has no GPU backend ({why}); install "
            'JAX\'s CUDA build: .venv/bin/pip install -U "jax[cuda13]" (or "jax[cuda12]")'
        )
    raise NoGpu(f"JAX finds no GPU backend ({why or 'no GPU devices'})")


def check_backend() -> Check:
    import jax

    backend = jax.default_backend()
    devices = ", ".join(f"{d.platform}:{d.id}" for d in jax.devices())
    return Check("JAX default backend", backend == "gpu", f"{backend}; devices {devices}")


def check_pages() -> list[Check]:
    """Every registered page under AppTest, through app.py's navigation (as conftest does)."""
    import jax
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.testing.v1 import AppTest

    from jaxplay.hosting import catalog

    # As tests/conftest.py's autouse fixture: run pages through app.py's st.navigation.
    original = PagesManager.__init__

    def init(self: PagesManager, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    PagesManager.__init__ = init  # type: ignore[method-assign]
    checks = []
    try:
        for spec in catalog.PAGES:
            start = time.perf_counter()
            try:
                at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=PAGE_TIMEOUT_S)
                at.run()
                at.switch_page(spec.path)
                at.run()
                errors = [e.value for e in at.exception]
                titles = [t.value for t in at.title]
                ok = not errors and bool(titles)
                detail = f"{time.perf_counter() - start:.1f} s on {jax.default_backend()}"
                if errors:
                    detail += f"; exception: {str(errors[0])[:200]}"
                elif not titles:
                    detail += "; no title rendered"
            except Exception as err:
                ok, detail = False, f"{type(err).__name__}: {str(err)[:200]}"
            checks.append(Check(f"page renders: {spec.url_path}", ok, detail))
    finally:
        PagesManager.__init__ = original  # type: ignore[method-assign]
    return checks


def _pool(workers: int):
    from jaxplay.sandbox import RunnerConfig, WorkerPool

    config = RunnerConfig.from_env()
    config = RunnerConfig(
        sandbox="bwrap",
        public=True,
        spares=workers,
        max_concurrent=workers,
        limits=config.limits,
    )
    pool = WorkerPool(config)
    pool.warm()
    deadline = time.monotonic() + 300
    while pool.status()["spares_ready"] < workers:
        status = pool.status()
        if status["last_start_error"] or time.monotonic() > deadline:
            pool.shutdown()
            raise RuntimeError(f"sandbox workers did not start: {status}")
        time.sleep(0.1)
    return pool


def _marked(stdout: str) -> dict:
    for line in stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    return {}


SEES_GPU = f"""
import json, jax
devices = [f"{{d.platform}}:{{d.device_kind}}" for d in jax.devices()]
print({MARK!r} + json.dumps({{"devices": devices, "backend": jax.default_backend()}}))
"""


def check_sandbox_sees_gpu() -> Check:
    try:
        pool = _pool(1)
    except RuntimeError as err:
        return Check("sandbox run sees the GPU", False, str(err)[:300])
    try:
        if pool.sandbox.name != "bwrap":
            return Check("sandbox run sees the GPU", False, f"sandbox is {pool.sandbox.name}")
        result = pool.run(SEES_GPU, timeout_s=120)
    finally:
        pool.shutdown()
    data = _marked(result.stdout)
    ok = result.ok and data.get("backend") == "gpu"
    detail = f"jax.devices() in the run: {data.get('devices')}" if data else ""
    if not result.ok:
        detail += f" error: {result.error}"[:300]
    return Check("sandbox run sees the GPU (bwrap)", ok, detail)


SHARE_MEMORY = """
import json, os, time, jax, jax.numpy as jnp
x = jnp.ones(({elements},), jnp.float32).block_until_ready()
held = time.time()
time.sleep({hold_s})
stats = jax.devices()[0].memory_stats() or {{}}
released = time.time()
print({mark!r} + json.dumps({{
    "held": held, "released": released,
    "peak": stats.get("peak_bytes_in_use"), "limit": stats.get("bytes_limit"),
    "preallocate": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE"),
    "fraction": os.environ.get("XLA_CLIENT_MEM_FRACTION")
    or os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION"),
}}))
"""


def check_shared_memory(concurrent: int, gib: float, hold_s: float = 3.0) -> list[Check]:
    elements = int(gib * 2**30 / 4)
    source = SHARE_MEMORY.format(elements=elements, hold_s=hold_s, mark=MARK)
    name = f"{concurrent} concurrent sandbox runs, {gib:g} GiB each"
    try:
        pool = _pool(concurrent)
    except RuntimeError as err:
        return [Check(name, False, str(err)[:300])]
    results: list = [None] * concurrent

    def one(i: int) -> None:
        results[i] = pool.run(source, timeout_s=120)

    try:
        threads = [threading.Thread(target=one, args=(i,)) for i in range(concurrent)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        pool.shutdown()
    data = [_marked(r.stdout) if r is not None else {} for r in results]
    checks = []
    for i, (result, d) in enumerate(zip(results, data, strict=True)):
        ok = bool(result is not None and result.ok and d.get("peak"))
        peak = d.get("peak") or 0
        ok = ok and peak >= elements * 4
        detail = (
            f"peak {peak / 2**30:.2f} GiB of a {(d.get('limit') or 0) / 2**30:.1f} GiB limit; "
            f"PREALLOCATE={d.get('preallocate')}, MEM_FRACTION={d.get('fraction')}"
            if d
            else f"error: {getattr(result, 'error', None)}"[:300]
        )
        checks.append(Check(f"  run {i + 1}", ok, detail))
    held = [d["held"] for d in data if d]
    released = [d["released"] for d in data if d]
    overlap = len(held) == concurrent and max(held) < min(released)
    summary = (
        f"all held their memory at once for {min(released) - max(held):.1f} s"
        if overlap
        else "the runs did not all hold their memory at the same time"
    )
    ok = overlap and all(c.ok for c in checks)
    return [Check(name, ok, summary), *checks]


def jit_page_figures() -> list[Check]:
    """The jit page's speed-up and roofline figures for the article's softmax, on this GPU."""
    from jaxplay import jit as jit_lab
    from jaxplay.core import roofline, timing

    workload = jit_lab.Workload("softmax", 10_000, 1_000, "float32", jit_lab.DEFAULT_FORMULA)
    fn, args = jit_lab.function_of(workload), jit_lab.inputs(workload)
    comparison = timing.compare_jit(fn, *args, budget_s=0.5)
    profile = timing.profile_jit(fn, *args, budget_s=0.3)
    reference = roofline.machine_reference()
    gbps, gflops = roofline.roofline_point(profile.cost, profile.steady.median)
    device = roofline.device_label()
    speedup_ok = comparison.speedup == comparison.speedup and comparison.speedup > 0
    fraction = gbps / reference.copy_bandwidth_gbps
    return [
        Check(
            "jit page: softmax (10000, 1000) speed-up",
            speedup_ok and "gpu" in device,
            f"{comparison.describe()}; eager {timing.format_seconds(comparison.eager.median)}, "
            f"jit {timing.format_seconds(comparison.jitted.median)} on {device}",
        ),
        Check(
            "jit page: achieved share of copy bandwidth",
            fraction == fraction and fraction > 0 and "gpu" in device,
            f"{gbps:.0f} GB/s of {reference.copy_bandwidth_gbps:.0f} GB/s measured copy "
            f"bandwidth = {fraction:.0%} ({gflops:.0f} GFLOP/s; matmul roof "
            f"{reference.matmul_gflops:.0f} GFLOP/s)",
        ),
    ]


def print_table(checks: list[Check]) -> None:
    width = max(len(c.name) for c in checks)
    print(f"{'check':<{width}}  result  detail")
    print("-" * (width + 8 + 40))
    for c in checks:
        print(f"{c.name:<{width}}  {'PASS' if c.ok else 'FAIL':<6}  {c.detail}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--concurrent", type=int, default=4, help="sandbox runs at once")
    parser.add_argument("--gib", type=float, default=1.0, help="GPU memory each run allocates")
    parser.add_argument("--no-pages", action="store_true", help="skip the AppTest page loop")
    args = parser.parse_args()
    try:
        gpus = find_gpu()
    except NoGpu as why:
        print(f"no GPU: skipped every check ({why}). Run it on a GPU VM: see docs/hosting.md.")
        return 0
    except Broken as why:
        print(f"FAIL: {why}")
        return 1
    print(f"GPU: {gpus}")
    checks = [check_backend()]
    if not args.no_pages:
        checks += check_pages()
    checks.append(check_sandbox_sees_gpu())
    checks += check_shared_memory(args.concurrent, args.gib)
    checks += jit_page_figures()
    print_table(checks)
    failed = [c for c in checks if not c.ok]
    print(f"\n{len(checks) - len(failed)} of {len(checks)} checks passed.")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

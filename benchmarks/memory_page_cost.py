"""What the memory page computes for a new size, variant by variant and part by part.

A room's new value on the memory page (a size below its default, which the page analyses as it
opens) is the costliest value change a visitor makes (docs/benchmarks.md, *Room load*). The page
analyses each checked checkpointing variant with ``jaxplay.memory.analyse_variant``; this times that
call whole, then its parts one by one, each the function it calls, in the order it calls them:

- *residuals*: ``saved_residuals``, what the gradient saves (traced from shapes);
- *roles*: ``residual_roles``, what each residual is for (a 2×2 copy linearized; cached per
  model, variant, loop and depth, so a new size finds it; also timed worked out anew, as every
  size paid before 2026-12-07, apart from the sum);
- *inputs*: the model's parameters and input, drawn at the size;
- *trace + lower*, *compile*, *first call*: ``timing.profile_jit``'s own stages;
- *steady sampling*: the rest of ``profile_jit`` (its CPU less its stopwatches): the warm-up
  call, the calibration and the samples of the steady state, as long as the sampling budget
  (0.2 s per variant at ``JAXPLAY_MEASURE_SCALE=1``), and the compiled program's texts and
  analyses;
- *gradient*: the gradient computed again and sampled for the page's check.

Each repetition is a fresh Python process whose JAX has started (not counted). It analyses the
page's default view (the article's layer, ``lax.scan``, size 128, 10 rounds, the four default
variants) as a first visit or the start-up warm-up would, then a new size (127) whole, then
another (126) part by part. CPU seconds are the process's, all threads; the analyses run here,
as ``JAXPLAY_MEASURE_IN=server`` would, without a compute worker's messages.

    .venv/bin/python benchmarks/memory_page_cost.py --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._fresh import child_runs  # noqa: E402

MODEL, LOOP, DEPTH, SIZE = "seed", "scan", 10, 128
PARTS = (
    "residuals",
    "roles",
    "inputs",
    "trace + lower",
    "compile",
    "first call",
    "steady sampling",
    "gradient",
)
ROLES_ANEW = "roles worked out anew"


def _cpu(call: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    out = call()
    return time.process_time() - start, out


def one_process() -> dict[str, float]:
    """CPU seconds per line of the table, in this (fresh) process."""
    from jaxplay.hosting import environment

    environment.configure()
    import jax.numpy as jnp

    from jaxplay import memory

    (jnp.ones(8) * 2).block_until_ready()  # JAX started, as the server's home page leaves it
    keys = memory.DEFAULT_VARIANTS
    out: dict[str, float] = {}

    def whole(size: int, label: str) -> None:
        for key in keys:
            out[f"{label}: {key}"], _ = _cpu(
                lambda key=key: memory.analyse_variant(MODEL, key, LOOP, size, DEPTH, True)
            )
        out[f"{label}: all {len(keys)} variants"] = sum(out[f"{label}: {k}"] for k in keys)

    whole(SIZE, f"default view (size {SIZE})")
    whole(SIZE - 1, f"a new size ({SIZE - 1}), whole")
    parts: dict[str, float] = defaultdict(float)
    size = SIZE - 2
    for key in keys:
        in_parts(key, size, parts)
    label = f"a new size ({size}), part by part"
    out.update({f"{label}: {part}": parts[part] for part in PARTS})
    out[f"{label}: the parts' sum"] = sum(parts[part] for part in PARTS)
    out[f"{label}: {ROLES_ANEW} (not in the sum)"] = parts[ROLES_ANEW]
    return out


def in_parts(key: str, size: int, parts: dict[str, float]) -> None:
    """One variant's analysis as ``analyse_variant`` makes it, each part's CPU added to
    ``parts``."""
    import jax
    import numpy as np

    from jaxplay.core import timing
    from jaxplay.memory import _remat

    model = _remat.MODELS[MODEL]
    loss = _remat.build_loss(MODEL, key, LOOP, DEPTH)
    shapes = jax.eval_shape(lambda: model.inputs(size, DEPTH))
    parts["residuals"] += _cpu(lambda: _remat.saved_residuals(loss, *shapes))[0]
    parts["roles"] += _cpu(lambda: _remat.residual_roles(MODEL, key, LOOP, DEPTH))[0]
    uncached = _remat.residual_roles.__wrapped__  # what a new size paid before they were kept
    parts[ROLES_ANEW] += _cpu(lambda: uncached(MODEL, key, LOOP, DEPTH))[0]
    cost, args = _cpu(lambda: timing.block(model.inputs(size, DEPTH)))
    parts["inputs"] += cost
    grad = jax.grad(loss, argnums=model.argnums)
    deadline = timing.Deadline(_remat.VARIANT_BUDGET_S)
    cost, profile = _cpu(
        lambda: timing.profile_jit(grad, *args, budget_s=0.2, warmup=1, deadline=deadline)
    )
    staged = profile.trace_s + profile.lower_s + profile.compile_s + profile.first_call_s
    parts["trace + lower"] += profile.trace_s + profile.lower_s
    parts["compile"] += profile.compile_s
    parts["first call"] += profile.first_call_s
    parts["steady sampling"] += cost - staged

    def gradient() -> list[Any]:
        computed = timing.block(profile.aot.compiled(*profile.aot.call_args))
        return [np.asarray(_remat._sample(leaf)) for leaf in jax.tree_util.tree_leaves(computed)]

    parts["gradient"] += _cpu(gradient)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="fresh processes")
    parser.add_argument("--json", type=Path, help="also write every process's figures here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_process()))
        return
    runs = child_runs(__file__, args.repeats, {"JAXPLAY_MEASURE_SCALE": "1"})
    load = os.getloadavg()[0]
    print(f"median of {args.repeats} fresh processes (min-max), CPU-s of all threads")
    print(f"machine: {os.cpu_count()} cores, 1-minute load average {load:.1f} at the end")
    for name in runs[0]:
        cpu = [r[name] for r in runs]
        print(f"{name:<62} {statistics.median(cpu):6.3f} ({min(cpu):5.3f}-{max(cpu):5.3f})")
    if args.json:
        args.json.write_text(json.dumps({"load_average": load, "runs": runs}, indent=1) + "\n")


if __name__ == "__main__":
    main()

"""The persistent compilation cache: a second process compiling the same function, timed.

Why a module of its own: ``jax_compilation_cache_dir`` keeps compiled programs on disk, so a
*new process* (a restarted notebook, the next job of a training run) can skip XLA's compile.
Within one process jit's in-memory caches already do that, so the only honest demonstration is
two processes. :func:`persistent_cache_demo` runs in a sandboxed worker (single-use, private
``/tmp``) and starts, for each round, two fresh Python processes one after the other, sharing a
new empty cache directory:

1. the first compiles cold (and writes the cache entry);
2. the second compiles the same function from the cache.

Each process (``python -c`` with :data:`CACHE_CHILD`) reports its own import time, trace +
lower time, compile time and whether JAX's monitoring events recorded a
persistent-cache hit. The function is compiled for abstract inputs (``jax.ShapeDtypeStruct``),
so nothing of its size is allocated.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from jaxplay.core import claims, cpu_limit, i18n, words
from jaxplay.core.i18n import N_, ngettext
from jaxplay.core.timing import format_seconds
from jaxplay.hosting import environment
from jaxplay.jit._workloads import Workload, check

# Bound, not imported: the demo below loops with ``for _ in ...`` (its code is shown and run as
# written), which would shadow an imported ``_`` (ruff F402); locally it is harmless.
_ = i18n._

#: The settings each process runs with: JAX only caches programs that took at least a second to
#: compile and writes every size by default; the demo caches everything so a small one counts.
CACHE_SETTINGS: dict[str, object] = {
    "jax_compilation_cache_dir": N_("<a new, empty directory per round>"),
    "jax_persistent_cache_min_compile_time_secs": 0,
    "jax_persistent_cache_min_entry_size_bytes": 0,
}


@dataclass(frozen=True)
class CacheProcess:
    """One Python process compiling the workload's function.

    Attributes:
        import_s: ``import jax`` (and jaxplay's workload code).
        trace_lower_s: tracing and lowering (the persistent cache does not cover them).
        compile_s: ``.compile()``: XLA's compile, or a read of the cache.
        hit: JAX recorded a persistent-cache hit (``/jax/compilation_cache/cache_hits``).
        process_s: the process's whole life, start to exit, as its parent saw it.
    """

    import_s: float
    trace_lower_s: float
    compile_s: float
    hit: bool
    process_s: float


@dataclass(frozen=True)
class CacheDemo:
    """The rounds of the demo: (cold process, warm process) each, and the cache's size.

    Attributes:
        rounds: one (cold, warm) pair per round, each with a new cache directory.
        entries: files the cold process wrote in the last round.
        entry_bytes: their total size.
        device: the default device of the processes.
    """

    rounds: tuple[tuple[CacheProcess, CacheProcess], ...]
    entries: int
    entry_bytes: int
    device: str

    def median(self, which: int, field: str) -> float:
        """Median of ``field`` over the rounds' cold (``which=0``) or warm (1) processes."""
        return float(statistics.median(getattr(pair[which], field) for pair in self.rounds))


#: What each compiling process runs: its clock starts before ``import jax``.
CACHE_CHILD = (
    "import time; started = time.perf_counter()\n"
    "import jax, sys\n"
    "from jaxplay.jit._compile_cache import child\n"
    "child(started, *sys.argv[1:])\n"
)


def child(started: float, directory: str, spec: str) -> None:
    """One process's part (see :data:`CACHE_CHILD`): compile with the cache directory set and print
    its figures as one JSON line."""
    import jax

    from jaxplay.jit._workloads import function_of

    imported = time.perf_counter()
    preset, rows, cols, dtype, formula = json.loads(spec)
    workload = Workload(str(preset), int(rows), int(cols), str(dtype), str(formula))
    jax.config.update("jax_compilation_cache_dir", directory)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    events: list[str] = []
    jax.monitoring.register_event_listener(lambda event, **_: events.append(event))
    shape = (workload.rows, workload.cols)
    specs = [jax.ShapeDtypeStruct(shape, workload.dtype)]
    if workload.preset == "layer":
        specs += [
            jax.ShapeDtypeStruct((workload.cols, workload.cols), workload.dtype),
            jax.ShapeDtypeStruct((workload.cols,), workload.dtype),
        ]
    t0 = time.perf_counter()
    lowered = jax.jit(function_of(workload)).lower(*specs)
    t1 = time.perf_counter()
    lowered.compile()
    t2 = time.perf_counter()
    figures = {
        "import_s": imported - started,
        "trace_lower_s": t1 - t0,
        "compile_s": t2 - t1,
        "hit": "/jax/compilation_cache/cache_hits" in events,
        "device": f"{jax.devices()[0].platform}",
    }
    print(json.dumps(figures))


def _run_process(directory: str, workload: Workload, timeout_s: float) -> tuple[CacheProcess, str]:
    spec = json.dumps([workload.preset, workload.rows, workload.cols, workload.dtype,
                       workload.formula])  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(
        # The worker's CPU-time limit covers this child too (it would get a whole one afresh).
        cpu_limit.python_command(CACHE_CHILD, directory, spec),
        env=environment.child_environment(),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"the compiling process failed: {done.stderr.strip()[-500:]}")
    data = json.loads(done.stdout.strip().splitlines()[-1])
    process = CacheProcess(
        import_s=float(data["import_s"]),
        trace_lower_s=float(data["trace_lower_s"]),
        compile_s=float(data["compile_s"]),
        hit=bool(data["hit"]),
        process_s=wall,
    )
    return process, str(data["device"])


def persistent_cache_demo(
    preset: str, rows: int, cols: int, dtype: str, formula: str, rounds: int = 2
) -> CacheDemo:
    """Rounds of (cold process, warm process) sharing a new cache directory each round.

    Meant for a sandboxed worker: the processes count against its limits, and its ``/tmp`` is
    its own. ``rounds`` is 1 to 5.
    """
    workload = Workload(preset, rows, cols, dtype, formula)
    check(workload)
    rounds = max(1, min(5, int(rounds)))
    pairs = []
    entries, entry_bytes, device = 0, 0, ""
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="jax-cache-") as directory:
            cold, device = _run_process(directory, workload, timeout_s=60)
            names = [n for n in os.listdir(directory) if not n.startswith(".")]
            entries = len(names)
            entry_bytes = sum(os.path.getsize(os.path.join(directory, n)) for n in names)
            warm, _ = _run_process(directory, workload, timeout_s=60)
        pairs.append((cold, warm))
    return CacheDemo(tuple(pairs), entries, entry_bytes, device)


@claims.states("jit.cache_skips_only_compile")
def cache_sentence(demo: CacheDemo) -> str:
    """What the cache saved, in Markdown, from the measured medians."""
    from jaxplay.core.timing import format_seconds as fmt
    from jaxplay.jit._program import human_bytes as format_bytes

    n = len(demo.rounds)
    cold, warm = demo.median(0, "compile_s"), demo.median(1, "compile_s")
    hits = sum(pair[1].hit for pair in demo.rounds)
    cold_hits = sum(pair[0].hit for pair in demo.rounds)
    text = _(
        "Over {rounds} (medians): the first process compiled in **{cold}** and wrote {files} "
        "({size}); the second process, same function, same cache directory, got its program in "
        "**{warm}**"
    ).format(
        rounds=ngettext("{n} round", "{n} rounds", n).format(n=f"{n:,}"),
        cold=fmt(cold),
        files=ngettext("{n} cache file", "{n} cache files", demo.entries).format(
            n=f"{demo.entries:,}"
        ),
        size=format_bytes(demo.entry_bytes),
        warm=fmt(warm),
    )
    if warm > 0 and cold > warm:
        text += _(" ({ratio}× faster).").format(ratio=words.factor(cold / warm))
    else:
        text += _(".")
    text += ngettext(
        " JAX reported a cache hit in {hits} of {n} second process and in {cold_hits} of {n} "
        "first one. Tracing and lowering are not cached: {first_trace} in the first process, "
        "{second_trace} in the second. Importing JAX and the page's code took {imported} in "
        "the second process, which no cache saves.",
        " JAX reported a cache hit in {hits} of {n} second processes and in {cold_hits} of {n} "
        "first ones. Tracing and lowering are not cached: {first_trace} in the first process, "
        "{second_trace} in the second. Importing JAX and the page's code took {imported} in "
        "the second process, which no cache saves.",
        n,
    ).format(
        hits=hits,
        n=n,
        cold_hits=cold_hits,
        first_trace=fmt(demo.median(0, "trace_lower_s")),
        second_trace=fmt(demo.median(1, "trace_lower_s")),
        imported=fmt(demo.median(1, "import_s")),
    )
    return text


def cache_figure(demo: CacheDemo) -> Any:
    """Each round's two processes as stacked bars: import, trace + lower, compile."""
    import plotly.graph_objects as go

    from jaxplay.core.figures import seconds_axis

    labels = [
        (_("round {n}: second process") if which else _("round {n}: first process")).format(n=i + 1)
        for i in range(len(demo.rounds))
        for which in (0, 1)
    ]
    processes = [p for pair in demo.rounds for p in pair]
    fig = go.Figure()
    for field, name, colour in (
        ("compile_s", _("compile (or cache read)"), "#ff7f0e"),
        ("trace_lower_s", _("trace + lower"), "#e377c2"),
    ):
        values = [getattr(p, field) for p in processes]
        fig.add_trace(
            go.Bar(
                y=labels,
                x=values,
                name=name,
                orientation="h",
                marker_color=colour,
                text=[format_seconds(v) for v in values],
                textposition="outside",
                cliponaxis=False,
            )
        )
    everything = [getattr(p, f) for p in processes for f in ("compile_s", "trace_lower_s")]
    fig.update_layout(
        title=_("Compiling the same function in two fresh processes ({device})").format(
            device=demo.device
        ),
        barmode="group",
        xaxis=seconds_axis(_("wall time (log scale)"), everything),
        yaxis={"autorange": "reversed"},
        legend={"orientation": "h", "y": -0.25},
        height=120 + 60 * len(labels),
        margin={"l": 10, "r": 60, "t": 50, "b": 40},
    )
    return fig

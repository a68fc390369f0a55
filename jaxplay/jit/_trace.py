"""A profiler trace of one eager call and a few jitted calls, summarised, and offered whole.

Why a module of its own: ``jax.profiler.trace`` records what really ran: every XLA kernel with
its module and op name, on every thread (and on a GPU's streams). The page summarises the trace
as the kernels that took the most time, grouped by program (the eager call runs one small
program per ``jnp`` call it dispatches, which is not one per jaxpr operation: ``jnp.sum(...,
keepdims=True)`` is a reduction and a broadcast in one program; the jitted call runs one program
of fused kernels), counts how often each program was dispatched (its runs: the distinct
``run_id`` of its kernels' events), and offers the trace
for download to open in Perfetto (ui.perfetto.dev) or TensorBoard.

What JAX 0.10 writes under the log directory, ``plugins/profile/<run>/``: ``<host>.xplane.pb``
(the XSpace protobuf, TensorBoard/XProf's format), ``<host>.trace.json.gz`` (Chrome trace
events) and, with ``create_perfetto_trace=True``, ``perfetto_trace.json.gz``. The summary reads
the XSpace with JAX's own parser, ``jax.profiler.ProfileData`` (no TensorBoard plug-in needed):
each event of a kernel carries ``hlo_module`` and ``hlo_op`` stats.

:func:`trace_demo` runs in a sandboxed worker: the profiler is one per process, and a fresh
process traces only this demo's work (the server's other visitors are not in it).
"""

from __future__ import annotations

import base64
import os
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from jaxplay.core import claims, i18n, timing
from jaxplay.core.i18n import ngettext
from jaxplay.core.words import times
from jaxplay.jit._workloads import Workload, check, function_of, inputs

# Bound, not imported: the demo below loops with ``for _ in ...`` (its code is shown and run as
# written), which would shadow an imported ``_`` (ruff F402); locally it is harmless.
_ = i18n._

#: Largest trace offered for download (gzip-compressed bytes); a larger one is summarised only.
TRACE_MAX_DOWNLOAD_BYTES = 2 * 2**20
#: Jitted calls recorded after the eager one.
JIT_CALLS = 3
#: Kernels listed, most time first.
TOP = 12


@dataclass(frozen=True)
class KernelTime:
    """Time spent in one XLA op of one program over the whole trace.

    Attributes:
        module: the compiled program (``jit_naive_softmax``, ``jit_exp`` for an eager op).
        op: the HLO op run as a kernel (``broadcast_multiply_fusion``).
        calls: how many times it ran.
        total_s: its events' total duration.
    """

    module: str
    op: str
    calls: int
    total_s: float


@dataclass(frozen=True)
class TraceDemo:
    """A trace's summary and the file itself.

    Attributes:
        kernels: the :data:`TOP` kernels by total time.
        modules: (program, kernel events, total seconds) for every program, most time first.
        runs: (program, times it was dispatched) for every program, as ``modules`` orders them:
            the distinct ``run_id`` stats of its kernel events (0 where the trace has none).
        events: events in the trace, all kinds.
        files: (name, bytes) of every file JAX wrote.
        download: the Perfetto trace, gzip-compressed and base64-encoded ("" if too large).
        download_name: its file name.
        download_bytes: its size, compressed.
        what_ran: the calls recorded, in English words (:func:`trace_sentence` says them in
            the visitor's language).
        function: the traced function's name (its jitted program is ``jit_<name>``).
    """

    kernels: tuple[KernelTime, ...]
    modules: tuple[tuple[str, int, float], ...]
    events: int
    files: tuple[tuple[str, int], ...]
    download: str
    download_name: str
    download_bytes: int
    what_ran: str
    function: str
    runs: tuple[tuple[str, int], ...] = ()

    def download_data(self) -> bytes:
        """The trace file's bytes (``.json.gz``), or b"" when it was too large to send."""
        return base64.b64decode(self.download) if self.download else b""


Summary = tuple[
    tuple[KernelTime, ...], tuple[tuple[str, int, float], ...], int, tuple[tuple[str, int], ...]
]


def summarise_trace(xplane_path: str) -> Summary:
    """Kernels and programs by time, the event count, and each program's dispatches (distinct
    ``run_id`` of its kernel events), from an ``.xplane.pb`` file.

    A program is its ``hlo_module`` name *and* its ``program_id``: eagerly, ``cos(y) * 2.0`` and
    ``y * y`` are two programs both named ``jit_multiply``. Where a name is shared, each program
    is labelled ``name #id``; counted by name alone they were one.
    """
    import jax

    data = jax.profiler.ProfileData.from_file(xplane_path)
    seen: list[tuple[str, object, str, float, object]] = []
    events = 0
    for plane in data.planes:
        for line in plane.lines:
            for event in line.events:
                events += 1
                stats = dict(event.stats)
                module, op = stats.get("hlo_module"), stats.get("hlo_op")
                if module and op:
                    duration = event.duration_ns * 1e-9
                    program = stats.get("program_id")
                    seen.append((str(module), program, str(op), duration, stats.get("run_id")))
    ids: dict[str, set[object]] = defaultdict(set)
    for module, program, *_rest in seen:
        ids[module].add(program)
    per_op: dict[tuple[str, str], list[float]] = defaultdict(list)
    run_ids: dict[str, set[object]] = defaultdict(set)
    for module, program, op, duration, run in seen:
        label = f"{module} #{program}" if len(ids[module]) > 1 else module
        per_op[(label, op)].append(duration)
        if run is not None:
            run_ids[label].add(run)
    kernels = sorted(
        (KernelTime(m, o, len(d), sum(d)) for (m, o), d in per_op.items()),
        key=lambda k: -k.total_s,
    )
    modules: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for k in kernels:
        modules[k.module][0] += k.calls
        modules[k.module][1] += k.total_s
    ordered = sorted(((m, int(c), float(s)) for m, (c, s) in modules.items()), key=lambda r: -r[2])
    runs = tuple((m, len(run_ids.get(m, ()))) for m, _, _ in ordered)
    return tuple(kernels[:TOP]), tuple(ordered), events, runs


def trace_demo(preset: str, rows: int, cols: int, dtype: str, formula: str) -> TraceDemo:
    """Trace one eager call and :data:`JIT_CALLS` jitted calls of the workload's function.

    Both are called once before the trace starts (compiling the jitted function and the eager
    operations), so the trace holds runs, not compiles. Meant for a sandboxed worker.
    """
    import jax

    workload = Workload(preset, rows, cols, dtype, formula)
    check(workload)
    fn = function_of(workload)
    if not hasattr(fn, "__name__"):  # a typed formula: JAX named its program jit__unnamed_function
        unnamed = fn

        def f(*values: Any) -> Any:
            return unnamed(*values)

        fn = f
    name = fn.__name__
    args = inputs(workload)
    jitted = jax.jit(fn)
    timing.block(fn(*args))
    timing.block(jitted(*args))
    with tempfile.TemporaryDirectory(prefix="jax-trace-") as directory:
        with jax.profiler.trace(directory, create_perfetto_trace=True):
            timing.block(fn(*args))
            for _ in range(JIT_CALLS):
                timing.block(jitted(*args))
        files: list[tuple[str, int]] = []
        xplane = perfetto = ""
        for root, _, names in os.walk(directory):
            for file in sorted(names):
                path = os.path.join(root, file)
                files.append((file, os.path.getsize(path)))
                if file.endswith(".xplane.pb"):
                    xplane = path
                elif file == "perfetto_trace.json.gz":
                    perfetto = path
        kernels, modules, events, runs = summarise_trace(xplane) if xplane else ((), (), 0, ())
        raw = b""
        if perfetto:
            with open(perfetto, "rb") as handle:
                raw = handle.read()
    small = 0 < len(raw) <= TRACE_MAX_DOWNLOAD_BYTES
    return TraceDemo(
        kernels=kernels,
        modules=modules,
        events=events,
        files=tuple(files),
        download=base64.b64encode(raw).decode("ascii") if small else "",
        download_name="perfetto_trace.json.gz",
        download_bytes=len(raw),
        what_ran=f"1 eager call, then {JIT_CALLS} calls of jax.jit({name})",
        function=name,
        runs=runs,
    )


@claims.states("jit.eager_dispatches_from_trace")
def trace_sentence(demo: TraceDemo) -> str:
    """What the trace shows, in Markdown, every figure from ``demo``, in the visitor's language
    (the demo itself, made in a sandboxed worker, holds no words)."""
    from jaxplay.core.timing import format_seconds as fmt

    if not demo.modules:
        return _(
            "The trace ({events} events) holds no XLA kernels with program and op names on this "
            "backend; download it to look at it in Perfetto."
        ).format(events=f"{demo.events:,}")
    programs = _(", ").join(
        _("`{name}` ({runs}, {total})").format(
            name=name,
            runs=ngettext("{n} kernel run", "{n} kernel runs", n).format(n=f"{n:,}"),
            total=fmt(total),
        )
        for name, n, total in demo.modules
    )
    jitted = f"jit_{demo.function}"
    eager = [name for name, _n, _s in demo.modules if name != jitted]
    what_ran = ngettext(
        "1 eager call, then {n} call of jax.jit({name})",
        "1 eager call, then {n} calls of jax.jit({name})",
        JIT_CALLS,
    ).format(n=JIT_CALLS, name=demo.function)
    text = _(
        "Recorded: {what_ran}; {events} events in all. The kernels ran in {compiled}, most time "
        "first: {programs}."
    ).format(
        what_ran=what_ran,
        events=f"{demo.events:,}",
        compiled=ngettext(
            "{n} compiled program", "{n} compiled programs", len(demo.modules)
        ).format(n=f"{len(demo.modules):,}"),
        programs=programs,
    )
    if any(" #" in name for name, _n, _s in demo.modules):
        text += _(" Programs that share a name are told apart by their program id (`#`).")
    runs = dict(demo.runs)
    own = ngettext("{n} program", "{n} programs", len(eager)).format(n=f"{len(eager):,}")
    if eager and len(eager) < len(demo.modules) and all(runs.get(name) for name in eager):
        dispatches = sum(runs[name] for name in eager)
        each = _(", ").join(
            _("`{name}` {times}").format(name=name, times=times(runs[name])) for name in eager
        )
        text += claims.qualify(
            "jit.eager_dispatches_from_trace",
            _(
                " The eager call made {dispatches} of {programs} of its own ({each}), counted "
                "from the trace; the jitted calls ran one program, `{jitted}`, {times}."
            ).format(
                dispatches=ngettext("{n} dispatch", "{n} dispatches", dispatches).format(
                    n=f"{dispatches:,}"
                ),
                programs=own,
                each=each,
                jitted=jitted,
                times=times(runs.get(jitted, 0)),
            ),
        )
    elif eager and len(eager) < len(demo.modules):
        text += _(
            " The eager call ran {programs} of its own; the jitted calls ran one, `{jitted}`."
        ).format(programs=own, jitted=jitted)
    return text + _(" The kernels that took the most time:")


def trace_table(demo: TraceDemo) -> list[dict[str, object]]:
    """The kernels that took the most time, as table rows."""
    from jaxplay.core.timing import format_seconds as fmt

    return [
        {
            "program": k.module,
            "kernel (HLO op)": k.op,
            "runs": k.calls,
            "total": fmt(k.total_s),
            "per run": fmt(k.total_s / k.calls),
        }  # fmt: skip
        for k in demo.kernels
    ]

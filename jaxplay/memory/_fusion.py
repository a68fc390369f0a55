"""The op chain: the article's elementwise chain (and others) eager against jit, and what fused.

Why: the article's last snippet jits "an unoptimized chain" of elementwise ops and stops. Here a
chain of ops runs eagerly (one kernel per op, every intermediate written to memory and read back)
and jitted (XLA fuses the chain into as few kernels as it can), with the kernels, the bytes moved
and the bandwidth achieved of each, read from the optimized HLO by :mod:`jaxplay.core.hlo`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Literal

from jaxplay.core import claims, compilation, roofline, timing
from jaxplay.core.hlo import Fusion, HloOp, entry_ops, parse_fusions
from jaxplay.core.i18n import N_, _, ngettext


def _kernels(n: int) -> str:
    """``"3 kernels"`` in the visitor's language."""
    return ngettext("{n} kernel", "{n} kernels", n).format(n=f"{n:,}")


def _ops(n: int) -> str:
    """``"6 ops"`` in the visitor's language."""
    return ngettext("{n} op", "{n} ops", n).format(n=f"{n:,}")


@dataclass(frozen=True)
class ChainOp:
    """One step of the op chain.

    Attributes:
        key: its name in the chain editor and in links (English; the editor shows a prose name
            with ``_``, so those are marked with ``N_``).
        code: the line it runs, exactly as :func:`run_chain` runs it.
        fn: the step itself.
        boundary: ``None`` for an elementwise op, else what kind of op it is (``reduction``,
            ``dot``): ops where fusion usually stops.
    """

    key: str
    code: str
    fn: Callable[[Any], Any]
    boundary: str | None = None


def _row_max_subtracted(y: Any) -> Any:
    return y - jnp.max(y, axis=1, keepdims=True)


def _self_matmul(y: Any) -> Any:
    return (y @ y.T) / y.shape[1]


#: The ops a chain may contain, in the order the editor lists them.
CHAIN_OPS: dict[str, ChainOp] = {
    op.key: op
    for op in (
        ChainOp("sin", "y = jnp.sin(y)", jnp.sin),
        ChainOp("cos", "y = jnp.cos(y)", jnp.cos),
        ChainOp("exp", "y = jnp.exp(y)", jnp.exp),
        ChainOp("tanh", "y = jnp.tanh(y)", jnp.tanh),
        ChainOp(N_("square"), "y = y * y", lambda y: y * y),
        ChainOp(N_("times 2"), "y = y * 2", lambda y: y * 2),
        ChainOp(N_("plus 1"), "y = y + 1", lambda y: y + 1),
        ChainOp("abs", "y = jnp.abs(y)", jnp.abs),
        ChainOp(N_("negate"), "y = -y", lambda y: -y),
        ChainOp("sqrt|y|", "y = jnp.sqrt(jnp.abs(y))", lambda y: jnp.sqrt(jnp.abs(y))),
        ChainOp("log1p|y|", "y = jnp.log1p(jnp.abs(y))", lambda y: jnp.log1p(jnp.abs(y))),
        ChainOp("sigmoid", "y = jax.nn.sigmoid(y)", jax.nn.sigmoid),
        ChainOp(
            N_("minus row max"),
            "y = y - jnp.max(y, axis=1, keepdims=True)",
            _row_max_subtracted,
            boundary="reduction",
        ),
        ChainOp(N_("matmul"), "y = (y @ y.T) / y.shape[1]", _self_matmul, boundary="dot"),
    )
}

#: Ready-made chains: the article's (completed), cheap ops, and two with an op where fusion often
#: stops (whether it does is the compiled program's to say: XLA:CPU can fuse a row max or a
#: matmul with its neighbours). The names are English (session state, tests), marked with ``N_``:
#: the page shows them with ``_``.
CHAIN_PRESETS: dict[str, tuple[str, ...]] = {
    N_("The article's chain, completed"): ("sin", "cos", "times 2", "exp", "plus 1", "tanh"),
    N_("Cheap ops: memory-bound, where fusion pays"): (
        "times 2",
        "plus 1",
        "negate",
        "abs",
        "square",
        "sqrt|y|",
    ),
    N_("A reduction in the chain"): ("sin", "cos", "minus row max", "exp", "tanh"),
    N_("A matmul in the chain"): ("sin", "cos", "matmul", "tanh", "plus 1"),
}

#: Largest matrix side for the op chain, per platform (eager writes every intermediate).
MAX_CHAIN_SIZE: dict[str, int] = {"cpu": 2048}
MAX_CHAIN_SIZE_ACCELERATOR = 8192
#: Most ops in one chain.
MAX_CHAIN_OPS = 24


def chain_limit(platform: str) -> int:
    """Largest matrix side the op chain runs at on ``platform``."""
    return MAX_CHAIN_SIZE.get(platform, MAX_CHAIN_SIZE_ACCELERATOR)


@claims.states_nothing("a limit's message")
def check_chain(ops: Sequence[str], size: int, platform: str) -> str | None:
    """Why this chain cannot run (a message naming the limit), or None if it can."""
    if not ops:
        return _("The chain is empty: add at least one op.")
    unknown = [op for op in ops if op not in CHAIN_OPS]
    if unknown:
        return _("Unknown op(s): {unknown}. Known: {known}.").format(
            unknown=", ".join(unknown), known=_(", ").join(_(op) for op in CHAIN_OPS)
        )
    if len(ops) > MAX_CHAIN_OPS:
        return _("{n} ops is more than {limit}, the most one chain may have.").format(
            n=len(ops), limit=MAX_CHAIN_OPS
        )
    limit = chain_limit(platform)
    if not 1 <= size <= limit:
        return _(
            "Size {size} is outside 1…{limit} (the largest matrix side on {platform})."
        ).format(size=size, limit=limit, platform=platform)
    return None


def run_chain(ops: Sequence[str], x: Any) -> Any:
    """Apply the chain's ops to ``x`` one after another (eagerly unless called under jit)."""
    y = x
    for op in ops:
        y = CHAIN_OPS[op].fn(y)
    return y


def chain_source(ops: Sequence[str]) -> str:
    """The chain as the Python it runs, for the page to show."""
    lines = ["def chain(x):", "    y = x"]
    lines += [f"    {CHAIN_OPS[op].code}" for op in ops]
    lines.append("    return y")
    return "\n".join(lines)


@dataclass(frozen=True)
class Dispatch:
    """One op as eager JAX runs it: one compiled kernel, its inputs read and its output written.

    Attributes:
        primitive: the primitive dispatched (``sin``; ``pjit`` for a library function that is
            itself jitted, such as ``jax.nn.sigmoid``: one dispatch for all its ops).
        read_bytes: bytes of the array inputs (Python scalars are folded in, not read).
        written_bytes: bytes of the outputs.
    """

    primitive: str
    read_bytes: int
    written_bytes: int


def _aval_bytes(aval: Any) -> int:
    shape = getattr(aval, "shape", ())
    dtype = getattr(aval, "dtype", None)
    if dtype is None:
        return 0
    return int(np.prod(shape, dtype=np.int64)) * int(np.dtype(dtype).itemsize)


def eager_dispatches(ops: Sequence[str], x: Any) -> tuple[Dispatch, ...]:
    """The kernels eager JAX launches for the chain: one per top-level equation of its jaxpr.

    Eager JAX binds each primitive on its own (each one a small compiled program), so every
    intermediate is written to memory by one kernel and read back by the next.
    """
    closed = jax.make_jaxpr(lambda v: run_chain(ops, v))(x)
    dispatches = []
    for eqn in closed.jaxpr.eqns:
        read = sum(_aval_bytes(v.aval) for v in eqn.invars if not isinstance(v, Literal))
        written = sum(_aval_bytes(v.aval) for v in eqn.outvars)
        dispatches.append(Dispatch(eqn.primitive.name, read, written))
    return tuple(dispatches)


#: Entry instructions that move no data of their own (not kernels).
_NOT_KERNELS: frozenset[str] = frozenset(
    {"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "fusion"}
)


@dataclass(frozen=True, eq=False)
class ChainReport:
    """The op chain run eagerly and under jit, with what XLA made of it.

    Attributes:
        ops: the chain's op keys.
        size: side of the square float32 input.
        dispatches: the jaxpr's operations as eager JAX runs them (their bytes read and written).
        programs: (program, runs) that one eager call dispatched, counted from a profiler trace
            (one per ``jnp`` call, not one per operation: ``jnp.max(..., keepdims=True)`` is a
            reduction and a broadcast in one); ``()`` when the trace could not be taken.
        lowered_ops: (JAX primitive, ops) of the program JAX handed XLA, before any
            optimization, by each op's ``op_name`` metadata (``sigmoid`` is a ``logistic`` in the
            jaxpr and ``neg``, ``exp``, ``add``, ``div`` here); ``()`` where it could not be read.
        fusions: the jitted program's fusions, from its optimized HLO.
        unfused: kernels of the jitted program outside any fusion (a lone ``dot`` or library call).
        hlo_text: the optimized HLO.
        cost: the jitted program's ``cost_analysis()`` (``bytes accessed``, ``flops``), or None.
        comparison: eager and jitted timings, sampled in alternation.
        reference: this device's measured copy bandwidth and matmul rate.
        device: the device the chain ran on, in words.
    """

    ops: tuple[str, ...]
    size: int
    dispatches: tuple[Dispatch, ...]
    fusions: tuple[Fusion, ...]
    unfused: tuple[HloOp, ...]
    hlo_text: str
    cost: dict[str, float] | None
    comparison: timing.JitComparison
    reference: roofline.MachineReference
    device: str
    programs: tuple[tuple[str, int], ...] = ()
    lowered_ops: tuple[tuple[str, int], ...] = ()

    @property
    def eager_bytes(self) -> int:
        """Bytes eager JAX moves: every kernel reads its inputs and writes its output."""
        return sum(d.read_bytes + d.written_bytes for d in self.dispatches)

    @property
    def jit_bytes(self) -> float:
        """XLA's estimate of the bytes the fused program accesses (NaN if not reported)."""
        return float("nan") if not self.cost else self.cost.get("bytes accessed", float("nan"))

    @property
    def eager_programs(self) -> int:
        """Programs one eager call dispatched, from the profiler trace (one per ``jnp`` call,
        which can hold several operations); the jaxpr's operations where no trace was read."""
        return sum(n for _, n in self.programs) if self.programs else len(self.dispatches)

    @property
    def kernels(self) -> int:
        """Kernels the jitted program launches: its fusions plus un-fused ops."""
        return len(self.fusions) + len(self.unfused)

    @property
    def eager_gbps(self) -> float:
        return self.eager_bytes / self.comparison.eager.median / 1e9

    @property
    def jit_gbps(self) -> float:
        return roofline.roofline_point(self.cost, self.comparison.jitted.median)[0]


def analyse_chain(
    ops: Sequence[str],
    size: int,
    budget_s: float = 0.5,
    reference: roofline.MachineReference | None = None,
) -> ChainReport:
    """Run the chain eagerly and jitted on ``jnp.ones((size, size))`` and read the fused program.

    ``reference``: the machine's roofs, measured already (the server's, for a compute worker);
    this process's (:func:`jaxplay.core.roofline.machine_reference`) when ``None``.

    Raises:
        ValueError: the chain or size is refused by :func:`check_chain` (message names the limit).
    """
    device = jax.devices()[0]
    problem = check_chain(ops, size, device.platform)
    if problem:
        raise ValueError(problem)
    ops = tuple(ops)
    x = jnp.ones((size, size), jnp.float32)

    def chain(v: Any) -> Any:
        return run_chain(ops, v)

    aot = compilation.compile_aot(chain, x)
    if reference is None:
        reference = roofline.machine_reference()
    comparison = timing.compare_jit(chain, x, budget_s=budget_s)
    unfused = tuple(op for op in entry_ops(aot.hlo_text) if op.opcode not in _NOT_KERNELS)
    try:
        programs = tuple(sorted(timing.traced_dispatches(chain, x).items()))
    except Exception:  # the profiler is one per process: another trace may be running
        programs = ()
    return ChainReport(
        lowered_ops=lowered_primitives(chain, x),
        ops=ops,
        size=size,
        dispatches=eager_dispatches(ops, x),
        fusions=tuple(parse_fusions(aot.hlo_text)),
        unfused=unfused,
        hlo_text=aot.hlo_text,
        cost=aot.cost,
        comparison=comparison,
        reference=reference,
        device=roofline.device_label(),
        programs=programs,
    )


def lowered_primitives(fn: Any, *args: Any) -> tuple[tuple[str, int], ...]:
    """(JAX primitive, ops) of ``jit(fn)``'s program before XLA optimizes it, by the ops'
    ``op_name`` metadata; ``()`` where this jaxlib cannot print that program with it."""
    try:
        computation = jax.jit(fn).lower(*args).compiler_ir("hlo")
        text = computation.get_hlo_module().to_string() if computation is not None else ""
    except Exception:  # an API of jaxlib's that may go: say nothing rather than guess
        return ()
    found = Counter(op.primitive for op in entry_ops(text) if op.primitive)
    return tuple(sorted(found.items()))


def recomputed_primitives(
    fusions: Sequence[Fusion], lowered: Sequence[tuple[str, int]]
) -> tuple[str, ...]:
    """JAX ops in more kernels than the program XLA was handed has ops of them: at least one of
    those is computed in several kernels, a cheap producer XLA chose to recompute inside each
    consumer rather than write its result to memory once and read it back. (A chain with two
    ``sin``, each in a kernel of its own, recomputes nothing; nor does ``sigmoid``, whose
    lowering's ``div`` joins the chain's own.) Nothing is said without ``lowered``."""
    if not lowered:
        return ()
    ops = dict(lowered)
    seen: dict[str, int] = {}
    for f in fusions:
        for p in f.primitives:
            seen[p] = seen.get(p, 0) + 1
    return tuple(p for p, n in seen.items() if n > max(1, ops.get(p, 0)))


@claims.states("memory.eager_dispatches_from_trace", "memory.fusion_bytes_are_xlas")
def fusion_story(report: ChainReport) -> str:
    """What the compiled program does with the chain, from the program itself (Markdown).

    The kernel count is read from the optimized HLO; the bytes are XLA's ``cost_analysis()``,
    stated against the input array's bytes, where one read of the input and one write of the
    result would be 2×. Where there are several kernels, the arrays between them go through
    memory and the sentence says so with the numbers; it does not say where they break (a
    reduction or a matmul may be fused with its neighbours or not: the table shows each
    kernel's ops). A chain of one operation has nothing to fuse, and says so.
    """
    array = report.size * report.size * 4
    ratio = report.jit_bytes / array
    eager_ratio = report.eager_bytes / array
    kernels = _kernels(report.kernels)
    n_ops = len(report.dispatches)
    operations = ngettext("{n} operation", "{n} operations", n_ops).format(n=f"{n_ops:,}")
    if report.programs:
        calls = sum(n for _, n in report.programs)
        programs = ngettext("{n} dispatched program", "{n} dispatched programs", calls).format(
            n=f"{calls:,}"
        )
        eager = claims.qualify(
            "memory.eager_dispatches_from_trace",
            _(
                "Eager JAX ran the jaxpr's {operations} as {programs} (counted in a profiler "
                "trace: one per call of the chain, a `jnp` or `jax.nn` function, which can hold "
                "several operations), each writing its "
                "result to memory for the next to read back"
            ).format(operations=operations, programs=programs),
        )
    else:
        eager = _(
            "Eager JAX runs the jaxpr's {operations} one `jnp` call at a time, each writing its "
            "result to memory for the next to read back"
        ).format(operations=operations)
    if n_ops == 1:  # one operation: no next one to read anything back
        eager = _("Eager JAX ran the jaxpr's {operations}, writing its result to memory").format(
            operations=operations
        )
    numbers = dict(
        eager=eager,
        eager_ratio=f"{eager_ratio:.3g}",
        mib=f"{array / 2**20:.3g}",
        ops=_ops(len(report.ops)),
        kernels=kernels,
        ratio=f"{ratio:.3g}",
    )
    if n_ops == 1:
        text = _(
            "{eager}: about {eager_ratio}× the input array's {mib} MiB. Under `jit`, XLA "
            "compiled the one op into {kernels}, and `cost_analysis()` counts {ratio}× the "
            "array's bytes (one read of the input and one write of the result would be 2×): "
            "with one op there is nothing to fuse. "
        ).format(**numbers)
    elif report.kernels == 1:
        text = _(
            "{eager}: about {eager_ratio}× the input array's {mib} MiB (each operation's inputs "
            "and output). Under `jit`, XLA compiled the {ops} into {kernels}, and "
            "`cost_analysis()` counts {ratio}× the array's bytes (one read of the input and one "
            "write of the result would be 2×): no intermediate goes to memory. "
        ).format(**numbers)
    else:
        text = _(
            "{eager}: about {eager_ratio}× the input array's {mib} MiB (each operation's "
            "inputs and output). Under `jit`, XLA compiled the {ops} into {kernels}, and "
            "`cost_analysis()` counts {ratio}× the array's bytes (one read and one write "
            "would be 2×): the {kernels} pass their outputs to each other through memory (the "
            "table below shows the ops each holds). "
        ).format(**numbers)
    if n_ops == 1:
        return text
    saved = report.eager_bytes / report.jit_bytes if report.jit_bytes > 0 else float("nan")
    return text + _("Fusing cut the bytes moved {saved}×.").format(saved=f"{saved:.3g}")


@claims.states("memory.fusion_bytes_are_xlas")
def bandwidth_story(report: ChainReport) -> str:
    """One paragraph on what the measured numbers say: memory-bound or compute-bound, and why."""
    roof = report.reference.copy_bandwidth_gbps
    share = round(report.jit_gbps / roof, 2)  # as shown: "100%" is never "above the roof"
    text = _(
        "The jitted chain reached {gbps} GB/s, {share} of this device's copy bandwidth. "
    ).format(gbps=f"{report.jit_gbps:.3g}", share=f"{share:.0%}")
    array_mib = report.size * report.size * 4 / 2**20
    if share > 1:
        return text + _(
            "Above the roof: faster than this device copies a large array, which {mib} MiB "
            "arrays can be when they stay in the CPU's caches; a larger size shows memory's "
            "bandwidth."
        ).format(mib=f"{array_mib:.3g}")
    if share >= 0.5:
        return text + _(
            "Near the roof: the chain moves its bytes about as fast as this device copies "
            "memory, so the bytes it moves set its time."
        )
    cost = report.cost or {}
    transcendentals, flops = cost.get("transcendentals", 0.0), cost.get("flops", 0.0)
    moved = cost.get("bytes accessed", 0.0)
    if "matmul" in report.ops and flops > 0 and moved > 0:
        # A matmul's flops outnumber the transcendentals hundreds of times (683 per one at
        # n = 1024): they, not sin or tanh, are what the chain computes.
        return text + _(
            "Well below the roof: at this size memory bandwidth does not set the time. "
            "`cost_analysis()` counts {flops} floating-point operations per call, {intensity} "
            "per byte moved: the matmul computes far more than the chain moves."
        ).format(flops=f"{flops:,.0f}", intensity=f"{flops / moved:.3g}")
    if transcendentals > 0:
        return text + _(
            "Well below the roof: at this size memory bandwidth does not set the time. "
            "`cost_analysis()` counts {n} transcendental ops per call (sin, exp, tanh…): the "
            "chain computes as well as moves bytes."
        ).format(n=f"{transcendentals:,.0f}")
    return text + _("Well below the roof: at this size, memory bandwidth does not set the time.")


#: The rows of :func:`eager_vs_jit_rows`, in order (English, marked with ``N_``: the page shows
#: them with ``_``).
COMPARED = (N_("programs (eager), kernels (jit)"), N_("MiB moved"), N_("time (median)"), "GB/s")


def eager_vs_jit_rows(report: ChainReport) -> dict[str, list[str]]:
    """The chain eager and under jit, as two columns of :data:`COMPARED` (kernels, bytes, the
    median time and the bandwidth), the numbers formatted as the page shows them."""
    comparison = report.comparison
    return {
        "eager": [
            str(report.eager_programs),
            f"{report.eager_bytes / 2**20:.3g}",
            timing.format_seconds(comparison.eager.median),
            f"{report.eager_gbps:.3g}",
        ],
        "jit": [
            str(report.kernels),
            f"{report.jit_bytes / 2**20:.3g}",
            timing.format_seconds(comparison.jitted.median),
            f"{report.jit_gbps:.3g}",
        ],
    }


def fusion_rows(fusions: Sequence[Fusion]) -> list[dict[str, Any]]:
    """One table row per fusion: kind, the JAX ops inside, the HLO ops, output, source lines."""
    return [
        {
            "kernel": f.name,
            "kind": f.kind,
            "JAX ops inside": " → ".join(f.primitives),
            "HLO ops inside": ", ".join(f.ops),
            "output": f.shape,
            "source lines": "; ".join(str(s) for s in f.sources),
        }
        for f in fusions
    ]


def chain_figure(report: ChainReport) -> Any:
    """Eager against jit, side by side: kernels launched, bytes moved, bandwidth achieved.

    The bandwidth panel draws this device's measured copy bandwidth as the roof.
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    labels = [_("eager"), "jit"]
    colors = ["#d62728", "#1f77b4"]
    fig = make_subplots(
        rows=1,
        cols=3,
        subplot_titles=(_("programs (eager), kernels (jit)"), _("MiB moved"), _("GB/s achieved")),
    )
    values = (
        [report.eager_programs, report.kernels],
        [report.eager_bytes / 2**20, report.jit_bytes / 2**20],
        [report.eager_gbps, report.jit_gbps],
    )
    for col, ys in enumerate(values, start=1):
        fig.add_trace(
            go.Bar(
                x=labels,
                y=ys,
                marker_color=colors,
                showlegend=False,
                text=ys,
                texttemplate="%{text:.3~g}",
            ),
            row=1,
            col=col,
        )
    fig.add_hline(
        y=report.reference.copy_bandwidth_gbps,
        line_dash="dash",
        annotation_text=_("copy bandwidth {gbps} GB/s").format(
            gbps=f"{report.reference.copy_bandwidth_gbps:.3g}"
        ),
        # Plotly has no type hints: pyright reads row and col as str from their default "all".
        row=1,  # pyright: ignore[reportArgumentType]
        col=3,  # pyright: ignore[reportArgumentType]
    )
    fig.update_layout(
        title=_("Eager vs jit: {ops} on {size}×{size} float32, {device}").format(
            ops=_ops(len(report.ops)), size=report.size, device=report.device
        ),
        title_font_size=13,
        height=380,
        margin={"t": 80, "b": 40, "l": 50, "r": 20},
    )
    return fig

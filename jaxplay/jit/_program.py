"""What jit bought, read from the compiled program rather than told in prose.

Why a module of its own: "jit fuses the softmax into one pass over memory" is the kind of sentence
a teaching page must not make up. A softmax cannot divide before its row sums exist, so XLA
cannot do it in one pass; what it does do (compute ``exp`` once, run fewer kernels than the
eager ops, turn a divide into reciprocals and a multiply) is visible in the optimized HLO and in
XLA's cost analysis. This module counts those things for any function and writes the sentence
from the counts, so the sentence changes when the function or the size does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jaxplay.core import claims, hlo, jaxprs, markdown, timing, words
from jaxplay.core.i18n import N_, _, ngettext

#: JAX primitives whose count the page compares between the jaxpr and the compiled program,
#: with the HLO opcode each becomes (a rule table: one entry per primitive, nothing else).
COUNTED: dict[str, str] = {
    "exp": "exponential",
    "log": "log",
    "sin": "sine",
    "cos": "cosine",
    "tanh": "tanh",
    "logistic": "logistic",
    "sqrt": "sqrt",
    "rsqrt": "rsqrt",
    "pow": "power",
    "erf": "erf",
}
#: Primitives that reduce an array, and those a reduced value passes through unchanged in kind.
REDUCTIONS: frozenset[str] = frozenset(
    {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "argmax", "argmin"}
)
_PASS_THROUGH = frozenset({"broadcast_in_dim", "reshape", "squeeze", "expand_dims"})
#: Entry-computation opcodes that move no data and launch nothing.
_PLUMBING = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast"})
_ARRAY = re.compile(r"[a-z][a-z0-9]*\[([^\]]*)\]")


def _elements(shape: str) -> int:
    """Elements of the first array in an HLO shape (``f32[1000,10]`` -> 10000)."""
    match = _ARRAY.search(shape)
    if match is None:
        return 0
    dims = [int(d) for d in match.group(1).split(",") if d.strip().isdigit()]
    return math.prod(dims)


@dataclass(frozen=True)
class Kernel:
    """One step the compiled program runs: a fusion or an un-fused op.

    Attributes:
        name: the instruction's name in the HLO (``broadcast_multiply_fusion``).
        kind: ``loop``, ``input``, ``output``, ``custom`` for a fusion, else the opcode.
        ops: the HLO opcodes inside (parameters and constants left out).
        shape: its output shape as printed.
    """

    name: str
    kind: str
    ops: tuple[str, ...]
    shape: str


@dataclass(frozen=True)
class CompiledProgram:
    """Counts from one function's jaxpr and its optimized HLO, and XLA's byte estimate.

    Attributes:
        function: the function's name.
        signature: its input types, e.g. ``float32[1000,1000]``.
        eager_ops: equations of the jaxpr (not the eager dispatches: one ``jnp`` call can be
            several equations in one dispatched program; the profiler trace counts those).
        kernels: what the compiled program runs, in program order.
        counts: for each primitive of :data:`COUNTED` in the jaxpr, (times in the jaxpr, times
            in the compiled program, inside fusions included).
        divided_eager: elements divided by the jaxpr's ``div`` equations.
        divided_compiled: elements divided by ``divide`` ops of the compiled program.
        divide_as_multiply: some multiply of the compiled program comes from a ``div``.
        waits_for: (primitive, reduction) when an op combines a reduction's result with a
            full-size array (the softmax's ``div`` of ``exp(x)`` by ``reduce_sum``), else None.
        bytes_accessed: XLA's ``cost_analysis`` estimate per call (None if not reported).
        input_bytes: bytes of the arguments.
        output_bytes: bytes of the result.
        distinct: for each primitive of ``counts``, its equations of different inputs or
            parameters (two ``exp(x)`` of the same ``x`` are one: a repeat XLA can merge).
        lowered: for each primitive of ``counts``, how often its op is written in the program JAX
            lowered for XLA (the StableHLO text; None where that text was not given): ``logistic``
            is lowered as ``1 / (1 + exp(-x))``, so XLA never sees one, and ``exp`` is written
            once more. (A function called twice is written once: the text counts definitions.)
        kernels_with: for each primitive of ``counts``, the kernels of the compiled program whose
            ops include its HLO op (XLA recomputing an op puts copies in several kernels).
    """

    function: str
    signature: str
    eager_ops: int
    kernels: tuple[Kernel, ...]
    counts: dict[str, tuple[int, int]]
    divided_eager: int
    divided_compiled: int
    divide_as_multiply: bool
    waits_for: tuple[str, str] | None
    bytes_accessed: float | None
    input_bytes: int
    output_bytes: int
    distinct: Mapping[str, int] = field(default_factory=dict)
    lowered: Mapping[str, int | None] = field(default_factory=dict)
    kernels_with: Mapping[str, int] = field(default_factory=dict)


def _nbytes(tree: Any) -> int:
    import jax

    return int(sum(getattr(leaf, "nbytes", 0) for leaf in jax.tree_util.tree_leaves(tree)))


def _waits_for(eqns: Any) -> tuple[str, str] | None:
    """The first op that needs a reduction's result together with a full-size array."""
    reduced: dict[Any, str] = {}
    for eqn in eqns:
        name = eqn.primitive.name
        variables = [v for v in eqn.invars if type(v).__name__ != "Literal"]
        if name in REDUCTIONS:
            reduced.update((v, name) for v in eqn.outvars)
            continue
        sources = [reduced[v] for v in variables if v in reduced]
        if name in _PASS_THROUGH and sources:
            reduced.update((v, sources[0]) for v in eqn.outvars)
            continue
        size = max((math.prod(v.aval.shape) for v in eqn.outvars), default=0)
        full = [v for v in variables if v not in reduced and math.prod(v.aval.shape) >= size > 1]
        if sources and full:
            return name, sources[0]
    return None


def read_program(profile: timing.JitProfile, fn: Any, *args: Any) -> CompiledProgram:
    """Count what :func:`jaxplay.core.timing.profile_jit` compiled for ``fn(*args)``.

    ``args`` are only looked at for their types (the jaxpr is traced on abstract values).
    """
    import jax

    closed = jax.make_jaxpr(fn)(*args)
    eqns = closed.jaxpr.eqns
    # Counted inside nested jaxprs too (jnp.linalg.norm is a jit of its own, its sqrt inside).
    every = list(jaxprs.equations(closed))
    stablehlo = getattr(profile, "stablehlo_text", None) or None  # "": no text on this backend
    ops = [op for op in hlo.entry_ops(profile.hlo_text) if op.opcode not in _PLUMBING]
    fusions = {f.name: f for f in hlo.parse_fusions(profile.hlo_text)}
    kernels = tuple(
        Kernel(op.name, fusions[op.name].kind, fusions[op.name].ops, op.shape)
        if op.name in fusions
        else Kernel(op.name, op.opcode, (op.opcode,), op.shape)
        for op in ops
    )
    inside = [i for f in fusions.values() for i in f.instructions] + ops
    counts: dict[str, tuple[int, int]] = {}
    distinct: dict[str, int] = {}
    lowered: dict[str, int | None] = {}
    kernels_with: dict[str, int] = {}
    for eqn in every:
        name = eqn.primitive.name
        if name in COUNTED and name not in counts:
            opcode = COUNTED[name]
            in_jaxpr = sum(1 for e in every if e.primitive.name == name)
            compiled = sum(1 for i in inside if i.opcode == opcode)
            counts[name] = (in_jaxpr, compiled)
            top = [e for e in eqns if e.primitive == eqn.primitive]
            # Repeats are told apart by their inputs only at the top level, where variable
            # names are one namespace; an op inside a nested jaxpr counts as distinct.
            distinct[name] = len({(tuple(map(str, e.invars)), str(e.params)) for e in top}) + (
                in_jaxpr - len(top)
            )
            lowered[name] = (
                None
                if stablehlo is None
                else len(re.findall(rf"\b(?:stablehlo|chlo)\.{opcode}\b", stablehlo))
            )
            kernels_with[name] = sum(1 for kernel in kernels if opcode in kernel.ops)
    divided_eager = sum(
        math.prod(v.aval.shape) for e in eqns if e.primitive.name == "div" for v in e.outvars
    )
    divided_compiled = sum(_elements(i.shape) for i in inside if i.opcode == "divide")
    as_multiply = any(i.opcode == "multiply" and i.primitive == "div" for i in inside)
    cost = profile.cost or {}
    out = closed.out_avals
    return CompiledProgram(
        function=getattr(fn, "__name__", "f"),
        signature=", ".join(str(v.aval.str_short()) for v in closed.jaxpr.invars),
        eager_ops=len(eqns),
        kernels=kernels,
        counts=counts,
        divided_eager=int(divided_eager),
        divided_compiled=int(divided_compiled),
        divide_as_multiply=as_multiply,
        waits_for=_waits_for(eqns),
        bytes_accessed=cost.get("bytes accessed"),
        input_bytes=_nbytes(args),
        output_bytes=int(sum(math.prod(a.shape) * a.dtype.itemsize for a in out)),
        distinct=distinct,
        lowered=lowered,
        kernels_with=kernels_with,
    )


@claims.states("jit.library_calls_count_no_flops")
def library_calls_note(program: CompiledProgram) -> str | None:
    """A warning for the roofline when the compiled program calls library kernels
    (``custom-call``: LAPACK for ``jnp.linalg``), whose work XLA's cost analysis does not count;
    ``None`` when it calls none."""
    calls = [kernel.name for kernel in program.kernels if kernel.kind == "custom-call"]
    if not calls:
        return None
    return claims.qualify(
        "jit.library_calls_count_no_flops",
        ngettext(
            "The compiled program calls {n} library kernel ({names}: `custom-call`, such as "
            "LAPACK for `jnp.linalg`), whose flops XLA's cost analysis does not count: the "
            "achieved GFLOP/s above understates this function's work.",
            "The compiled program calls {n} library kernels ({names}: `custom-call`, such as "
            "LAPACK for `jnp.linalg`), whose flops XLA's cost analysis does not count: the "
            "achieved GFLOP/s above understates this function's work.",
            len(calls),
        ).format(n=len(calls), names=", ".join(markdown.code(name) for name in calls[:4])),
    )


def human_bytes(n: float) -> str:
    """Bytes in decimal units, as XLA counts them: ``20 MB``, ``80.4 kB``, ``120 B``."""
    return words.in_units(n, (("B", 1), ("kB", 1e3), ("MB", 1e6), ("GB", 1e9)))


@claims.states("jit.eager_dispatches_from_trace", "jit.cost_analysis_bytes")
def program_sentence(program: CompiledProgram) -> str:
    """What jit made of the function, in Markdown, every count taken from ``program``."""
    p = program
    k = len(p.kernels)
    parts = [
        _(
            "**What XLA compiled.** The jaxpr of `{function}` on {signature} has {operations} "
        ).format(
            function=p.function,
            signature=p.signature,
            operations=ngettext("**{n} operation**", "**{n} operations**", p.eager_ops).format(
                n=f"{p.eager_ops:,}"
            ),
        )
        + claims.qualify(
            "jit.eager_dispatches_from_trace",
            _(
                "(run eagerly, each call JAX dispatches is a small program of its own, which can "
                "hold more than one of them: a `jnp` function is one call, and a library function "
                "that is not jitted, such as `jax.nn.gelu`, one per operation; the *Profiler "
                "trace* tab counts the dispatches)"
            ),
        )
        + ngettext(
            ". The compiled program runs **{n} kernel**",
            ". The compiled program runs **{n} kernels**",
            k,
        ).format(n=f"{k:,}")
    ]
    fused = [kernel for kernel in p.kernels if len(kernel.ops) > 1]
    if fused:
        widest = max(fused, key=lambda kernel: len(kernel.ops))
        # XLA's opcode names are identifiers: code, in either language.
        parts[-1] += _("; the largest fuses {n} ops ({ops}).").format(
            n=len(widest.ops), ops=", ".join(markdown.code(op) for op in widest.ops)
        )
    else:
        parts[-1] += _(".")
    # Without the compiled program's kernels (a backend that prints no HLO) nothing is counted.
    for name, (in_jaxpr, compiled) in p.counts.items() if p.kernels else ():
        times = {"name": name, "compiled": words.times(compiled), "in_jaxpr": words.times(in_jaxpr)}
        if compiled == 0 < in_jaxpr and p.lowered.get(name) == 0:  # sigmoid's logistic
            parts.append(
                _(
                    "`{name}` is not in the compiled program (the jaxpr computes it {in_jaxpr}): "
                    "JAX already lowered it as other operations (the StableHLO has none), so "
                    "XLA never saw one."
                ).format(**times)
            )
        elif compiled == 0 < in_jaxpr:  # log(exp(x)) is x to XLA, 1/sqrt(x) an rsqrt
            parts.append(
                _(
                    "`{name}` is not in the compiled program (the jaxpr computes it {in_jaxpr}): "
                    "XLA's algebraic simplifier rewrote it into other operations, or away."
                ).format(**times)
            )
        elif compiled == p.distinct.get(name) and compiled < in_jaxpr:
            parts.append(
                _(
                    "`{name}` is computed {compiled} (the jaxpr computes it {in_jaxpr}: XLA "
                    "removed the repeat)."
                ).format(**times)
            )
        elif compiled < in_jaxpr:
            parts.append(
                _(
                    "`{name}` is computed {compiled} (the jaxpr computes it {in_jaxpr}): XLA "
                    "merged repeats or rewrote some into other operations."
                ).format(**times)
            )
        elif (
            compiled > in_jaxpr
            and p.kernels_with.get(name, 0) <= in_jaxpr
            and (lowered := p.lowered.get(name)) is not None
            and lowered <= in_jaxpr
        ):
            # Not in the lowered program, nor a copy per kernel: XLA expanded a composite op
            # (chlo.cosh is written with exp only once XLA compiles it).
            parts.append(
                _(
                    "`{name}` appears {compiled} in the compiled program against {in_jaxpr} in "
                    "the jaxpr and the program JAX lowered for XLA: XLA expanded a composite "
                    "operation of that program (a `chlo` op such as `cosh` or `erfc`) into "
                    "`{name}`."
                ).format(**times)
            )
        elif (
            compiled > in_jaxpr
            and p.kernels_with.get(name, 0) <= in_jaxpr
            and p.lowered.get(name) is not None
        ):
            # No more kernels hold it than the jaxpr has of it, and the StableHLO has more of it:
            # other operations written with it (sigmoid is 1 / (1 + exp(-x))).
            parts.append(
                _(
                    "`{name}` appears {compiled} in the compiled program against {in_jaxpr} in "
                    "the jaxpr: other operations of the jaxpr are written with `{name}` once "
                    "lowered for XLA (the StableHLO shows which)."
                ).format(**times)
            )
        elif compiled > in_jaxpr:
            parts.append(
                _(
                    "`{name}` appears {compiled} in the compiled program against {in_jaxpr} in "
                    "the jaxpr, in {kernels}: XLA recomputes it inside more than one kernel "
                    "rather than store it, or other operations were written with it."
                ).format(
                    kernels=ngettext("{n} kernel", "{n} kernels", p.kernels_with[name]).format(
                        n=p.kernels_with[name]
                    ),
                    **times,
                )
            )
    if p.divided_eager and not p.divided_compiled and p.divide_as_multiply:
        parts.append(
            _(
                "The divide of {eager} elements became a multiply: no division is left. XLA "
                "rewrote it (a constant divisor's reciprocal is computed while compiling; "
                "`x / sqrt(y)` becomes `x * rsqrt(y)`): the compiled program shows into what."
            ).format(eager=f"{p.divided_eager:,}")
        )
    elif p.divided_eager and p.divided_compiled < p.divided_eager and p.divide_as_multiply:
        parts.append(
            _(
                "The divide of {eager} elements became {compiled} divisions (reciprocals) and a "
                "multiply."
            ).format(eager=f"{p.divided_eager:,}", compiled=f"{p.divided_compiled:,}")
        )
    once = p.bytes_accessed is not None and math.isclose(
        p.bytes_accessed, p.input_bytes + p.output_bytes, rel_tol=0.01
    )
    if p.bytes_accessed is not None and p.input_bytes:
        ratio = p.bytes_accessed / p.input_bytes
        text = _(
            "XLA's cost analysis counts {accessed} read and written per call: {ratio}× the "
            "{inputs} of its arguments"
        ).format(
            accessed=human_bytes(p.bytes_accessed),
            ratio=f"{ratio:.1f}",
            inputs=human_bytes(p.input_bytes),
        )
        if once:
            text += _(" — as many bytes as one read of the arguments and one write of the result")
            text += "" if p.waits_for else _(", nothing in between")
        parts.append(claims.qualify("jit.cost_analysis_bytes", text + _(".")))
    if p.waits_for is not None:
        op, reduction = p.waits_for
        waits = _(
            "The work cannot be one pass over the data: `{op}` needs the result of "
            "`{reduction}`, which exists only after a whole pass over that reduction's input."
        )
        if once:  # after "as many bytes as one read ...": the bytes are not the passes
            waits = _("That counts bytes, not passes.") + " " + waits
        parts.append(
            claims.qualify("jit.cost_analysis_bytes", waits.format(op=op, reduction=reduction))
        )
    return " ".join(parts)


def kernel_table(program: CompiledProgram) -> list[dict[str, str]]:
    """The compiled program's kernels as table rows, in program order."""
    return [
        {"kernel": k.name, "kind": k.kind, "ops inside": ", ".join(k.ops), "output": k.shape}
        for k in program.kernels
    ]


#: What each ``memory_analysis()`` figure is, in the words of the table (English, marked;
#: translated where shown).
MEMORY_ROWS: dict[str, str] = {
    "argument": N_("the arguments"),
    "output": N_("the result"),
    "temp": N_("temporaries XLA allocates while it runs"),
    "alias": N_("result bytes written into donated arguments"),
    "generated code": N_("the generated code"),
}


@claims.states_nothing("memory_analysis()'s own figures; a 0 it does not count is said to be so")
def memory_table(memory: dict[str, int]) -> list[dict[str, str]]:
    """``memory_analysis()`` figures as table rows, each with its unit; what each one is in the
    visitor's language (the keys stay)."""
    # XLA:CPU reports 0 bytes of generated code for programs that have code (its object files
    # hold kilobytes): a 0 there is a figure the backend does not count, not an empty program.
    unreported = _("not reported by this backend")
    return [
        {
            "memory_analysis()": name,
            "what": _(MEMORY_ROWS[name]) if name in MEMORY_ROWS else "",
            "size": unreported if name == "generated code" and n == 0 else human_bytes(n),
            "bytes": f"{n:,}",
        }  # fmt: skip
        for name, n in memory.items()
    ]

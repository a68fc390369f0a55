"""What a traced program will cost, read off its jaxpr before anything runs.

Why: a visitor chooses sizes and formulas, and the server then runs them in its own process (the
jit page times them there, on purpose: that is the device being explained). Checking only the
size of the result misses the real cost: ``jnp.sum(x[:, :, None] * x[:, None, :])`` returns one
number but materialises a ``(256, 4096, 4096)`` product on the way (17 GB when run eagerly), and
XLA's own ``cost_analysis`` prices a LAPACK call such as ``jnp.linalg.inv`` as nearly free. A
jaxpr, traced on abstract values (no memory, no compute), names every intermediate with its shape
and every primitive that will run, so the budget can be checked first:

- **flops**, from a rule table keyed by primitive (autodidax style): ``dot_general`` and
  convolutions by their contraction sizes, LAPACK decompositions by their textbook operation
  counts (LU ⅔n³, Cholesky ⅓n³, QR, SVD, eigh, triangular solves), sorts by n·log n, everything
  else by the elements it writes (transcendentals weighted, they cost several flops each);
- **peak bytes**: the largest set of arrays alive at once when the program runs op by op, as
  eager execution does (an output lives from the equation that makes it to its last use);
- **the largest single intermediate**, named, so a refusal can say what was too big.

- **seconds**: what one call will take on this machine, each primitive's work priced by a measured
  table (:data:`SECONDS_PER_UNIT`): a flop is not a unit of time, and a comparison sort costs
  about a thousand times more per counted element than a matmul's multiply-add (a 16×1,000,000
  ``jnp.sort`` took 12 s a call while its 0.32 GFLOP looked like a few milliseconds).

Sub-programs (``jit``, ``custom_jvp_call``, ``custom_vjp_call``, ``remat``, ``cond`` branches,
``scan`` bodies times their length, plus each trip's own overhead) are walked too, so nested
sorts and sorts in a loop add up. A ``while`` loop's trip count is not known before it runs: it
is reported as unbounded, and :meth:`Budget.violations` refuses it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from jaxplay.core import words

#: Flop-equivalents charged per element of a transcendental primitive's output.
TRANSCENDENTAL_COST = 10
_TRANSCENDENTAL: frozenset[str] = frozenset(
    {
        "exp", "exp2", "expm1", "log", "log1p", "sin", "cos", "tan", "tanh", "logistic",
        "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "pow",
        "erf", "erfc", "erf_inv", "lgamma", "digamma", "igamma", "rsqrt", "sqrt", "cbrt",
        "bessel_i0e", "bessel_i1e",
    }
)  # fmt: skip
#: Primitives that move or relabel data without arithmetic (charged nothing beyond memory).
_FREE: frozenset[str] = frozenset(
    {
        "reshape", "squeeze", "expand_dims", "broadcast_in_dim", "convert_element_type",
        "transpose", "copy", "copy_p", "slice", "dynamic_slice", "concatenate", "pad", "rev",
        "iota", "stop_gradient", "select_n", "platform_index", "device_put", "bitcast",
        "bitcast_convert_type", "real", "imag",
    }
)  # fmt: skip
#: Seconds one unit of work of each kind takes, measured on the server's machine (CPU, jax
#: 0.10.2) by ``.venv/bin/python benchmarks/op_costs.py`` (the worst size of each kind; the
#: machine was shared, which errs towards refusing). Units: ``elementwise`` per element written
#: (or read, if more), ``transcendental`` per flop-equivalent (:data:`TRANSCENDENTAL_COST` a
#: element), ``matmul``/``conv``/``lapack`` per flop, ``sort``/``argsort`` per element × log2 of
#: the sorted length × operand, ``cumulative`` per element × log2 of the scanned length,
#: ``top_k`` per element × log2 k, ``scan_step`` per trip of a loop, ``dispatch`` per equation run
#: eagerly (the eager side of a comparison pays one dispatch per primitive).
SECONDS_PER_UNIT: dict[str, float] = {
    "elementwise": 8.58e-09,
    "transcendental": 2.62e-09,
    "matmul": 2.6e-11,
    "conv": 9.68e-11,
    "lapack": 2.69e-10,
    "sort": 2.23e-08,
    "argsort": 1.84e-08,
    "cumulative": 4.31e-09,
    "top_k": 2.19e-09,
    "scan_step": 7.88e-08,
    "dispatch": 9.2e-05,
}


@dataclass(frozen=True)
class Footprint:
    """The cost of one call of a traced program.

    Attributes:
        flops: floating-point operations (transcendentals weighted by
            :data:`TRANSCENDENTAL_COST`; LAPACK calls by their operation counts).
        peak_bytes: the most bytes alive at once, run op by op (inputs included).
        largest_bytes: the size of the largest single array the program makes.
        largest: what that array is, e.g. ``"mul → float32[256,4096,4096]"``.
        equations: equations in the program, sub-programs included.
        unbounded: loops whose trip count is unknown before running (``while``).
        seconds: what one call is predicted to take here, eagerly (each primitive's work priced
            by :data:`SECONDS_PER_UNIT`, plus one dispatch per equation).
    """

    flops: float
    peak_bytes: int
    largest_bytes: int
    largest: str
    equations: int
    unbounded: tuple[str, ...] = ()
    seconds: float = 0.0


@dataclass(frozen=True)
class Budget:
    """Limits for one call; :meth:`violations` says, in plain words, what a footprint breaks."""

    max_flops: float
    max_peak_bytes: int
    max_equations: int = 20_000
    #: Longest one call may be predicted to take (``None``: not limited).
    max_seconds: float | None = None

    def violations(self, fp: Footprint) -> list[str]:
        """What ``fp`` breaks, each limit in plain words, in the visitor's language."""
        from jaxplay.core.i18n import _

        problems = []
        if fp.unbounded:
            problems.append(
                _("it runs a loop whose length is only known when it runs ({loops})").format(
                    loops=", ".join(fp.unbounded)
                )
            )
        if fp.flops > self.max_flops:
            problems.append(
                _("one call needs about {flops}; the limit is {limit}").format(
                    flops=format_flops(fp.flops), limit=format_flops(self.max_flops)
                )
            )
        if self.max_seconds is not None and fp.seconds > self.max_seconds:
            problems.append(
                _(
                    "one call would take about {duration} here (sorts, scans and loops priced by "
                    "what they cost on this machine); the limit is {limit}"
                ).format(
                    duration=format_duration(fp.seconds), limit=format_duration(self.max_seconds)
                )
            )
        if fp.peak_bytes > self.max_peak_bytes:
            problems.append(
                _(
                    "run op by op it holds {peak} at once (its largest array: {largest}, "
                    "{largest_bytes}); the limit is {limit}"
                ).format(
                    peak=format_bytes(fp.peak_bytes),
                    largest=fp.largest,
                    largest_bytes=format_bytes(fp.largest_bytes),
                    limit=format_bytes(self.max_peak_bytes),
                )
            )
        if fp.equations > self.max_equations:
            problems.append(
                _("its program has {equations} equations; the limit is {limit}").format(
                    equations=f"{fp.equations:,}", limit=f"{self.max_equations:,}"
                )
            )
        return problems


def format_flops(n: float) -> str:
    """``170 GFLOP``, ``2.5 MFLOP``, ``80 FLOP``."""
    return words.in_units(
        n, (("FLOP", 1), ("kFLOP", 1e3), ("MFLOP", 1e6), ("GFLOP", 1e9), ("TFLOP", 1e12))
    )


def format_duration(seconds: float) -> str:
    """``2.5 s``, ``3.1 min``, ``40 ms``: minutes from two of them."""
    if seconds >= 120:
        return words.in_units(seconds, (("min", 60.0),))
    return words.in_units(seconds, (("ms", 1e-3), ("s", 1.0)))


def format_bytes(n: float) -> str:
    """``1.5 GiB``, ``320 MiB``, ``12 KiB``, ``80 B``."""
    return words.in_units(n, (("B", 1), ("KiB", 2**10), ("MiB", 2**20), ("GiB", 2**30)))


def trace_footprint(fn: Callable[..., Any], *args: Any) -> Footprint:
    """Trace ``fn`` on abstract values shaped like ``args`` and return its :class:`Footprint`.

    ``args`` may be ``jax.ShapeDtypeStruct`` (nothing is allocated) or arrays.
    """
    import jax

    return footprint(jax.make_jaxpr(fn)(*args))


def footprint(closed_jaxpr: Any) -> Footprint:
    """The :class:`Footprint` of a (closed) jaxpr."""
    jaxpr = getattr(closed_jaxpr, "jaxpr", closed_jaxpr)
    walker = _Walker()
    peak = walker.program(jaxpr)
    return Footprint(
        flops=walker.flops,
        peak_bytes=peak,
        largest_bytes=walker.largest_bytes,
        largest=walker.largest,
        equations=walker.equations,
        unbounded=tuple(dict.fromkeys(walker.unbounded)),
        seconds=walker.seconds,
    )


def _nbytes(aval: Any) -> int:
    shape = getattr(aval, "shape", None)
    dtype = getattr(aval, "dtype", None)
    if shape is None or dtype is None:
        return 0
    try:
        itemsize = dtype.itemsize
    except AttributeError:  # extended dtypes (PRNG keys) have no itemsize
        itemsize = 8
    return math.prod(shape) * int(itemsize)


def _elements(aval: Any) -> int:
    shape = getattr(aval, "shape", None)
    return math.prod(shape) if shape is not None else 0


def _is_literal(var: Any) -> bool:
    """A constant written into the equation (``Literal``), not a variable."""
    return hasattr(var, "val")


def _type(aval: Any) -> str:
    return aval.str_short() if hasattr(aval, "str_short") else str(aval)


def _sub_jaxprs(params: dict[str, Any]) -> Iterable[tuple[str, Any]]:
    solve = getattr(params.get("jaxprs"), "solve", None)
    if solve is not None:  # custom_linear_solve runs only its solve; the rest serve transforms
        params = {"solve": solve}
    for name, value in params.items():
        items = value if isinstance(value, tuple | list) else (value,)
        for item in items:
            inner = getattr(item, "jaxpr", item)
            if hasattr(inner, "eqns"):
                yield name, inner


# --- flop rules, keyed by primitive name ------------------------------------------------------


def _square(aval: Any) -> tuple[int, int, int]:
    """(batch, m, n) of a matrix operand."""
    shape = tuple(getattr(aval, "shape", ()))
    if len(shape) < 2:
        return 1, 1, shape[0] if shape else 1
    return math.prod(shape[:-2]), shape[-2], shape[-1]


def _dot_general(eqn: Any) -> float:
    (lc, _rc), (lb, _rb) = eqn.params["dimension_numbers"]
    lhs = eqn.invars[0].aval.shape
    contracted = math.prod(lhs[d] for d in lc)
    return 2.0 * _elements(eqn.outvars[0].aval) * contracted


def _conv(eqn: Any) -> float:
    rhs = eqn.invars[1].aval.shape
    dn = eqn.params.get("dimension_numbers")
    out_features_dim = dn.rhs_spec[0] if dn is not None else 0
    per_output = math.prod(rhs) // max(1, rhs[out_features_dim])
    return 2.0 * _elements(eqn.outvars[0].aval) * per_output


def _lu(eqn: Any) -> float:
    b, m, n = _square(eqn.invars[0].aval)
    k = min(m, n)
    return b * (m * n * k - (m + n) * k * k / 2 + k**3 / 3) * 2


def _cholesky(eqn: Any) -> float:
    b, _, n = _square(eqn.invars[0].aval)
    return b * n**3 / 3


def _triangular_solve(eqn: Any) -> float:
    b, _, n = _square(eqn.invars[0].aval)
    rhs = eqn.invars[1].aval
    return b * n * _elements(rhs) / max(1, b)


def _qr(eqn: Any) -> float:
    b, m, n = _square(eqn.invars[0].aval)
    k = min(m, n)
    return b * (2 * m * n * k - 2 * k**3 / 3) * 2  # factor, then form Q


def _svd(eqn: Any) -> float:
    b, m, n = _square(eqn.invars[0].aval)
    small, large = min(m, n), max(m, n)
    if not eqn.params.get("compute_uv", True):
        return b * (4 * large * small * small - 4 * small**3 / 3)
    return b * (4 * large * small * small + 22 * small**3)


def _eigh(eqn: Any) -> float:
    b, _, n = _square(eqn.invars[0].aval)
    return b * 9 * n**3


def _eig(eqn: Any) -> float:
    b, _, n = _square(eqn.invars[0].aval)
    return b * 25 * n**3


def _hessenberg(eqn: Any) -> float:
    b, _, n = _square(eqn.invars[0].aval)
    return b * 10 * n**3 / 3


def _sort(eqn: Any) -> float:
    aval = eqn.invars[0].aval
    dim = eqn.params.get("dimension", -1)
    length = aval.shape[dim] if aval.shape else 1
    return _elements(aval) * max(1.0, math.log2(max(2, length))) * len(eqn.invars)


def _cumulative(eqn: Any) -> float:
    aval = eqn.invars[0].aval
    axis = eqn.params.get("axis", 0)
    length = aval.shape[axis] if aval.shape else 1
    return _elements(aval) * max(1.0, math.log2(max(2, length)))


def _top_k(eqn: Any) -> float:
    aval = eqn.invars[0].aval
    k = eqn.params.get("k", 1)
    return _elements(aval) * max(1.0, math.log2(max(2, k)))


def _reduction(eqn: Any) -> float:
    return float(sum(_elements(v.aval) for v in eqn.invars))


FLOP_RULES: dict[str, Callable[[Any], float]] = {
    "dot_general": _dot_general,
    "conv_general_dilated": _conv,
    "lu": _lu,
    "cholesky": _cholesky,
    "triangular_solve": _triangular_solve,
    "qr": _qr,
    "geqrf": _qr,
    "householder_product": _qr,
    "svd": _svd,
    "eigh": _eigh,
    "eig": _eig,
    "schur": _eig,
    "hessenberg": _hessenberg,
    "tridiagonal": _hessenberg,
    "sort": _sort,
    "cumsum": _cumulative,
    "cumprod": _cumulative,
    "cummax": _cumulative,
    "cummin": _cumulative,
    "cumlogsumexp": _cumulative,
    "top_k": _top_k,
    "reduce_sum": _reduction,
    "reduce_max": _reduction,
    "reduce_min": _reduction,
    "reduce_prod": _reduction,
    "reduce_and": _reduction,
    "reduce_or": _reduction,
    "argmax": _reduction,
    "argmin": _reduction,
    "reduce_precision": _reduction,
}


#: Which row of :data:`SECONDS_PER_UNIT` prices a primitive's flops (the rest: elementwise).
SECONDS_KIND: dict[str, str] = {
    "dot_general": "matmul",
    "conv_general_dilated": "conv",
    **dict.fromkeys(
        ("lu", "cholesky", "triangular_solve", "qr", "geqrf", "householder_product", "svd",
         "eigh", "eig", "schur", "hessenberg", "tridiagonal"),
        "lapack",
    ),
    "cumsum": "cumulative",
    "cumprod": "cumulative",
    "cummax": "cumulative",
    "cummin": "cumulative",
    "cumlogsumexp": "cumulative",
    "top_k": "top_k",
}  # fmt: skip


def _seconds(eqn: Any, flops: float) -> float:
    """Predicted seconds of one run of a primitive whose flop rule gave ``flops``."""
    name = eqn.primitive.name
    if name == "sort":  # keys with their payloads (argsort): the dearer of the two measured
        return flops * max(SECONDS_PER_UNIT["sort"], SECONDS_PER_UNIT["argsort"])
    kind = SECONDS_KIND.get(name)
    if kind is not None:
        return flops * SECONDS_PER_UNIT[kind]
    if name in _TRANSCENDENTAL:
        return flops * SECONDS_PER_UNIT["transcendental"]
    moved = max(
        sum(_elements(v.aval) for v in eqn.outvars),
        sum(_elements(v.aval) for v in eqn.invars if not _is_literal(v)),
    )
    return max(moved, flops) * SECONDS_PER_UNIT["elementwise"]


def _elementwise(eqn: Any) -> float:
    name = eqn.primitive.name
    if name in _FREE:
        return 0.0
    written = sum(_elements(v.aval) for v in eqn.outvars)
    return float(written * (TRANSCENDENTAL_COST if name in _TRANSCENDENTAL else 1))


@dataclass
class _Walker:
    flops: float = 0.0
    seconds: float = 0.0
    equations: int = 0
    largest_bytes: int = 0
    largest: str = "none"
    unbounded: list[str] = field(default_factory=list)
    #: How deep in sub-programs the walk is: only top-level equations are dispatched one by one.
    depth: int = 0

    def note(self, eqn: Any) -> None:
        for var in eqn.outvars:
            size = _nbytes(var.aval)
            if size > self.largest_bytes:
                self.largest_bytes = size
                self.largest = f"{eqn.primitive.name} → {_type(var.aval)}"

    def program(self, jaxpr: Any, times: float = 1.0) -> int:
        """Walk ``jaxpr`` (its flops counted ``times`` over); return its peak live bytes."""
        last_use: dict[Any, int] = {}
        eqns: Sequence[Any] = jaxpr.eqns
        for i, eqn in enumerate(eqns):
            for var in eqn.invars:
                if not _is_literal(var):
                    last_use[var] = i
        for var in jaxpr.outvars:
            if not _is_literal(var):
                last_use[var] = len(eqns)
        live: dict[Any, int] = {}
        for var in (*jaxpr.constvars, *jaxpr.invars):
            live[var] = _nbytes(var.aval)
        current = sum(live.values())
        peak = current
        for i, eqn in enumerate(eqns):
            transient = self.equation(eqn, times)
            outputs = sum(_nbytes(v.aval) for v in eqn.outvars)
            peak = max(peak, current + outputs + transient)
            for var in eqn.outvars:
                live[var] = _nbytes(var.aval)
                current += live[var]
            for var in list(eqn.invars) + list(eqn.outvars):
                if _is_literal(var):
                    continue
                if var in live and last_use.get(var, -1) <= i:
                    current -= live.pop(var)
        return peak

    def equation(self, eqn: Any, times: float) -> int:
        """Count one equation; return the bytes its sub-programs hold beyond its outputs."""
        self.equations += 1
        if self.depth == 0:
            self.seconds += times * SECONDS_PER_UNIT["dispatch"]
        self.note(eqn)
        name = eqn.primitive.name
        subs = list(_sub_jaxprs(eqn.params))
        if name == "while":
            self.unbounded.append("while")
            self.depth += 1
            for _, sub in subs:
                self.program(sub, times)
            self.depth -= 1
            return 0
        if name == "cond":
            costs = []
            transient = 0
            for _, sub in subs:
                branch = _Walker(depth=self.depth + 1)
                transient = max(transient, branch.program(sub, times))
                costs.append(branch)
            worst = max(costs, key=lambda w: w.seconds, default=None)
            if worst is not None:
                self.flops += max(w.flops for w in costs)
                self.seconds += worst.seconds
                self.equations += sum(w.equations for w in costs)
                self.unbounded += [u for w in costs for u in w.unbounded]
                if worst.largest_bytes > self.largest_bytes:
                    self.largest_bytes, self.largest = worst.largest_bytes, worst.largest
            return transient
        if subs:
            repeat = float(eqn.params.get("length", 1)) if name == "scan" else 1.0
            if name == "scan":
                self.seconds += times * repeat * SECONDS_PER_UNIT["scan_step"]
            transient = 0
            self.depth += 1
            try:
                for param, sub in subs:
                    if name == "custom_jvp_call" and param != "call_jaxpr":
                        continue
                    transient = max(transient, self.program(sub, times * repeat))
            finally:
                self.depth -= 1
            return transient
        rule = FLOP_RULES.get(name, _elementwise)
        flops = rule(eqn)
        self.flops += times * flops
        self.seconds += times * _seconds(eqn, flops)
        return 0

"""A safe expression language for the formula boxes of the grad, vmap and jit pages.

Visitors type formulas such as ``jnp.sin(x) * x**2`` or ``jnp.tanh(W @ x + b)``. Handing that
text to ``eval`` in the server process would let anyone run anything; the runner sandbox is the
place for arbitrary code. Formulas instead go through :func:`parse`: Python's own ``ast`` parser,
then a checker that admits only numbers, the named variables, operators, indexing and slicing, and
a whitelist of ``jnp.*`` and ``jax.nn.*`` functions that cannot allocate arbitrary memory. The
checked tree is turned into nested Python closures, so the result is an ordinary function of JAX
arrays: ``jax.grad``, ``jax.vmap`` and ``jax.jit`` apply to it like to any other. ``eval``,
``exec`` and ``compile`` are never called on the user's text.

Checking what is *allowed* is not enough on a shared server: a formula runs in the server process,
and Python arithmetic holds the interpreter lock while it works. ``((9**1024)**1024)**64`` is three
allowed powers that build a number of hundreds of millions of digits, and ``[0] * (6 * 10**8)``
is an allowed product that builds a list of 4.7 GB. So the language is also *bounded*: a formula
has at most :data:`MAX_NODES` parts, Python integers never grow past :data:`MAX_INT_BITS` bits
(constant sub-expressions are folded while checking, so such a formula is refused before it runs,
with its column), lists and tuples take no arithmetic and hold at most :data:`MAX_LIST_ITEMS`
items, and arguments that JAX turns into Python-side loops (``jnp.round``'s ``decimals``) are
capped. What the *array* work of a formula costs depends on the shapes it meets; the pages bound
that separately (a static budget of the traced program, or a sandboxed worker with a deadline).

Long: the checker, its bounds and its refusals are one whitelist, read top to bottom in one
place; each refusal is a sentence in the visitor's language with its column.

Example:
    >>> f = parse("jnp.sin(x) * x**2", ("x",))
    >>> float(f(2.0))  # doctest: +ELLIPSIS
    3.637...
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from jaxplay.core import words
from jaxplay.core.errors import InputError
from jaxplay.core.i18n import N_, _

MAX_LENGTH = 500
MAX_DEPTH = 50
#: Parts (AST nodes) a formula may have.
MAX_NODES = 200
#: Largest Python integer a formula may make, in bits (arrays have their own dtypes).
MAX_INT_BITS = 256
#: Items a list or tuple literal may hold.
MAX_LIST_ITEMS = 64
#: ``decimals`` of ``jnp.round``: JAX computes ``10 ** decimals`` as a Python integer.
MAX_DECIMALS = 30

#: ``jnp`` functions a formula may call: elementwise maths, reductions and linear algebra whose
#: output is never larger than their inputs (no ``ones``, ``arange``, ``tile``, ``outer`` ...).
JNP_FUNCTIONS: frozenset[str] = frozenset(
    {
        "abs",
        "absolute",
        "arccos",
        "arccosh",
        "arcsin",
        "arcsinh",
        "arctan",
        "arctan2",
        "arctanh",
        "cbrt",
        "ceil",
        "clip",
        "cos",
        "cosh",
        "deg2rad",
        "degrees",
        "dot",
        "exp",
        "exp2",
        "expm1",
        "fabs",
        "floor",
        "fmax",
        "fmin",
        "heaviside",
        "hypot",
        "log",
        "log10",
        "log1p",
        "log2",
        "logaddexp",
        "matmul",
        "max",
        "maximum",
        "mean",
        "median",
        "min",
        "minimum",
        "mod",
        "negative",
        "power",
        "prod",
        "rad2deg",
        "radians",
        "real",
        "reciprocal",
        "round",
        "sign",
        "sin",
        "sinc",
        "sinh",
        "sqrt",
        "square",
        "std",
        "sum",
        "tan",
        "tanh",
        "trace",
        "transpose",
        "var",
        "vdot",
        "where",
        "isnan",
        "isfinite",
        "logical_and",
        "logical_or",
        "logical_not",
        "diag",
        "cumsum",
        "argmax",
        "argmin",
        "amax",
        "amin",
        "inner",
        "sort",
        "flip",
        "squeeze",
        "ravel",
    }
)
#: ``jnp.linalg`` functions allowed.
LINALG_FUNCTIONS: frozenset[str] = frozenset({"norm", "det", "inv", "slogdet"})
#: ``jax.nn`` activations and normalisers allowed.
NN_FUNCTIONS: frozenset[str] = frozenset(
    {
        "celu",
        "elu",
        "gelu",
        "glu",
        "hard_sigmoid",
        "hard_silu",
        "hard_swish",
        "hard_tanh",
        "leaky_relu",
        "log_sigmoid",
        "log_softmax",
        "logsumexp",
        "relu",
        "relu6",
        "selu",
        "sigmoid",
        "silu",
        "soft_sign",
        "softmax",
        "softplus",
        "sparse_plus",
        "squareplus",
        "swish",
        "standardize",
    }
)
#: Constants reachable as ``jnp.<name>``.
JNP_CONSTANTS: frozenset[str] = frozenset({"pi", "e", "inf", "nan", "euler_gamma"})
#: Keyword arguments a call may pass.
KEYWORDS: frozenset[str] = frozenset(
    {
        "axis",
        "keepdims",
        "ord",
        "negative_slope",
        "alpha",
        "approximate",
        "a_min",
        "a_max",
        "min",
        "max",
        "decimals",
    }
)

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.MatMult: operator.matmul,
}
_SYMBOLS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.MatMult: "@",
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_NODE_NAMES: dict[type[ast.AST], str] = {
    ast.Lambda: N_("lambda expressions"),
    ast.ListComp: N_("comprehensions"),
    ast.SetComp: N_("comprehensions"),
    ast.DictComp: N_("comprehensions"),
    ast.GeneratorExp: N_("generator expressions"),
    ast.Dict: N_("dict literals"),
    ast.Set: N_("set literals"),
    ast.JoinedStr: N_("f-strings"),
    ast.NamedExpr: N_("assignment expressions (:=)"),
    ast.Await: N_("await"),
    ast.Yield: N_("yield"),
    ast.IfExp: N_("conditional expressions (use jnp.where)"),
    ast.BoolOp: N_("and/or (use jnp.logical_and / jnp.logical_or)"),
    ast.Starred: N_("star arguments"),
}

Evaluator = Callable[[dict[str, Any]], Any]


class ExprError(InputError):
    """A formula that is not allowed or not valid, with where it went wrong (formulas are
    usually one line; the page has the text, see :meth:`InputError.pointer`)."""

    def __init__(self, message: str, line: int = 1, col: int | None = None) -> None:
        super().__init__(message, line=line, col=col)


@dataclass(frozen=True)
class Expression:
    """A checked formula, callable with its variables positionally or by name.

    Attributes:
        source: the text as typed.
        variables: the names it may use, in positional-argument order.
        names_used: the variables the formula actually refers to.
    """

    source: str
    variables: tuple[str, ...]
    names_used: frozenset[str]
    _evaluate: Evaluator

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) > len(self.variables):
            raise TypeError(f"expected at most {len(self.variables)} arguments, got {len(args)}")
        env = dict(zip(self.variables, args, strict=False))
        for name, value in kwargs.items():
            if name not in self.variables:
                raise TypeError(f"unknown variable {name!r}")
            env[name] = value
        missing = [v for v in self.names_used if v not in env]
        if missing:
            raise TypeError(f"missing value for {', '.join(sorted(missing))}")
        return self._evaluate(env)


def parse(source: str, variables: Sequence[str] = ("x",)) -> Expression:
    """Check ``source`` and turn it into a callable :class:`Expression`.

    Arguments:
        source: the formula, e.g. ``"jnp.tanh(W @ x + b)"``.
        variables: the names the formula may use, in the order of the callable's arguments.

    Returns:
        An :class:`Expression`; calling it evaluates the formula with ``jax.numpy``.

    Raises:
        ExprError: with the reason and the line/column of the first part that is not allowed.
    """
    import jax
    import jax.numpy as jnp

    if not isinstance(source, str):
        raise ExprError(_("the formula must be text"))
    if len(source) > MAX_LENGTH:
        raise ExprError(
            _("the formula is {n} characters long; the limit is {limit}").format(
                n=len(source), limit=MAX_LENGTH
            )
        )
    text = source.strip()
    if not text:
        raise ExprError(_("the formula is empty"))
    for name in variables:
        if not name.isidentifier() or name in {"jnp", "jax"}:
            raise ExprError(_("{name} cannot be a variable name").format(name=repr(name)))
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as err:
        line = err.lineno or 1
        lines = text.splitlines() or [""]
        if not err.offset and line <= len(lines):
            # Python gives offset 0 when the text ends before the expression does ("x **"):
            # the caret goes after the last character, where something is missing.
            raise ExprError(
                _("syntax error: the formula ends before it is complete ({reason}).").format(
                    reason=err.msg
                ),
                line,
                len(lines[line - 1]) + 1,
            ) from None
        raise ExprError(
            _("syntax error: {reason}.").format(reason=err.msg) + words.ascii_hint(text),
            line,
            max(1, err.offset or 1),
        ) from None
    except (ValueError, RecursionError, MemoryError):
        raise ExprError(_("the formula could not be parsed")) from None
    nodes = sum(1 for _node in ast.walk(tree.body))
    if nodes > MAX_NODES:
        raise ExprError(
            _("the formula has {n} parts; the limit is {limit}").format(n=nodes, limit=MAX_NODES)
        )
    checker = _Checker(frozenset(variables), jnp, jax.nn)
    evaluate = checker.build(tree.body, depth=1)
    return Expression(source, tuple(variables), frozenset(checker.used), evaluate)


def shape_of(formula: Callable[..., Any], *args: Any) -> Any:
    """``jax.eval_shape(formula, *args)`` with jit off: how the server checks what a visitor's
    formula returns before it runs elsewhere.

    Why jit off: the ``jnp`` functions a formula calls are jitted, and JAX keeps a trace of each
    for every new static argument (``jnp.linalg.norm``'s ``ord``) in its process-wide caches:
    1,500 formulas of new ``ord`` grew the server by 20 MB, each trace slower than the last.
    Traced inline, with jit off, they keep nothing (0.8 MB) in a third of the time. The setting
    is the calling thread's own.
    """
    import jax

    with jax.disable_jit():
        return jax.eval_shape(formula, *args)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_bits(kind: type[ast.operator], left: Any, right: Any) -> int:
    """An upper bound on the bits of ``left <op> right`` for two Python integers."""
    a, b = left.bit_length(), right.bit_length()
    if kind is ast.Pow:
        if right <= 0 or abs(left) <= 1:
            return 1
        return math.ceil(right * math.log2(abs(left))) + 1
    if kind is ast.Mult:
        return a + b
    return max(a, b) + 1


def _guarded(kind: type[ast.operator], op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``op`` that refuses list/tuple arithmetic and Python integers past :data:`MAX_INT_BITS`."""
    symbol = _SYMBOLS.get(kind, kind.__name__)

    def apply(left: Any, right: Any) -> Any:
        if isinstance(left, list | tuple) or isinstance(right, list | tuple):
            raise ExprError(
                _(
                    "'{symbol}' on a list or tuple is not allowed (lists are only for function "
                    "arguments; do arithmetic on arrays)"
                ).format(symbol=symbol)
            )
        if _is_int(left) and _is_int(right):
            if kind is ast.Pow and right > MAX_INT_BITS and abs(left) > 1:
                raise ExprError(
                    _("the exponent {n} is too large for a whole number").format(n=right)
                )
            if _int_bits(kind, left, right) > MAX_INT_BITS:
                raise ExprError(
                    _("a whole number in this formula is too large (over {bits} bits)").format(
                        bits=MAX_INT_BITS
                    )
                )
        return op(left, right)

    return apply


def _round_decimals(function: Callable[..., Any]) -> Callable[..., Any]:
    """``jnp.round`` with ``decimals`` capped (JAX computes ``10 ** decimals`` in Python)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        decimals = kwargs.get("decimals", args[1] if len(args) > 1 else 0)
        if not _is_int(decimals) or abs(decimals) > MAX_DECIMALS:
            raise ExprError(
                _("decimals must be a whole number from -{n} to {n}").format(n=MAX_DECIMALS)
            )
        return function(*args, **kwargs)

    return call


class _Checker:
    """Walks the tree once, refusing what is not allowed and building closures for the rest."""

    def __init__(self, variables: frozenset[str], jnp_module: Any, nn_module: Any) -> None:
        self.variables = variables
        self.jnp = jnp_module
        self.nn = nn_module
        self.used: set[str] = set()

    def fail(self, node: ast.AST, message: str) -> ExprError:
        col = getattr(node, "col_offset", None)
        return ExprError(message, getattr(node, "lineno", 1), None if col is None else col + 1)

    def fold(self, node: ast.AST, evaluate: Evaluator, *operands: ast.AST) -> Evaluator:
        """Evaluate a sub-expression of constants now, so a bad one is refused while checking.

        Only plain numbers are folded (no variables, no calls); the guarded operators bound
        their size, and an error is reported at ``node``'s column.
        """
        if not all(_is_number_constant(o) for o in operands):
            return evaluate
        try:
            value = evaluate({})
        except ExprError as err:
            raise self.fail(node, err.message) from None
        except (ArithmeticError, ValueError, TypeError) as err:
            raise self.fail(node, f"{type(err).__name__}: {err}") from None
        return lambda env: value

    def build(self, node: ast.AST, depth: int) -> Evaluator:
        if depth > MAX_DEPTH:
            raise self.fail(
                node, _("the formula is nested more than {n} levels deep").format(n=MAX_DEPTH)
            )
        method = getattr(self, f"_build_{type(node).__name__}", None)
        if method is None:
            known = _NODE_NAMES.get(type(node))
            what = _(known) if known else _("'{kind}' expressions").format(kind=type(node).__name__)
            raise self.fail(node, _("{what} are not allowed").format(what=what))
        return method(node, depth)

    def _build_Constant(self, node: ast.Constant, depth: int) -> Evaluator:
        value = node.value
        if isinstance(value, bool) or value is None or value is Ellipsis:
            return lambda env: value
        if isinstance(value, (int, float, complex)):
            return lambda env: value
        raise self.fail(
            node, _("constants of type {kind} are not allowed").format(kind=type(value).__name__)
        )

    def _build_Name(self, node: ast.Name, depth: int) -> Evaluator:
        name = node.id
        if name in self.variables:
            self.used.add(name)
            return lambda env: env[name]
        if name in {"True", "False", "None"}:
            constant = {"True": True, "False": False, "None": None}[name]
            return lambda env: constant
        allowed = ", ".join(sorted(self.variables)) or "none"
        raise self.fail(
            node,
            _("unknown name {name} (variables: {allowed}; functions: jnp.*)").format(
                name=repr(name), allowed=allowed
            ),
        )

    def _build_BinOp(self, node: ast.BinOp, depth: int) -> Evaluator:
        base = _BINARY.get(type(node.op))
        if base is None:
            raise self.fail(
                node, _("operator {op} is not allowed").format(op=type(node.op).__name__)
            )
        op = _guarded(type(node.op), base)
        for side in (node.left, node.right):
            if isinstance(side, ast.List | ast.Tuple):
                symbol = _SYMBOLS.get(type(node.op), "")
                raise self.fail(
                    side,
                    _(
                        "'{symbol}' on a list or tuple is not allowed (do arithmetic on arrays)"
                    ).format(symbol=symbol),
                )
        left = self.build(node.left, depth + 1)
        right = self.build(node.right, depth + 1)
        return self.fold(node, lambda env: op(left(env), right(env)), node.left, node.right)

    def _build_UnaryOp(self, node: ast.UnaryOp, depth: int) -> Evaluator:
        op = _UNARY.get(type(node.op))
        if op is None:
            raise self.fail(
                node, _("operator {op} is not allowed").format(op=type(node.op).__name__)
            )
        operand = self.build(node.operand, depth + 1)
        return self.fold(node, lambda env: op(operand(env)), node.operand)

    def _build_Compare(self, node: ast.Compare, depth: int) -> Evaluator:
        if len(node.ops) != 1:
            raise self.fail(node, _("chained comparisons (a < b < c) are not allowed"))
        op = _COMPARE.get(type(node.ops[0]))
        if op is None:
            raise self.fail(
                node, _("comparison {op} is not allowed").format(op=type(node.ops[0]).__name__)
            )
        left = self.build(node.left, depth + 1)
        right = self.build(node.comparators[0], depth + 1)
        return lambda env: op(left(env), right(env))

    def _build_Tuple(self, node: ast.Tuple, depth: int) -> Evaluator:
        if len(node.elts) > MAX_LIST_ITEMS:
            raise self.fail(node, _("a tuple may hold at most {n} items").format(n=MAX_LIST_ITEMS))
        items = [self.build(e, depth + 1) for e in node.elts]
        return lambda env: tuple(item(env) for item in items)

    def _build_List(self, node: ast.List, depth: int) -> Evaluator:
        if len(node.elts) > MAX_LIST_ITEMS:
            raise self.fail(node, _("a list may hold at most {n} items").format(n=MAX_LIST_ITEMS))
        items = [self.build(e, depth + 1) for e in node.elts]
        return lambda env: [item(env) for item in items]

    def _build_Slice(self, node: ast.Slice, depth: int) -> Evaluator:
        parts = [
            None if part is None else self.build(part, depth + 1)
            for part in (node.lower, node.upper, node.step)
        ]
        return lambda env: slice(*(None if p is None else p(env) for p in parts))

    def _build_Subscript(self, node: ast.Subscript, depth: int) -> Evaluator:
        value = self.build(node.value, depth + 1)
        index = self.build(node.slice, depth + 1)
        return lambda env: value(env)[index(env)]

    def _build_Attribute(self, node: ast.Attribute, depth: int) -> Evaluator:
        dotted = _dotted(node) or []  # [] when not a plain dotted name
        if len(dotted) == 2 and dotted[0] == "jnp" and dotted[1] in JNP_CONSTANTS:
            constant = getattr(self.jnp, dotted[1])
            return lambda env: constant
        base = _dotted(node.value)
        if node.attr == "T" and (base is None or base[0] in self.variables):
            value = self.build(node.value, depth + 1)
            return lambda env: value(env).T
        name = ".".join(dotted) if dotted else node.attr
        if node.attr.startswith("_"):
            raise self.fail(
                node,
                _("attribute {name} is not allowed (no underscores)").format(name=repr(node.attr)),
            )
        raise self.fail(
            node,
            _("{name} is not allowed here (only jnp.pi, jnp.e, ... and x.T)").format(
                name=repr(name)
            ),
        )

    def _build_Call(self, node: ast.Call, depth: int) -> Evaluator:
        function = self._function(node.func)
        args = [self.build(a, depth + 1) for a in node.args]
        kwargs: list[tuple[str, Evaluator]] = []
        for keyword in node.keywords:
            if keyword.arg is None:
                raise self.fail(keyword, _("**keyword arguments are not allowed"))
            if keyword.arg not in KEYWORDS:
                raise self.fail(
                    keyword.value,
                    _("keyword argument {name} is not allowed").format(name=repr(keyword.arg)),
                )
            kwargs.append((keyword.arg, self.build(keyword.value, depth + 1)))
        return lambda env: function(*(a(env) for a in args), **{k: v(env) for k, v in kwargs})

    def _function(self, func: ast.expr) -> Callable[..., Any]:
        dotted = _dotted(func)
        if dotted is None:
            raise self.fail(func, _("only jnp.* and jax.nn.* functions can be called"))
        name = ".".join(dotted)
        if any(part.startswith("_") for part in dotted):
            raise self.fail(
                func, _("{name} is not allowed (no underscores)").format(name=repr(name))
            )
        if len(dotted) == 2 and dotted[0] == "jnp" and dotted[1] in JNP_FUNCTIONS:
            function = getattr(self.jnp, dotted[1])
            return _round_decimals(function) if dotted[1] == "round" else function
        if len(dotted) == 3 and dotted[:2] == ["jnp", "linalg"] and dotted[2] in LINALG_FUNCTIONS:
            return getattr(self.jnp.linalg, dotted[2])
        if len(dotted) == 3 and dotted[:2] == ["jax", "nn"] and dotted[2] in NN_FUNCTIONS:
            return getattr(self.nn, dotted[2])
        if len(dotted) == 1:
            raise self.fail(
                func,
                _("calling {name} is not allowed (write jnp.{bare} if it exists)").format(
                    name=repr(name), bare=name
                ),
            )
        raise self.fail(
            func, _("function {name} is not in the allowed list").format(name=repr(name))
        )


def _is_number_constant(node: ast.AST) -> bool:
    """A literal number, or arithmetic of literal numbers only (folded while checking)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float | complex) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _is_number_constant(node.operand)
    if isinstance(node, ast.BinOp):
        return _is_number_constant(node.left) and _is_number_constant(node.right)
    return False


def _dotted(node: ast.expr) -> list[str] | None:
    """``jnp.linalg.norm`` as ``["jnp", "linalg", "norm"]``; ``None`` if not a plain dotted name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def allowed_functions() -> list[str]:
    """Every callable name a formula may use, for the help text beside a formula box."""
    return sorted(
        [f"jnp.{n}" for n in JNP_FUNCTIONS]
        + [f"jnp.linalg.{n}" for n in LINALG_FUNCTIONS]
        + [f"jax.nn.{n}" for n in NN_FUNCTIONS]
    )

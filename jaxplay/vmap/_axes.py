"""``in_axes`` and ``out_axes``: read safely, applied to the article's function, explained.

Why: most vmap bugs are wrong ``in_axes``, and JAX's messages about them are precise but terse.
This runs the article's ``process_single_example`` (from :mod:`jaxplay.article`) under any
``in_axes``/``out_axes`` a visitor types (parsed with ``ast``, never evaluated), reports each
input's shape with its mapped axis, checks the result against a loop, and puts JAX's refusal into
plain words next to its own message.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Sequence
from dataclasses import dataclass

import jax
import numpy as np

from jaxplay.article import (
    process_single_example,
)
from jaxplay.core import claims, timing, words
from jaxplay.core.errors import Explanation, FriendlyError, InputError, explain_error
from jaxplay.core.i18n import N_, _, ngettext

MAX_AXES_TEXT = 80
#: The largest ``|axis|`` the box reads: a bound on the text only. Whether an axis exists is for
#: JAX to say, per input (its error names the input's rank), so the page can give the limit for
#: *this* X rather than a number of its own.
MAX_AXIS = 1_000
MAX_AXES_DEPTH = 4

AxisSpec = int | None | tuple["AxisSpec", ...] | list["AxisSpec"]


class AxesError(InputError):
    """An ``in_axes``/``out_axes`` text that is not a valid spec; ``field`` says which."""

    def __init__(
        self, message: str, col: int | None = None, field: str = "", text: str = ""
    ) -> None:
        super().__init__(message, text=text, col=col)
        self.field = field


def parse_axes(text: str, what: str = "in_axes") -> AxisSpec:
    """Read an axis spec such as ``(0, None)`` or ``(1, (0, None))`` without evaluating code.

    Only integers (|axis| ≤ :data:`MAX_AXIS`), ``None`` and tuples/lists of those are accepted:
    the text is parsed with ``ast`` and each node is checked, so nothing the visitor types runs.

    Raises:
        AxesError: with what is wrong and where.
    """
    text = text.strip()

    def fail(message: str, col: int | None = None) -> AxesError:
        return AxesError(message, col, what, text)

    if not text:
        raise fail(_("{what} is empty: write e.g. 0, None or (0, None)").format(what=what))
    if len(text) > MAX_AXES_TEXT:
        raise fail(
            _("{what} is {n} characters long; the limit is {limit}").format(
                what=what, n=len(text), limit=MAX_AXES_TEXT
            )
        )
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as err:
        hint = words.ascii_hint(text)
        message = _("{what} is not valid: {reason}.").format(what=what, reason=err.msg)
        raise fail(message + hint, err.offset) from None

    def build(node: ast.AST, depth: int) -> AxisSpec:
        col = getattr(node, "col_offset", 0) + 1
        if depth > MAX_AXES_DEPTH:
            message = _("{what} is nested more than {depth} levels deep")
            raise fail(message.format(what=what, depth=MAX_AXES_DEPTH), col)
        if isinstance(node, ast.Tuple):
            return tuple(build(e, depth + 1) for e in node.elts)
        if isinstance(node, ast.List):
            # Kept a list: JAX reads a list of the arguments' entries as their tuple, and refuses
            # one inside, where it must mirror a tuple (the params) or an array.
            return [build(e, depth + 1) for e in node.elts]
        if isinstance(node, ast.Constant) and node.value is None:
            return None
        sign = 1
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            sign, node = -1, node.operand
        if isinstance(node, ast.Constant) and type(node.value) is int:
            axis = sign * node.value
            if abs(axis) > MAX_AXIS:
                message = _("{what}: axis {axis} is far out of range (no array here has it)")
                raise fail(message.format(what=what, axis=axis), col)
            return axis
        raise fail(
            _("{what} may only hold integers, None, tuples and lists").format(what=what), col
        )

    return build(tree.body, 1)


def format_axes(spec: AxisSpec) -> str:
    """The spec as Python writes it: ``(0, None)``, ``(1,)``."""
    return repr(spec)


# --- the in_axes editor --------------------------------------------------------------------------

#: Editor sizes: batch 8, input width D = 5, output width H = 3 (all different, so a wrong axis
#: shows up as a size mismatch instead of silently computing the wrong thing).
EDITOR_BATCH, EDITOR_D, EDITOR_H = 8, 5, 3
#: The choices' values (English, in links and tests); the page shows them with ``_``.
LAYOUTS = (N_("X is (batch, D)"), N_("X is (D, batch)"))
W_CHOICES = (N_("W shared: (H, D)"), N_("W per example: (batch, H, D)"))
#: W's batch axis in each choice: the axis in_axes must map for the per-example W (None: shared).
W_BATCH_AXIS: dict[str, int | None] = {W_CHOICES[0]: None, W_CHOICES[1]: 0}
ARG_LEAVES = ("x", "params[0] (W)", "params[1] (b)")


def editor_inputs(layout: str, w_choice: str) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """``X, (W, b)`` for the editor, laid out as chosen (deterministic values)."""
    if layout not in LAYOUTS or w_choice not in W_CHOICES:
        raise ValueError(f"unknown layout {layout!r} / {w_choice!r}")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((EDITOR_BATCH, EDITOR_D)).astype(np.float32)
    if layout == LAYOUTS[1]:
        X = X.T.copy()
    shape = (EDITOR_H, EDITOR_D) if w_choice == W_CHOICES[0] else (EDITOR_BATCH, EDITOR_H, EDITOR_D)
    W = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(EDITOR_H).astype(np.float32)
    return X, (W, b)


@claims.states_nothing("poses the editor's question; the answer is JAX's to give")
def puzzle_intro() -> str:
    """The question the editor poses (Markdown): :func:`correct_axes` is its answer, so the two
    are kept side by side, with the batch the editor's inputs really have."""
    return _(
        "**The puzzle:** {n} examples are stacked in X, and W is shared or given per example. "
        "Which `in_axes` make `batch_process(X, (W, b))` compute `W @ x + b` for each "
        "example, as a loop would? Pick a layout, type your answer, and see what JAX does."
    ).format(n=EDITOR_BATCH)


def correct_axes(layout: str, w_choice: str) -> str:
    """The ``in_axes`` that mean "one example per batch entry" for a layout (the answer key)."""
    x_axis = 0 if layout == LAYOUTS[0] else 1
    return f"({x_axis}, None)" if w_choice == W_CHOICES[0] else f"({x_axis}, (0, None))"


def reference_outputs(layout: str, w_choice: str) -> np.ndarray:
    """Per-example ``W x + b`` by a plain numpy loop, shape (batch, H): what vmap should give.

    The product is written out (multiply, then sum) rather than ``@``: numpy's BLAS matmul on
    these tiny operands intermittently raised a spurious floating-point warning, which the tests
    turn into an error; the sum is the same arithmetic without BLAS.
    """
    X, (W, b) = editor_inputs(layout, w_choice)
    xs = X if layout == LAYOUTS[0] else X.T
    Ws = [W] * EDITOR_BATCH if W.ndim == 2 else list(W)
    return np.stack([(Ws[i] * xs[i]).sum(axis=-1) + b for i in range(EDITOR_BATCH)])


@dataclass(frozen=True)
class ShapeRow:
    """One input array: its shape and which axis (if any) vmap maps over."""

    name: str
    shape: tuple[int, ...]
    axis: int | None

    @property
    def per_call(self) -> tuple[int, ...]:
        """The shape one example sees: the mapped axis removed (unmapped inputs whole)."""
        if self.axis is None or not 0 <= self.axis < len(self.shape):
            return self.shape
        return self.shape[: self.axis] + self.shape[self.axis + 1 :]

    def markdown(self) -> str:
        """``(:orange-background[**8**], 5)``: the mapped axis marked, in Streamlit markdown."""
        parts = [
            f":orange-background[**{n}**]" if self.axis is not None and i == self.axis else str(n)
            for i, n in enumerate(self.shape)
        ]
        inner = ", ".join(parts) + ("," if len(parts) == 1 else "")
        return f"({inner})"


@claims.states_nothing("the shapes of the editor's inputs and the axes the visitor typed")
def shape_sentence(row: ShapeRow) -> str:
    """One input's line under the editor (Markdown): its shape with the mapped axis marked, and
    the shape the function sees (vmap traces it once, for one example: there is no call per
    example). Why a line per input: a wrong axis shows up as a shape that is not one example's,
    before JAX says anything."""
    if row.axis is None:
        line = _("`{name}`: {shape} — not mapped; the function sees all of it, `{per_call}`")
    elif not 0 <= row.axis < len(row.shape):
        line = _("`{name}`: {shape} — axis {axis} asked for, which it does not have")
    else:
        line = _("`{name}`: {shape} — axis {axis} mapped; the function sees `{per_call}`")
    return line.format(name=row.name, shape=row.markdown(), axis=row.axis, per_call=row.per_call)


def leaf_axes(
    spec: AxisSpec, shapes: Sequence[Sequence[tuple[int, ...]]]
) -> list[int | None] | None:
    """Broadcast an in_axes prefix over the arguments' leaves; ``None`` if it does not fit.

    ``shapes[i]`` lists the leaf shapes of argument i (x has one leaf; params two). A negative axis
    is normalised against the leaf's rank. The result is only for display; JAX decides validity.
    """

    def spread(entry: AxisSpec, leaves: Sequence[tuple[int, ...]]) -> list[int | None] | None:
        if isinstance(entry, list):
            return None  # a list mirrors no argument's structure here (JAX refuses it)
        if isinstance(entry, tuple):
            if len(leaves) == 1 or len(entry) != len(leaves):
                return None
            out: list[int | None] = []
            for e, leaf in zip(entry, leaves, strict=True):
                sub = spread(e, [leaf])
                if sub is None:
                    return None
                out.extend(sub)
            return out
        if entry is None:
            return [None for _ in leaves]
        return [entry % len(s) if len(s) and -len(s) <= entry < len(s) else entry for s in leaves]

    if isinstance(spec, list):
        spec = tuple(spec)  # the arguments' entries, as JAX reads a list of them
    if not isinstance(spec, tuple):
        return spread(spec, [s for arg in shapes for s in arg])
    if len(spec) != len(shapes):
        return None
    out: list[int | None] = []
    for entry, leaves in zip(spec, shapes, strict=True):
        sub = spread(entry, leaves)
        if sub is None:
            return None
        out.extend(sub)
    return out


@claims.states_nothing("restates the rank and shape JAX's own error message names")
def _axis_range(axis: str, _rank_needed: str, rank: str, shape: str) -> str:
    """The axes an input of ``rank`` axes has, by number: ``0 or 1 (−1 or −2 from the end)``."""
    n = int(rank)
    if n == 0:
        return _(
            "Axis {axis} does not exist on an input of shape {shape}: it is a scalar, with no "
            "axis to map. Give it None."
        ).format(axis=axis, shape=shape)
    forward = words.either([str(i) for i in range(n)])
    backward = words.either([f"−{i}" for i in range(1, n + 1)])
    return ngettext(
        "Axis {axis} does not exist on an input of shape {shape}: it has {n} axis, so its axis "
        "is {forward} ({backward} from the end).",
        "Axis {axis} does not exist on an input of shape {shape}: it has {n} axes, so its axis "
        "is {forward} ({backward} from the end).",
        n,
    ).format(axis=axis, shape=shape, n=f"{n:,}", forward=forward, backward=backward)


#: JAX's refusal of ``W @ x`` when x's length is not W's width.
_DOT_MISMATCH = (
    r"dot_general requires contracting dimensions to have the same shape, got \((\d+),\) "
    r"and \((\d+),\)"
)


#: (pattern in JAX's message, plain explanation). Each explanation is a function of the pattern's
#: groups, called when the error is explained, so that it speaks the visitor's language.
_VMAP_ERRORS: tuple[tuple[str, Explanation], ...] = (
    (
        r"inconsistent sizes for array axes to be mapped",
        lambda: _(
            "Every mapped axis must have the same length (the batch size), but they differ. "
            "Map the axis that holds the batch in every input, and None for inputs that every "
            "example shares."
        ),
    ),
    (
        r"len\(in_axes\)=(\d+), len\(args\)=(\d+)",
        lambda entries, args: ngettext(
            "in_axes has {entries} entry but the function takes {args} arguments (x, params): "
            "give one entry per argument.",
            "in_axes has {entries} entries but the function takes {args} arguments (x, params): "
            "give one entry per argument.",
            int(entries),
        ).format(entries=entries, args=args),
    ),
    (
        r"along axis (-?\d+), which implies that its rank should be at least (\d+), but is only "
        r"(\d+) \(its shape is (\(.*?\))\)",
        _axis_range,
    ),
    (
        r"at least one non-None value in in_axes",
        lambda: _(
            "Nothing is mapped: every entry of in_axes is None, so vmap cannot tell the batch "
            "size (JAX asks for a mapped input, or `axis_size`). Map at least one input."
        ),
    ),
    (
        r"in_axes specification must be a tree prefix of the corresponding value",
        lambda: _(
            "in_axes must mirror the arguments' structure: one entry per argument, and for "
            "params either one entry for both W and b or a pair written as a tuple, (axis for "
            "W, axis for b): params is the tuple (W, b), and a list does not mirror it."
        ),
    ),
    (
        r"out_axes specification must be a tree prefix of the corresponding value",
        lambda: _(
            "out_axes must mirror the output's structure: the function returns one array, so "
            "give one integer (or None)."
        ),
    ),
    (
        _DOT_MISMATCH,
        lambda needed, got: _(
            "vmap accepted the axes, but then each example's x had the wrong length: W @ x "
            "needs {needed} numbers and the slice along the mapped axis has {got}. The mapped "
            "axis of x is not its batch axis."
        ).format(needed=needed, got=got),
    ),
    (
        r"got axis spec None but output was batched",
        lambda: _(
            "out_axes=None promises one output shared by all examples, but the output depends "
            "on the mapped inputs. Give out_axes an integer: where the batch axis goes in the "
            "output."
        ),
    ),
    (
        r"axis (-?\d+) is out of bounds for array of dimension (\d+)",
        lambda axis, ndim: _(
            "out_axes={axis} does not exist: the batched output has {ndim} axes."
        ).format(axis=axis, ndim=ndim),
    ),
    (
        r"[Ii]ncompatible shapes for broadcasting",
        lambda: _("vmap accepted the axes, but the per-example shapes no longer fit W @ x + b."),
    ),
)


@dataclass(frozen=True)
class VmapOutcome:
    """What ``vmap(process_single_example, in_axes, out_axes)`` did with the editor's inputs.

    Attributes:
        code: the call as code.
        rows: the input arrays with their mapped axes (``axis`` is None for unmapped or unknown).
        output_shape: the result's shape, or None when JAX refused.
        matches_loop: whether the result equals the per-example loop (None when JAX refused).
        error: JAX's refusal explained, or None.
    """

    code: str
    rows: tuple[ShapeRow, ...]
    output_shape: tuple[int, ...] | None
    matches_loop: bool | None
    error: FriendlyError | None


def apply_axes(in_axes: AxisSpec, out_axes: AxisSpec, layout: str, w_choice: str) -> VmapOutcome:
    """Run the article's function under the visitor's axes and report shapes, result or reason."""
    X, (W, b) = editor_inputs(layout, w_choice)
    axes = leaf_axes(in_axes, [[X.shape], [W.shape, b.shape]])
    # No lines for a spec that does not fit the arguments: "not mapped" would contradict the
    # axes typed (JAX's refusal says why).
    rows = tuple(
        ShapeRow(name, tuple(a.shape), axis)
        for name, a, axis in zip(ARG_LEAVES, (X, W, b), axes or (), strict=False)
    )
    code = (
        f"batch_process = vmap(process_single_example, in_axes={format_axes(in_axes)}, "
        f"out_axes={format_axes(out_axes)})\nbatch_process(X, (W, b))"
    )
    try:
        out = jax.vmap(process_single_example, in_axes=in_axes, out_axes=out_axes)(X, (W, b))
        out = np.asarray(timing.block(out))
    except (ValueError, TypeError) as err:
        table = _VMAP_ERRORS
        if axes is not None and axes[0] is None:  # x not mapped: the function sees all of X
            table = ((_DOT_MISMATCH, _x_unmapped(X.shape)), *_VMAP_ERRORS)
        elif axes is not None and axes[1] != W_BATCH_AXIS[w_choice]:  # W sliced wrongly too
            table = ((_DOT_MISMATCH, _w_mis_mapped(rows[1].per_call, rows[0].per_call)),)
            table += _VMAP_ERRORS
        return VmapOutcome(code, rows, None, None, explain_error(err, table))
    expected = reference_outputs(layout, w_choice)
    matches = False
    if isinstance(out_axes, int) and out.ndim == 2 and -2 <= out_axes < 2:
        moved = np.moveaxis(out, out_axes, 0)
        matches = moved.shape == expected.shape and bool(np.allclose(moved, expected, atol=1e-4))
    return VmapOutcome(code, rows, tuple(out.shape), matches, None)


def _w_mis_mapped(w: tuple[int, ...], x: tuple[int, ...]) -> Explanation:
    """The dot's refusal explained where W is mapped along an axis that is not its batch axis
    (the table's sentence blames x alone, and W's slice is as wrong)."""
    return lambda needed, got: _(
        "vmap accepted the axes, but the slices no longer fit W @ x: the function sees W of "
        "shape {w} and x of shape {x}, and the product needs W's last axis ({needed}) to match "
        "x's length ({got}). Check the mapped axes of both x and W: each must be that input's "
        "batch axis (W shared has none)."
    ).format(w=w, x=x, needed=needed, got=got)


def _x_unmapped(shape: tuple[int, ...]) -> Explanation:
    """The dot's refusal explained for an x that is not mapped (the table's sentence speaks of
    a slice along x's mapped axis)."""
    return lambda needed, got: _(
        "vmap accepted the axes, but x is not mapped: every call gets the whole X, of shape "
        "{shape}, and W @ x needs {needed} numbers along the axis where X has {got}. Map x's "
        "batch axis."
    ).format(shape=shape, needed=needed, got=got)


class AxesVerdict(enum.Enum):
    """How the visitor's axes fared: JAX refused them, the result is the loop's, or it runs and
    computes something else (the silent bug the editor exists to show). The page picks how to
    show each; the sentence comes from :func:`axes_verdict`."""

    REFUSED = "refused"
    SAME_AS_LOOP = "same as loop"
    NOT_PER_EXAMPLE = "not per example"


@claims.states_nothing("this run's own comparison with a numpy loop, or JAX's refusal explained")
def axes_verdict(result: VmapOutcome) -> tuple[AxesVerdict, str]:
    """The outcome's verdict and its sentence (Markdown, in the visitor's language).

    Why one function: the three outcomes are exclusive, and a refusal wins over any result.
    """
    if result.error is not None:
        return AxesVerdict.REFUSED, _("**JAX refuses:** {reason}").format(reason=result.error.plain)
    if result.matches_loop:
        return AxesVerdict.SAME_AS_LOOP, _(
            "Output shape {shape}: the same numbers as a loop over the {n} examples."
        ).format(shape=result.output_shape, n=EDITOR_BATCH)
    return AxesVerdict.NOT_PER_EXAMPLE, _(
        "It runs, with output shape {shape}, but these are not the per-example "
        "results W x + b: the mapped axes do not match the batch axes (an input's batch axis "
        "left unmapped, or a mapped axis that is not its batch axis)."
    ).format(shape=result.output_shape)

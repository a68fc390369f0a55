"""``jax.vmap`` you can look at: the logic behind the vmap page.

``vmap`` turns a function written for one example into one for a batch, and ``in_axes`` says
where the batch axis is in each argument. Most vmap bugs are wrong ``in_axes``; JAX's messages
about them are precise but terse. This module runs the article's ``process_single_example`` under
any ``in_axes``/``out_axes`` a visitor types (parsed without ``eval``), reports the shapes with the
mapped axis marked, translates JAX's refusal into plain words, times the Python loop against
``vmap`` and ``jit(vmap)``, runs the article's nested-vmap convolution against library
convolutions, and shows the jaxprs that prove vmap batches primitives rather than looping.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from jaxplay.core import roofline, timing
from jaxplay.core.errors import FriendlyError, explain_error
from jaxplay.core.figures import bar_ends, format_count, log_axis, seconds_axis, timing_line

# --- the article's code --------------------------------------------------------------------------


def process_single_example(x, params):  # the article's code, as written
    W, b = params
    return jnp.dot(W, x) + b


def manual_batch_process(X, params):  # the article's code, as written
    outputs = []
    for i in range(X.shape[0]):
        outputs.append(process_single_example(X[i], params))
    return jnp.stack(outputs)


# --- in_axes / out_axes, parsed safely -----------------------------------------------------------

MAX_AXES_TEXT = 80
MAX_AXIS = 8
MAX_AXES_DEPTH = 4

AxisSpec = int | None | tuple["AxisSpec", ...]


class AxesError(ValueError):
    """An ``in_axes``/``out_axes`` text that is not a valid spec.

    Attributes:
        message: what is wrong.
        col: 1-based column of the offending part (None when it concerns the whole text).
        field: ``"in_axes"`` or ``"out_axes"``.
        text: the text as typed.
    """

    def __init__(
        self, message: str, col: int | None = None, field: str = "", text: str = ""
    ) -> None:
        self.message = message
        self.col = col
        self.field = field
        self.text = text
        super().__init__(message if col is None else f"{message} (column {col})")

    def pointer(self) -> str:
        """The text with a caret under the offending column ("" without a column)."""
        if self.col is None:
            return ""
        return f"{self.text}\n{' ' * (self.col - 1)}^"


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
        raise fail(f"{what} is empty: write e.g. 0, None or (0, None)")
    if len(text) > MAX_AXES_TEXT:
        raise fail(f"{what} is {len(text)} characters long; the limit is {MAX_AXES_TEXT}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as err:
        raise fail(f"{what} is not valid: {err.msg}", err.offset) from None

    def build(node: ast.AST, depth: int) -> AxisSpec:
        col = getattr(node, "col_offset", 0) + 1
        if depth > MAX_AXES_DEPTH:
            raise fail(f"{what} is nested more than {MAX_AXES_DEPTH} levels deep", col)
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(build(e, depth + 1) for e in node.elts)
        if isinstance(node, ast.Constant) and node.value is None:
            return None
        sign = 1
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            sign, node = -1, node.operand
        if isinstance(node, ast.Constant) and type(node.value) is int:
            axis = sign * node.value
            if abs(axis) > MAX_AXIS:
                raise fail(f"{what}: axis {axis} is out of range (the limit is ±{MAX_AXIS})", col)
            return axis
        raise fail(f"{what} may only hold integers, None and tuples", col)

    return build(tree.body, 1)


def format_axes(spec: AxisSpec) -> str:
    """The spec as Python writes it: ``(0, None)``, ``(1,)``."""
    return repr(spec)


# --- the in_axes editor --------------------------------------------------------------------------

#: Editor sizes: batch 8, input width D = 5, output width H = 3 (all different, so a wrong axis
#: shows up as a size mismatch instead of silently computing the wrong thing).
EDITOR_BATCH, EDITOR_D, EDITOR_H = 8, 5, 3
LAYOUTS = ("X is (batch, D)", "X is (D, batch)")
W_CHOICES = ("W shared: (H, D)", "W per example: (batch, H, D)")
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


def correct_axes(layout: str, w_choice: str) -> str:
    """The ``in_axes`` that mean "one example per batch entry" for a layout (the answer key)."""
    x_axis = 0 if layout == LAYOUTS[0] else 1
    return f"({x_axis}, None)" if w_choice == W_CHOICES[0] else f"({x_axis}, (0, None))"


def reference_outputs(layout: str, w_choice: str) -> np.ndarray:
    """Per-example ``W x + b`` by a plain numpy loop, shape (batch, H): what vmap should give."""
    X, (W, b) = editor_inputs(layout, w_choice)
    xs = X if layout == LAYOUTS[0] else X.T
    Ws = [W] * EDITOR_BATCH if W.ndim == 2 else list(W)
    return np.stack([Ws[i] @ xs[i] + b for i in range(EDITOR_BATCH)])


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


def leaf_axes(
    spec: AxisSpec, shapes: Sequence[Sequence[tuple[int, ...]]]
) -> list[int | None] | None:
    """Broadcast an in_axes prefix over the arguments' leaves; ``None`` if it does not fit.

    ``shapes[i]`` lists the leaf shapes of argument i (x has one leaf; params two). A negative axis
    is normalised against the leaf's rank. The result is only for display; JAX decides validity.
    """

    def spread(entry: AxisSpec, leaves: Sequence[tuple[int, ...]]) -> list[int | None] | None:
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
            return [None] * len(leaves)
        return [entry % len(s) if len(s) and -len(s) <= entry < len(s) else entry for s in leaves]

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


#: (pattern in JAX's message, plain explanation). ``{0}``, ``{1}`` ... are the pattern's groups.
_VMAP_ERRORS: tuple[tuple[str, str], ...] = (
    (
        r"inconsistent sizes for array axes to be mapped",
        "Every mapped axis must have the same length (the batch size), but they differ. "
        "Map the axis that holds the batch in every input, and None for inputs that every "
        "example shares.",
    ),
    (
        r"len\(in_axes\)=(\d+), len\(args\)=(\d+)",
        "in_axes has {0} entries but the function takes {1} arguments (x, params): give one "
        "entry per argument.",
    ),
    (
        r"along axis (-?\d+), which implies that its rank should be at least (\d+), but is only "
        r"(\d+) \(its shape is (\(.*?\))\)",
        "Axis {0} does not exist on an input of shape {3}: it has {2} axes, numbered 0 to "
        "rank − 1.",
    ),
    (
        r"at least one non-None value in in_axes",
        "Nothing is mapped: every entry of in_axes is None, so vmap has no batch to loop over. "
        "Map at least one input.",
    ),
    (
        r"tree prefix of the corresponding value",
        "in_axes must mirror the arguments' structure: one entry per argument, and for params "
        "either one entry for both W and b or a pair (axis for W, axis for b).",
    ),
    (
        r"dot_general requires contracting dimensions to have the same shape, got \((\d+),\) "
        r"and \((\d+),\)",
        "vmap accepted the axes, but then each example's x had the wrong length: W @ x needs "
        "{0} numbers and the slice along the mapped axis has {1}. The mapped axis of x is not "
        "its batch axis.",
    ),
    (
        r"got axis spec None but output was batched",
        "out_axes=None promises one output shared by all examples, but the output depends on "
        "the mapped inputs. Give out_axes an integer: where the batch axis goes in the output.",
    ),
    (
        r"axis (-?\d+) is out of bounds for array of dimension (\d+)",
        "out_axes={0} does not exist: the batched output has {1} axes.",
    ),
    (
        r"[Ii]ncompatible shapes for broadcasting",
        "vmap accepted the axes, but the per-example shapes no longer fit W @ x + b.",
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
    axes = leaf_axes(in_axes, [[X.shape], [W.shape, b.shape]]) or [None, None, None]
    rows = tuple(
        ShapeRow(name, tuple(a.shape), axis)
        for name, a, axis in zip(ARG_LEAVES, (X, W, b), axes, strict=True)
    )
    code = (
        f"batch_process = vmap(process_single_example, in_axes={format_axes(in_axes)}, "
        f"out_axes={format_axes(out_axes)})\nbatch_process(X, (W, b))"
    )
    try:
        out = jax.vmap(process_single_example, in_axes=in_axes, out_axes=out_axes)(X, (W, b))
        out = np.asarray(timing.block(out))
    except (ValueError, TypeError) as err:
        return VmapOutcome(code, rows, None, None, explain_error(err, _VMAP_ERRORS))
    expected = reference_outputs(layout, w_choice)
    matches = False
    if isinstance(out_axes, int) and out.ndim == 2 and -2 <= out_axes < 2:
        moved = np.moveaxis(out, out_axes, 0)
        matches = moved.shape == expected.shape and bool(np.allclose(moved, expected, atol=1e-4))
    return VmapOutcome(code, rows, tuple(out.shape), matches, None)


# --- Python loop vs vmap vs jit(vmap) ------------------------------------------------------------

MAX_TIMING_BATCH = 1024
TIMING_D_IN, TIMING_D_OUT = 784, 256
METHODS = ("Python loop", "vmap", "jit(vmap)")


@dataclass(frozen=True)
class BatchTiming:
    """Per-call times of the three ways of batching, for each batch size."""

    batch_sizes: tuple[int, ...]
    d_in: int
    d_out: int
    timings: dict[str, tuple[timing.Timing, ...]]
    device: str
    agree: bool


def check_batch_sizes(batch_sizes: Sequence[int], limit: int = MAX_TIMING_BATCH) -> tuple[int, ...]:
    """Sorted distinct sizes, refusing any outside 1..``limit`` (the message names the limit)."""
    sizes = tuple(sorted({int(n) for n in batch_sizes}))
    if not sizes:
        raise ValueError("choose at least one batch size")
    if sizes[0] < 1 or sizes[-1] > limit:
        raise ValueError(f"batch sizes must be 1 to {limit} (got {sizes[-1]})")
    return sizes


def time_batching(
    batch_sizes: Sequence[int],
    d_in: int = TIMING_D_IN,
    d_out: int = TIMING_D_OUT,
    budget_s: float = 0.3,
    on_progress: Callable[[float, str], None] | None = None,
) -> BatchTiming:
    """Time the article's loop, ``vmap`` and ``jit(vmap)`` at each batch size with ``measure``.

    The arrays are the article's (``X (n, 784)``, ``W (256, 784)``, ``b (256,)``, key 42). Before
    timing, the three results are checked to agree, so the chart compares equal work.
    """
    sizes = check_batch_sizes(batch_sizes)
    key = jax.random.key(42)
    params = (jax.random.normal(key, (d_out, d_in)), jax.random.normal(key, (d_out,)))
    batched = jax.vmap(process_single_example, in_axes=(0, None))
    methods: dict[str, Callable[..., Any]] = {
        METHODS[0]: manual_batch_process,
        METHODS[1]: batched,
        METHODS[2]: jax.jit(batched),
    }
    results: dict[str, list[timing.Timing]] = {m: [] for m in METHODS}
    agree = True
    steps = len(sizes) * len(METHODS)
    for i, n in enumerate(sizes):
        X = jax.random.normal(key, (n, d_in))
        outs = [np.asarray(fn(X, params)) for fn in methods.values()]
        agree &= all(np.allclose(outs[0], o, rtol=1e-3, atol=1e-2) for o in outs[1:])
        for j, (name, fn) in enumerate(methods.items()):
            if on_progress is not None:
                on_progress((i * len(METHODS) + j) / steps, f"{name}, batch {n}")
            results[name].append(timing.measure(fn, X, params, budget_s=budget_s, min_repeats=3))
    if on_progress is not None:
        on_progress(1.0, "done")
    return BatchTiming(
        sizes,
        d_in,
        d_out,
        {k: tuple(v) for k, v in results.items()},
        roofline.device_label(),
        agree,
    )


def batching_figure(bt: BatchTiming) -> go.Figure:
    """Median time per batch (bars: quartiles) against batch size, one line per method."""
    fig = go.Figure()
    for name in METHODS:
        fig.add_trace(timing_line(bt.batch_sizes, bt.timings[name], name))
    fig.update_layout(
        title=(
            f"process_single_example on a batch (D={bt.d_in}, H={bt.d_out}): median time per "
            f"call, measured on {bt.device}"
        ),
        xaxis=log_axis("batch size", bt.batch_sizes, format_count),
        yaxis=seconds_axis("time per call (median, bars: quartiles)", bar_ends(*fig.data)),
        margin={"t": 60, "b": 40},
    )
    return fig


# --- the article's nested-vmap convolution -------------------------------------------------------


def conv2d_single(image, kernel):  # the article's code, as written
    """单通道单卷积核的卷积"""
    i_h, i_w = image.shape
    k_h, k_w = kernel.shape
    out_h, out_w = i_h - k_h + 1, i_w - k_w + 1

    def dot_patch(patch):
        return jnp.sum(patch * kernel)

    patches = jnp.stack(
        [image[i : i + k_h, j : j + k_w] for i in range(out_h) for j in range(out_w)]
    )
    return jax.vmap(dot_patch)(patches).reshape(out_h, out_w)


# 第一个 vmap 批处理通道，第二个批处理卷积核 (the article's comment)
batch_conv2d = jax.vmap(jax.vmap(conv2d_single, in_axes=(None, 0)), in_axes=(0, None))

MIN_IMAGE, MAX_IMAGE = 5, 32
MAX_IMAGES, MAX_KERNELS = 4, 4


def _pattern(name: str, n: int) -> np.ndarray:
    i, j = np.mgrid[0:n, 0:n].astype(np.float32)
    c = (n - 1) / 2
    if name == "checkerboard":
        return ((i // max(2, n // 4) + j // max(2, n // 4)) % 2).astype(np.float32)
    if name == "vertical stripes":
        return ((j // max(1, n // 6)) % 2).astype(np.float32)
    if name == "disc":
        return (((i - c) ** 2 + (j - c) ** 2) <= (0.35 * n) ** 2).astype(np.float32)
    if name == "diagonal ramp":
        return ((i + j) / (2 * (n - 1))).astype(np.float32)
    if name == "cross":
        return ((np.abs(i - c) < n / 10) | (np.abs(j - c) < n / 10)).astype(np.float32)
    raise ValueError(f"unknown pattern {name!r}; choose one of {list(PATTERNS)}")


PATTERNS: tuple[str, ...] = ("checkerboard", "vertical stripes", "disc", "diagonal ramp", "cross")

KERNELS: dict[str, tuple[tuple[float, ...], ...]] = {
    "edge: Sobel x": ((1, 0, -1), (2, 0, -2), (1, 0, -1)),
    "edge: Sobel y": ((1, 2, 1), (0, 0, 0), (-1, -2, -1)),
    "blur: box 3×3": ((1 / 9,) * 3,) * 3,
    "sharpen": ((0, -1, 0), (-1, 5, -1), (0, -1, 0)),
    "identity": ((0, 0, 0), (0, 1, 0), (0, 0, 0)),
}
CUSTOM_KERNEL = "your 3×3"
MAX_KERNEL_ENTRY = 1e3


def parse_kernel(text: str) -> np.ndarray:
    """A 3×3 kernel from text: rows separated by ``;`` or new lines, numbers by spaces or commas.

    Each entry is read with ``float`` (never evaluated) and must be finite with
    |entry| ≤ :data:`MAX_KERNEL_ENTRY`.
    """
    if len(text) > 300:
        raise ValueError("the kernel text is longer than 300 characters")
    rows = [r for r in re.split(r"[;\n]", text.strip()) if r.strip()]
    values: list[list[float]] = []
    for r, row in enumerate(rows, start=1):
        entries = [e for e in re.split(r"[,\s]+", row.strip()) if e]
        try:
            numbers = [float(e) for e in entries]
        except ValueError:
            raise ValueError(
                f"row {r} holds something that is not a number: {row.strip()!r}"
            ) from None
        values.append(numbers)
    if len(values) != 3 or any(len(v) != 3 for v in values):
        got = " × ".join(str(len(v)) for v in values) or "nothing"
        raise ValueError(f"a kernel needs 3 rows of 3 numbers (got rows of {got})")
    kernel = np.asarray(values, dtype=np.float32)
    if not np.all(np.isfinite(kernel)) or np.max(np.abs(kernel)) > MAX_KERNEL_ENTRY:
        raise ValueError(
            f"kernel entries must be finite numbers with |entry| ≤ {MAX_KERNEL_ENTRY:g}"
        )
    return kernel


@dataclass(frozen=True)
class VmapLevel:
    """One level of the nested vmap: what it maps over and the shapes each call sees."""

    code: str
    maps_over: str
    per_call: str
    output: str


@dataclass(frozen=True)
class ConvResult:
    """The article's batched convolution and two library references, on the same inputs.

    Attributes:
        outputs: ``batch_conv2d(images, kernels)``, shape (images, kernels, out_h, out_w).
        via_convolve2d: ``jax.scipy.signal.convolve2d(image, flipped kernel, "valid")`` per pair
            (the article's patches compute a cross-correlation, which is a convolution with the
            kernel flipped).
        via_lax_conv: ``lax.conv_general_dilated`` (also a cross-correlation) on NCHW/OIHW.
    """

    image_names: tuple[str, ...]
    kernel_names: tuple[str, ...]
    images: np.ndarray
    kernels: np.ndarray
    outputs: np.ndarray
    via_convolve2d: np.ndarray
    via_lax_conv: np.ndarray
    levels: tuple[VmapLevel, ...]

    @property
    def max_diff_convolve2d(self) -> float:
        return float(np.max(np.abs(self.outputs - self.via_convolve2d)))

    @property
    def max_diff_lax_conv(self) -> float:
        return float(np.max(np.abs(self.outputs - self.via_lax_conv)))


def run_conv(
    image_names: Sequence[str],
    size: int,
    kernel_names: Sequence[str],
    custom_kernel: str = "",
) -> ConvResult:
    """Run ``batch_conv2d`` over the chosen images and kernels, and both references.

    Raises:
        ValueError: an unknown pattern or kernel, a bad custom kernel, or sizes/counts outside
            the limits (the message names them).
    """
    if not MIN_IMAGE <= size <= MAX_IMAGE:
        raise ValueError(f"the image size must be {MIN_IMAGE} to {MAX_IMAGE} pixels (got {size})")
    if not 1 <= len(image_names) <= MAX_IMAGES:
        raise ValueError(f"choose 1 to {MAX_IMAGES} images (got {len(image_names)})")
    if not 1 <= len(kernel_names) <= MAX_KERNELS:
        raise ValueError(f"choose 1 to {MAX_KERNELS} kernels (got {len(kernel_names)})")
    images = np.stack([_pattern(name, size) for name in image_names])
    kernel_list = []
    for name in kernel_names:
        if name == CUSTOM_KERNEL:
            kernel_list.append(parse_kernel(custom_kernel))
        elif name in KERNELS:
            kernel_list.append(np.asarray(KERNELS[name], dtype=np.float32))
        else:
            raise ValueError(f"unknown kernel {name!r}")
    kernels = np.stack(kernel_list)
    outputs = np.asarray(batch_conv2d(images, kernels))
    reference = jax.vmap(
        jax.vmap(
            lambda im, k: jax.scipy.signal.convolve2d(im, k[::-1, ::-1], mode="valid"),
            in_axes=(None, 0),
        ),
        in_axes=(0, None),
    )
    lax_out = jax.lax.conv_general_dilated(
        images[:, None], kernels[:, None], window_strides=(1, 1), padding="VALID"
    )
    n, k, oh = len(images), len(kernels), size - 2
    levels = (
        VmapLevel(
            "vmap(..., in_axes=(0, None))  # outer",
            f"the {n} images (axis 0 of images); all kernels go to every call",
            f"image ({size}, {size}), kernels ({k}, 3, 3)",
            f"({n}, {k}, {oh}, {oh})",
        ),
        VmapLevel(
            "vmap(conv2d_single, in_axes=(None, 0))  # inner",
            f"the {k} kernels (axis 0 of kernels); the same image goes to every call",
            f"image ({size}, {size}), kernel (3, 3)",
            f"({k}, {oh}, {oh})",
        ),
        VmapLevel(
            "vmap(dot_patch)(patches)  # inside conv2d_single",
            f"the {oh * oh} patches (axis 0 of patches)",
            "patch (3, 3)",
            f"({oh * oh},) reshaped to ({oh}, {oh})",
        ),
    )
    return ConvResult(
        tuple(image_names),
        tuple(kernel_names),
        images,
        kernels,
        outputs,
        np.asarray(reference(images, kernels)),
        np.asarray(lax_out),
        levels,
    )


def conv_figure(result: ConvResult) -> go.Figure:
    """A grid of heatmaps: a row per image, its input then its output under each kernel."""
    n, k = len(result.images), len(result.kernels)
    titles = [
        t
        for i, name in enumerate(result.image_names)
        for t in (f"image {i}: {name}", *(f"⊛ {kn}" for kn in result.kernel_names))
    ]
    fig = make_subplots(rows=n, cols=k + 1, subplot_titles=titles, horizontal_spacing=0.03)
    for i in range(n):
        fig.add_trace(
            go.Heatmap(z=result.images[i], coloraxis="coloraxis", name=f"image {i}"), i + 1, 1
        )
        for j in range(k):
            fig.add_trace(
                go.Heatmap(z=result.outputs[i, j], coloraxis="coloraxis2", name=f"out {i},{j}"),
                i + 1,
                j + 2,
            )
    fig.update_yaxes(autorange="reversed", scaleanchor=None, showticklabels=False)
    fig.update_xaxes(showticklabels=False)
    fig.update_layout(
        height=220 * n + 60,
        title="Inputs (left) and batch_conv2d outputs (one column per kernel)",
        coloraxis={"colorscale": "Greys", "showscale": False},
        coloraxis2={"colorscale": "RdBu", "colorbar": {"title": "output"}},
        margin={"t": 70, "b": 20},
    )
    return fig


# --- the jaxpr of the batched function -----------------------------------------------------------

JAXPR_BATCH = 4


@dataclass(frozen=True)
class JaxprComparison:
    """The jaxprs of the article's loop and of ``vmap`` for one batch, with primitive counts."""

    batch: int
    loop_text: str
    vmap_text: str
    loop_counts: dict[str, int]
    vmap_counts: dict[str, int]


def count_primitives(jaxpr: Any) -> dict[str, int]:
    """How often each primitive occurs in a jaxpr, counting inside nested jaxprs (pjit, scan...)."""
    counts: dict[str, int] = {}

    def walk(j: Any) -> None:
        for eqn in j.eqns:
            counts[eqn.primitive.name] = counts.get(eqn.primitive.name, 0) + 1
            for value in eqn.params.values():
                for sub in value if isinstance(value, (tuple, list)) else (value,):
                    inner = getattr(sub, "jaxpr", sub)
                    if hasattr(inner, "eqns"):
                        walk(inner)

    walk(getattr(jaxpr, "jaxpr", jaxpr))
    return counts


def batched_jaxprs(
    batch: int = JAXPR_BATCH, d_in: int = EDITOR_D, d_out: int = EDITOR_H
) -> JaxprComparison:
    """``make_jaxpr`` of the Python loop and of ``vmap(..., in_axes=(0, None))`` at one size.

    The loop's jaxpr grows with the batch: a slice, a ``dot_general`` and an ``add`` per example.
    vmap's has one ``dot_general`` for the whole batch, whatever its size.
    """
    if not 1 <= batch <= 16:
        raise ValueError(f"the jaxpr batch must be 1 to 16 (got {batch})")
    X = jnp.zeros((batch, d_in))
    params = (jnp.zeros((d_out, d_in)), jnp.zeros(d_out))
    loop = jax.make_jaxpr(manual_batch_process)(X, params)
    vm = jax.make_jaxpr(jax.vmap(process_single_example, in_axes=(0, None)))(X, params)
    return JaxprComparison(batch, str(loop), str(vm), count_primitives(loop), count_primitives(vm))


def isclose_all(a: np.ndarray, b: np.ndarray) -> bool:
    """Equality up to float32 rounding, scaled to the data (for the page's agreement badges)."""
    scale = max(1.0, float(np.max(np.abs(b)))) if b.size else 1.0
    return bool(np.allclose(a, b, rtol=1e-5, atol=1e-5 * scale)) and not math.isnan(scale)

"""The article's nested-vmap 2-D convolution, run on real images and checked against libraries.

Why: the article builds a convolution from patches and two nested ``vmap``s (the first, outer
one over the images, which it calls channels; the second over the kernels). Here it runs on
generated patterns and kernels a visitor picks, beside ``jax.scipy.signal.convolve2d`` and
``lax.conv_general_dilated``, with what each vmap level maps.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import jax
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from jaxplay.article import (
    batch_conv2d,
)
from jaxplay.core.i18n import N_, _, ngettext

MIN_IMAGE, MAX_IMAGE = 5, 32
MAX_IMAGES, MAX_KERNELS = 4, 4


#: The test images, by name: each draws an n×n float32 image from its row and column indices
#: ``i``, ``j``, the image side ``n`` and its centre ``c``. The names are English (links, tests);
#: the page shows them with ``_``.
DRAWINGS: dict[str, Callable[[np.ndarray, np.ndarray, int, float], np.ndarray]] = {
    N_("checkerboard"): lambda i, j, n, c: (i // max(2, n // 4) + j // max(2, n // 4)) % 2,
    N_("vertical stripes"): lambda i, j, n, c: (j // max(1, n // 6)) % 2,
    N_("disc"): lambda i, j, n, c: ((i - c) ** 2 + (j - c) ** 2) <= (0.35 * n) ** 2,
    N_("diagonal ramp"): lambda i, j, n, c: (i + j) / (2 * (n - 1)),
    N_("cross"): lambda i, j, n, c: (np.abs(i - c) < n / 10) | (np.abs(j - c) < n / 10),
}
PATTERNS: tuple[str, ...] = tuple(DRAWINGS)


def pattern(name: str, n: int) -> np.ndarray:
    """The test image ``name`` (a key of :data:`DRAWINGS`), ``n`` pixels square."""
    if name not in DRAWINGS:
        message = _("unknown pattern {name}; choose one of {patterns}")
        raise ValueError(message.format(name=repr(name), patterns=list(PATTERNS)))
    i, j = np.mgrid[0:n, 0:n].astype(np.float32)
    return np.asarray(DRAWINGS[name](i, j, n, (n - 1) / 2), dtype=np.float32)


#: The kernels, by name (English, in links and tests; the page shows them with ``_``).
KERNELS: dict[str, tuple[tuple[float, ...], ...]] = {
    N_("edge: Sobel x"): ((1, 0, -1), (2, 0, -2), (1, 0, -1)),
    N_("edge: Sobel y"): ((1, 2, 1), (0, 0, 0), (-1, -2, -1)),
    N_("blur: box 3×3"): ((1 / 9,) * 3,) * 3,
    N_("sharpen"): ((0, -1, 0), (-1, 5, -1), (0, -1, 0)),
    N_("identity"): ((0, 0, 0), (0, 1, 0), (0, 0, 0)),
}
CUSTOM_KERNEL = N_("your 3×3")
#: The kernels the page offers: the named ones, then the visitor's own.
KERNEL_CHOICES: tuple[str, ...] = (*KERNELS, CUSTOM_KERNEL)
MAX_KERNEL_ENTRY = 1e3
#: What the page starts with: two images and two kernels that look unlike each other, and a
#: Laplacian in the box for the visitor's own kernel (text as :func:`parse_kernel` reads it).
DEFAULT_IMAGES: tuple[str, ...] = ("checkerboard", "disc")
DEFAULT_KERNELS: tuple[str, ...] = ("edge: Sobel x", "blur: box 3×3")
DEFAULT_CUSTOM_KERNEL = "0 1 0; 1 -4 1; 0 1 0"


def parse_kernel(text: str) -> np.ndarray:
    """A 3×3 kernel from text: rows separated by ``;`` or new lines, numbers by spaces or commas.

    Each entry is read with ``float`` (never evaluated) and must be finite with
    |entry| ≤ :data:`MAX_KERNEL_ENTRY`.
    """
    if len(text) > 300:
        raise ValueError(_("the kernel text is longer than {n} characters").format(n=300))
    rows = [r for r in re.split(r"[;\n]", text.strip()) if r.strip()]
    values: list[list[float]] = []
    for r, row in enumerate(rows, start=1):
        entries = [e for e in re.split(r"[,\s]+", row.strip()) if e]
        try:
            numbers = [float(e) for e in entries]
        except ValueError:
            message = _("row {r} holds something that is not a number: {row}")
            raise ValueError(message.format(r=r, row=repr(row.strip()))) from None
        values.append(numbers)
    if len(values) != 3 or any(len(v) != 3 for v in values):
        got = " × ".join(str(len(v)) for v in values) or _("nothing")
        raise ValueError(
            _("a kernel needs 3 rows of 3 numbers (got rows of {got})").format(got=got)
        )
    kernel = np.asarray(values, dtype=np.float32)
    if not np.all(np.isfinite(kernel)) or np.max(np.abs(kernel)) > MAX_KERNEL_ENTRY:
        message = _("kernel entries must be finite numbers with |entry| ≤ {limit}")
        raise ValueError(message.format(limit=f"{MAX_KERNEL_ENTRY:g}"))
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

    @property
    def levels(self) -> tuple[VmapLevel, ...]:
        """What each level of the nested vmap maps, in the current language."""
        n, k, size = len(self.images), len(self.kernels), self.images.shape[-1]
        oh = size - 2
        # Built when read, in the reader's language: the worker that convolved speaks none.
        return (
            VmapLevel(
                _("vmap(..., in_axes=(0, None))  # the first vmap written (outer)"),
                ngettext(
                    "{n} image (axis 0 of images, the article's channels); all kernels go to "
                    "every call",
                    "{n} images (axis 0 of images, the article's channels); all kernels go to "
                    "every call",
                    n,
                ).format(n=f"{n:,}"),
                _("image ({size}, {size}), kernels ({k}, 3, 3)").format(size=size, k=k),
                f"({n}, {k}, {oh}, {oh})",
            ),
            VmapLevel(
                _("vmap(conv2d_single, in_axes=(None, 0))  # the second (inner)"),
                ngettext(
                    "{n} kernel (axis 0 of kernels); the same image goes to every call",
                    "{n} kernels (axis 0 of kernels); the same image goes to every call",
                    k,
                ).format(n=f"{k:,}"),
                _("image ({size}, {size}), kernel (3, 3)").format(size=size),
                f"({k}, {oh}, {oh})",
            ),
            VmapLevel(
                _("vmap(dot_patch)(patches)  # inside conv2d_single"),
                ngettext(
                    "{n} patch (axis 0 of patches)", "{n} patches (axis 0 of patches)", oh * oh
                ).format(n=f"{oh * oh:,}"),
                _("patch (3, 3)"),
                _("({n},) reshaped to ({oh}, {oh})").format(n=oh * oh, oh=oh),
            ),
        )

    @property
    def max_diff_convolve2d(self) -> float:
        return float(np.max(np.abs(self.outputs - self.via_convolve2d)))

    @property
    def max_diff_lax_conv(self) -> float:
        return float(np.max(np.abs(self.outputs - self.via_lax_conv)))


def agreement_metrics(result: ConvResult) -> tuple[tuple[str, str], ...]:
    """The largest difference from each library, as ``(label, value)`` metrics: why the
    article's patches-and-vmap convolution can be trusted (the labels are code, untranslated)."""
    return (
        ("max |batch_conv2d − convolve2d|", f"{result.max_diff_convolve2d:.2g}"),
        ("max |batch_conv2d − lax.conv|", f"{result.max_diff_lax_conv:.2g}"),
    )


def level_table(result: ConvResult) -> tuple[list[dict[str, str]], str]:
    """What each vmap level maps, one row per level, and the header of the column that labels
    the rows: ``pandas.DataFrame(rows).set_index(index)``. The headers are the fields' names in
    English, translated in another language; the cells are sentences, so the page shows them
    in a table whose cells wrap."""
    headers = {
        "code": _("code"),
        "maps_over": _("maps_over"),
        "per_call": _("per_call"),
        "output": _("output"),
    }
    rows = [{headers[k]: v for k, v in vars(level).items()} for level in result.levels]
    return rows, headers["code"]


def conv_inputs(
    image_names: tuple[str, ...], size: int, kernel_names: tuple[str, ...], custom_kernel: str = ""
) -> tuple[np.ndarray, np.ndarray]:
    """The images and kernels chosen, made with NumPy (nothing compiled): what
    :func:`run_conv` convolves. A page calls it first, to refuse bad input in the visitor's
    language before the convolution runs in the compute worker.

    Raises:
        ValueError: an unknown pattern or kernel, a bad custom kernel, or sizes/counts outside
            the limits (the message names them).
    """
    if not MIN_IMAGE <= size <= MAX_IMAGE:
        message = _("the image size must be {low} to {high} pixels (got {size})")
        raise ValueError(message.format(low=MIN_IMAGE, high=MAX_IMAGE, size=size))
    if not 1 <= len(image_names) <= MAX_IMAGES:
        message = _("choose 1 to {most} images (got {n})")
        raise ValueError(message.format(most=MAX_IMAGES, n=len(image_names)))
    if not 1 <= len(kernel_names) <= MAX_KERNELS:
        message = _("choose 1 to {most} kernels (got {n})")
        raise ValueError(message.format(most=MAX_KERNELS, n=len(kernel_names)))
    images = np.stack([pattern(name, size) for name in image_names])
    kernel_list = []
    for name in kernel_names:
        if name == CUSTOM_KERNEL:
            kernel_list.append(parse_kernel(custom_kernel))
        elif name in KERNELS:
            kernel_list.append(np.asarray(KERNELS[name], dtype=np.float32))
        else:
            raise ValueError(_("unknown kernel {name}").format(name=repr(name)))
    return images, np.stack(kernel_list)


def run_conv(
    image_names: tuple[str, ...], size: int, kernel_names: tuple[str, ...], custom_kernel: str = ""
) -> ConvResult:
    """Run ``batch_conv2d`` over the chosen images and kernels, and both references.

    Each new count or size compiles programs (about 14 MB) that JAX keeps for the process: a
    server runs this in its compute worker (``sandbox.timed``), which is recycled.

    Raises:
        ValueError: as :func:`conv_inputs`.
    """
    images, kernels = conv_inputs(image_names, size, kernel_names, custom_kernel)
    outputs = np.asarray(batch_conv2d(images, kernels))
    reference = jax.vmap(
        jax.vmap(
            lambda im, k: jax.scipy.signal.convolve2d(im, k[::-1, ::-1], mode="valid"),
            in_axes=(None, 0),
        ),
        in_axes=(0, None),
    )
    # lax is typed for jax arrays; it would convert numpy's itself, here they arrive converted.
    lhs, rhs = jax.numpy.asarray(images[:, None]), jax.numpy.asarray(kernels[:, None])
    lax_out = jax.lax.conv_general_dilated(lhs, rhs, window_strides=(1, 1), padding="VALID")
    return ConvResult(
        tuple(image_names),
        tuple(kernel_names),
        images,
        kernels,
        outputs,
        np.asarray(reference(images, kernels)),
        np.asarray(lax_out),
    )


def conv_figure(result: ConvResult) -> go.Figure:
    """A grid of heatmaps: a row per image, its input then its output under each kernel."""
    n, k = len(result.images), len(result.kernels)
    titles = [
        t
        for i, name in enumerate(result.image_names)
        for t in (
            _("image {i}: {name}").format(i=i, name=_(name)),
            *(f"⊛ {_(kn)}" for kn in result.kernel_names),
        )
    ]
    fig = make_subplots(rows=n, cols=k + 1, subplot_titles=titles, horizontal_spacing=0.03)
    for i in range(n):
        fig.add_trace(
            go.Heatmap(z=result.images[i], coloraxis="coloraxis", name=_("image {i}").format(i=i)),
            i + 1,
            1,
        )
        for j in range(k):
            fig.add_trace(
                go.Heatmap(
                    z=result.outputs[i, j],
                    coloraxis="coloraxis2",
                    name=_("out {i},{j}").format(i=i, j=j),
                ),
                i + 1,
                j + 2,
            )
    fig.update_yaxes(autorange="reversed", scaleanchor=None, showticklabels=False)
    fig.update_xaxes(showticklabels=False)
    fig.update_layout(
        height=220 * n + 60,
        title=_("Inputs (left) and batch_conv2d outputs (one column per kernel)"),
        coloraxis={"colorscale": "Greys", "showscale": False},
        coloraxis2={"colorscale": "RdBu", "colorbar": {"title": _("output")}},
        margin={"t": 70, "b": 20},
    )
    return fig

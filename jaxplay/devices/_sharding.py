"""Sharding made visible: a mesh, a ``PartitionSpec``, and which device holds which block.

Long: the spec parser (a linear tokenizer, for text from a link), the placement read back from
JAX, the layout figure and the data-parallel scaling sweep belong together: each reads the
others' types, and the page shows them as one story.

Why: a ``NamedSharding`` is two small objects (a mesh of devices with named axes, and a spec that
says which array axis is split over which mesh axes) whose consequence is hard to picture. This
module places a real array with a user's mesh and spec, reads back each device's shard (index,
shape, replica), groups shards into blocks, and draws them; an invalid spec is explained in plain
words beside JAX's own message. It also times a data-parallel training step over 1, 2, 4, 8
devices, the use of sharding most programs start with.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import plotly.graph_objects as go
from plotly import colors as pcolors

from jaxplay.core import claims, timing, words
from jaxplay.core.errors import InputError
from jaxplay.core.figures import plain, timing_line
from jaxplay.core.i18n import _, ngettext
from jaxplay.devices._devices import devices_count, devices_of

#: Largest array axis the sandbox draws (cells stay legible).
MAX_DIM = 64
MAX_RANK = 2

SpecEntry = str | tuple[str, ...] | None


class ShardingProblem(InputError):
    """A mesh, shape or spec that cannot work, in plain words, with JAX's own message if it ran.

    Attributes:
        plain: what is wrong and how to fix it, in plain words.
        jax_error: ``"TypeName: message"`` of what JAX raised, or ``None`` when the input was
            refused before JAX was asked (a syntax error, too few devices).
        col: for a syntax error in a typed spec, the 1-based column it points at.
    """

    def __init__(self, plain: str, jax_error: str | None = None, col: int | None = None):
        super().__init__(plain, col=col)
        self.plain = plain
        self.jax_error = jax_error


# --- parsing what the visitor types ---------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<name>[A-Za-z_]\w*)|'(?P<q1>[^']*)'|\"(?P<q2>[^\"]*)\"|(?P<p>[(),]))"
)


_SPACE = re.compile(r"\s*")
#: Longest ``PartitionSpec`` text read (an array has a handful of axes: ~20 characters each).
MAX_SPEC_CHARS = 200


def _tokens(text: str) -> list[tuple[str, str, int]]:
    """``(kind, value, col)`` tokens: kind is ``name``, ``str`` or the punctuation itself.
    One pass (copying the rest of the text per token made a 500 kB spec cost a minute)."""
    out, pos, end = [], 0, len(text.rstrip())
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None or m.lastgroup is None:  # (every alternative of _TOKEN is a named group)
            col = _SPACE.match(text, pos).end() + 1  # type: ignore[union-attr]
            raise ShardingProblem(
                _("Unexpected character {char}.").format(char=repr(text[col - 1])), col=col
            )
        col = m.start(m.lastgroup) + 1
        if m.lastgroup == "name":
            out.append(("name", m.group("name"), col))
        elif m.lastgroup in ("q1", "q2"):
            out.append(("str", m.group(m.lastgroup), col))
        else:
            out.append((m.group("p"), m.group("p"), col))
        pos = m.end()
    return out


def parse_spec(text: str) -> tuple[SpecEntry, ...]:
    """Read a ``PartitionSpec`` as typed: ``P('x', None)``, ``('x', 'y'), None`` or ``x, None``.

    Returns one entry per array axis: ``None`` (not split), a mesh axis name, or a tuple of names
    (split over several mesh axes at once). Raises :class:`ShardingProblem` with a column (none
    for a text over :data:`MAX_SPEC_CHARS` characters, read no further).
    """
    if len(text) > MAX_SPEC_CHARS:
        raise ShardingProblem(
            _(
                "The PartitionSpec is {n} characters long; at most {limit} are read (an entry per "
                "axis, like P('x', None))."
            ).format(n=f"{len(text):,}", limit=MAX_SPEC_CHARS)
        )
    toks = _tokens(text)
    end = len(text.rstrip()) + 1
    if len(toks) >= 2 and toks[0][0] == "name" and toks[0][1] in ("P", "PartitionSpec"):
        if toks[1][0] != "(" or toks[-1][0] != ")":
            raise ShardingProblem(
                _("Write the spec as P(...) with its closing parenthesis."), col=end
            )
        toks = toks[2:-1]
    entries: list[SpecEntry] = []
    i = 0

    def name_at(j: int) -> str:
        kind, value, col = toks[j]
        if kind == "str":
            if not value.isidentifier():
                raise ShardingProblem(
                    _("{name} is not a valid axis name.").format(name=repr(value)), col=col
                )
            return value
        if kind == "name" and value != "None":
            return value
        raise ShardingProblem(_("Expected a mesh axis name here."), col=col)

    while i < len(toks):
        kind, value, col = toks[i]
        if kind == "name" and value == "None":
            entries.append(None)
            i += 1
        elif kind in ("name", "str"):
            entries.append(name_at(i))
            i += 1
        elif kind == "(":
            names, i = [], i + 1
            while i < len(toks) and toks[i][0] != ")":
                names.append(name_at(i))
                i += 1
                if i < len(toks) and toks[i][0] == ",":
                    i += 1
            if i >= len(toks):
                raise ShardingProblem(_("This parenthesis is never closed."), col=col)
            if not names:
                raise ShardingProblem(
                    _("An empty group () names no mesh axis; write None."), col=col
                )
            entries.append(tuple(names))
            i += 1
        else:
            raise ShardingProblem(_("Unexpected {token}.").format(token=repr(value)), col=col)
        if i < len(toks):
            if toks[i][0] != ",":
                raise ShardingProblem(_("Expected a comma between entries."), col=toks[i][2])
            i += 1
    return tuple(entries)


def spec_text(spec: tuple[SpecEntry, ...]) -> str:
    """The spec as Python source: ``P('x', None)``."""
    from jax.sharding import PartitionSpec as P

    return repr(P(*spec))


def parse_ints(text: str, what: str) -> tuple[int, ...]:
    """``"2, 4"`` or ``"2x4"`` as ``(2, 4)``; each a positive integer (``what`` names it in the
    messages: the caller's words, in the visitor's language)."""
    parts = [p for p in re.split(r"[\s,x×*]+", text.strip()) if p]
    if not parts:
        raise ShardingProblem(_("The {what} is empty: write sizes like 2, 4.").format(what=what))
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        raise ShardingProblem(
            _("The {what} must be whole numbers like 2, 4; got {text}.").format(
                what=what, text=repr(text)
            )
        ) from None
    if any(v < 1 for v in values):
        raise ShardingProblem(_("Every size in the {what} must be at least 1.").format(what=what))
    return values


@claims.states_nothing("why typed axis names are refused")
def parse_names(text: str) -> tuple[str, ...]:
    """``"x, y"`` as ``("x", "y")``: distinct Python identifiers."""
    names = tuple(p.strip().strip("'\"") for p in text.split(",") if p.strip())
    for name in names:
        if not name.isidentifier():
            raise ShardingProblem(
                _("{name} is not a valid axis name (use letters, digits, _).").format(
                    name=repr(name)
                )
            )
    if len(set(names)) != len(names):
        raise ShardingProblem(_("Mesh axis names must be distinct."))
    return names


# --- the layout ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceShard:
    """What one device holds: its place in the mesh, the index range of its shard, its shape.

    Attributes:
        index: ``(start, stop)`` per array axis.
        replica_id: 0 for the first copy of a block, 1.. for further copies.
    """

    device_id: int
    mesh_coords: tuple[int, ...]
    index: tuple[tuple[int, int], ...]
    shape: tuple[int, ...]
    replica_id: int


@dataclass(frozen=True)
class Block:
    """A distinct piece of the array and every device holding a copy of it."""

    index: tuple[tuple[int, int], ...]
    device_ids: tuple[int, ...]


@dataclass(frozen=True)
class ShardLayout:
    """A real array placed with a ``NamedSharding``: per-device shards and the distinct blocks."""

    mesh_shape: tuple[int, ...]
    axis_names: tuple[str, ...]
    mesh_device_ids: tuple[tuple[int, ...], ...]
    array_shape: tuple[int, ...]
    spec: tuple[SpecEntry, ...]
    shards: tuple[DeviceShard, ...]
    blocks: tuple[Block, ...]

    @property
    def spec_text(self) -> str:
        return spec_text(self.spec)

    @property
    def copies(self) -> int:
        """How many devices hold each block (1: fully sharded; all devices: replicated)."""
        return len(self.shards) // len(self.blocks)


def _names(entry: SpecEntry) -> tuple[str, ...]:
    if entry is None:
        return ()
    return entry if isinstance(entry, tuple) else (entry,)


@claims.states("devices.spec_problems_raise")
def explain(
    mesh_shape: tuple[int, ...],
    axis_names: tuple[str, ...],
    array_shape: tuple[int, ...],
    spec: tuple[SpecEntry, ...],
) -> str | None:
    """What is wrong with this combination, in plain words; ``None`` if nothing is."""
    sizes = dict(zip(axis_names, mesh_shape, strict=False))
    if len(spec) > len(array_shape):
        return ngettext(
            "The spec has {entries} entries but the array has {n} axis: a PartitionSpec has at "
            "most one entry per array axis (missing trailing entries mean None, not split).",
            "The spec has {entries} entries but the array has {n} axes: a PartitionSpec has at "
            "most one entry per array axis (missing trailing entries mean None, not split).",
            len(array_shape),
        ).format(entries=len(spec), n=f"{len(array_shape):,}")
    seen: dict[str, int] = {}
    for dim, entry in enumerate(spec):
        for name in _names(entry):
            if name not in sizes:
                known = ", ".join(repr(n) for n in axis_names)
                return _("{name} is not an axis of the mesh; its axes are {known}.").format(
                    name=repr(name), known=known
                )
            if seen.get(name) == dim:
                return _(
                    "Mesh axis {name} appears twice in the entry for array axis {axis}: name "
                    "each mesh axis once."
                ).format(name=repr(name), axis=dim)
            if name in seen:
                return _(
                    "Mesh axis {name} splits array axes {first} and {second}: each mesh axis can "
                    "split at most one array axis."
                ).format(name=repr(name), first=seen[name], second=dim)
            seen[name] = dim
    for dim, entry in enumerate(spec):
        names = _names(entry)
        parts = math.prod(sizes[n] for n in names)
        if names and array_shape[dim] % parts:
            over = " × ".join(f"{n!r} ({sizes[n]})" for n in names)
            return _(
                "Array axis {axis} has size {size}, split over {over} = {parts} pieces: {size} is "
                "not a multiple of {parts}, so the pieces would not be equal. Make axis {axis} a "
                "multiple of {parts}, or do not split it."
            ).format(axis=dim, size=array_shape[dim], over=over, parts=parts)
    return None


def shard_layout(
    mesh_shape: tuple[int, ...],
    axis_names: tuple[str, ...],
    array_shape: tuple[int, ...],
    spec: tuple[SpecEntry, ...],
    platform: str | None = None,
) -> ShardLayout:
    """Place a real array with ``NamedSharding(make_mesh(mesh_shape, axis_names), P(*spec))``.

    The layout is read back from the placed array's ``addressable_shards`` (what JAX actually
    did), not computed. ``platform`` picks the devices (``None``: the default backend). Raises
    :class:`ShardingProblem` when the mesh, shape or spec cannot work.
    """
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    if len(mesh_shape) != len(axis_names):
        sizes = ngettext("{n} size", "{n} sizes", len(mesh_shape)).format(n=f"{len(mesh_shape):,}")
        names = ngettext("{n} axis name", "{n} axis names", len(axis_names)).format(
            n=f"{len(axis_names):,}"
        )
        raise ShardingProblem(
            _("The mesh shape has {sizes} but {names}: give one name per mesh axis.").format(
                sizes=sizes, names=names
            )
        )
    pool = devices_of(platform)
    needed, available = math.prod(mesh_shape), len(pool)
    if needed > available:
        raise ShardingProblem(
            _(
                "A {mesh} mesh needs {needed} devices; this process has {available}. Use a mesh "
                "of at most {available} devices."
            ).format(mesh=" × ".join(map(str, mesh_shape)), needed=needed, available=available)
        )
    if not 1 <= len(array_shape) <= MAX_RANK or max(array_shape) > MAX_DIM:
        raise ShardingProblem(
            _("The sandbox draws arrays of 1 or 2 axes of at most {limit} elements each.").format(
                limit=MAX_DIM
            )
        )
    try:
        mesh = jax.make_mesh(mesh_shape, axis_names, devices=pool[:needed])
        sharding = NamedSharding(mesh, P(*spec))
        x = jax.device_put(np.zeros(array_shape, np.float32), sharding)
    except Exception as exc:  # JAX's exception types vary by check; all of them are reported
        plain = explain(mesh_shape, axis_names, array_shape, spec)
        raise ShardingProblem(
            plain or _("JAX refused this combination; its reason is below."),
            jax_error=f"{type(exc).__name__}: {exc}",
        ) from exc
    coords = {int(d.id): tuple(int(c) for c in idx) for idx, d in np.ndenumerate(mesh.devices)}
    shards = tuple(
        sorted(
            (
                DeviceShard(
                    device_id=int(s.device.id),
                    mesh_coords=coords[int(s.device.id)],
                    index=normalize_index(s.index, array_shape),
                    shape=tuple(int(n) for n in s.data.shape),
                    replica_id=int(s.replica_id),
                )
                for s in x.addressable_shards
            ),
            key=lambda s: s.mesh_coords,
        )
    )
    by_index: dict[tuple[tuple[int, int], ...], list[int]] = {}
    for s in shards:
        by_index.setdefault(s.index, []).append(s.device_id)
    blocks = tuple(Block(index, tuple(ids)) for index, ids in sorted(by_index.items()))
    return ShardLayout(
        mesh_shape=tuple(mesh_shape),
        axis_names=tuple(axis_names),
        mesh_device_ids=tuple(
            tuple(int(d.id) for d in row) for row in mesh.devices.reshape(mesh_shape[0], -1)
        ),
        array_shape=tuple(array_shape),
        spec=tuple(spec),
        shards=shards,
        blocks=blocks,
    )


def normalize_index(
    index: tuple[slice, ...], shape: tuple[int, ...]
) -> tuple[tuple[int, int], ...]:
    """JAX's shard index (slices, possibly open-ended) as ``(start, stop)`` per axis."""
    out = []
    for i, n in enumerate(shape):
        s = index[i] if i < len(index) else slice(None)
        start, stop, _ = s.indices(n)
        out.append((start, stop))
    return tuple(out)


def device_colors(count: int) -> list[str]:
    """One distinct colour per device (a qualitative palette, sampled further when it runs out)."""
    palette = pcolors.qualitative.Plotly if count <= 10 else pcolors.qualitative.Dark24
    if count <= len(palette):
        return list(palette[:count])
    # Plotly has no type hints; with the default colortype "rgb" the samples are "rgb(...)" texts.
    samples = pcolors.sample_colorscale("Turbo", [i / max(1, count - 1) for i in range(count)])
    return cast("list[str]", samples)


def _clip_band(
    x0: float, x1: float, y0: float, y1: float, lo: float, hi: float
) -> list[tuple[float, float]]:
    """The polygon of the rectangle ``[x0, x1] × [y0, y1]`` where ``lo <= x + y <= hi``."""
    poly = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    for sign, bound in ((1.0, lo), (-1.0, -hi)):  # keep sign * (x + y) >= bound
        out: list[tuple[float, float]] = []
        for i, p in enumerate(poly):
            q = poly[(i + 1) % len(poly)]
            fp, fq = sign * (p[0] + p[1]) - bound, sign * (q[0] + q[1]) - bound
            if fp >= 0:
                out.append(p)
            if (fp >= 0) != (fq >= 0):
                t = fp / (fp - fq)
                out.append((p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])))
        poly = out
        if not poly:
            break
    return poly


def layout_figure(layout: ShardLayout) -> go.Figure:
    """The array as a grid of blocks coloured by the device(s) that hold them.

    A block held by one device is filled with its colour. A block held by k devices (replicated)
    is filled with diagonal stripes cycling through their k colours: a mix, which cannot be
    mistaken for k side-by-side shards. Each filled shape is named ``"block i: device d"``.
    """
    rows, cols = (1, layout.array_shape[0]) if len(layout.array_shape) == 1 else layout.array_shape
    ids = sorted({s.device_id for s in layout.shards})
    color = dict(zip(ids, device_colors(len(ids)), strict=True))
    stripe = max(rows, cols) / 16
    fig = go.Figure()
    # Collected, then set once: plotly's add_shape copies and validates every shape so far on
    # each call (quadratic: 180 ms for a replicated layout's 50 shapes, on every run).
    shapes: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    hover_x, hover_y, hover_text = [], [], []
    for b, block in enumerate(layout.blocks):
        if len(layout.array_shape) == 1:
            (r0, r1), (c0, c1) = (0, 1), block.index[0]
        else:
            (r0, r1), (c0, c1) = block.index
        k = len(block.device_ids)
        rect = {"type": "rect", "x0": c0, "x1": c1, "y0": r0, "y1": r1}
        if k == 1:
            shapes.append(
                {
                    **rect,
                    "fillcolor": color[block.device_ids[0]],
                    "line": {"width": 0},
                    "layer": "below",
                    "name": _("block {b}: device {device}").format(b=b, device=block.device_ids[0]),
                }
            )
        else:
            width = min(stripe, (c1 - c0 + r1 - r0) / (2 * k))
            lo, j = c0 + r0, 0
            while lo < c1 + r1:
                poly = _clip_band(c0, c1, r0, r1, lo, lo + width)
                if len(poly) >= 3:
                    dev = block.device_ids[j % k]
                    path = "M " + " L ".join(f"{x:.4f},{y:.4f}" for x, y in poly) + " Z"
                    shapes.append(
                        {
                            "type": "path",
                            "path": path,
                            "fillcolor": color[dev],
                            "line": {"width": 0},
                            "layer": "below",
                            "name": _("block {b}: device {device}").format(b=b, device=dev),
                        }
                    )
                lo, j = lo + width, j + 1
        shapes.append({**rect, "line": {"color": "white", "width": 3}})
        held_by = ", ".join(f"d{d}" for d in block.device_ids) if k <= 4 else devices_count(k)
        label = held_by if k == 1 else _("copies on {devices}").format(devices=held_by)
        annotations.append(
            {
                "x": (c0 + c1) / 2,
                "y": (r0 + r1) / 2,
                "text": label,
                "showarrow": False,
                "font": {"color": "white", "size": 12},
                "bgcolor": "rgba(0,0,0,0.45)",
            }
        )
        where = " × ".join(f"{a}:{b}" for a, b in block.index)
        held = ", ".join(map(str, block.device_ids))
        hover_x.append((c0 + c1) / 2)
        hover_y.append((r0 + r1) / 2)
        hover = _("block [{where}]<br>devices {held}").format(where=where, held=held)
        if k > 1:
            hover += "<br>" + _("replicated ×{k}").format(k=k)
        hover_text.append(hover)
    fig.update_layout(shapes=shapes, annotations=annotations)
    fig.add_scatter(
        x=hover_x,
        y=hover_y,
        mode="markers",
        marker={"opacity": 0},
        hovertext=hover_text,
        hoverinfo="text",
        showlegend=False,
    )
    for dev in ids:
        fig.add_scatter(
            x=[None],
            y=[None],
            mode="markers",
            marker={"color": color[dev], "size": 12, "symbol": "square"},
            name=_("device {device}").format(device=dev),
        )
    mesh = zip(layout.axis_names, layout.mesh_shape, strict=True)
    fig.update_layout(
        # The spec and the axis names are the visitor's.
        title=plain(
            _("{shape} array, {spec} over mesh {mesh}").format(
                shape=layout.array_shape,
                spec=layout.spec_text,
                mesh=" × ".join(f"{n}={s}" for n, s in mesh),
            )
        ),
        xaxis={
            "title": _("array axis 1") if len(layout.array_shape) == 2 else _("array axis 0"),
            "range": [0, cols],
            "showgrid": False,
            "zeroline": False,
        },
        yaxis={
            "title": _("array axis 0") if len(layout.array_shape) == 2 else "",
            "range": [rows, 0],
            "showgrid": False,
            "zeroline": False,
            "showticklabels": len(layout.array_shape) == 2,
        },
        height=max(220, min(520, 60 + 40 * rows)),
        margin={"t": 50, "b": 40},
        plot_bgcolor="white",
    )
    return fig


# --- data parallelism ---------------------------------------------------------------------------


def mlp_loss(params: Any, x: Any, y: Any) -> Any:
    """Mean squared error of a 2-layer tanh MLP: the model of the data-parallel step."""
    import jax.numpy as jnp

    (w1, b1), (w2, b2) = params
    hidden = jnp.tanh(x @ w1 + b1)
    return jnp.mean((hidden @ w2 + b2 - y) ** 2)


#: The scaling tab's batch: split over each device count it times.
SCALING_BATCH = 1024


def data_parallel_step(
    n_devices: int,
    batch: int = SCALING_BATCH,
    features: int = 64,
    hidden: int = 256,
    platform: str | None = None,
) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """A jitted loss-and-gradient step and its arguments, the batch sharded over ``n_devices``.

    Parameters are replicated (``P()``), the batch split along its first axis (``P('batch')``);
    XLA adds the all-reduce that sums the per-device gradients. Same data for every ``n_devices``.
    """
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    if batch % n_devices:
        raise ValueError(f"batch {batch} is not a multiple of {n_devices} devices")
    rng = np.random.default_rng(0)
    params = (
        (
            rng.normal(size=(features, hidden)).astype(np.float32) / np.sqrt(features),
            np.zeros(hidden, np.float32),
        ),
        (
            rng.normal(size=(hidden, 1)).astype(np.float32) / np.sqrt(hidden),
            np.zeros(1, np.float32),
        ),
    )
    x = rng.normal(size=(batch, features)).astype(np.float32)
    y = rng.normal(size=(batch, 1)).astype(np.float32)
    mesh = jax.make_mesh((n_devices,), ("batch",), devices=devices_of(platform)[:n_devices])
    replicated, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("batch"))
    args = (jax.device_put(params, replicated), jax.device_put(x, split), jax.device_put(y, split))
    return jax.jit(jax.value_and_grad(mlp_loss)), args


def device_counts(available: int, batch: int = SCALING_BATCH) -> tuple[int, ...]:
    """1, 2, 4, 8 ... up to ``available``, and ``available`` itself: each that splits ``batch``
    evenly (a batch of 1,024 over 3 devices failed at the page's button, after the page had
    promised it)."""
    counts = [1 << i for i in range(available.bit_length()) if 1 << i <= available]
    if counts[-1] != available:
        counts.append(available)
    return tuple(n for n in counts if batch % n == 0)


@dataclass(frozen=True)
class ScalingPoint:
    """The data-parallel step on ``devices`` devices: its timing and the loss it computed."""

    devices: int
    timing: timing.Timing
    loss: float


def scaling_point(
    devices: int, batch: int = SCALING_BATCH, budget_s: float = 0.3, platform: str | None = None
) -> ScalingPoint:
    """The data-parallel step on ``devices`` devices, timed (``timing.measure``) after a first
    call that compiles it and gives the loss: one point of the page's sweep, measured apart so
    the page shows its progress between points (each in the compute worker)."""
    step, args = data_parallel_step(devices, batch=batch, platform=platform)
    loss, _ = step(*args)
    return ScalingPoint(devices, timing.measure(step, *args, budget_s=budget_s), float(loss))


def scaling_figure(points: tuple[ScalingPoint, ...], where: str) -> go.Figure:
    """Time per step against device count (median, IQR bars) beside the perfect-scaling line."""
    n = [p.devices for p in points]
    ms = np.array([p.timing.median for p in points]) * 1e3
    fig = go.Figure()
    fig.add_trace(timing_line(n, [p.timing for p in points], _("measured (median)"), scale=1e3))
    fig.add_scatter(
        x=n,
        y=[ms[0] / k for k in n],
        mode="lines",
        line={"dash": "dash"},
        name=_("perfect scaling: t(1 device) / n (a reference, not measured)"),
    )
    fig.update_layout(
        title=_("Loss + gradient step, batch split over n devices ({where})").format(where=where),
        xaxis={
            "title": _("devices"),
            "type": "log",
            "tickvals": n,
            "ticktext": [str(k) for k in n],
        },
        yaxis={"title": _("ms per step"), "rangemode": "tozero"},
        height=380,
        margin={"t": 50, "b": 40},
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


#: The fewest samples of each timing a verdict is given on: one sample's quartiles are itself.
_FEWEST_TO_COMPARE = 3


@claims.states_nothing("compares the step times measured here, beyond their spreads")
def scaling_sentence(points: tuple[ScalingPoint, ...]) -> str:
    """The fewest devices' step time against the most devices', with their quartile ranges, and
    a verdict only where the ranges do not overlap (Markdown)."""
    one, most = points[0], points[-1]
    a, b = one.timing, most.timing

    def spread(t: timing.Timing) -> str:
        if not t.samples:
            return t.describe()  # "no sample (cut: ...)"
        return _("{median} per step (quartiles {q1}–{q3})").format(
            median=timing.format_seconds(t.median),
            q1=timing.format_seconds(t.q1),
            q3=timing.format_seconds(t.q3),
        )

    if len(points) == 1:  # nothing to compare it with
        return _("Measured: {one} {one_time}.").format(
            one=devices_count(one.devices), one_time=spread(a)
        )

    if min(a.repeats, b.repeats) < _FEWEST_TO_COMPARE:  # cut short: no quartiles to compare
        verdict = _("too few samples to compare (the measurement's time budget cut it short)")
    elif b.clearly_faster_than(a):
        verdict = _("{ratio}× faster").format(ratio=words.factor(a.median / b.median, 2))
    elif a.clearly_faster_than(b):
        verdict = _("{ratio}× slower").format(ratio=words.factor(b.median / a.median, 2))
    else:
        verdict = _("no clear difference: the quartile ranges overlap")
    return _("Measured: {one} {one_time}, {most} {most_time}: {verdict}.").format(
        one=devices_count(one.devices),
        one_time=spread(a),
        most=devices_count(most.devices),
        most_time=spread(b),
        verdict=verdict,
    )

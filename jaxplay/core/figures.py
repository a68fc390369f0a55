"""One helper per kind of chart that several pages draw, so each kind reads the same everywhere.

Why: timings are drawn on every page, and a timing chart is only honest with its spread and
readable with its units. Medians go with asymmetric bars from the first to the third quartile (on a
log axis a symmetric ± spread can reach below zero); log axes get ticks at 1, 2 and 5 of each decade
(or at the decades alone when the range is wide), labelled with their units ("2 ms", "10k",
"4 MiB") rather than Plotly's bare minor ticks ("2 3 … 0.1 2"), over the range the data covers.

- :func:`log_axis` — a log axis with readable ticks, for ``update_layout``/``update_xaxes``.
- :func:`quartile_bars` — the error bars of medians from their samples' quartiles.
- :func:`timing_line` — medians against a size (time, or a rate such as GB/s), with quartile bars.
- :func:`timing_bars` — one bar per labelled measurement, with quartile bars.
- :func:`traces` and :func:`error_bars` — a figure's traces, a trace's error bars, typed.
- :func:`built` — a figure in the palette, built once per builder, arguments and language.
- :func:`plain` — visitor text as Plotly text (the rule beside Markdown's, ``markdown.escape``).
- :func:`tree_layout` and :func:`tree_edges` — where a tree's nodes and lines go (a pytree, a
  tree of PRNG keys), so every tree grows the same way: the root left, leaves downwards.

Charts of one topic only (a sharding grid, a jaxpr graph) stay in their topic.
"""

from __future__ import annotations

import hashlib
import html
import math
import pickle
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

import plotly.graph_objects as go
from plotly.basedatatypes import BaseTraceType

from jaxplay.core.timing import Timing, format_seconds

#: Ticks per decade while the range is narrow enough for them to stay legible.
_STEPS = (1, 2, 5)


def plain(text: object) -> str:
    """Visitor text as Plotly text: shown as typed, never as Plotly's own HTML.

    Plotly renders a subset of HTML in every string it draws — titles, axis and legend names,
    hover text, annotations, tick labels: ``<a href>`` becomes a clickable link, ``<b>``, ``<br>``
    and ``<span style>`` restyle the chart. A formula's comment, an array's name, a pytree's key
    or a mesh axis name typed by a visitor goes through this, and only that part: the app's own
    ``<br>`` around it still breaks lines. Plotly turns ``&lt;``, ``&gt;`` and ``&amp;`` back
    into the characters (and no other named entity, so quotes are left as they are).

    Example:
        >>> plain('x  # <a href="https://e.x">sign in</a> & go')
        'x  # &lt;a href="https://e.x"&gt;sign in&lt;/a&gt; &amp; go'
    """
    return html.escape(str(text), quote=False)


def format_count(value: float) -> str:
    """A count as an axis label: ``5``, ``200``, ``2k``, ``10k``, ``1M``."""
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def format_bytes(value: float) -> str:
    """A size as an axis label with binary units: ``512 B``, ``4 KiB``, ``16 MiB``."""
    for suffix, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(value) >= scale:
            return f"{value / scale:g} {suffix}"
    return f"{value:g} B"


def format_number(value: float) -> str:
    """A plain number as an axis label: ``0.01``, ``2``, ``500``, ``1e+06``."""
    return f"{value:g}"


def log_ticks(values: Iterable[float], base: float = 10.0) -> tuple[list[float], float, float]:
    """Tick values for a log axis over ``values``, and the axis range they call for.

    Ticks sit at 1, 2 and 5 times each power of ``base`` (10) while the values span at most three
    decades, else at the powers alone (for ``base=4``, sizes in bytes, at the powers of 4). The
    range is the values' own when at least two ticks fall inside it; otherwise it widens to the
    ticks just below and just above the values, so an axis never shows fewer than two labels.
    """
    finite = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    if not finite:
        return [], float("nan"), float("nan")
    lo, hi = min(finite), max(finite)
    first, last = math.floor(math.log(lo, base)), math.ceil(math.log(hi, base))
    steps = _STEPS if base == 10 and last - first <= 3 else (1,)
    candidates = sorted(m * base**k for k in range(first - 1, last + 2) for m in steps)
    inside = [c for c in candidates if lo * (1 - 1e-9) <= c <= hi * (1 + 1e-9)]
    if len(inside) >= 2:
        return inside, lo, hi
    below = max(c for c in candidates if c <= lo * (1 + 1e-9))
    above = min(c for c in candidates if c >= hi * (1 - 1e-9) and c > below)
    return [c for c in candidates if below <= c <= above], below, above


def log_axis(
    title: str,
    values: Iterable[float],
    fmt: Callable[[float], str] = format_number,
    base: float = 10.0,
) -> dict[str, Any]:
    """A log axis over ``values`` with labelled ticks (see :func:`log_ticks`) and its title.

    Arguments:
        title: the axis title (say what is measured; the ticks carry the units).
        values: every value drawn on the axis (medians and the ends of their bars).
        fmt: how a tick is written: :func:`~jaxplay.core.timing.format_seconds`,
            :func:`format_count`, :func:`format_bytes` or :func:`format_number`.
        base: 10, or 4 for sizes in bytes.

    Returns:
        Keyword arguments for ``fig.update_xaxes`` / ``update_yaxes`` (or a layout axis dict).
    """
    ticks, lo, hi = log_ticks(values, base)
    axis: dict[str, Any] = {"type": "log", "title": {"text": title}}
    if ticks:
        pad = 0.05 * max(math.log10(hi) - math.log10(lo), 0.5)
        axis |= {
            "tickmode": "array",
            "tickvals": ticks,
            "ticktext": [fmt(t) for t in ticks],
            "range": [math.log10(lo) - pad, math.log10(hi) + pad],
        }
    return axis


def seconds_axis(title: str, values: Iterable[float]) -> dict[str, Any]:
    """A log axis of durations in seconds, ticks labelled ``1 ms``, ``2 ms``, ``5 ms``, …"""
    return log_axis(title, values, format_seconds)


def quartile_bars(medians: Sequence[float], lows: Sequence[float], highs: Sequence[float]) -> dict:
    """Asymmetric error bars from each median down to ``lows`` and up to ``highs``."""
    return {
        "type": "data",
        "symmetric": False,
        "array": [h - m for m, h in zip(medians, highs, strict=True)],
        "arrayminus": [m - lo for m, lo in zip(medians, lows, strict=True)],
    }


def timing_values(
    timings: Sequence[Timing], scale: float = 1.0, work: Sequence[float] | None = None
) -> tuple[list[float], list[float], list[float]]:
    """(medians, lows, highs) of timings as drawn: times ``scale``, or rates ``work / time``.

    With ``work`` (e.g. bytes moved per call / 1e9 for GB/s) a value is ``work / seconds``, so the
    slow quartile gives the low end of the bar.
    """
    if work is None:
        return (
            [t.median * scale for t in timings],
            [t.q1 * scale for t in timings],
            [t.q3 * scale for t in timings],
        )
    return (
        [w / t.median for w, t in zip(work, timings, strict=True)],
        [w / t.q3 for w, t in zip(work, timings, strict=True)],
        [w / t.q1 for w, t in zip(work, timings, strict=True)],
    )


def timing_line(
    x: Sequence[float],
    timings: Sequence[Timing],
    name: str,
    *,
    scale: float = 1.0,
    work: Sequence[float] | None = None,
    **kwargs: Any,
) -> go.Scatter:
    """Medians against ``x`` as a line, with bars from the first to the third quartile.

    Arguments:
        x: the sizes (batch sizes, widths, bytes, device counts).
        timings: one :class:`~jaxplay.core.timing.Timing` per size.
        name: the legend entry.
        scale: multiply seconds by this (1e3 for milliseconds).
        work: per size, the work of one call; the line is then the rate ``work / time``.
        kwargs: further ``go.Scatter`` arguments (``line``, ``legendgroup``, ``showlegend``).

    Hovering a point shows its timing in words (median ± IQR/2, samples × calls).
    """
    medians, lows, highs = timing_values(timings, scale, work)
    return go.Scatter(
        x=list(x),
        y=medians,
        error_y=quartile_bars(medians, lows, highs),
        mode="lines+markers",
        name=name,
        hovertext=[t.describe() for t in timings],
        **kwargs,
    )


def timing_bars(
    labels: Sequence[str], timings: Sequence[Timing], *, scale: float = 1e3, **kwargs: Any
) -> go.Bar:
    """One bar per labelled measurement at its median (ms by default), with quartile bars."""
    medians, lows, highs = timing_values(timings, scale)
    return go.Bar(
        x=list(labels),
        y=medians,
        error_y=quartile_bars(medians, lows, highs),
        text=[format_seconds(t.median) for t in timings],
        textposition="outside",
        hovertext=[t.describe() for t in timings],
        hoverinfo="text",
        **kwargs,
    )


def traces(fig: go.Figure) -> tuple[BaseTraceType, ...]:
    """``fig.data``, typed: Plotly ships no type hints, and a type checker infers ``Figure.data``
    from ``Figure.__getitem__``, which returns the figure itself for ``"data"``."""
    return cast("tuple[BaseTraceType, ...]", fig.data)


def error_bars(
    trace: go.Scatter | go.Scattergl | go.Bar,
) -> go.scatter.ErrorY | go.scattergl.ErrorY | go.bar.ErrorY | None:
    """``trace.error_y``, typed: without Plotly's type hints a checker reads every property as
    whatever ``__getitem__`` may return (a tuple, any Plotly object, ``None``)."""
    return cast("go.scatter.ErrorY | go.scattergl.ErrorY | go.bar.ErrorY | None", trace.error_y)


def bar_ends(*traces: BaseTraceType) -> list[float]:
    """Every value the traces draw on y, bar ends included (for :func:`log_axis`).

    The traces are lines and bars (``bar_ends(*traces(fig))``); any other kind is refused by
    name rather than read by guesswork.
    """
    ends: list[float] = []
    for trace in traces:
        if not isinstance(trace, go.Scatter | go.Bar):
            raise TypeError(f"bar_ends reads lines and bars, not a {type(trace).__name__} trace")
        ys = [float(v) for v in (() if trace.y is None else trace.y) if v is not None]
        ends += ys
        bars = error_bars(trace)
        if bars is not None and bars.array is not None:
            ends += [y + float(a) for y, a in zip(ys, bars.array, strict=False)]
            ends += [y - float(a) for y, a in zip(ys, bars.arrayminus or (), strict=False)]
    return ends


# --- one palette for every chart with lines ------------------------------------------------------

#: Line colours, in the order lines get them: Okabe & Ito's colour-blind-safe set without its
#: light members (sky blue, orange, yellow), which wash out on a projector; each has a contrast of
#: at least 2.5:1 against the white background and differs from every other by hue, not shade.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#000000", "#7A5C00")
#: Line dashes, in the same order: two lines differ by their dash too, for a viewer who cannot
#: tell the colours apart (or a grey-scale print).
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def distinguish(fig: go.Figure) -> go.Figure:
    """Give every line of ``fig`` its colour and dash from :data:`PALETTE` and :data:`DASHES`.

    Lines are the scatter traces drawn with lines; traces of one legend group (a line and its
    band, or one series over several panels) share a style. Bars, heatmaps and markers-only
    traces keep theirs. Returns ``fig`` (changed in place), for ``st.plotly_chart(distinguish(f))``.
    """
    styles: dict[object, int] = {}
    for index, trace in enumerate(traces(fig)):
        if not isinstance(trace, go.Scatter | go.Scattergl):
            continue
        mode = trace.mode or "lines"
        if "lines" not in mode:
            continue
        group = trace.legendgroup or trace.name or index
        slot = styles.setdefault(group, len(styles))
        colour = PALETTE[slot % len(PALETTE)]
        trace.update(line={"color": colour, "dash": DASHES[slot % len(DASHES)]})
        if "markers" in mode:
            trace.update(marker={"color": colour})
        bars = error_bars(trace)
        if bars is not None and bars.array is not None:
            trace.update(error_y={"color": colour})
    return fig


#: How many built figures :func:`built` keeps (the least recently drawn goes first).
MAX_BUILT = 128
#: ... and how much their arguments' pickles may add up to. A figure holds what it plots, in
#: Plotly's own copies, so its arguments' size measures it (the PRNG page's histograms of 1 MB
#: of samples keep 0.3 MB); a count alone would allow 128 of just under
#: :data:`MAX_DIGESTED_BYTES`.
MAX_BUILT_BYTES = 8 << 20
#: Arguments whose pickle is larger than this are not digested (hashing them would cost more
#: than building the figure): the figure is built every time.
MAX_DIGESTED_BYTES = 1 << 20
_built: OrderedDict[tuple[str, str, str], tuple[go.Figure, int]] = OrderedDict()
_built_bytes = 0
_built_lock = threading.Lock()


def built(build: Callable[..., go.Figure], args: tuple, language: str) -> go.Figure:
    """``distinguish(build(*args))``, built once per builder, arguments and language, and the
    same object returned to every later caller (who must only read it).

    Why: building a figure is most of what a chart costs a page's rerun (Plotly checks every
    property as it is set: 5 ms for the pytrees page's tree, 6 for the memory page's chart),
    and a room views the same results again and again. The arguments are told apart by a
    digest of their pickle (0.4 ms for the memory page's four results, where Streamlit's own
    hashing of them took 4.5 ms, close to the 6 ms of building the chart). ``language`` is the
    one the builder's words are in (:func:`jaxplay.core.i18n.current`): the same arguments
    draw another figure in another language.

    Built every time, unkept: a builder that is not a module's function under its own name (a
    lambda, a local function, a bound method, a page's function: two of them could share a
    name), and arguments that are not data (that do not pickle) or are larger than
    :data:`MAX_DIGESTED_BYTES`.
    """
    global _built_bytes
    name, digested = _own_name(build), _digest(args)
    if name is None or digested is None:
        return distinguish(build(*args))
    digest, size = digested
    key = (name, language, digest)
    with _built_lock:
        if key in _built:
            _built.move_to_end(key)
            return _built[key][0]
    fig = distinguish(build(*args))  # outside the lock: two builds of one key agree
    with _built_lock:
        if key not in _built:
            _built[key] = (fig, size)
            _built_bytes += size
        while len(_built) > MAX_BUILT or _built_bytes > MAX_BUILT_BYTES:
            _built_bytes -= _built.popitem(last=False)[1][1]
    return fig


def _own_name(build: Callable[..., Any]) -> str | None:
    """``module.qualname`` of a function that its module holds under that name, else None."""
    module_name = getattr(build, "__module__", None)
    qualname = getattr(build, "__qualname__", None)
    if not isinstance(module_name, str) or not isinstance(qualname, str):
        return None
    if module_name == "__main__":  # a Streamlit page's function: every page is __main__
        return None
    found: Any = sys.modules.get(module_name)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return f"{module_name}.{qualname}" if found is build else None


def _digest(args: tuple) -> tuple[str, int] | None:
    """A digest of a builder's arguments (their pickle) and the pickle's size, or None when
    they are not data or too large to be worth it."""
    if sum(getattr(arg, "nbytes", 0) for arg in args) > MAX_DIGESTED_BYTES:  # an array: no copy
        return None
    try:
        pickled = pickle.dumps(args, protocol=5)
    except Exception:  # not data (a lock, a deleted array, ...): built every time
        return None
    if len(pickled) > MAX_DIGESTED_BYTES:
        return None
    return hashlib.blake2b(pickled, digest_size=16).hexdigest(), len(pickled)


def forget_built() -> None:
    """Drop every figure :func:`built` keeps (tests)."""
    global _built_bytes
    with _built_lock:
        _built.clear()
        _built_bytes = 0


def contrast(first: str, second: str) -> float:
    """WCAG's contrast ratio of two ``#rrggbb`` colours (1 for equal, 21 for black on white)."""

    def luminance(colour: str) -> float:
        channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    light, dark = sorted((luminance(first), luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def colour_distance(first: str, second: str) -> float:
    """How different two ``#rrggbb`` colours look: CIE76 ΔE in CIELAB (about 2.3 is just
    noticeable; two shades of one blue are under 20, unlike hues are 40 or more)."""

    def lab(colour: str) -> tuple[float, float, float]:
        rgb = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        x = (0.4124 * lin[0] + 0.3576 * lin[1] + 0.1805 * lin[2]) / 0.95047
        y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
        z = (0.0193 * lin[0] + 0.1192 * lin[1] + 0.9505 * lin[2]) / 1.08883

        def f(t: float) -> float:
            return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

        return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))

    return math.dist(lab(first), lab(second))


#: A node of a drawn tree: its path of child indices from the root (``()`` is the root).
Path = tuple[int, ...]


def tree_layout(paths: Sequence[Path]) -> dict[Path, tuple[float, float]]:
    """(x, y) of every node of a tree given by its nodes' paths (the root ``()`` among them,
    siblings in order): x is the depth, the nodes without children a row apart downwards in
    depth-first order (so a pytree's leaves read in flatten order), each parent level with the
    middle of its first and last child.

    Example:
        >>> tree_layout([(), (0,), (1,), (1, 0), (1, 1)])[()]
        (0.0, -0.75)
    """
    children: dict[Path, list[Path]] = {}
    for path in paths:
        if path:
            children.setdefault(path[:-1], []).append(path)
    pos: dict[Path, tuple[float, float]] = {}
    stack: list[Path] = [()]  # depth first from the root: a subtree's rows stay together
    while stack:
        path = stack.pop()
        if path in children:
            stack += reversed(children[path])
        else:
            pos[path] = (float(len(path)), -float(len(pos)))
    for path in sorted(paths, key=len, reverse=True):
        kids = children.get(path)
        if kids:
            pos[path] = (float(len(path)), (pos[kids[0]][1] + pos[kids[-1]][1]) / 2)
    return pos


def tree_edges(
    pos: dict[Path, tuple[float, float]], elbow: float | None = None
) -> tuple[list[float | None], list[float | None]]:
    """The x and y of a line from each node of ``pos`` (from :func:`tree_layout`) to its parent,
    ``None`` between lines, for one ``go.Scatter``: straight, or with ``elbow`` bent at that
    distance right of the parent and running level into the child (a file-tree look)."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    for path, (x1, y1) in pos.items():
        if not path:
            continue
        x0, y0 = pos[path[:-1]]
        if elbow is None:
            xs += [x0, x1, None]
            ys += [y0, y1, None]
        else:
            xs += [x0, x0 + elbow, x1, None]
            ys += [y0, y1, y1, None]
    return xs, ys

"""The shared chart helpers: readable log axes with units, and medians with quartile bars."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import pytest

from jaxplay.core import figures
from jaxplay.core.timing import Timing


def test_narrow_ranges_get_ticks_at_1_2_5_with_units() -> None:
    axis = figures.seconds_axis("time", [3e-4, 4e-3])
    assert axis["type"] == "log" and axis["title"] == {"text": "time"}
    assert axis["tickvals"] == pytest.approx([5e-4, 1e-3, 2e-3])
    assert axis["ticktext"] == ["500 µs", "1 ms", "2 ms"]
    lo, hi = axis["range"]  # log10 units: the data's range, a little wider
    assert math.log10(2e-4) < lo < math.log10(3e-4) and math.log10(4e-3) < hi < math.log10(5e-3)


def test_wide_ranges_get_decades_only() -> None:
    axis = figures.log_axis("elements", [1, 3_000_000], figures.format_count)
    assert axis["tickvals"] == pytest.approx([1, 10, 100, 1e3, 1e4, 1e5, 1e6])
    assert axis["ticktext"] == ["1", "10", "100", "1k", "10k", "100k", "1M"]


def test_data_between_two_ticks_is_bracketed_by_both() -> None:
    axis = figures.seconds_axis("time", [3.1e-3, 4.2e-3])
    assert axis["ticktext"] == ["2 ms", "5 ms"]
    lo, hi = axis["range"]
    assert lo < math.log10(2e-3) and hi > math.log10(5e-3)
    one = figures.seconds_axis("time", [1e-3, 1.5e-3])  # one tick inside: widened to two
    assert one["ticktext"] == ["1 ms", "2 ms"]


def test_sizes_in_bytes_are_ticked_in_binary_units() -> None:
    axis = figures.log_axis("bytes", [4096, 2**24], figures.format_bytes, base=4)
    assert axis["ticktext"][0] == "4 KiB" and axis["ticktext"][-1] == "16 MiB"
    assert all(t / 4 in axis["tickvals"] for t in axis["tickvals"][1:])


def test_nothing_positive_leaves_plotly_to_choose() -> None:
    axis = figures.log_axis("x", [0.0, float("nan")])
    assert axis == {"type": "log", "title": {"text": "x"}}


def test_timing_line_draws_medians_with_quartile_bars_or_rates() -> None:
    t = Timing((1.0, 2.0, 3.0, 4.0, 5.0), 1, 0)
    line = figures.timing_line([10], [t], "f", scale=1e3)
    assert list(line.y) == [3000.0]
    assert list(line.error_y.array) == [1000.0] and list(line.error_y.arrayminus) == [1000.0]
    rate = figures.timing_line([10], [t], "f", work=[6.0])
    assert list(rate.y) == [2.0]  # 6 units of work / 3 s
    assert rate.error_y.array[0] == pytest.approx(3.0 - 2.0)  # the fast quartile, 2 s
    assert rate.error_y.arrayminus[0] == pytest.approx(2.0 - 1.5)  # the slow quartile, 4 s
    assert figures.bar_ends(line) == [3000.0, 4000.0, 2000.0]
    with pytest.raises(TypeError, match="Heatmap"):
        figures.bar_ends(go.Heatmap(z=[[1.0]]))


def test_timing_bars_label_each_median() -> None:
    bars = figures.timing_bars(["a", "b"], [Timing((0.001,), 1, 0), Timing((0.002,), 1, 0)])
    assert list(bars.x) == ["a", "b"] and list(bars.y) == [1.0, 2.0]
    assert list(bars.text) == ["1 ms", "2 ms"]


# --- one palette -------------------------------------------------------------------------------

#: Two lines a projector keeps apart: Plotly's default dark and light blue (the Stateful page's
#: two losses) are 37 apart, under this.
MIN_DISTANCE = 40.0


def test_the_palette_survives_a_projector() -> None:
    """Every colour stands out from the white background; every two differ by hue, not shade."""
    import itertools

    for colour in figures.PALETTE:
        assert figures.contrast(colour, "#ffffff") >= 2.5, colour
    for a, b in itertools.combinations(figures.PALETTE, 2):
        assert figures.colour_distance(a, b) >= MIN_DISTANCE, (a, b)
    assert figures.colour_distance("#1f77b4", "#aec7e8") < MIN_DISTANCE  # the shades it replaced
    assert len(set(figures.DASHES)) == len(figures.DASHES) >= len(figures.PALETTE)


def test_lines_differ_by_colour_and_dash_and_groups_share_a_style() -> None:
    import plotly.graph_objects as go

    fig = go.Figure(
        [
            go.Scatter(x=[1, 2], y=[1, 2], mode="lines", name="a"),
            go.Scatter(x=[1, 2], y=[2, 3], mode="lines+markers", name="b", line_color="#aec7e8"),
            go.Scatter(x=[1, 2], y=[2, 3], mode="lines", name="b again", legendgroup="b"),
            go.Bar(x=[1], y=[1], marker_color="#123456"),
        ]
    )
    figures.distinguish(fig)
    a, b, b2, bar = fig.data
    assert (a.line.color, a.line.dash) != (b.line.color, b.line.dash)
    assert a.line.dash != b.line.dash
    assert figures.colour_distance(a.line.color, b.line.color) >= MIN_DISTANCE
    assert b.marker.color == b.line.color
    assert bar.marker.color == "#123456"


def test_the_state_pages_two_losses_are_told_apart() -> None:
    from jaxplay import state

    fig = figures.distinguish(state.loss_figure([("threaded", [1.0, 0.5]), ("hidden", [1.0, 1.0])]))
    one, two = fig.data
    assert figures.colour_distance(one.line.color, two.line.color) >= MIN_DISTANCE
    assert one.line.dash != two.line.dash


def test_pages_draw_charts_through_the_palette() -> None:
    """``st.plotly_chart`` only in ``pages/_ui.chart``, which applies :func:`distinguish`."""
    from jaxplay.hosting import catalog

    direct = [
        path.name
        for path in (catalog.ROOT / "pages").glob("*.py")
        if path.name != "_ui.py" and "st.plotly_chart(" in path.read_text(encoding="utf-8")
    ]
    assert not direct, direct


def test_a_tree_grows_right_with_its_leaves_downwards_in_order() -> None:
    from jaxplay.core.figures import tree_edges, tree_layout

    # root ── a ── (a0, a1, a2)
    #      └─ b                     listed breadth first: the rows still go depth first
    paths = [(), (0,), (1,), (0, 0), (0, 1), (0, 2)]
    pos = tree_layout(paths)
    assert [pos[p] for p in [(0, 0), (0, 1), (0, 2), (1,)]] == [
        (2.0, 0.0),
        (2.0, -1.0),
        (2.0, -2.0),
        (1.0, -3.0),
    ]
    assert pos[(0,)] == (1.0, -1.0)  # level with its middle child
    assert pos[()] == (0.0, -2.0)  # between a (-1) and b (-3)
    xs, ys = tree_edges(pos)
    assert xs.count(None) == ys.count(None) == len(paths) - 1
    bent_x, bent_y = tree_edges(pos, elbow=0.5)
    assert len(bent_x) == 4 * (len(paths) - 1)
    # The bent line leaves the parent, then runs level into the child.
    assert all(bent_y[i + 1] == bent_y[i + 2] for i in range(0, len(bent_y), 4))


# --- built: a figure built once per builder, arguments and language ---------------------------

BUILDS: list[tuple] = []


def line_of(n: int, title: str) -> go.Figure:
    BUILDS.append((n, title))
    return go.Figure(go.Scatter(y=list(range(n)), mode="lines"), layout={"title": title})


def line_tagged(n: int, tag: object) -> go.Figure:
    BUILDS.append((n, tag))
    return go.Figure(go.Scatter(y=list(range(n)), mode="lines"))


@pytest.fixture
def fresh() -> None:
    figures.forget_built()
    BUILDS.clear()


@pytest.mark.usefixtures("fresh")
def test_built_once_per_arguments_and_language_and_in_the_palette() -> None:
    first = figures.built(line_of, (3, "t"), "en")
    assert figures.built(line_of, (3, "t"), "en") is first
    assert first.data[0].line.color == figures.PALETTE[0]  # distinguished
    assert BUILDS == [(3, "t")]
    assert figures.built(line_of, (3, "t"), "zh") is not first  # its words may differ
    assert figures.built(line_of, (4, "t"), "en").data[0].y == (0, 1, 2, 3)
    assert BUILDS == [(3, "t"), (3, "t"), (4, "t")]


@pytest.mark.usefixtures("fresh")
def test_built_keeps_the_most_recent_few(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(figures, "MAX_BUILT", 2)
    figures.built(line_of, (1, "t"), "en")
    figures.built(line_of, (2, "t"), "en")
    figures.built(line_of, (1, "t"), "en")  # drawn again: the most recent now
    figures.built(line_of, (3, "t"), "en")  # drops 2, the least recently drawn
    figures.built(line_of, (1, "t"), "en")
    assert BUILDS == [(1, "t"), (2, "t"), (3, "t")]
    figures.built(line_of, (2, "t"), "en")
    assert BUILDS[-1] == (2, "t")


@pytest.mark.usefixtures("fresh")
def test_built_keeps_no_more_than_its_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept figures' arguments stay within a budget of bytes, not only a count: a few large
    ones fill it, and the least recently drawn go first until the rest fit."""
    monkeypatch.setattr(figures, "MAX_BUILT_BYTES", 5_500)
    for n in range(3):
        figures.built(line_tagged, (n, np.zeros(200)), "en")  # pickles of 1,731 bytes: three fit
    figures.built(line_tagged, (0, np.zeros(200)), "en")  # all three fit: drawn again
    assert [n for n, _tag in BUILDS] == [0, 1, 2]
    figures.built(line_tagged, (3, np.zeros(200)), "en")  # the fourth drops 1, then 2 is next
    figures.built(line_tagged, (1, np.zeros(200)), "en")
    assert [n for n, _tag in BUILDS] == [0, 1, 2, 3, 1]
    assert sum(size for _fig, size in figures._built.values()) == figures._built_bytes <= 5_500


@pytest.mark.usefixtures("fresh")
def test_built_every_time_without_a_name_or_data() -> None:
    """A local function or lambda could share its name with another; a lock is not data."""
    import threading

    def local(n: int) -> go.Figure:
        return line_of(n, "local")

    figures.built(local, (1,), "en")
    figures.built(local, (1,), "en")
    figures.built(lambda: line_of(1, "lambda"), (), "en")
    figures.built(lambda: line_of(1, "lambda"), (), "en")
    assert BUILDS == [(1, "local")] * 2 + [(1, "lambda")] * 2
    lock = threading.Lock()
    figures.built(line_tagged, (1, lock), "en")
    figures.built(line_tagged, (1, lock), "en")
    assert BUILDS[-2:] == [(1, lock)] * 2


class Drawer:
    def line(self, n: int) -> go.Figure:
        return line_of(n, "method")


@dataclass
class Holding:
    values: np.ndarray


@pytest.mark.usefixtures("fresh")
def test_built_every_time_for_a_method_a_partial_or_large_arguments(monkeypatch) -> None:
    """A bound method's name is its class's, whatever its object; a partial has none; hashing
    a large argument would cost more than the figure."""
    import functools

    drawer = Drawer()
    figures.built(drawer.line, (1,), "en")
    figures.built(drawer.line, (1,), "en")
    figures.built(functools.partial(line_of, 2), ("partial",), "en")
    figures.built(functools.partial(line_of, 2), ("partial",), "en")
    assert BUILDS == [(1, "method")] * 2 + [(2, "partial")] * 2
    monkeypatch.setattr(figures, "MAX_DIGESTED_BYTES", 1000)
    BUILDS.clear()
    for _ in range(2):
        figures.built(line_tagged, (1, np.zeros(200)), "en")  # 1,600 bytes: not even pickled
        figures.built(line_tagged, (2, Holding(np.zeros(200))), "en")  # its pickle is too large
        figures.built(line_tagged, (3, np.zeros(10)), "en")  # small: kept
    assert [n for n, _tag in BUILDS] == [1, 2, 3, 1, 2]

"""The shared chart helpers: readable log axes with units, and medians with quartile bars."""

from __future__ import annotations

import math

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


def test_timing_bars_label_each_median() -> None:
    bars = figures.timing_bars(["a", "b"], [Timing((0.001,), 1, 0), Timing((0.002,), 1, 0)])
    assert list(bars.x) == ["a", "b"] and list(bars.y) == [1.0, 2.0]
    assert list(bars.text) == ["1 ms", "2 ms"]

"""What the vmap page shows, built in ``jaxplay.vmap``: the editor's lines and verdicts, the speed
sweep's labels and caption, the convolution's metrics and table, the jaxprs' headings."""

from __future__ import annotations

import numpy as np
import pytest

from jaxplay import vmap
from jaxplay.vmap import _batching

BATCH_FIRST, BATCH_LAST = vmap.LAYOUTS
SHARED, PER_EXAMPLE = vmap.W_CHOICES


def _outcome(in_axes: str, layout: str = BATCH_FIRST, w_choice: str = SHARED) -> vmap.VmapOutcome:
    return vmap.apply_axes(vmap.parse_axes(in_axes), 0, layout, w_choice)


def test_each_input_says_its_mapped_axis_and_what_one_call_sees() -> None:
    x, w, b = (vmap.shape_sentence(row) for row in _outcome("(0, None)").rows)
    assert x == "`x`: (:orange-background[**8**], 5) — axis 0 mapped; the function sees `(5,)`"
    assert w == "`params[0] (W)`: (3, 5) — not mapped; the function sees all of it, `(3, 5)`"
    assert b == "`params[1] (b)`: (3,) — not mapped; the function sees all of it, `(3,)`"
    (x, *_) = (vmap.shape_sentence(row) for row in _outcome("(1, None)", BATCH_LAST).rows)
    assert x == "`x`: (5, :orange-background[**8**]) — axis 1 mapped; the function sees `(5,)`"


@pytest.mark.parametrize(
    ("in_axes", "layout", "w_choice", "verdict", "said"),
    [
        ("(0, None)", BATCH_FIRST, SHARED, "SAME_AS_LOOP", "Output shape (8, 3): the same numbers"),
        ("(0, 0)", BATCH_FIRST, SHARED, "REFUSED", "**JAX refuses:** "),
        ("(1, None)", BATCH_LAST, PER_EXAMPLE, "NOT_PER_EXAMPLE", "It runs, with output shape"),
    ],
)
def test_the_verdict_is_the_refusal_the_loops_numbers_or_the_silent_bug(
    in_axes: str, layout: str, w_choice: str, verdict: str, said: str
) -> None:
    got, sentence = vmap.axes_verdict(_outcome(in_axes, layout, w_choice))
    assert got is vmap.AxesVerdict[verdict]
    assert sentence.startswith(said), sentence


def test_the_puzzle_names_the_batch_the_editor_really_has() -> None:
    assert f"**The puzzle:** {vmap.EDITOR_BATCH} examples" in vmap.puzzle_intro()


@pytest.mark.parametrize(
    ("n", "running", "done"),
    [
        (1, "Timing the loop, vmap and jit(vmap) at 1 batch size…", "1 batch size timed"),
        (3, "Timing the loop, vmap and jit(vmap) at 3 batch sizes…", "3 batch sizes timed"),
        (
            1200,
            "Timing the loop, vmap and jit(vmap) at 1,200 batch sizes…",
            "1,200 batch sizes timed",
        ),
    ],
)
def test_the_sweep_says_how_many_sizes_it_times(n: int, running: str, done: str) -> None:
    assert vmap.timing_labels(n) == (running, done)
    assert vmap.point_label(16) == "batch 16"


def _timing(agree: bool, disagree_at: tuple[int, ...] = ()) -> _batching.BatchTiming:
    return _batching.BatchTiming((1, 4, 16), 784, 256, {}, "cpu", agree, disagree_at)


def test_the_caption_lists_every_size_when_the_three_agree_and_only_the_differing_ones() -> None:
    agreed = vmap.batching_caption(_timing(True))
    assert agreed.startswith("D=784, H=256; the three agree at batch 1, 4, 16 (within")
    differed = vmap.batching_caption(_timing(False, (16,)))
    assert "the three **differ** at batch 16." in differed and "1, 4" not in differed


def test_the_offered_batch_sizes_are_all_timeable_and_hold_the_defaults() -> None:
    assert vmap.check_batch_sizes(vmap.BATCH_SIZE_CHOICES) == vmap.BATCH_SIZE_CHOICES
    assert set(vmap.DEFAULT_BATCH_SIZES) <= set(vmap.BATCH_SIZE_CHOICES)
    assert max(vmap.BATCH_SIZE_CHOICES) == vmap.MAX_TIMING_BATCH


def test_the_convolutions_defaults_are_offered_and_its_custom_kernel_parses() -> None:
    assert set(vmap.DEFAULT_IMAGES) <= set(vmap.PATTERNS)
    assert set(vmap.DEFAULT_KERNELS) <= set(vmap.KERNEL_CHOICES) - {vmap.CUSTOM_KERNEL}
    assert vmap.KERNEL_CHOICES[-1] == vmap.CUSTOM_KERNEL
    result = vmap.run_conv(vmap.DEFAULT_IMAGES, 8, [vmap.CUSTOM_KERNEL], vmap.DEFAULT_CUSTOM_KERNEL)
    assert result.kernels[0].tolist() == [[0, 1, 0], [1, -4, 1], [0, 1, 0]]


def test_the_convolutions_metrics_and_table_come_from_the_run() -> None:
    result = vmap.run_conv(vmap.DEFAULT_IMAGES, 8, vmap.DEFAULT_KERNELS)
    metrics = dict(vmap.agreement_metrics(result))
    assert list(metrics) == ["max |batch_conv2d − convolve2d|", "max |batch_conv2d − lax.conv|"]
    assert float(metrics["max |batch_conv2d − convolve2d|"]) == pytest.approx(
        result.max_diff_convolve2d, rel=0.05, abs=1e-12
    )
    rows, index = vmap.level_table(result)
    assert index == "code"
    assert [row[index] for row in rows] == [level.code for level in result.levels]
    assert list(rows[0]) == ["code", "maps_over", "per_call", "output"]
    assert rows[0]["output"] == "(2, 2, 6, 6)"


def test_the_jaxpr_headings_count_one_dot_general_per_example_against_one() -> None:
    jc = vmap.batched_jaxprs(3)
    (loop_heading, loop_text), (vmap_heading, vmap_text) = vmap.jaxpr_panels(jc)
    assert loop_heading == "**Python loop**: 3 × `dot_general`"
    assert vmap_heading == "**vmap**: 1 × `dot_general`, for any batch"
    assert (loop_text, vmap_text) == (jc.loop_text, jc.vmap_text)
    assert np.char.count(loop_text, "dot_general") == 3

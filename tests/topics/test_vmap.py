"""The vmap page's claims: safe axis parsing, shapes and reasons, conv agreement, jaxprs, timing."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxplay import article
from jaxplay import vmap as vz
from jaxplay.core import i18n, jaxprs, roofline
from jaxplay.vmap import _axes, _batching, _conv

BATCH_FIRST, BATCH_LAST = vz.LAYOUTS
SHARED, PER_EXAMPLE = vz.W_CHOICES


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("0", 0),
        ("(0, None)", (0, None)),
        ("[1, (0, None)]", [1, (0, None)]),
        ("-1", -1),
        ("(0,)", (0,)),
    ],
)
def test_axis_specs_parse_to_ints_none_tuples_and_lists(text: str, spec: object) -> None:
    assert vz.parse_axes(text) == spec


@pytest.mark.parametrize(
    ("text", "message", "col"),
    [
        ("__import__('os').system('ls')", "only hold integers", 1),
        ("(0, 1.5)", "only hold integers", 5),
        ("(0, True)", "only hold integers", 5),
        ("(0, x)", "only hold integers", 5),
        ("(0, 1001)", "far out of range", 5),
        ("(0, None", "not valid", 1),
        ("", "empty", None),
        ("(((((0,),),),),)", "nested", None),
        ("0, " * 40, "limit is 80", None),
    ],
)
def test_bad_axis_specs_are_refused_with_where(text: str, message: str, col: int | None) -> None:
    with pytest.raises(vz.AxesError, match=message) as err:
        vz.parse_axes(text)
    if col is not None:
        assert err.value.col == col
        assert err.value.pointer().splitlines()[1] == " " * (col - 1) + "^"
    assert err.value.field == "in_axes"


@pytest.mark.parametrize("layout", vz.LAYOUTS)
@pytest.mark.parametrize("w_choice", vz.W_CHOICES)
def test_the_right_axes_equal_a_loop_over_examples(layout: str, w_choice: str) -> None:
    spec = vz.parse_axes(vz.correct_axes(layout, w_choice))
    result = vz.apply_axes(spec, 0, layout, w_choice)
    assert result.error is None and result.output_shape == (8, 3) and result.matches_loop
    moved = vz.apply_axes(spec, 1, layout, w_choice)
    assert moved.output_shape == (3, 8) and moved.matches_loop


def test_loop_reference_is_the_articles_manual_batch() -> None:
    X, params = _axes.editor_inputs(BATCH_FIRST, SHARED)
    np.testing.assert_allclose(
        vz.manual_batch_process(X, params), _axes.reference_outputs(BATCH_FIRST, SHARED), rtol=1e-5
    )


@pytest.mark.parametrize(
    ("in_text", "out_axes", "layout", "plain", "jax_says"),
    [
        ("(0, 0)", 0, BATCH_FIRST, "same length", "inconsistent sizes"),
        ("(0, None, 0)", 0, BATCH_FIRST, "3 entries but the function takes 2", "len(in_axes)=3"),
        ("(0,)", 0, BATCH_FIRST, "has 1 entry but the function takes 2", "len(in_axes)=1"),
        ("(2, None)", 0, BATCH_FIRST, "Axis 2 does not exist on an input of shape (8, 5)", "rank"),
        ("(None, None)", 0, BATCH_FIRST, "Nothing is mapped", "non-None"),
        ("((0,), None)", 0, BATCH_FIRST, "mirror the arguments", "tree prefix"),
        ("(1, None)", 0, BATCH_FIRST, "not its batch axis", "dot_general"),
        ("(0, None)", 0, BATCH_LAST, "not its batch axis", "dot_general"),
        ("(0, None)", None, BATCH_FIRST, "out_axes=None", "axis spec None"),
        ("(0, None)", 2, BATCH_FIRST, "out_axes=2 does not exist", "out of bounds"),
        ("(0, None)", (0,), BATCH_FIRST, "out_axes must mirror the output", "out_axes spec"),
        ("(None, (None, 0))", 0, BATCH_FIRST, "x is not mapped", "dot_general"),
        ("(0, [0, None])", 0, BATCH_FIRST, "a list does not mirror it", "in_axes specification"),
        ("(1, (1, None))", 0, BATCH_FIRST, "Check the mapped axes of both x and W", "dot_general"),
    ],
)
def test_jaxs_refusals_are_explained(
    in_text: str, out_axes: _axes.AxisSpec, layout: str, plain: str, jax_says: str
) -> None:
    result = vz.apply_axes(vz.parse_axes(in_text), out_axes, layout, SHARED)
    assert result.output_shape is None and result.error is not None
    assert plain in result.error.plain
    assert jax_says in result.error.message


def test_a_list_of_the_arguments_entries_is_their_tuple_and_refused_inside() -> None:
    """JAX reads a top-level list as the arguments' tuple, and refuses one where a tuple (the
    params) is: the editor keeps what was typed and lets JAX decide."""
    assert vz.parse_axes("[0, (0, None)]") == [0, (0, None)]
    listed = vz.apply_axes(vz.parse_axes("[0, (0, None)]"), 0, BATCH_FIRST, PER_EXAMPLE)
    assert listed.error is None and listed.matches_loop
    assert "in_axes=[0, (0, None)]" in listed.code
    inside = vz.apply_axes(vz.parse_axes("(0, [0, None])"), 0, BATCH_FIRST, PER_EXAMPLE)
    assert inside.error is not None and inside.rows == ()
    with pytest.raises(ValueError, match="tree prefix"):
        jax.vmap(lambda x, p: x, in_axes=(0, [0, None]))(np.ones((8, 5)), (np.ones(3), np.ones(3)))


def test_wrong_axes_can_run_and_compute_something_else() -> None:
    result = vz.apply_axes((1, None), 0, BATCH_LAST, PER_EXAMPLE)
    assert result.error is None and result.output_shape == (8, 8, 3)
    assert result.matches_loop is False


def test_mapped_axes_are_marked_per_input() -> None:
    result = vz.apply_axes((-1, (0, None)), 0, BATCH_LAST, PER_EXAMPLE)
    assert [r.axis for r in result.rows] == [1, 0, None]
    assert result.rows[0].markdown() == "(5, :orange-background[**8**])"
    assert result.rows[2].markdown() == "(3,)"
    assert [r.per_call for r in result.rows] == [(5,), (3, 5), (3,)]
    assert _axes.leaf_axes((0, 0, 0), [[(8, 5)], [(3, 5), (3,)]]) is None
    assert _axes.leaf_axes(0, [[(8, 5)], [(3, 5), (3,)]]) == [0, 0, 0]


def test_nested_vmap_conv_equals_both_references() -> None:
    r = vz.run_conv(
        list(vz.PATTERNS[:4]), 8, list(vz.KERNELS)[:3] + [vz.CUSTOM_KERNEL], "1 2 3; 4 5 6; 7 8 9"
    )
    assert r.outputs.shape == (4, 4, 6, 6)
    assert r.max_diff_convolve2d < 1e-5 and r.max_diff_lax_conv < 1e-5
    manual = sum(
        r.images[0, i : i + 6, j : j + 6] * r.kernels[3, i, j] for i in range(3) for j in range(3)
    )
    np.testing.assert_allclose(r.outputs[0, 3], manual, rtol=1e-5, atol=1e-5)
    assert [lv.output for lv in r.levels] == [
        "(4, 4, 6, 6)",
        "(4, 6, 6)",
        "(36,) reshaped to (6, 6)",
    ]
    fig = vz.conv_figure(r)
    assert len(fig.data) == 4 * (1 + 4)
    assert r.levels[0].maps_over.startswith("4 images (axis 0 of images")


def test_the_levels_are_said_in_the_language_they_are_read_in() -> None:
    """The result comes from the compute worker, which speaks no language: the table's
    sentences are built when the page reads them."""
    r = vz.run_conv(["disc"], 5, ["identity"])
    with i18n.speaking("zh"):
        chinese = r.levels[0].maps_over
    assert chinese != r.levels[0].maps_over and "1" in chinese
    with pytest.raises(ValueError, match="3 rows of 3"):
        vz.conv_inputs(("disc",), 5, (vz.CUSTOM_KERNEL,), "1 2; 3")


def test_one_image_and_one_kernel_are_counted_in_the_singular() -> None:
    r = vz.run_conv(["disc"], 5, ["identity"])
    assert r.levels[0].maps_over.startswith("1 image (")
    assert r.levels[1].maps_over.startswith("1 kernel (")
    assert r.levels[2].maps_over.startswith("9 patches (")


def test_the_articles_nested_vmap_line_is_shown_as_written_and_is_what_runs() -> None:
    """The article says the first vmap batches the channels (axis 0 of the images) and the
    second the kernels: read left to right, that is what the code does."""
    import inspect

    from jaxplay.article import _s3_vmap

    assert vz.BATCH_CONV2D_LINES in inspect.getsource(_s3_vmap)
    assert "The first vmap batches the channels, the second the kernels" in vz.BATCH_CONV2D_LINES
    example = article.by_id("vmap-conv")
    assert vz.BATCH_CONV2D_LINES in example.source
    assert "backwards" not in example.explanation
    images, kernels = np.zeros((3, 8, 8), np.float32), np.zeros((4, 3, 3), np.float32)
    assert vz.batch_conv2d(images, kernels).shape == (3, 4, 6, 6)  # images first, then kernels


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1 2 3; 4 5 6", "3 rows of 3"),
        ("1 2 3; 4 5 6; 7 8", "3 rows of 3"),
        ("1 2 3; 4 x 6; 7 8 9", "row 2"),
        ("1 2 3; 4 nan 6; 7 8 9", "finite"),
        ("1 2 3; 4 1e9 6; 7 8 9", "1000"),
    ],
)
def test_bad_kernels_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _conv.parse_kernel(text)


def test_conv_sizes_are_bounded_naming_the_limit() -> None:
    with pytest.raises(ValueError, match="5 to 32"):
        vz.run_conv(["disc"], 40, ["identity"])
    with pytest.raises(ValueError, match="1 to 4 images"):
        vz.run_conv(list(vz.PATTERNS), 8, ["identity"])


@pytest.mark.parametrize("batch", [1, 3, 6])
def test_vmap_jaxpr_has_one_dot_general_the_loop_one_per_example(batch: int) -> None:
    jc = vz.batched_jaxprs(batch)
    assert jc.loop_counts["dot_general"] == batch
    assert jc.vmap_counts["dot_general"] == 1
    assert "dot_general" in jc.vmap_text
    # What the shown docstring says the loop costs: a slice (none at batch 1) and a squeeze,
    # a dot_general and an add per example, then one stack.
    assert jc.loop_counts.get("slice", 0) == (batch if batch > 1 else 0)
    assert jc.loop_counts["squeeze"] == batch and jc.loop_counts["add"] == batch
    assert jc.loop_counts["stack"] == 1


def test_a_wrongly_mapped_w_is_named_beside_x() -> None:
    """W mapped along its second axis: the function sees W of (3,), and W (3, 5) @ x needs 5,
    so "W @ x needs 3 numbers" (x alone blamed) was false; fixing x alone is refused again."""
    said = vz.apply_axes(vz.parse_axes("(1, (1, None))"), 0, BATCH_FIRST, SHARED).error
    assert said is not None
    assert "the function sees W of shape (3,) and x of shape (8,)" in said.plain
    again = vz.apply_axes(vz.parse_axes("(0, (1, None))"), 0, BATCH_FIRST, SHARED).error
    assert again is not None and "inconsistent sizes" in again.message


def test_vmap_calls_the_function_once_whatever_the_batch() -> None:
    """Why the shape lines say "the function sees", not "each call sees": vmap traces the
    function once, with one example's shape, and batches each operation."""
    seen: list[tuple[int, ...]] = []

    def f(x, params):  # type: ignore[no-untyped-def]
        seen.append(tuple(x.shape))
        return vz.process_single_example(x, params)

    X, params = _axes.editor_inputs(BATCH_FIRST, SHARED)
    jax.vmap(f, in_axes=(0, None))(X, params)
    assert seen == [(5,)]


def test_count_primitives_looks_inside_nested_jaxprs() -> None:
    inner = jax.jit(lambda x: x * 2 + 1)
    counts = jaxprs.count_primitives(jax.make_jaxpr(lambda x: inner(x) - 1)(1.0))
    assert counts["mul"] == 1 and counts["add"] == 1 and counts["sub"] == 1


def test_a_size_where_the_three_differ_is_named() -> None:
    point = vz.time_batch(2, d_in=8, d_out=4, budget_s=0.01)
    wrong = vz.BatchPoint(4, point.timings, agree=False)
    bt = vz.combine([point, wrong], d_in=8, d_out=4)
    assert not bt.agree and bt.disagree_at == (4,) and bt.batch_sizes == (2, 4)
    with pytest.raises(ValueError, match="1 to 1024"):
        vz.time_batch(0)


def test_batching_is_timed_for_every_method_and_charted() -> None:
    sizes = vz.check_batch_sizes((4, 1, 4))
    bt = vz.combine([vz.time_batch(n, d_in=8, d_out=4, budget_s=0.01) for n in sizes], 8, 4)
    assert bt.agree and bt.batch_sizes == (1, 4)
    for name in _batching.METHODS:
        assert len(bt.timings[name]) == 2
        assert all(t.median > 0 and t.repeats >= 3 for t in bt.timings[name])
    fig = vz.batching_figure(bt)
    assert [t.name for t in fig.data] == list(_batching.METHODS)
    assert fig.layout.xaxis.title.text == "batch size"
    assert "median" in fig.layout.yaxis.title.text
    first = bt.timings[_batching.METHODS[0]][0]
    assert fig.data[0].error_y.arrayminus[0] == pytest.approx(first.median - first.q1)
    assert fig.data[0].error_y.array[0] == pytest.approx(first.q3 - first.median)
    assert f"measured on {roofline.device_label()}" in fig.layout.title.text
    with pytest.raises(ValueError, match="1 to 1024"):
        vz.check_batch_sizes([4, 5000])


def test_an_axis_past_the_inputs_rank_is_explained_for_that_input() -> None:
    """``in_axes=(99, None)`` said "the limit is ±8"; x has 2 axes, and JAX says so."""
    outcome = vz.apply_axes(vz.parse_axes("(99, None)"), 0, vz.LAYOUTS[0], vz.W_CHOICES[0])
    assert outcome.error is not None
    assert "shape (8, 5): it has 2 axes, so its axis is 0 or 1 (−1 or −2 from the end)." in (
        outcome.error.plain
    )
    assert "rank should be at least 100" in outcome.error.message  # JAX's own words, kept


def test_the_shape_lines_never_contradict_the_axes_typed() -> None:
    """A spec that does not fit the arguments drew every input "not mapped"; an axis an input
    does not have was drawn "mapped", the input whole."""
    layout, w = "X is (batch, D)", "W per example: (batch, H, D)"
    unfit = _axes.apply_axes(_axes.parse_axes("(0, None, 1)"), 0, layout, w)
    assert unfit.rows == () and unfit.error is not None
    missing = _axes.apply_axes(_axes.parse_axes("(5, None)"), 0, layout, w)
    assert vz.shape_sentence(missing.rows[0]) == (
        "`x`: (8, 5) — axis 5 asked for, which it does not have"
    )
    # W's batch axis unmapped: the verdict names that case too, not only a wrong mapped axis.
    unmapped = _axes.apply_axes(_axes.parse_axes("(0, None)"), 0, layout, w)
    verdict, sentence = vz.axes_verdict(unmapped)
    assert verdict is vz.AxesVerdict.NOT_PER_EXAMPLE
    assert "an input's batch axis left unmapped" in sentence

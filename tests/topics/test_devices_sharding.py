"""The sharding sandbox: spec parsing, layouts read back from JAX, plain-words errors, drawing,
and the data-parallel step."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxplay import devices
from jaxplay.devices import _sharding
from jaxplay.devices._sharding import _clip_band

# --- parsing --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("P('x', None)", ("x", None)),
        ('PartitionSpec("x", "y")', ("x", "y")),
        ("x, None", ("x", None)),
        ("P(('x', 'y'), None)", (("x", "y"), None)),
        ("(x, y),", (("x", "y"),)),
        ("P()", ()),
        ("", ()),
    ],
)
def test_parse_spec_accepts_the_usual_spellings(text: str, expected: tuple) -> None:
    assert devices.parse_spec(text) == expected


@pytest.mark.parametrize(
    ("text", "col", "words"),
    [
        ("P('x', None", 12, "closing parenthesis"),
        ("P('x' None)", 7, "comma"),
        ("P('x', 3)", 8, "Unexpected character"),
        ("P(('x', None))", 9, "axis name"),
        ("P(('x', 'y')", 3, None),
        ("P('1x')", 3, "not a valid axis name"),
    ],
)
def test_parse_spec_errors_point_at_a_column(text: str, col: int, words: str | None) -> None:
    with pytest.raises(devices.ShardingProblem) as info:
        devices.parse_spec(text)
    if words:
        assert words in info.value.plain
    assert info.value.col is not None
    assert 1 <= info.value.col <= len(text) + 1


def test_parse_spec_column_of_a_bad_character() -> None:
    with pytest.raises(devices.ShardingProblem) as info:
        devices.parse_spec("P('x', 3)")
    assert info.value.col == 8


def test_parse_mesh_and_names() -> None:
    assert devices.parse_ints("2, 4", "mesh shape") == (2, 4)
    assert devices.parse_ints("2x4", "mesh shape") == (2, 4)
    assert devices.parse_names("x, 'y'") == ("x", "y")
    with pytest.raises(devices.ShardingProblem, match="whole numbers"):
        devices.parse_ints("2, four", "mesh shape")
    with pytest.raises(devices.ShardingProblem, match="at least 1"):
        devices.parse_ints("0", "array shape")
    with pytest.raises(devices.ShardingProblem, match="distinct"):
        devices.parse_names("x, x")


# --- layouts --------------------------------------------------------------------------------

LAYOUT_CASES = [
    ((2, 4), ("x", "y"), (8, 8), ("x", None)),
    ((2, 4), ("x", "y"), (8, 8), ("x", "y")),
    ((2, 4), ("x", "y"), (8, 8), ("y", "x")),
    ((2, 4), ("x", "y"), (8, 16), (None, ("x", "y"))),
    ((2, 4), ("x", "y"), (8, 8), ()),
    ((8,), ("i",), (16,), ("i",)),
    ((4,), ("i",), (4, 6), (None, None)),
    ((1,), ("i",), (3,), ("i",)),
]


@pytest.mark.parametrize(("mesh", "names", "shape", "spec"), LAYOUT_CASES)
def test_layout_matches_devices_indices_map(mesh, names, shape, spec) -> None:
    layout = devices.shard_layout(mesh, names, shape, spec)
    m = jax.make_mesh(mesh, names, devices=jax.devices()[: int(np.prod(mesh))])
    expected = NamedSharding(m, P(*spec)).devices_indices_map(shape)
    got = {s.device_id: s.index for s in layout.shards}
    assert got == {d.id: _sharding.normalize_index(idx, shape) for d, idx in expected.items()}
    for s in layout.shards:
        assert s.shape == tuple(b - a for a, b in s.index)
        assert m.devices[s.mesh_coords].id == s.device_id
    # Blocks partition the devices; together they tile the whole array.
    assert sorted(d for b in layout.blocks for d in b.device_ids) == sorted(got)
    covered = np.zeros(shape, int)
    for b in layout.blocks:
        covered[tuple(slice(a, z) for a, z in b.index)] += 1
    assert (covered == 1).all()
    assert layout.copies * len(layout.blocks) == len(layout.shards)


def test_layout_on_a_named_platform() -> None:
    on_cpu = devices.shard_layout((2, 4), ("x", "y"), (8, 8), ("x", "y"), platform="cpu")
    assert on_cpu == devices.shard_layout((2, 4), ("x", "y"), (8, 8), ("x", "y"))
    with pytest.raises(RuntimeError):
        devices.shard_layout((1,), ("x",), (8,), (), platform="tpu")


def test_replicated_and_sharded_copies() -> None:
    assert devices.shard_layout((2, 4), ("x", "y"), (8, 8), ()).copies == 8
    assert devices.shard_layout((2, 4), ("x", "y"), (8, 8), ("x", None)).copies == 4
    assert devices.shard_layout((2, 4), ("x", "y"), (8, 8), ("x", "y")).copies == 1
    replicated = devices.shard_layout((2, 4), ("x", "y"), (8, 8), ())
    assert [s.replica_id for s in replicated.shards] == list(range(8))


@pytest.mark.parametrize(
    ("mesh", "names", "shape", "spec", "words", "jax_says"),
    [
        ((2, 4), ("x", "y"), (3, 8), ("x",), "3 is not a multiple of 2", "evenly divide"),
        ((2, 4), ("x", "y"), (8, 6), (None, ("x", "y")), "6 is not a multiple of 8", "divide"),
        ((2, 4), ("x", "y"), (8, 8), ("z",), "'z' is not an axis of the mesh", "not found"),
        ((2, 4), ("x", "y"), (8, 8), ("x", "x"), "at most one array axis", "duplicate"),
        ((2, 4), ("x", "y"), (8, 8), ("x", None, None), "3 entries but the array has 2", "rank"),
    ],
)
def test_invalid_specs_get_plain_words_and_jax_reason(mesh, names, shape, spec, words, jax_says):
    with pytest.raises(devices.ShardingProblem) as info:
        devices.shard_layout(mesh, names, shape, spec)
    assert words in info.value.plain
    assert info.value.jax_error is not None
    assert jax_says in info.value.jax_error.lower()


def test_explain_finds_nothing_wrong_with_a_valid_spec() -> None:
    assert _sharding.explain((2, 4), ("x", "y"), (8, 8), ("x", "y")) is None


def test_refused_before_jax() -> None:
    with pytest.raises(devices.ShardingProblem, match="needs 16 devices; this process has 8"):
        devices.shard_layout((4, 4), ("x", "y"), (8, 8), ())
    with pytest.raises(devices.ShardingProblem, match="one name per mesh axis"):
        devices.shard_layout((2, 4), ("x",), (8, 8), ())
    with pytest.raises(devices.ShardingProblem, match="at most 64"):
        devices.shard_layout((2,), ("x",), (128,), ())


def _filled_by_block(fig) -> dict[int, list[tuple[str, str]]]:
    """``{block: [(device, fillcolor), ...]}`` from the shapes' names."""
    out: dict[int, list[tuple[str, str]]] = {}
    for shape in fig.layout.shapes:
        if shape.fillcolor is not None:
            block, device = shape.name.removeprefix("block ").split(": device ")
            out.setdefault(int(block), []).append((device, shape.fillcolor))
    return out


def test_figure_stripes_replicated_blocks_with_every_holder() -> None:
    layout = devices.shard_layout((2, 4), ("x", "y"), (8, 8), ("x", None))
    fig = devices.layout_figure(layout)
    filled = _filled_by_block(fig)
    assert sorted(filled) == [0, 1]
    colors = dict(zip(range(8), _sharding.device_colors(8), strict=True))
    for b, block in enumerate(layout.blocks):
        holders = {int(d) for d, _ in filled[b]}
        assert holders == set(block.device_ids)  # every holder's colour appears in its block
        assert all(c == colors[int(d)] for d, c in filled[b])
        assert len(filled[b]) > len(block.device_ids)  # diagonal stripes, cycling
    assert all(s.type == "path" for s in fig.layout.shapes if s.fillcolor is not None)
    legend = [t.name for t in fig.data if t.name]
    assert legend == [f"device {i}" for i in range(8)]
    assert "replicated ×4" in " ".join(fig.data[0].hovertext)
    texts = [a.text for a in fig.layout.annotations]
    assert texts == ["copies on d0, d1, d2, d3", "copies on d4, d5, d6, d7"]


def test_stripes_stay_inside_their_block() -> None:
    poly = _clip_band(0, 4, 0, 2, 1, 2)
    assert all(0 <= x <= 4 and 0 <= y <= 2 and 1 - 1e-9 <= x + y <= 2 + 1e-9 for x, y in poly)
    assert _clip_band(0, 1, 0, 1, 5, 6) == []


def test_figure_of_a_fully_sharded_vector() -> None:
    fig = devices.layout_figure(devices.shard_layout((8,), ("i",), (16,), ("i",)))
    filled = [s for s in fig.layout.shapes if s.fillcolor is not None]
    assert all(s.type == "rect" for s in filled)
    assert sorted((s.x0, s.x1) for s in filled) == [(2 * i, 2 * i + 2) for i in range(8)]
    assert [s.name for s in filled] == [f"block {i}: device {i}" for i in range(8)]


# --- data parallelism -----------------------------------------------------------------------


def test_data_parallel_step_agrees_across_device_counts() -> None:
    results = {}
    for n in (1, 2, 8):
        step, args = devices.data_parallel_step(n, batch=64, features=8, hidden=16)
        assert args[1].sharding.spec == P("batch")
        assert len(args[1].sharding.device_set) == n
        loss, grads = step(*args)
        results[n] = (float(loss), [np.asarray(g) for g in jax.tree_util.tree_leaves(grads)])
    for n in (2, 8):
        assert np.isclose(results[n][0], results[1][0], rtol=1e-5)
        for a, b in zip(results[n][1], results[1][1], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_data_parallel_step_matches_numpy() -> None:
    step, (params, x, y) = devices.data_parallel_step(4, batch=32, features=4, hidden=8)
    (w1, b1), (w2, b2) = jax.tree_util.tree_map(np.asarray, params)
    pred = np.tanh(np.asarray(x) @ w1 + b1) @ w2 + b2
    loss, _ = step(params, x, y)
    assert np.isclose(float(loss), np.mean((pred - np.asarray(y)) ** 2), rtol=1e-5)


def test_data_parallel_step_all_reduces_the_gradient() -> None:
    step, args = devices.data_parallel_step(4, batch=32, features=4, hidden=8)
    assert "all-reduce" in step.lower(*args).compile().as_text()
    with pytest.raises(ValueError, match="not a multiple"):
        devices.data_parallel_step(3, batch=32)


def test_device_counts() -> None:
    assert devices.device_counts(8) == (1, 2, 4, 8)
    assert devices.device_counts(1) == (1,)
    # Only counts that split the batch: 1,024 rows over 3, 5, 6 or 7 devices failed at the button.
    assert devices.device_counts(6) == (1, 2, 4)
    assert devices.device_counts(3) == (1, 2) and devices.device_counts(6, batch=12) == (1, 2, 4, 6)
    for n in range(1, 9):
        assert all(devices.SCALING_BATCH % k == 0 for k in devices.device_counts(n))


def test_scaling_points_and_figure() -> None:
    points = tuple(devices.scaling_point(n, batch=64, budget_s=0.02) for n in (1, 2))
    assert [p.devices for p in points] == [1, 2]
    assert all(p.timing.median > 0 for p in points)
    assert np.isclose(points[0].loss, points[1].loss, rtol=1e-5)
    fig = devices.scaling_figure(points, "2 × cpu")
    measured, reference = fig.data
    assert list(measured.y) == pytest.approx([p.timing.median * 1e3 for p in points])
    assert list(reference.y) == pytest.approx([points[0].timing.median * 1e3 / n for n in (1, 2)])
    assert "not measured" in reference.name


def test_the_scaling_verdict_needs_the_quartile_ranges_apart() -> None:
    """Medians alone said "1.20× faster" on one run and 2.2× slower on the next."""
    from jaxplay.core import timing

    def point(n: int, *samples: float) -> _sharding.ScalingPoint:
        return _sharding.ScalingPoint(n, timing.Timing(samples, 1, 1), 0.0)

    faster = devices.scaling_sentence((point(1, 4.0, 4.1, 4.2), point(8, 2.0, 2.1, 2.2)))
    assert "1.95× faster" in faster and "quartiles" in faster
    slower = devices.scaling_sentence((point(1, 2.0, 2.1, 2.2), point(8, 4.0, 4.1, 4.2)))
    assert "1.95× slower" in slower
    tied = devices.scaling_sentence((point(1, 2.0, 3.0, 4.0), point(8, 2.5, 2.9, 3.5)))
    assert "no clear difference" in tied and "faster" not in tied and "slower" not in tied
    # A clear difference of 0.4 %: never "1.00× faster".
    small = devices.scaling_sentence((point(1, 1.001, 1.002, 1.003), point(8, 0.997, 0.998, 0.999)))
    assert "1.004× faster" in small
    # One device: nothing to compare it with (it compared the device with itself).
    alone = devices.scaling_sentence((point(1, 1.0, 1.1, 1.2),))
    assert alone.startswith("Measured: 1 device 1.1 s") and alone.count("1 device") == 1
    # Cut short by the time budget: one sample's quartiles are itself, none has none.
    cut = devices.scaling_sentence((point(1, 4.0), point(8, 3.1)))
    assert "too few samples to compare" in cut and "faster" not in cut
    empty = _sharding.ScalingPoint(8, timing.Timing((), 1, 1, cut=True), 0.0)
    said = devices.scaling_sentence((point(1, 4.0, 4.1, 4.2), empty))
    assert "no sample (cut" in said and "n/a" not in said and "overlap" not in said

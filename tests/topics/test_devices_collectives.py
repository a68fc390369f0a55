"""Collectives: the article's pmap code (as written and fixed), shard_map collectives against numpy,
and the collectives XLA inserts into jitted programs on sharded inputs."""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxplay import devices
from jaxplay.devices import _collectives


def test_article_all_reduce_as_written_raises_the_unbound_axis_name() -> None:
    runs = devices.article_examples(4)
    broken = runs["psum in pmap, as written"]
    assert not broken.ok
    assert broken.error_type == "NameError"
    assert "unbound axis name: batch" in broken.message
    assert "psum(local_sum, 'batch')" in broken.code and "@pmap" in broken.code


def test_article_all_reduce_fixed_and_with_shard_map_equal_numpy() -> None:
    x = _collectives.example_input(4)
    total = x.sum()
    with warnings.catch_warnings():  # pmap is in maintenance mode; a later JAX may warn
        warnings.simplefilter("ignore", DeprecationWarning)
        fixed = _collectives.all_reduce_fixed(x)
    np.testing.assert_allclose(np.asarray(fixed), [total] * 4)
    mesh = _collectives.mesh_of(4)
    xs = jax.device_put(x, NamedSharding(mesh, P("i")))
    np.testing.assert_allclose(np.asarray(_collectives.all_reduce_shard_map(xs, mesh)), [total] * 4)
    runs = devices.article_examples(4)
    assert runs["psum in pmap, fixed"].ok and runs["psum in shard_map"].ok
    assert runs["psum in pmap, fixed"].value == runs["psum in shard_map"].value
    assert str(float(total)).rstrip("0") in runs["psum in shard_map"].value


def test_article_parallel_map_runs_across_all_devices() -> None:
    run = devices.article_examples(2)["pmap, as written"]
    assert run.ok
    assert run.value == f"Parallel computation shape: ({len(jax.devices())}, 100)"


@pytest.mark.parametrize("n", [1, 2, 8])
def test_shard_map_collectives_equal_numpy(n: int) -> None:
    x = _collectives.example_input(n)
    for name in devices.COLLECTIVES:
        run = devices.run_collective(name, n)
        assert run.device_ids == tuple(d.id for d in jax.devices()[:n])
        assert [i.tolist() for i in run.inputs] == [[row.tolist()] for row in x]
        assert run.matches, name
    # Independent of the module's references: numpy's answer per device, written out here.
    psum = devices.run_collective("psum", n)
    for out in psum.outputs:
        np.testing.assert_allclose(out, x.sum(axis=0, keepdims=True))
    gathered = devices.run_collective("all_gather", n)
    for out in gathered.outputs:
        np.testing.assert_allclose(out, x)
    shifted = devices.run_collective("ppermute", n)
    np.testing.assert_allclose(np.concatenate(shifted.outputs), np.roll(x, 1, axis=0))


def test_all_gather_concatenates_as_its_words_say() -> None:
    """The page said "stacked": with ``tiled=True`` JAX concatenates along axis 0, and without
    it stacks on a new leading axis, as the words now say (shapes from JAX's own run)."""
    n = 4
    gathered = devices.run_collective("all_gather", n)
    assert all(out.shape == (n, 4) for out in gathered.outputs)
    mesh = _collectives.mesh_of(n)
    x = jax.device_put(_collectives.example_input(n), NamedSharding(mesh, P("i")))
    stacked = jax.jit(
        jax.shard_map(
            lambda v: jax.lax.all_gather(v, "i"), mesh=mesh, in_specs=P("i"), out_specs=P("i")
        )
    )(x)
    assert stacked.addressable_shards[0].data.shape == (n, 1, 4)
    what = devices.COLLECTIVES["all_gather"].what
    assert "concatenated along axis 0" in what and "stacked on a new leading axis" in what


def test_collectives_on_a_named_platform() -> None:
    run = devices.run_collective("psum", 2, platform="cpu")
    assert run.matches and run.device_ids == (0, 1)
    assert devices.compiled_collectives(devices.XLA_EXAMPLES[0], 2, platform="cpu").ops


def test_a_wrong_output_would_be_caught() -> None:
    run = devices.run_collective("psum", 2)
    wrong = devices.CollectiveRun(
        run.name, run.code, run.device_ids, run.inputs, run.inputs, run.expected
    )
    assert not wrong.matches


def test_mesh_of_refuses_more_devices_than_exist() -> None:
    with pytest.raises(ValueError, match="this process has"):
        _collectives.mesh_of(len(jax.devices()) + 1)


EXPECTED_OPS = {
    "sum of a row-sharded array": ("all-reduce",),
    "reshard rows → columns": ("all-to-all",),
    "replicate everywhere": ("all-gather",),
    "x.T @ x, contracting over the sharded rows": ("all-reduce",),
}


@pytest.mark.parametrize("example", devices.XLA_EXAMPLES, ids=lambda e: e.name)
def test_xla_inserts_the_collectives(example: _collectives.XlaExample) -> None:
    result = devices.compiled_collectives(example, 4)
    assert result.ops == EXPECTED_OPS[example.name]
    assert result.hlo_lines and all(
        any(op in line for op in result.ops) for line in result.hlo_lines
    )
    assert result.matches
    assert f"def {example.fn.__name__}" in result.code


def test_one_device_needs_no_collectives() -> None:
    for example in devices.XLA_EXAMPLES:
        result = devices.compiled_collectives(example, 1)
        assert result.ops == () and result.hlo_lines == ()
        assert result.matches

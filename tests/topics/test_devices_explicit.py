"""Explicit sharding: every step does what the page says, as written and fixed, on this JAX."""

from __future__ import annotations

import pytest

from jaxplay import devices
from jaxplay.devices import _explicit
from jaxplay.sandbox import Limits, RunnerConfig, WorkerPool


@pytest.fixture(scope="module")
def runs() -> dict[str, devices.StepRun]:
    return {r.step.key: r for r in devices.run_explicit_steps()}


@pytest.mark.parametrize("step", _explicit.EXPLICIT_STEPS, ids=lambda s: s.key)
def test_each_step_raises_exactly_what_it_names(runs, step: _explicit.Step) -> None:
    outcome = runs[step.key].outcome
    assert outcome.error_type == step.raises, outcome.headline
    assert runs[step.key].as_named


def test_the_types_are_jaxs(runs) -> None:
    assert runs["type"].outcome.value == "(Explicit, Explicit); float32[32@i,16]"
    assert runs["auto"].outcome.value == "(Auto, Auto); float32[32,16]; P('i', None); (16, 16)"
    assert runs["jit"].outcome.value == "float32[32@i,16]; float32[16]"
    assert runs["matmul_fixed"].outcome.value == "float32[32@i,32]"
    assert runs["reshard_fixed"].outcome.value == "float32[32@i,16]; float32[32,16@j]"
    assert runs["constraint_auto"].outcome.value == "float32[32,16]; P(None, 'j'); (32, 4)"
    # In-specs inferred from the type: each of the 2 devices along i sees 16 of the 32 rows.
    assert runs["shard_map_fixed"].outcome.value == "float32[32@i,16]; (16, 16); float32[32@j,16]"
    assert "set_mesh" in runs["reshard"].outcome.message
    assert "acts as an assert" in runs["constraint"].outcome.message


@pytest.mark.parametrize(
    ("text", "shape", "said"),
    [
        ("float32[32@i,16]", (2, 4), "axis 0 (32) is split over mesh axis `i` (2): 2 pieces of 16"),
        ("float32[32,16@j]", (2, 4), "axis 1 (16) is split over mesh axis `j` (4): 4 pieces of 4"),
        ("float32[32,16@j]", (2, 2), "axis 1 (16) is split over mesh axis `j` (2): 2 pieces of 8"),
        ("float32[32@(i,j),16]", (2, 4), "split over mesh axes `i` (2) × `j` (4): 8 pieces of 4"),
        ("float32[16]", (2, 4), "axis 0 (16) is whole on every device"),
        ("float32[]", (4,), "`float32[]`: a scalar, whole on every device."),
    ],
)
def test_a_type_is_read_out_with_each_devices_block(text: str, shape, said: str) -> None:
    assert said in devices.read_type(text, shape)
    assert devices.read_type("not a type", shape) == ""


def test_an_auto_type_is_read_from_its_sharding(runs) -> None:
    """The Auto steps' arrays are split though their types carry no ``@``: the page says so."""
    auto = devices.describe_step(runs["auto"])
    assert auto and "does not record the sharding" in auto[0]
    assert "axis 0 (32) is split: 2 pieces of 16" in auto[0]
    constrained = devices.describe_step(runs["constraint_auto"])
    assert "axis 1 (16) is split: 4 pieces of 4" in constrained[0]
    assert "axis 0 (32) is whole on every device" in constrained[0]


def test_the_mesh_fits_the_devices() -> None:
    assert _explicit.explicit_mesh_shape(8) == (2, 4)
    assert _explicit.explicit_mesh_shape(5) == (2, 2)
    assert _explicit.explicit_mesh_shape(1) == (1, 1)


def test_the_code_lab_script_runs_in_the_sandbox() -> None:
    script = devices.explicit_script(_explicit.explicit_mesh_shape(8))
    pool = WorkerPool(RunnerConfig(spares=0, max_concurrent=1, limits=Limits(timeout_s=60.0)))
    try:
        result = pool.run(script)
    finally:
        pool.shutdown()
    assert result.ok, (result.error, result.stdout[-800:])
    for step in _explicit.EXPLICIT_STEPS:
        expected = f"raises {step.raises}" if step.raises else ""
        line = next(x for x in result.stdout.splitlines() if x.startswith(step.key + ":"))
        assert expected in line, line
    assert "type: (Explicit, Explicit); float32[32@i,16]" in result.stdout


def test_the_constraint_claim_reads_the_pages_words(monkeypatch) -> None:
    """The page called `with_sharding_constraint` on Auto axes "a hint to XLA's partitioner …
    not an assert"; JAX makes it strict. Put the old words back and the claim fails."""
    import dataclasses

    from jaxplay.core import claims
    from jaxplay.devices import _explicit

    claim = claims.gather(["devices"])["devices.constraint_auto_is_strict"]
    assert claim.run().holds
    old = "It is a hint to XLA's partitioner about the layout you want, not an assert."
    steps = tuple(
        dataclasses.replace(s, lesson=old) if s.key == "constraint_auto" else s
        for s in _explicit.EXPLICIT_STEPS
    )
    monkeypatch.setattr(_explicit, "EXPLICIT_STEPS", steps)
    assert not claim.run().holds

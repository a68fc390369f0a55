"""The state package: the threaded loop learns, the hidden-state loops never move, each step
compiles once, and using hidden state afterwards raises JAX's own error."""

from __future__ import annotations

import pytest

from jaxplay import state

SETUP = state.Setup(seed=0, steps=40, hidden=8, optimizer="adam", lr=0.03)


@pytest.fixture(scope="module")
def runs() -> dict[str, state.TrainingRun]:
    return {loop.key: state.train(loop.key, SETUP) for loop in state.LOOPS}


def test_the_threaded_loop_learns_and_compiles_its_step_once(runs) -> None:
    run = runs["threaded"]
    assert len(run.losses) == SETUP.steps and run.finite
    assert run.last < 0.8 * run.first
    assert run.distinct_losses == SETUP.steps
    assert run.compiles == 1
    assert run.after.ok and float(run.after.value) < run.first


@pytest.mark.parametrize("loop", ["globals", "self"])
def test_hidden_state_never_changes_the_loss(runs, loop: str) -> None:
    run = runs[loop]
    assert run.distinct_losses == 1
    assert run.compiles == 1
    assert run.first == pytest.approx(runs["threaded"].first, rel=1e-5)


def test_using_state_mutated_inside_jit_raises_unexpected_tracer_error(runs) -> None:
    assert runs["self"].after.error_type == "UnexpectedTracerError"
    assert runs["globals"].after.ok  # its globals hold real arrays: the first step's update


def test_a_run_that_diverged_says_so_and_counts_nan_once(runs) -> None:
    """NaN equals no NaN, so a set of losses kept each one: a run that went to NaN at step 60
    of 200 said "196 different values", and "+nan from the first step"."""
    import dataclasses
    import math

    finite = runs["threaded"].losses[:3]
    diverged = dataclasses.replace(runs["threaded"], losses=(*finite, math.inf, *[math.nan] * 4))
    assert diverged.distinct_losses == 5 and diverged.first_not_finite == 4
    said = state.explain_runs(diverged, runs["globals"])
    assert "diverged: first not finite at step 4, **nan** at step 8 (5 different values)" in said
    assert state.loss_change_words(diverged) == "diverged at step 4"
    assert runs["threaded"].first_not_finite is None


def test_other_settings_other_numbers() -> None:
    momentum = state.train("threaded", state.Setup(1, 20, 4, "momentum", 0.1))
    assert len(momentum.losses) == 20 and momentum.first != pytest.approx(0.9425, abs=1e-3)
    assert state.train("globals", state.Setup(1, 20, 4, "momentum", 0.1)).distinct_losses == 1


@pytest.mark.parametrize(
    "setup",
    [
        state.Setup(0, state.MAX_STEPS + 1, 8, "adam", 0.03),
        state.Setup(0, 10, state.MAX_HIDDEN + 1, "adam", 0.03),
        state.Setup(0, 10, 8, "sgd", 0.03),
        state.Setup(0, 10, 8, "adam", 0.5),
        state.Setup(-1, 10, 8, "adam", 0.03),
    ],
)
def test_sizes_are_bounded_before_any_work(setup: state.Setup) -> None:
    with pytest.raises(ValueError):
        state.train("threaded", setup)


def test_loss_figure_draws_both_curves_on_a_log_axis(runs) -> None:
    fig = state.loss_figure([("a", runs["threaded"].losses), ("b", runs["globals"].losses)])
    assert len(fig.data) == 2 and fig.layout.yaxis.type == "log"

"""Every Code Lab snippet of the "Beyond the article" pages runs in the sandbox: it prints its
marker, or raises exactly the exception the page names for it."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from jaxplay import pytrees, sharp_bits, state
from jaxplay.sandbox import Limits, RunnerConfig, RunResult, WorkerPool

#: One xdist worker takes this module: its fixture runs every snippet at once, and each worker
#: that took one of its tests would run them all again.
pytestmark = pytest.mark.xdist_group("topics-snippets")


def _snippets() -> dict[str, tuple[str, str | None, str]]:
    """``id -> (source, expected exception or None, marker printed when it runs through)``."""
    found: dict[str, tuple[str, str | None, str]] = {}
    double = pytrees.MAP_FUNCTIONS["double"]
    for example in pytrees.EXAMPLES:
        found[f"pytrees-{example.key}"] = (pytrees.snippet(example.build, double), None, "leaves:")
    found["pytrees-literal"] = (
        pytrees.snippet(pytrees.DEFAULT_LITERAL, pytrees.MAP_FUNCTIONS["size"]),
        None,
        "positions: {'a': (None, [], 0)",
    )
    for registration in pytrees.REGISTRATIONS:
        found[f"pytrees-class-{registration.key}"] = (
            pytrees.class_snippet(registration.key),
            None,
            "jit ->" if registration.key != "plain" else "jit raised TypeError",
        )
    for change in pytrees.CHANGES:
        found[f"pytrees-static-{change.key}"] = (
            pytrees.static_snippet(change.key, 4, 2),
            # JAX's own error, on the second call, when jit compares the meta fields.
            "ValueError" if change.key == "array" else None,
            "traces so far: 1",
        )
    for none_is_leaf in (False, True):
        found[f"pytrees-empty-{none_is_leaf}"] = (
            pytrees.empty_snippet(none_is_leaf),
            None,
            f"leaves: {1 + none_is_leaf}",
        )
    for axes in pytrees.AXES:
        fails = axes.key in ("all-zero", "not-a-prefix")
        found[f"pytrees-params-{axes.key}"] = (
            pytrees.params_snippet(axes.key, 3, 4, 5, 2),
            "ValueError" if fails else None,
            "grad shapes:",
        )
    for case in sharp_bits.CASES:
        for variant in case.variants:
            run = sharp_bits.run(case.key, variant.key)
            found[f"sharp-{case.key}-{variant.key}"] = (run.snippet, run.expected_error, "result:")
    setup = state.Setup(seed=0, steps=30, hidden=8, optimizer="adam", lr=0.03)
    for loop in state.LOOPS:
        found[f"state-{loop.key}"] = (
            state.training_snippet(loop.key, setup),
            "UnexpectedTracerError" if loop.key == "self" else None,
            "loss at step 30, before its update:",
        )
    return found


SNIPPETS = _snippets()


@pytest.fixture(scope="module")
def results():  # type: ignore[no-untyped-def]
    # The default limits, except a longer wall clock: the test machine is shared and busy.
    pool = WorkerPool(RunnerConfig(spares=2, max_concurrent=2, limits=Limits(timeout_s=60.0)))
    with ThreadPoolExecutor(max_workers=4) as executor:
        futures: dict[str, Future[RunResult]] = {
            key: executor.submit(pool.run, source) for key, (source, _, _) in SNIPPETS.items()
        }
        yield futures
    pool.shutdown()


@pytest.mark.parametrize("key", list(SNIPPETS))
def test_snippet_runs_in_the_sandbox(results, key: str) -> None:  # type: ignore[no-untyped-def]
    _, expected, marker = SNIPPETS[key]
    result = results[key].result(timeout=900)
    if expected is None:
        assert result.ok, (result.error, result.stdout[-800:])
        assert marker in result.stdout, result.stdout[-800:]
    else:
        assert result.error is not None and result.error.kind == "exception", result.error
        assert result.error.exc_type == expected, result.error

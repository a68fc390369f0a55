"""Every snippet of the article, run in the sandbox: fixed ones succeed, broken ones fail with
the exception the registry names (and that the walkthrough shows)."""

from __future__ import annotations

import re
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from jaxplay import article
from jaxplay.sandbox import Limits, RunnerConfig, RunResult, WorkerPool

#: One xdist worker takes this module: its fixture runs every snippet at once, and each worker
#: that took one of its tests would run them all again.
pytestmark = pytest.mark.xdist_group("topics-article")

ROOT = Path(__file__).resolve().parents[2]
#: The article itself is not part of jaxplay: a checkout may keep it beside the repository.
ARTICLE = ROOT.parent / "shared" / "seed" / "jax-core-api-article.zh.txt"


@pytest.fixture(scope="module")
def results():  # type: ignore[no-untyped-def]
    # The default limits, except a longer wall clock: the test machine is shared and busy.
    limits = Limits(timeout_s=30.0)
    pool = WorkerPool(RunnerConfig(spares=2, max_concurrent=2, limits=limits))
    with ThreadPoolExecutor(max_workers=4) as executor:
        futures: dict[str, Future[RunResult]] = {
            e.id: executor.submit(pool.run, e.source) for e in article.EXAMPLES
        }
        yield futures
    pool.shutdown()


@pytest.mark.parametrize("example", article.EXAMPLES, ids=lambda e: e.id)
def test_example_runs_or_fails_as_registered(results, example: article.Example) -> None:  # type: ignore[no-untyped-def]
    result = results[example.id].result(timeout=600)
    import jax

    if example.error_without_gpu_only and jax.default_backend() == "gpu":
        assert result.ok, result.error  # the guard's devices('gpu') works where a GPU exists
        return
    if example.expected_error is None:
        assert result.ok, (result.error, result.stdout[-800:])
    else:
        assert result.error is not None, result.stdout
        assert result.error.kind == "exception", result.error
        assert result.error.exc_type == example.expected_error, result.error
        assert result.error.line is not None


def test_checks_printed_by_fixed_examples_hold(results) -> None:  # type: ignore[no-untyped-def]
    """The fixed versions print their own checks (`True` for agreement); none may say False."""
    for example in article.EXAMPLES:
        result = results[example.id].result(timeout=600)
        if result.ok:
            for line in result.stdout.splitlines():
                assert not re.search(r"(^|\s)False$", line.rstrip()), (example.id, line)
    tracing = results["tracing-fixed"].result(timeout=600).stdout
    assert "After 2 JIT calls: counter = 1" in tracing
    assert "compiled programs: 2" in tracing or "compiled programs: n/a" in tracing
    seed = results["prng-seed-fixed"].result(timeout=600).stdout
    assert "low 32 bits: 431641414" in seed and "same key as the low 32 bits: True" in seed
    residuals = results["memory-checkpoint-fixed"].result(timeout=600).stdout
    assert "same gradients: True" in residuals


def test_registry_covers_every_section_in_order() -> None:
    ids = [e.id for e in article.EXAMPLES]
    assert len(ids) == len(set(ids))
    sections = [e.section for e in article.EXAMPLES]
    assert sections == sorted(sections) and set(sections) == {s.number for s in article.SECTIONS}
    for e in article.EXAMPLES:
        if e.fixed_by is not None:
            fixed = article.by_id(e.fixed_by)
            assert fixed.section == e.section and fixed.expected_error is None
        if e.expected_error is not None:
            assert e.as_written and e.fixed_by, e.id
    # The digest's six failures of the article's code as written, plus the vmapped params.
    failing = {e.expected_error for e in article.EXAMPLES if e.expected_error}
    assert {"ImportError", "TypeError", "RuntimeError", "NameError"} <= failing
    assert sum(1 for e in article.EXAMPLES if e.expected_error) >= 6


@pytest.mark.skipif(not ARTICLE.exists(), reason=f"the article is not at {ARTICLE}")
def test_as_written_snippets_keep_the_articles_code() -> None:
    """Every code line of an as-written example, up to the first line we added (marked
    ``# Added``), is the article's code (compared without whitespace; comments and docstrings
    are translated and imports completed, so they are left out)."""
    text = re.sub(r"\s+", "", ARTICLE.read_text(encoding="utf-8"))
    for e in article.EXAMPLES:
        if not e.as_written:
            continue
        for line in e.source.splitlines():
            if line.lstrip().startswith("# Added"):
                break
            code = re.sub(r"\s+", "", line.split("#")[0])
            if not code or '"""' in code or line.startswith(("import ", "from ")):
                continue  # imports are added where a snippet relied on an earlier one
            assert code in text, (e.id, line)

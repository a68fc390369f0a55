"""The walkthrough's snippets are plain JAX: a learner can paste any of them into a notebook."""

from __future__ import annotations

import ast

import pytest

from jaxplay import article


def imported_modules(source: str) -> list[str]:
    """Every module the source imports (``import a.b`` and ``from a.b import c`` give ``a.b``)."""
    modules = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.append(node.module)
    return modules


@pytest.mark.parametrize("example", article.EXAMPLES, ids=lambda e: e.id)
def test_no_snippet_needs_jaxplay(example: article.Example) -> None:
    modules = imported_modules(example.source)
    assert not [m for m in modules if m.split(".")[0] == "jaxplay"], modules
    # Nor reaches it another way (importlib, __import__, a path).
    assert "jaxplay" not in example.source


def test_the_check_sees_an_import_of_jaxplay() -> None:
    assert imported_modules("from jaxplay.core.timing import measure\nimport jax") == [
        "jaxplay.core.timing",
        "jax",
    ]


def test_the_timing_snippet_blocks_and_warms_up() -> None:
    """The honest-timing snippet does with plain JAX what the app's harness does."""
    source = article.by_id("jit-softmax-fixed").source
    assert "block_until_ready()" in source and "timeit" in source
    assert imported_modules(source) == ["timeit", "jax", "jax.numpy"]

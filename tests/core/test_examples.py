"""The examples in the core modules' docstrings run and print what they say (a docstring's
example is documentation a newcomer copies; a wrong one misleads)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "jaxplay" / "core"
WITH_EXAMPLES = sorted(p.stem for p in CORE.glob("*.py") if ">>>" in p.read_text())


def test_the_core_modules_have_examples() -> None:
    assert {"errors", "figures", "words", "expr", "hlo"} <= set(WITH_EXAMPLES)


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_a_docstring_example_prints_what_it_says(name: str) -> None:
    module = importlib.import_module(f"jaxplay.core.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, result

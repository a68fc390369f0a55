"""What the article registry holds: its sections, its runnable examples, and how their code is made.

Why a module of its own: each section module (``_s1_jit.py`` … ``_s8_memory.py``) builds its
examples from these types, and the registry (``_registry.py``) gathers the sections; the types
sit apart from both so that neither imports the other in a circle.
"""

from __future__ import annotations

import functools
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Section:
    """One of the article's eight sections."""

    number: int
    slug: str
    title: str
    summary: str


@dataclass(frozen=True)
class Example:
    """A runnable snippet.

    Attributes:
        id: a stable key (used in links and tests).
        section: the :class:`Section` number (1-8).
        title: a short name for the snippet.
        source: the code, runnable as one Code Lab cell.
        explanation: what it shows; for a broken snippet, why it fails and what the fix does.
        as_written: the article's code (reformatted), not our version.
        expected_error: the exception class an as-written snippet raises, ``None`` if it runs.
        fixed_by: the id of the example that fixes this one.
        error_without_gpu_only: the error happens only on a machine without a GPU.
    """

    id: str
    section: int
    title: str
    source: str
    explanation: str
    as_written: bool = False
    expected_error: str | None = None
    fixed_by: str | None = None
    error_without_gpu_only: bool = False


def code(*parts: str | Callable[..., Any]) -> str:
    """A snippet's source: text and the source of live functions, one after another.

    A function stands for its own source (``inspect.getsource``: decorators included, comments
    above it not), so the article's functions exist once, as code the pages run, and a snippet
    shows exactly that code. Parts are joined as lines (a part's one final new line is dropped):
    a blank line between two parts is an empty line at the end or the start of a text part.
    """
    texts = [part if isinstance(part, str) else source(part) for part in parts]
    return "\n".join(t.removesuffix("\n") for t in texts) + "\n"


@functools.lru_cache(maxsize=512)
def source(function: Callable[..., Any]) -> str:
    """A function's own source, dedented, read once: ``inspect.getsource`` tokenizes the file
    from the function's first line on every call, and a page builds its snippets on every
    rerun (about 3 ms of the state page's view)."""
    return textwrap.dedent(inspect.getsource(function))

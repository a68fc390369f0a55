"""The registry: the article's sections in order, every example of each, and the lookups.

The article has eight sections; its code is flattened onto single lines and some of it fails on
current JAX. Each snippet is an :class:`~jaxplay.article._example.Example` of its section's
module: the article's code *as written* (reformatted only, plus the call that exercises a function
it defines but never calls) and, where that fails or misleads, a *fixed* version.
``expected_error`` names the exception an as-written snippet raises; tests run every example in
the sandbox and check exactly that. Shapes are the article's unless an explanation says otherwise
(a few are shrunk so every example runs within the sandbox's default limits on a small laptop).
"""

from __future__ import annotations

from jaxplay.article import (
    _s1_jit,
    _s2_grad,
    _s3_vmap,
    _s4_compose,
    _s5_prng,
    _s6_tracing,
    _s7_devices,
    _s8_memory,
)
from jaxplay.article._example import Example, Section
from jaxplay.core.i18n import N_

#: The article's title, and what it is: a reader's clone of jaxplay does not hold the article.
TITLE = N_("JAX core API in depth: composable functional transforms beyond NumPy")
ABOUT = N_("a Chinese-language tutorial on JAX's core API")

_ALL = (_s1_jit, _s2_grad, _s3_vmap, _s4_compose, _s5_prng, _s6_tracing, _s7_devices, _s8_memory)

SECTIONS: tuple[Section, ...] = tuple(m.SECTION for m in _ALL)
EXAMPLES: tuple[Example, ...] = tuple(e for m in _ALL for e in m.EXAMPLES)

#: The example the Code Lab starts with.
DEFAULT_ID = "tracing-fixed"


def by_id(example_id: str) -> Example:
    """The example with ``example_id``; ``KeyError`` if there is none."""
    for example in EXAMPLES:
        if example.id == example_id:
            return example
    raise KeyError(example_id)


def section(slug: str) -> Section:
    """The section with ``slug`` (``"jit"`` ... ``"memory"``); ``KeyError`` if none."""
    for s in SECTIONS:
        if s.slug == slug:
            return s
    raise KeyError(slug)


def in_section(number: int) -> tuple[Example, ...]:
    """The examples of section ``number``, in the article's order."""
    return tuple(e for e in EXAMPLES if e.section == number)

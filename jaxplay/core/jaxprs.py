"""Every equation of a jaxpr, those inside its sub-jaxprs included: the one walk pages count with.

Why: a jaxpr holds whole jaxprs in its equations' parameters (a ``pjit``'s body, a ``scan``'s
step, both branches of a ``cond``), and "how many equations" or "how many ``dot_general``" means
counting in those too. The vmap page counts primitives, the tracing page counts equations by loop
length; both walk the same way, here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any


def equations(jaxpr: Any) -> Iterator[Any]:
    """Each equation of ``jaxpr`` (a ``Jaxpr`` or ``ClosedJaxpr``), then those of its sub-jaxprs."""
    from jax.extend import core

    inner = jaxpr.jaxpr if isinstance(jaxpr, core.ClosedJaxpr) else jaxpr
    for eqn in inner.eqns:
        yield eqn
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(sub, (core.ClosedJaxpr, core.Jaxpr)):
                    yield from equations(sub)


def count_primitives(jaxpr: Any) -> dict[str, int]:
    """How often each primitive occurs in a jaxpr, counting inside nested jaxprs."""
    return dict(Counter(eqn.primitive.name for eqn in equations(jaxpr)))

"""Section 6 of the article, tracing and static arguments: jaxprs, static_argnums, side effects.

The article's functions live here as code: the tracing page stages ``simple_function`` and the jit
page's cache lab jits ``dynamic_control_flow``, and the examples below show the very same source
(:func:`~jaxplay.article._example.code`). The article decorates ``dynamic_control_flow`` with
``@partial(jit, static_argnums=(1,))``; here it is plain, so each page jits it its own way, and
the examples write the decorator above it.
"""

import jax.numpy as jnp

from jaxplay.article._example import Example, Section, code
from jaxplay.core.i18n import N_

SECTION = Section(
    6,
    "tracing",
    N_("Tracing and static arguments"),
    N_("jaxprs, static_argnums, side effects under jit."),
)

# fmt: off

def simple_function(x, y):
    z = x * y
    return z + 1


def dynamic_control_flow(x, use_tanh):
    """A static argument chooses the compiled branch"""
    if use_tanh:  # decided at compile time
        return jnp.tanh(x)
    else:
        return jnp.sin(x)

# fmt: on

EXAMPLES: tuple[Example, ...] = (
    Example(
        id="tracing-as-written",
        section=6,
        title=N_("make_jaxpr, static_argnums, and a side effect under jit"),
        as_written=True,
        expected_error="ImportError",
        fixed_by="tracing-fixed",
        source=code(
            """\
import jax.numpy as jnp
from jax import jit, make_jaxpr

# Look at JAX's intermediate representation
""",
            simple_function,
            """
jaxpr_repr = make_jaxpr(simple_function)(jnp.ones(3), 2.0)
print("JAXPR representation:")
print(jaxpr_repr)

# Static vs dynamic arguments
from jax import partial

@partial(jit, static_argnums=(1,))
""",
            dynamic_control_flow,
        ),
        explanation=N_(
            "`jax.partial` was removed years ago: `ImportError: cannot import name 'partial' "
            "from 'jax'`. It was only ever `functools.partial`; import it from there. The jaxpr "
            "above the error still prints (the run stops at the failing line)."
        ),
    ),
    Example(
        id="tracing-fixed",
        section=6,
        title=N_("Two compilations, a cache hit, and a counter that counts traces"),
        source=code(
            """\
from functools import partial
import jax
import jax.numpy as jnp
from jax import jit, make_jaxpr

""",
            simple_function,
            """
print(make_jaxpr(simple_function)(jnp.ones(3), 2.0))

@partial(jit, static_argnums=(1,))
""",
            dynamic_control_flow,
            """
result1 = dynamic_control_flow(jnp.ones(5), True)   # compiles (True)
result2 = dynamic_control_flow(jnp.ones(5), False)  # compiles (False)
result3 = dynamic_control_flow(jnp.ones(5), True)   # reuses the first program
cache_size = getattr(dynamic_control_flow, "_cache_size", None)  # private API: may vanish
print("compiled programs:", cache_size() if cache_size else "n/a")

counter = 0
def impure_function(x):
    global counter
    counter += 1  # a side effect: runs when traced, not when called
    return x * 2

jitted_impure = jit(impure_function)
print(f"Before JIT calls: counter = {counter}")
result = jitted_impure(jnp.ones(5))
result = jitted_impure(jnp.ones(5))
print(f"After 2 JIT calls: counter = {counter}")
""",
        ),
        explanation=N_(
            "With `functools.partial` it runs. Each distinct static value compiles once, so "
            "three calls give two programs. The counter ends at 1, not 2: under `jit` the "
            "Python body runs only while tracing; later calls run the compiled program, which "
            "has no Python side effects."
        ),
    ),
)

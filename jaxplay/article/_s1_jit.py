"""Section 1 of the article, ``jax.jit``: a naive softmax, jitted, and a stopwatch around it.

The article's functions live here as code: the jit page times ``naive_softmax``, and the
examples below show the very same source (:func:`~jaxplay.article._example.code`). The article
writes its code on single lines; it is kept here token for token (``fmt: off``), only laid out.
"""

import jax.numpy as jnp
from jax import jit

from jaxplay.article._example import Example, Section, code
from jaxplay.core.i18n import N_

SECTION = Section(
    1,
    "jit",
    N_("jax.jit: just-in-time compilation"),
    N_("Naive vs jitted softmax, and how to time it."),
)

# fmt: off

def naive_softmax(x):
    return jnp.exp(x) / jnp.sum(jnp.exp(x), axis=-1, keepdims=True)


@jit
def jitted_softmax(x):
    return jnp.exp(x) / jnp.sum(jnp.exp(x), axis=-1, keepdims=True)

# fmt: on

EXAMPLES: tuple[Example, ...] = (
    Example(
        id="jit-softmax-as-written",
        section=1,
        title=N_("Naive vs jitted softmax, timed with time.time()"),
        as_written=True,
        fixed_by="jit-softmax-fixed",
        source=code(
            """\
import jax
import jax.numpy as jnp
from jax import jit
import time

# Un-optimised pure function
""",
            naive_softmax,
            """
# JIT-compiled version
""",
            jitted_softmax,
            """
# Performance comparison
x = jnp.ones((10000, 1000))
start = time.time()
for _ in range(10):
    y = naive_softmax(x)
print(f"Naive: {time.time() - start:.4f}s")
start = time.time()
for _ in range(10):
    y = jitted_softmax(x)
print(f"JIT compiled: {time.time() - start:.4f}s")

# Compilation
print("Compiling JIT function...")
compiled_fn = jit(naive_softmax)
first_call = compiled_fn(x)   # the first call traces and compiles
second_call = compiled_fn(x)  # later calls reuse the compiled program
""",
        ),
        explanation=N_(
            "Runs, but the numbers mislead twice. JAX dispatches asynchronously: without "
            "`block_until_ready()` the stopwatch can stop before the work is done. And the jit "
            "loop's first call traces and compiles, so compilation is counted as run time. "
            "The fixed version warms up, blocks, and reports medians."
        ),
    ),
    Example(
        id="jit-softmax-fixed",
        section=1,
        title=N_("Timing softmax honestly, and what jit compiled"),
        source=code(
            """\
import timeit

import jax
import jax.numpy as jnp

""",
            naive_softmax,
            """
jitted_softmax = jax.jit(naive_softmax)


# Median, fastest and slowest seconds per call, of `repeat` timings of `calls` calls.
def seconds_per_call(f, x, calls=10, repeat=7):
    f(x).block_until_ready()  # warm-up: the first jitted call traces and compiles
    # block_until_ready() waits for the result: JAX dispatches asynchronously.
    runs = timeit.repeat(lambda: f(x).block_until_ready(), number=calls, repeat=repeat)
    per_call = sorted(t / calls for t in runs)
    return per_call[len(per_call) // 2], per_call[0], per_call[-1]


def describe(times):
    median, fastest, slowest = (t * 1e3 for t in times)
    return f"median {median:.3f} ms (fastest {fastest:.3f}, slowest {slowest:.3f})"


x = jnp.ones((1000, 1000))
eager = seconds_per_call(naive_softmax, x)
jitted = seconds_per_call(jitted_softmax, x)
print("eager:", describe(eager))
print("jit:  ", describe(jitted))
print(f"speed-up: {eager[0] / jitted[0]:.1f}x")

# What jit compiled: the program XLA runs, and the bytes it says one call moves.
compiled = jitted_softmax.lower(x).compile()
hlo = compiled.as_text()
entry = hlo[hlo.index("ENTRY") :]
print("operations in the jaxpr:", len(jax.make_jaxpr(naive_softmax)(x).eqns))
print("kernels in the compiled program:", entry.count(" fusion(") + entry.count(" custom-call("))
print("exp in the jaxpr:", str(jax.make_jaxpr(naive_softmax)(x)).count("= exp "))
print("exp in the compiled program:", hlo.count(" exponential("))
moved = compiled.cost_analysis()["bytes accessed"]
print(f"bytes read and written per call: {moved:,.0f} ({moved / x.nbytes:.1f}x the input)")
print("rows sum to 1:", bool(jnp.allclose(jitted_softmax(x).sum(axis=-1), 1.0)))
""",
        ),
        explanation=N_(
            "Plain JAX: each function is called once before the stopwatch (that call traces and "
            "compiles), `block_until_ready()` waits for JAX's asynchronous work, and "
            "`timeit.repeat` takes several samples, of which the median, fastest and slowest are "
            "printed. The last lines read what jit compiled instead of guessing: the jaxpr's "
            "operations (run eagerly, JAX dispatches them as a few small compiled programs; the "
            "jit page counts them from a profiler trace) against the kernels of the compiled "
            "program, how often `exp` is computed in each, and the bytes XLA estimates "
            "one call reads and writes against the input's size. A softmax cannot be one pass "
            "over memory: the divide needs each row's sum, which exists only after a pass over "
            "`exp(x)`. The input is 1000x1000 instead of the article's 10000x1000 so the sampling"
            " fits the sandbox's time limit; the jit page measures the article's size."
        ),
    ),
)

"""Side effects under jit: what runs once at trace time, and how to print at run time.

Why a module of its own: the article's ``impure_function`` shows the most surprising rule of
``jax.jit``: Python code runs only while tracing, so a counter it increments moves once, not on
every call (and again whenever a new shape forces a retrace). ``jax.debug.print`` is the way to see
values at run time; its output goes to the process's stdout, which a web page never shows, so
:func:`debug_print_demo` captures it (:mod:`jaxplay.core.capture`) and returns it as text.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from jaxplay.core import capture, claims, compilation, i18n
from jaxplay.core.i18n import ngettext

# Bound, not imported: functions below loop with ``for _ in ...`` (their code is shown and run as
# written), which would shadow an imported ``_`` (ruff F402); locally it is harmless.
_ = i18n._


@dataclass(frozen=True)
class CounterResult:
    """The article's impure counter after some calls.

    Attributes:
        calls: calls made with the same shape.
        eager_count: the counter after that many plain calls (once per call).
        jit_count: the counter after that many jitted calls (once, at trace time).
        jit_count_after_new_shape: after one more jitted call with a new shape (a retrace).
    """

    calls: int
    eager_count: int
    jit_count: int
    jit_count_after_new_shape: int


def impure_counter_demo(calls: int = 2) -> CounterResult:
    """Run the article's ``impure_function`` eagerly and under jit, counting its side effect.

    The article uses a module-level ``global counter``; a server with many visitors cannot share
    one, so the counter here lives in this call (``nonlocal``) and the behaviour is the same.
    """
    counter = 0

    def impure_function(x):
        nonlocal counter
        counter += 1  # 副作用：在 JIT 编译中只会执行一次！
        return x * 2

    for _ in range(calls):
        impure_function(jnp.ones(5))
    eager_count = counter

    counter = 0
    jitted_impure = jax.jit(impure_function)
    for _ in range(calls):
        jitted_impure(jnp.ones(5))
    jit_count = counter
    jitted_impure(jnp.ones(6))
    return CounterResult(calls, eager_count, jit_count, counter)


def debug_printed(x):
    y = jnp.sin(x)
    print("print (trace time) sees:", y)
    jax.debug.print("jax.debug.print (run time) sees: {y}", y=y)
    return y * 2


@dataclass(frozen=True)
class PrintResult:
    """What a jitted function printed, by call.

    Attributes:
        outputs: the text printed during each call (Python ``print`` only in the first: tracing).
    """

    outputs: tuple[str, ...]


def debug_print_demo(values: tuple[float, ...] = (0.0, 1.0, 2.0), calls: int = 2) -> PrintResult:
    """Call ``jit(debug_printed)`` ``calls`` times on ``values``, capturing what it prints.

    Python's ``print`` runs while tracing and sees a tracer; ``jax.debug.print`` is compiled into
    the program and prints the concrete values on every call. Each call runs through
    :func:`jaxplay.core.capture.run`, which waits for every pending print before it returns and
    keeps only this call's prints, whoever else prints meanwhile.
    """
    jitted = jax.jit(compilation.fresh_function(debug_printed))
    x = jnp.asarray(values, jnp.float32)
    return PrintResult(tuple(capture.run(jitted, x).stdout for _ in range(calls)))


@claims.states("jit.traces_once_per_signature")
def side_effects_sentence(counter: CounterResult, printed: PrintResult) -> str:
    """What the counter and the prints show, in Markdown, every count from the results."""
    c = counter
    traced_print = sum("print (trace time)" in text for text in printed.outputs)
    debug_print = sum("jax.debug.print (run time)" in text for text in printed.outputs)
    n = len(printed.outputs)
    text = ngettext(
        "Python side effects run while JAX **traces**, not when the compiled program runs: {n} "
        "eager call moved the counter to {eager}, {n} jitted call to {jitted}, and one more "
        "jitted call with a new shape (a new trace) to {new_shape}.",
        "Python side effects run while JAX **traces**, not when the compiled program runs: {n} "
        "eager calls moved the counter to {eager}, {n} jitted calls to {jitted}, and one more "
        "jitted call with a new shape (a new trace) to {new_shape}.",
        c.calls,
    ).format(
        n=f"{c.calls:,}",
        eager=c.eager_count,
        jitted=c.jit_count,
        new_shape=c.jit_count_after_new_shape,
    )
    text += (
        _(
            " To see values at run time use `jax.debug.print`, which is compiled into the "
            "program: of the {n} jitted calls below, Python's `print` printed in {traced}"
        ).format(n=n, traced=traced_print)
        + (_(" (the one that traced)") if traced_print == 1 else "")
        + _(", `jax.debug.print` in {debug}.").format(debug=debug_print)
    )
    return text

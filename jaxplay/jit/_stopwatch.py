"""The article's stopwatch, reproduced on purpose, and why it disagrees with the honest harness.

Why: section 1 of the article times ``naive_softmax`` and ``jit(naive_softmax)`` with
``time.time()`` around ten calls. The jit page runs exactly that method next to
:mod:`jaxplay.core.timing`'s blocked, warmed, interleaved measurement, so a visitor sees both
numbers and the reasons they differ.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jaxplay import article
from jaxplay.core import claims, compilation, i18n, measure_lock, timing

# Bound, not imported: functions below loop with ``for _ in ...`` (their code is shown and run as
# written), which would shadow an imported ``_`` (ruff F402); locally it is harmless.
_ = i18n._


@dataclass(frozen=True)
class ArticleTiming:
    """The tutorial article's measurement: ``time.time()`` around ``loops`` calls, no blocking.

    Attributes:
        naive_s: wall seconds of the eager loop (dispatch time plus whatever finished meanwhile).
        jitted_s: wall seconds of the jitted loop, *including* its first call's trace and compile.
        loops: calls in each loop.
    """

    naive_s: float
    jitted_s: float
    loops: int

    @property
    def speedup(self) -> float:
        """What the article would report: naive total / jitted total."""
        return self.naive_s / self.jitted_s


def article_timing(
    fn: Callable[..., Any], *args: Any, loops: int = 10, lock: bool = True
) -> ArticleTiming:
    """Reproduce the seed article's timing of ``fn`` on purpose, errors included.

    The article does, for each of ``naive_softmax`` and ``jit(naive_softmax)``::

        start = time.time()
        for _ in range(10):
            y = f(x)
        print(time.time() - start)

    Three things are wrong with it: nothing waits for the result (JAX dispatches asynchronously, so
    the stopwatch sees queueing, and the eager loop's unfinished work spills into the jit loop),
    the jitted loop's first call traces and compiles inside the stopwatch, and one run of 10 calls
    has no spread. The jitted function here is a fresh wrapper, so its compile is included as in
    the article's fresh process. The eager loop's own compiles are not: in a fresh process its
    first call compiles one small program per ``jnp`` call, but here eager already ran at this shape
    (the honest harness ran first), so those are cached. Only after both stopwatches stop do we
    block, so later measurements start clean.
    """
    import jax

    jitted = jax.jit(compilation.fresh_function(fn))

    def run() -> ArticleTiming:
        y = None
        start = time.time()
        for _ in range(loops):
            y = fn(*args)
        naive_s = time.time() - start
        start = time.time()
        for _ in range(loops):
            y = jitted(*args)
        jitted_s = time.time() - start
        timing.block(y)
        return ArticleTiming(naive_s, jitted_s, loops)

    if not lock:
        return run()
    with measure_lock.exclusive():
        return run()


#: The article's code as written, as the article package's example shows it.
ARTICLE_TIMING_CODE = article.by_id("jit-softmax-as-written").source


@claims.states("jit.dispatch_returns_before_the_work", "jit.eager_compiles_per_new_shape")
def article_explanation(article: ArticleTiming, eager_median_s: float, compile_s: float) -> str:
    """Why the article's stopwatch and the honest harness disagree, from both measurements.

    Arguments:
        article: the article's two stopwatch readings.
        eager_median_s: the honest harness's blocked eager call (median).
        compile_s: trace + lower + compile of the same function, measured by the profile.
    """
    fmt, n = timing.format_seconds, article.loops
    per_call = article.naive_s / n
    text = _(
        "**Why they differ.** The article wraps `time.time()` around {n} calls and never waits "
        "for a result; a JAX call can return as soon as the work is *queued*. Here its naive "
        "loop read {naive}, {per_call} per call, against {eager} for an eager call that is "
        "waited for"
    ).format(n=n, naive=fmt(article.naive_s), per_call=fmt(per_call), eager=fmt(eager_median_s))
    # One unrepeated run has no spread: the bands are wide, and the ratio is said with them.
    ratio = per_call / eager_median_s
    if ratio < 0.8:
        text += _(
            ": {ratio}× as long, so the clock saw the dispatch, and the unfinished work spilled "
            "into the jit loop's clock."
        ).format(ratio=f"{ratio:.2g}")
    elif ratio <= 1.25:
        text += _(": about the same here ({ratio}×), so little of the work spilled over.").format(
            ratio=f"{ratio:.2g}"
        )
    else:
        text += _(
            ": {ratio}× as long as a call that is waited for, so this one unrepeated run was "
            "disturbed (the machine's other work, or a first call's cost) more than the "
            "dispatch shows."
        ).format(ratio=f"{ratio:.2g}")
    text += _(
        " The jit loop also pays its first call's tracing and compilation inside its {n} calls "
        "(the profile measured {compile} for them), and one run of {n} calls has no spread to "
        "judge it by. The honest harness blocks on every result, warms both versions up, "
        "alternates eager and jit samples so that noise on the machine hits both alike, and "
        "reports the median with its quartiles."
    ).format(n=n, compile=fmt(compile_s))
    text += claims.qualify(
        "jit.eager_compiles_per_new_shape",
        _(
            " The article's naive loop, in its fresh process, also compiled one small program "
            "per `jnp` call on its first call; here eager had already run at this shape, so its "
            "loop holds no compile."
        ),
    )
    return text

"""The compile path shared by the jit, memory and tracing pages: AOT stages and the compile log."""

from __future__ import annotations

import logging
import threading

import jax
import jax.numpy as jnp
import numpy as np

from jaxplay import article
from jaxplay.core import compilation


def _seed_static_example():
    """The article's ``dynamic_control_flow``, jitted as the article does (``static_argnums=1``)."""
    return jax.jit(compilation.fresh_function(article.dynamic_control_flow), static_argnums=(1,))


def test_capture_explains_each_recompilation_and_restores_everything() -> None:
    f = _seed_static_example()
    logger = logging.getLogger("jax")
    handlers_before = list(logger.handlers)
    x = jnp.ones(5)
    with compilation.capture_compiles() as log:
        f(x, True)
        f(x, False)
        f(x, True)
    ours = log.for_function("dynamic_control_flow")
    misses = [e for e in ours if e.kind == "cache miss"]
    compiles = [e for e in ours if e.kind == "compiling"]
    assert len(misses) == 2 and len(compiles) == 2
    assert all(e.explanation for e in misses)
    assert "dynamic_control_flow" in log.text()
    assert logger.handlers == handlers_before
    assert not jax.config.jax_log_compiles
    assert not jax.config.jax_explain_cache_misses


def test_capture_ignores_other_threads() -> None:
    def other_thread_compiles() -> None:
        jax.jit(lambda y: y * 3.0)(jnp.ones(7)).block_until_ready()

    with compilation.capture_compiles() as log:
        worker = threading.Thread(target=other_thread_compiles)
        worker.start()
        worker.join()
        jax.jit(lambda y: y - 1.0)(jnp.ones(9)).block_until_ready()
    shapes = [e.message for e in log.compiles]
    assert any("float32[9]" in m for m in shapes)
    assert not any("float32[7]" in m for m in shapes)


def test_parse_event_classifies_jax_messages() -> None:
    miss = compilation.parse_event(
        "TRACING CACHE MISS at a.py:3 (<module>):\n  for f defined at a.py:1\n  reason here"
    )
    assert (miss.kind, miss.function) == ("cache miss", "f")
    assert "reason here" in miss.explanation
    new = compilation.parse_event(
        "TRACING CACHE MISS at a.py:3:1 (<module>):\n  never seen function:\n    g id=1 defined at"
    )
    assert (new.kind, new.function) == ("cache miss", "g")
    comp = compilation.parse_event("Compiling jit(h) with global shapes and types (...)")
    assert (comp.kind, comp.function) == ("compiling", "h")
    done = compilation.parse_event("Finished XLA compilation of jit(h) in 0.04 sec")
    assert (done.kind, done.function) == ("compiled", "h")
    assert compilation.parse_event("something else").kind == "other"


def test_compile_aot_gives_stages_texts_cost_and_memory() -> None:
    def softmax(x):
        return jnp.exp(x) / jnp.sum(jnp.exp(x), axis=-1, keepdims=True)

    x = jnp.ones((64, 32))
    aot = compilation.compile_aot(softmax, x)
    assert aot.trace_s > 0 and aot.lower_s > 0 and aot.compile_s > 0
    assert "stablehlo.exponential" in aot.stablehlo_text
    assert "HloModule" in aot.hlo_text
    assert "exp" in aot.jaxpr_text
    assert aot.cost is not None and aot.cost["transcendentals"] >= x.size
    assert aot.memory is not None and aot.memory["argument"] == x.nbytes
    np.testing.assert_allclose(aot.compiled(*aot.call_args), jax.nn.softmax(x), rtol=1e-6)


def test_compile_aot_bakes_static_arguments_in() -> None:
    def branch(x, use_tanh):
        return jnp.tanh(x) if use_tanh else jnp.sin(x)

    aot = compilation.compile_aot(branch, jnp.ones(4), False, static_argnums=(1,))
    assert len(aot.call_args) == 1
    np.testing.assert_allclose(aot.compiled(*aot.call_args), np.sin(np.ones(4)), rtol=1e-6)


def test_missing_analyses_become_notes_not_errors() -> None:
    class NoAnalysis:
        def cost_analysis(self):
            raise NotImplementedError("not on this backend")

        def memory_analysis(self):
            return None

    notes: list[str] = []
    assert compilation._cost(NoAnalysis(), notes) is None
    assert compilation._memory(NoAnalysis(), notes) is None
    assert len(notes) == 2 and "not on this backend" in notes[0]


def test_fresh_function_defeats_the_trace_cache() -> None:
    def f(x):
        return x + 1

    jax.jit(f)(jnp.ones(3))
    again = compilation.compile_aot(f, jnp.ones(3), fresh=False)
    fresh = compilation.compile_aot(f, jnp.ones(3))
    assert fresh.compile_s > again.compile_s

"""Beyond the article on the jit page: buffer donation, the persistent compilation cache and a
profiler trace, run as the page runs them (in a sandboxed worker) and as plain functions."""

from __future__ import annotations

import gzip
import json

import pytest

from jaxplay import jit, sandbox
from jaxplay.jit import _compile_cache, _donation

SOFTMAX = {"preset": "softmax", "rows": 100, "cols": 50, "dtype": "float32", "formula": ""}


def test_donation_aliases_the_input_and_reusing_it_raises_jaxs_own_error() -> None:
    result = jit.donation_demo(**SOFTMAX)
    x_bytes = 100 * 50 * 4
    assert result.plain.alias_bytes == 0 and result.donated.alias_bytes == x_bytes
    assert result.donated.peak_bytes == result.plain.peak_bytes - x_bytes
    # Differences: this test process holds other tests' arrays (a sandboxed worker holds none).
    assert result.plain.live_after - result.plain.live_before == x_bytes
    assert result.donated.live_after - result.donated.live_before == 0
    assert result.donated.argument_deleted and not result.plain.argument_deleted
    assert result.reuse_error == "RuntimeError"  # the real exception, captured
    assert "deleted" in result.reuse_message
    text = jit.donation_sentence(result)
    assert "20 kB" in text and "drops from" in text and "(`x` was deleted)" in text


def test_an_unusable_donation_says_so_with_jaxs_warning() -> None:
    """x.sum(axis=1) has no output of x's shape: nothing can be written into x's buffer."""
    result = jit.donation_demo("formula", 100, 50, "float32", "jnp.sum(x, axis=1)")
    assert result.donated.alias_bytes == 0 and not result.donated.argument_deleted
    assert any("donated buffers were not usable" in w for w in result.donated.warnings)
    assert result.reuse_error == ""
    assert "could not be used" in jit.donation_sentence(result)
    assert "JAX's warning below says so" in jit.donation_sentence(result)


def test_a_narrower_output_cannot_use_the_donation_and_jax_does_not_warn() -> None:
    """x > 1 has x's shape but bool elements: no alias, and JAX emits no warning, so the
    sentence must not point at one."""
    result = jit.donation_demo("formula", 100, 50, "float32", "x > 1")
    assert result.donated.alias_bytes == 0 and not result.donated.argument_deleted
    assert not any("donated" in w for w in result.donated.warnings), result.donated.warnings
    text = jit.donation_sentence(result)
    assert "could not be used" in text and "JAX gave no warning" in text
    assert "warning below" not in text


def test_a_backend_that_reports_no_alias_is_not_said_to_alias_nothing() -> None:
    """memory_analysis() without figures (-1): "XLA aliased nothing here ... (`x` was
    deleted)" contradicted itself."""
    import dataclasses

    result = jit.donation_demo(**SOFTMAX)
    unreported = {"alias_bytes": -1, "peak_bytes": -1}
    result = dataclasses.replace(
        result,
        plain=dataclasses.replace(result.plain, **unreported),
        donated=dataclasses.replace(result.donated, **unreported),
    )
    text = jit.donation_sentence(result)
    assert "cannot say whether the donation was used" in text
    assert "aliased nothing" not in text and "(`x` was deleted)" in text
    assert "as its donation was not used" not in _donation.reuse_sentence(result)


def test_donation_runs_in_the_sandbox_as_the_page_runs_it() -> None:
    """Through ``sandbox.call`` with no visitor given (the page's path)."""
    function, returns, timeout_s = jit.SANDBOXED["donation"]
    result = sandbox.call(function, isolate=True, returns=returns, timeout_s=timeout_s, **SOFTMAX)
    assert isinstance(result, _donation.DonationResult) and result.reuse_error == "RuntimeError"
    x_bytes = 100 * 50 * 4  # a fresh worker: the live arrays are the demo's own
    assert result.plain.live_after == 2 * x_bytes and result.donated.live_after == x_bytes


def test_the_second_process_reads_the_compile_from_the_cache() -> None:
    demo = jit.persistent_cache_demo(**SOFTMAX, rounds=1)
    (cold, warm) = demo.rounds[0]
    assert not cold.hit and warm.hit  # JAX's own monitoring events
    assert demo.entries >= 1 and demo.entry_bytes > 0
    text = jit.cache_sentence(demo)
    assert "cache hit in 1 of 1 second process and in 0 of 1 first one." in text
    assert jit.cache_figure(demo).data


def test_a_trace_is_summarised_by_kernel_and_offered_whole() -> None:
    demo = jit.trace_demo(**SOFTMAX)
    programs = {name for name, _, _ in demo.modules}
    assert "jit_naive_softmax" in programs  # the jitted function: one program
    assert "jit_exp" in programs  # an eager operation: a program of its own
    jitted = [k for k in demo.kernels if k.module == "jit_naive_softmax"]
    assert jitted and all(k.calls % jit._trace.JIT_CALLS == 0 for k in jitted)
    events = json.loads(gzip.decompress(demo.download_data()))
    assert events["traceEvents"]
    assert any(name.endswith(".xplane.pb") for name, _ in demo.files)
    rows = jit.trace_table(demo)
    assert rows[0]["program"] == demo.kernels[0].module
    eager = len(programs) - 1
    runs = dict(demo.runs)
    dispatches = sum(n for name, n in runs.items() if name != "jit_naive_softmax")
    assert runs["jit_naive_softmax"] == jit._trace.JIT_CALLS and runs["jit_exp"] == 2
    text = jit.trace_sentence(demo)
    # 5 jaxpr operations, 4 dispatches (exp twice; keepdims' broadcast inside the sum's program).
    assert f"The eager call made {dispatches} dispatches of {eager} programs of its own" in text
    assert "`jit_exp` twice" in text and "one per operation" not in text
    assert "the jitted calls ran one program, `jit_naive_softmax`, 3 times" in text


def test_two_programs_of_one_name_are_two_programs() -> None:
    """Eagerly, the chain's ``cos(y) * 2.0`` and ``y * y`` are two programs both named
    ``jit_multiply`` (the trace's ``program_id`` tells them apart): counted by name they were
    one, and the page said 6 programs for 7."""
    demo = jit.trace_demo("chain", 200, 100, "float32", "")
    multiplies = [name for name, _, _ in demo.modules if name.startswith("jit_multiply")]
    assert len(multiplies) == 2 and all(" #" in name for name in multiplies)
    text = jit.trace_sentence(demo)
    assert "The eager call made 7 dispatches of 7 programs of its own" in text
    assert "told apart by their program id" in text


def test_a_formulas_trace_counts_its_eager_dispatches_too() -> None:
    """JAX named a typed formula's program ``jit__unnamed_function``; the sentence looked for
    ``jit_f``, found no jitted program, and left out the eager dispatch count the Stages tab
    points to."""
    demo = jit.trace_demo("formula", 64, 32, "float32", jit.DEFAULT_FORMULA)
    text = jit.trace_sentence(demo)
    assert "The eager call made" in text and "the jitted calls ran one program, `jit_f`" in text


@pytest.mark.parametrize("demo", sorted(jit.SANDBOXED))
def test_every_sandboxed_demo_refuses_what_the_page_refuses(demo: str) -> None:
    function, _, _ = jit.SANDBOXED[demo]
    with pytest.raises(jit.SizeError):
        function("softmax", 100_000, 1_000, "float32", "")


def test_the_persistent_cache_keeps_only_compiles_of_a_second_or_more_by_default(
    tmp_path,
) -> None:
    """The page's sentence: JAX's default minimum compile time is 1 s (a quick compile is not
    written), which the demo sets to 0 (``jit._compile_cache``)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    code = (
        "import jax, jax.numpy as jnp, os\n"
        f"jax.config.update('jax_compilation_cache_dir', {str(tmp_path)!r})\n"
        "print(jax.config.jax_persistent_cache_min_compile_time_secs)\n"
        "jax.jit(lambda x: jnp.sin(x) * 2)(jnp.ones(8)).block_until_ready()\n"
        f"print(len(os.listdir({str(tmp_path)!r})))\n"
        # The positive control: with the minimum at 0 the same kind of compile is written.
        "jax.config.update('jax_persistent_cache_min_compile_time_secs', 0)\n"
        "jax.jit(lambda x: jnp.cos(x) * 3)(jnp.ones(8)).block_until_ready()\n"
        f"print(len(os.listdir({str(tmp_path)!r})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    default, written, control = done.stdout.split()
    assert float(default) == 1.0 and written == "0" and int(control) > 0, done.stdout
    assert _compile_cache.CACHE_SETTINGS["jax_persistent_cache_min_compile_time_secs"] == 0

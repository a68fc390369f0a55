"""The Code Lab's display of a run: the failing line marked, arrays as tables and heatmaps."""

from __future__ import annotations

import dataclasses

from jaxplay import code_lab
from jaxplay.core import timing
from jaxplay.sandbox import JaxprText, JitTiming, RunError, RunResult
from jaxplay.sandbox._results import ERROR_KINDS, decode_arrays


def test_the_failing_line_is_marked_with_its_neighbours() -> None:
    assert code_lab.mark_line("a\nb\nc\nd", 3, context=1) == "  2 | b\n→ 3 | c\n  4 | d"
    assert code_lab.mark_line("a", 5) is None
    # Lines as Python counts them: a form feed or U+2028 ends none (the line after was marked).
    for odd in ('x = "a\u2028b"', "\x0c"):
        source = f"{odd}\ny = 1\nraise ValueError('boom')"
        assert code_lab.mark_line(source, 3, context=0) == "→ 3 | raise ValueError('boom')"


def test_arrays_become_rows_and_heatmaps() -> None:
    vector, matrix, text = decode_arrays(
        [
            {"name": "v", "shape": [3], "dtype": "f", "preview": [1, 2, 3], "min": 1},
            {"name": "m", "shape": [2, 2], "dtype": "f", "preview": [[1, 2], [3, 4]]},
            {"name": "s", "shape": [1], "dtype": "c", "preview": ["1j"]},
        ]
    )
    assert code_lab.preview_matrix(vector) == [[1.0, 2.0, 3.0]]
    assert code_lab.preview_matrix(text) is None
    rows = code_lab.array_table((vector, matrix))
    assert [r["shape"] for r in rows] == ["(3,)", "(2, 2)"]
    assert rows[0]["first values"] == "1, 2, 3" and rows[0]["min"] == "1"
    assert rows[1]["min"] == code_lab.NO_STATISTIC
    assert code_lab.array_table((text,))[0]["first values"] == "1j"
    assert "not computed" in (code_lab.array_table_note((vector, matrix)) or "")
    (empty,) = decode_arrays([{"name": "e", "shape": [0, 3], "dtype": "float32"}])
    assert code_lab.array_table_note((empty,)) == "—: not computed (empty arrays)."
    assert code_lab.array_table_note(()) is None
    assert [list(row) for row in code_lab.preview_figure(matrix).data[0].z] == [[1, 2], [3, 4]]
    assert code_lab.preview_figure(text) is None
    assert [name for name, _ in code_lab.heatmaps((vector, matrix, text))] == ["m"]


def test_a_forged_results_numbers_too_large_for_a_float_are_dropped() -> None:
    """Visitor code can write the worker's result itself: a 400-digit integer where a float
    belongs raised OverflowError in the page; such a number is no number."""
    from jaxplay.sandbox._results import duration

    huge = 10**400
    (array,) = decode_arrays(
        [{"name": "v", "shape": [2], "dtype": "f", "preview": [huge, 1], "min": huge}]
    )
    assert array.min is None
    assert code_lab.preview_matrix(array) is None and code_lab.preview_figure(array) is None
    assert code_lab.array_table((array,))[0]["min"] == code_lab.NO_STATISTIC
    assert duration(huge, 1.5) == 1.5 and duration(float("inf"), 1.5) == 1.5
    assert duration(-1, 1.5) == 1.5 and duration(0.25, 1.5) == 0.25


def test_the_eager_vs_jit_inspection_in_words() -> None:
    eager = timing.Timing(samples=(1e-3, 2e-3, 3e-3), number=1, warmup=0)
    jitted = timing.Timing(samples=(1e-3, 1e-3, 1e-3), number=1, warmup=0)
    shown = code_lab.timing_summary(JitTiming(timing.JitComparison(eager, jitted), "cpu"), True)
    assert [value for _, value in shown.metrics] == ["2 ms", "1 ms", "2×"]
    assert "3 samples" in shown.caption and "cpu" in shown.caption
    empty = timing.Timing(samples=(), number=1, warmup=0)
    none = code_lab.timing_summary(JitTiming(timing.JitComparison(empty, empty), ""), True)
    assert none.metrics[2][1] == "n/a"
    # A function slower than the budget: no sample, and so no "warmed up, median of 0 samples".
    cut = timing.Timing(samples=(), number=1, warmup=2, cut=True)
    slow = code_lab.timing_summary(JitTiming(timing.JitComparison(cut, cut), "cpu"), True)
    assert "before a sample was taken" in slow.caption and "warmed up" not in slow.caption
    one, one_jit = (timing.Timing((s,), 1, 2, True) for s in (2e-3, 1e-3))
    single = code_lab.timing_summary(JitTiming(timing.JitComparison(one, one_jit), "cpu"), True)
    assert "median of 1 sample per side" in single.caption
    assert "one interleaved pair: no spread" in single.caption and "1 interleaved pairs" not in (
        single.caption
    )
    assert "cut at the time budget" in single.caption
    # The device is the worker's word, which visitor code can forge: no link, image or style.
    forged = "**B** [log in](https://evil.example/) ![t](https://evil.example/p.png)" * 10_000
    caption = code_lab.timing_summary(
        JitTiming(timing.JitComparison(eager, jitted), forged), True
    ).caption
    assert "](" not in caption.replace("\\](", "") and "**B**" not in caption
    assert len(caption) < 1_000


def test_a_server_without_a_sandbox_promises_none() -> None:
    """Without isolation the caption, the spinner and the Tracing page said "sandbox"; a run
    there is a plain process (it reads the server's files)."""
    from jaxplay import tracing

    eager = timing.Timing(samples=(2e-3,), number=1, warmup=0)
    shown = code_lab.timing_summary(JitTiming(timing.JitComparison(eager, eager), "cpu"), False)
    assert (
        "this server has no sandbox" in shown.caption and "inside the sandbox" not in shown.caption
    )
    assert "sandbox" not in code_lab.running_label(False)
    assert "sandbox" in code_lab.running_label(True)
    assert "no sandbox" in tracing.lab_caption(False)
    assert "never in this server" in tracing.lab_caption(True)


def test_the_run_time_says_it_leaves_the_inspections_out() -> None:
    """The worker times the code alone: "Ran in 0.00 s" sat above a timing that took a second."""
    from jaxplay.sandbox import RunResult

    ran = RunResult(ok=True, stdout="", stderr="", duration_s=0.004)
    assert code_lab.run_summary(ran) == "Ran in 4 ms"  # "0.00 s" before
    inspected = dataclasses.replace(ran, inspections={"values": ()})
    assert "the inspections after it not counted" in code_lab.run_summary(inspected)


def test_a_function_jitted_where_it_is_defined_is_timed_through_its_undecorated_one() -> None:
    """The Function box offers ``name = jax.jit(...)``: timed as it is, both sides ran the
    compiled program and the page said jit gained nothing (a speed-up of 1×)."""
    import jax
    import jax.numpy as jnp

    from jaxplay.sandbox import _inspectors

    def softmax(x):
        e = jnp.exp(x - x.max())
        return e / e.sum()

    timed = _inspectors.compare_jit(jax.jit(softmax), (jnp.ones(256),))
    assert timed.undecorated
    assert "jitted where it is defined" in code_lab.timing_summary(timed, True).caption
    plain = _inspectors.compare_jit(softmax, (jnp.ones(256),))
    assert not plain.undecorated
    assert "jitted where it is defined" not in code_lab.timing_summary(plain, True).caption


def test_every_jit_layer_of_the_code_is_taken_off_the_eager_side_and_pmap_is_no_jit() -> None:
    """``f = jax.jit(g)`` with ``g`` jitted was timed compiled against compiled ("0.99×"); a
    ``pmap`` was called "jitted where it is defined"."""
    import jax
    import jax.numpy as jnp

    from jaxplay.sandbox import _inspectors

    def body(x):
        return jnp.sin(x) * 2

    assert _inspectors.eager_side(jax.jit(jax.jit(body))) == (body, True)
    assert _inspectors.eager_side(jax.jit(jnp.sin)) == (jnp.sin, True)  # eager code calls it so
    assert _inspectors.eager_side(body) == (body, False)
    parallel = jax.pmap(body)
    assert _inspectors.eager_side(parallel) == (parallel, False)


def test_a_failure_ready_to_show() -> None:
    error = RunError("exception", "boom", exc_type="ValueError", line=2, traceback="tb")
    shown = code_lab.failure(error, "a\nb\nc")
    assert shown.title == "The code raised an exception."
    assert shown.message == "ValueError: boom" and shown.traceback == "tb"
    assert shown.marked is not None and "→ 2 | b" in shown.marked
    assert code_lab.failure(RunError("odd", "?"), "").title == "odd"
    assert set(code_lab.FAILURES) == set(ERROR_KINDS)


def test_the_error_line_only_while_the_code_is_the_code_that_ran() -> None:
    failed = RunResult(ok=False, error=RunError("exception", "x", line=3))
    assert code_lab.error_line(("code", failed), "code") == 3
    assert code_lab.error_line(("code", failed), "edited") is None
    assert code_lab.error_line(("code", RunResult(ok=True)), "code") is None
    assert code_lab.error_line(None, "code") is None


def test_inspections_chosen_after_the_run_are_said_to_wait() -> None:
    request = code_lab.inspect_request("f", "(3,), ()", "float32", ["jaxpr", "compare_jit"])
    assert [a.shape for a in request.args] == [(3,), ()]
    done = RunResult(ok=True, inspections={"jaxpr": JaxprText("x")})
    note = code_lab.waiting_note(request, done)
    assert note == "Time it eager vs jit: shown after the next **Run** of this code."
    assert code_lab.waiting_note(None, done) is None
    assert code_lab.OFFERED == ("jaxpr", "compare_jit")
    # The worker inspects only code that ran to its end: "after the next Run" never came.
    failed = RunResult(ok=False, error=RunError("exception", "boom"))
    assert code_lab.waiting_note(request, failed) == (
        "Show the jaxpr, Time it eager vs jit: shown after a **Run** in which the code runs "
        "without an error."
    )


def test_a_forged_preview_keeps_only_what_the_worker_sends() -> None:
    """A forged frame's 14 previews of 256 rows of 256 numbers held the server 1.3 s and some
    40 MB a run, and 0.75 s every rerun after (tables and heatmaps redrawn from them)."""
    big = [[0.5] * 256 for _ in range(256)]
    arrays = decode_arrays(
        [{"name": f"a{i}", "shape": [256, 256], "preview": big} for i in range(14)]
    )
    assert len(arrays) == 14
    assert all(len(a.preview) == 16 and {len(r) for r in a.preview} == {16} for a in arrays)
    vector = decode_arrays([{"name": "v", "shape": [10_000], "preview": [1.0] * 10_000}])
    assert len(vector[0].preview) == 256
    deep = decode_arrays([{"name": "d", "shape": [2], "preview": [[[1.0]] * 3] * 3}])
    assert deep[0].preview == [[None, None, None]] * 3  # a third level is no number


def test_a_forged_inspection_of_nested_lists_is_refused_before_decoding() -> None:
    """A run's code wrote 390,000 ``[[]]`` where a timing belongs: three seconds of the server's
    interpreter a run, decoded before the type was checked."""
    from jaxplay.core import codec
    from jaxplay.sandbox import InspectionFailed, _inspectors

    sample = timing.Timing(samples=(1e-3,), number=1, warmup=0)
    forged = codec.encode(JitTiming(timing.JitComparison(sample, sample), "cpu"))
    forged["comparison"] = [[[]]] * 390_000
    shown = _inspectors.decode({"compare_jit": forged}, ["compare_jit"])["compare_jit"]
    assert isinstance(shown, InspectionFailed) and "is not a JitComparison" in shown.error
    # Of the right kinds but more values than any inspection makes: refused as it decodes.
    bloated = codec.encode(JitTiming(timing.JitComparison(sample, sample), "cpu"))
    bloated["comparison"]["eager"]["samples"] = {"__tuple__": [[1.0] * 100] * 2_000}
    shown = _inspectors.decode({"compare_jit": bloated}, ["compare_jit"])["compare_jit"]
    assert isinstance(shown, InspectionFailed) and "values" in shown.error

"""What jit bought, read from the compiled program: counts, and the sentences made of them."""

from __future__ import annotations

import contextlib
import dataclasses
import io

import jax
import jax.numpy as jnp
import pytest

from jaxplay import jit
from jaxplay.core import timing
from jaxplay.jit import _program as program_module


def _program(preset: str, rows: int, cols: int, formula: str = jit.DEFAULT_FORMULA):
    w = jit.Workload(preset, rows, cols, "float32", formula)
    fn, args = jit.function_of(w), jit.inputs(w)
    profile = timing.profile_jit(fn, *args, budget_s=0.01)
    return program_module.read_program(profile, fn, *args)


@pytest.fixture(scope="module")
def softmax() -> program_module.CompiledProgram:
    return _program("softmax", 1000, 1000)


def test_the_softmax_is_not_one_pass_and_jit_computes_exp_once(softmax) -> None:
    """Each claim of the page, checked on the compiled HLO (XLA:CPU here)."""
    p = softmax
    assert p.eager_ops == 5  # exp, exp, reduce_sum, broadcast_in_dim, div
    assert len(p.kernels) > 1  # the divide needs the row sums: not one kernel
    assert p.counts["exp"] == (2, 1)  # the jaxpr's two exps, compiled once
    assert p.divided_eager == 1_000_000 and p.divided_compiled == 1_000
    assert p.divide_as_multiply  # a reciprocal per row sum, then a multiply
    assert p.waits_for == ("div", "reduce_sum")
    assert p.bytes_accessed / p.input_bytes == pytest.approx(5.0, rel=0.05)


def test_the_sentence_is_made_of_the_counts(softmax) -> None:
    text = jit.program_sentence(softmax)
    assert f"**{len(softmax.kernels)} kernels**" in text and "**5 operations**" in text
    assert "`exp` is computed once (the jaxpr computes it twice" in text
    assert "1,000,000 elements became 1,000 divisions" in text
    assert "5.0× the 4 MB of its arguments" in text
    assert (
        ". The work cannot be one pass over the data: `div` needs the result of `reduce_sum`"
        in text
    )
    assert "one pass" not in text.replace("cannot be one pass over the data", "")
    assert "dispatches each on its own" not in text  # the trace counts dispatches


def test_the_sentence_changes_with_the_size_and_the_function(softmax) -> None:
    small = jit.program_sentence(_program("softmax", 10, 30))
    assert small != jit.program_sentence(softmax)
    assert "300 elements became 10 divisions" in small
    chain = _program("chain", 100, 100)
    text = jit.program_sentence(chain)
    assert len(chain.kernels) == 1 and "**1 kernel**" in text
    assert "one read of the arguments and one write of the result, nothing in between" in text
    assert "`exp` is computed" not in text and "cannot be one pass" not in text


def test_one_read_and_one_write_in_bytes_is_not_called_one_pass() -> None:
    """``x - jnp.max(x)`` is one kernel whose cost analysis counts one read and one write, yet
    the subtraction waits for the whole max: the sentence must not say both."""
    program = _program("formula", 1000, 1000, "x - jnp.max(x)")
    text = jit.program_sentence(program)
    assert "as many bytes as one read of the arguments and one write" in text
    assert "nothing in between" not in text
    assert "That counts bytes, not passes. The work cannot be one pass" in text


def test_every_sentence_of_it_starts_with_a_capital(softmax) -> None:
    """The sentences are joined from parts: each part must start as a sentence does."""
    for program in (softmax, _program("formula", 1000, 1000, "x - jnp.max(x)")):
        text = jit.program_sentence(program)
        parts = [part.lstrip("*") for part in text.split(". ")[1:]]
        starts = [part[:1] for part in parts if not part.startswith("`")]  # code keeps its case
        assert starts and all(not start.islower() for start in starts), text


def test_a_different_compiled_program_gives_a_different_sentence(softmax) -> None:
    """The sentence follows the data, whatever a backend compiles (no fixed wording)."""
    recomputed = dataclasses.replace(softmax, counts={"exp": (2, 3)}, divide_as_multiply=False)
    text = jit.program_sentence(recomputed)
    assert "appears 3 times in the compiled program against twice in the jaxpr" in text
    assert "reciprocals" not in text


def test_the_kernel_and_memory_tables_carry_their_units(softmax) -> None:
    rows = jit.kernel_table(softmax)
    assert [r["kernel"] for r in rows] == [k.name for k in softmax.kernels]
    memory = jit.memory_table({"argument": 4_000_000, "temp": 4_000})
    assert memory[0]["size"] == "4 MB" and memory[0]["bytes"] == "4,000,000"
    assert memory[1]["size"] == "4 kB" and "temporaries" in memory[1]["what"]
    # XLA:CPU's 0 bytes of generated code is a figure it does not count ("0 B" read as none).
    (code,) = jit.memory_table({"generated code": 0})
    assert code["size"] == "not reported by this backend" and code["bytes"] == "0"
    assert jit.memory_table({"generated code": 2_048})[0]["size"] == "2.05 kB"


def _run_example(size: str) -> str:
    """The article's fixed softmax example, run here with its input resized, what it printed."""
    source = jit_article_example().source.replace("(1000, 1000)", size)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "<example>", "exec"), {"__name__": "__main__"})
    return out.getvalue()


def jit_article_example():
    from jaxplay import article

    return article.by_id("jit-softmax-fixed")


def test_the_articles_fixed_example_prints_the_compiled_programs_counts() -> None:
    """Its explanation states no number: the example prints them, from its own run."""
    example = jit_article_example()
    assert "(1000, 1000)" in example.source and "import jaxplay" not in example.source
    assert not any(ch.isdigit() for ch in example.explanation.replace("1000x1000", "").replace(
        "10000x1000", ""))  # fmt: skip
    big, small = _run_example("(1000, 1000)"), _run_example("(10, 30)")
    assert "exp in the jaxpr: 2" in big and "exp in the compiled program: 1" in big
    assert "bytes read and written per call: 20,016,000 (5.0x the input)" in big
    assert "bytes read and written per call: 20,016,000" not in small
    assert "rows sum to 1: True" in small


def test_the_dispatch_claim_reads_the_article_pages_words_too(monkeypatch) -> None:
    """The article's jit example said its jaxpr's operations were each "dispatched on its own"
    when run eagerly; the profiler trace shows fewer dispatches. Put the old words back and the
    claim fails."""
    from jaxplay import article
    from jaxplay.core import claims

    claim = claims.gather(["jit"])["jit.eager_dispatches_from_trace"]
    assert claim.run().holds
    old = dataclasses.replace(
        article.EXAMPLES[0], explanation="the jaxpr's operations (each is dispatched on its own)"
    )
    monkeypatch.setattr(article, "EXAMPLES", (old, *article.EXAMPLES[1:]))
    result = claim.run()
    assert not result.holds and "article page" in result.observed


def test_an_op_xla_rewrote_away_is_not_called_a_repeat() -> None:
    """``log(exp(x))`` is ``x`` to XLA's simplifier: no repeat was removed, and the sentence
    said one was ("computed 0 times ... XLA removed the repeat")."""
    program = _program("formula", 100, 100, "jnp.log(jnp.exp(x))")
    assert program.counts == {"exp": (1, 0), "log": (1, 0)}
    text = jit.program_sentence(program)
    assert "`exp` is not in the compiled program (the jaxpr computes it once)" in text
    assert "repeat" not in text and "0 times" not in text


def test_a_divide_by_a_constant_is_a_multiply_with_no_division_left() -> None:
    """The reciprocal of ``2`` is folded while compiling: "0 divisions (reciprocals)" was said."""
    program = _program("formula", 100, 100, "x / 2")
    assert program.divided_eager == 10_000 and program.divided_compiled == 0
    assert program.divide_as_multiply
    text = jit.program_sentence(program)
    assert "The divide of 10,000 elements became a multiply: no division is left" in text
    assert "0 divisions" not in text


@pytest.mark.parametrize("formula", ["x / jnp.sqrt(x)", "x / jnp.exp(x)"])
def test_a_divide_by_a_computed_divisor_is_not_said_to_divide_by_a_constant(formula: str) -> None:
    """XLA rewrites these divides too (``x * rsqrt(x)``, ``x * exp(-x)``): no constant was
    folded, and the sentence said one was."""
    program = _program("formula", 100, 50, formula)
    assert program.divided_eager == 5_000 and program.divided_compiled == 0
    text = jit.program_sentence(program)
    assert "became a multiply: no division is left" in text
    assert "the divisor is a constant" not in text
    if "sqrt" in formula:  # the example the sentence gives, as XLA compiled it
        x = jnp.ones((100, 50), jnp.float32)
        hlo = jax.jit(lambda x: x / jnp.sqrt(x)).lower(x).compile().as_text()
        assert " rsqrt(" in hlo and " divide(" not in hlo


def test_a_repeat_is_told_from_the_jaxprs_own_equations(softmax) -> None:
    """The softmax's two ``exp`` take the same ``x``: one distinct, computed once."""
    assert softmax.distinct["exp"] == 1
    rewritten = dataclasses.replace(softmax, distinct={"exp": 2})
    text = jit.program_sentence(rewritten)
    assert "XLA merged repeats or rewrote some into other operations" in text
    assert "removed the repeat" not in text


def test_an_op_jax_lowered_away_is_not_said_to_be_xlas_rewrite() -> None:
    """``jax.nn.sigmoid`` is a ``logistic`` in the jaxpr that JAX lowers as ``1 / (1 +
    exp(-x))``: XLA never sees a logistic, and its simplifier was blamed for removing it."""
    x = jnp.ones((100, 50), jnp.float32)
    assert "logistic" not in jax.jit(jax.nn.sigmoid).lower(x).as_text()
    program = _program("formula", 100, 50, "jax.nn.sigmoid(x)")
    assert program.counts["logistic"] == (1, 0) and program.lowered["logistic"] == 0
    text = jit.program_sentence(program)
    assert "JAX already lowered it as other operations" in text
    assert "algebraic simplifier" not in text


def test_more_of_an_op_in_one_kernel_is_not_called_a_recomputation() -> None:
    """``exp(x) + sigmoid(x)``: the second ``exp`` is sigmoid's ``exp(-x)``, in the same one
    kernel; nothing is recomputed, and the sentence said XLA recomputed it."""
    program = _program("formula", 100, 50, "jnp.exp(x) + jax.nn.sigmoid(x)")
    assert program.counts["exp"] == (1, 2) and program.kernels_with["exp"] == 1
    text = jit.program_sentence(program)
    assert "other operations of the jaxpr are written with `exp`" in text
    assert "recomputes" not in text


def test_an_op_inside_a_nested_jit_is_counted() -> None:
    """``jnp.linalg.norm`` is a jit of its own: its ``sqrt`` is in the jaxpr, one level down;
    counted only at the top, the page said XLA computed a second ``sqrt`` the jaxpr lacked."""
    program = _program("formula", 100, 50, "jnp.sqrt(x) + jnp.linalg.norm(x)")
    assert program.counts["sqrt"] == (2, 2)
    assert "`sqrt` appears" not in jit.program_sentence(program)


def test_an_op_xla_expands_from_a_composite_is_put_down_to_xla() -> None:
    """``exp(x) + cosh(x)``: the StableHLO holds one ``exponential`` and a ``chlo.cosh``, which XLA
    expands into more ``exp`` while compiling; the sentence said JAX's lowering wrote them."""
    x = jnp.ones((100, 50), jnp.float32)
    lowered = jax.jit(lambda x: jnp.exp(x) + jnp.cosh(x)).lower(x).as_text()
    assert lowered.count("stablehlo.exponential") == 1 and "chlo.cosh" in lowered
    program = _program("formula", 100, 50, "jnp.exp(x) + jnp.cosh(x)")
    assert program.counts["exp"][1] > 1 and program.lowered["exp"] == 1
    text = jit.program_sentence(program)
    assert "XLA expanded a composite operation" in text
    assert "the StableHLO shows which" not in text


def test_nothing_is_counted_without_the_programs_texts(softmax) -> None:
    """A backend that prints no HLO: no kernels, so no sentence about what XLA did to an op."""
    bare = dataclasses.replace(softmax, kernels=(), lowered={"exp": None})
    text = jit.program_sentence(bare)
    assert "`exp`" not in text


def test_without_the_stablehlo_neither_jax_nor_xla_is_blamed_alone() -> None:
    """Where the lowered program's text is missing (``lowered`` None), an op found more often in
    the compiled program gets the sentence that names both possible causes."""
    program = _program("formula", 100, 50, "jnp.exp(x) + jnp.cosh(x)")
    unknown = dataclasses.replace(program, lowered={"exp": None})
    text = jit.program_sentence(unknown)
    assert "XLA recomputes it inside more than one kernel" in text
    assert "expanded a composite" not in text and "the StableHLO shows which" not in text

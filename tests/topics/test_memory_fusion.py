"""The op chain: eager against jit, the kernels XLA fused, bytes moved and where fusion stops."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from jaxplay import memory
from jaxplay.core.hlo import parse_fusions
from jaxplay.memory import _fusion
from tests.core.test_hlo import OLD_STYLE


def test_run_chain_applies_the_ops_in_order():
    x = jnp.linspace(-1.0, 1.0, 12, dtype=jnp.float32).reshape(3, 4)
    got = memory.run_chain(("sin", "times 2", "plus 1", "minus row max"), x)
    y = jnp.sin(x) * 2 + 1
    np.testing.assert_allclose(got, y - y.max(axis=1, keepdims=True), rtol=1e-6)
    source = memory.chain_source(("sin", "matmul"))
    assert source.splitlines() == [
        "def chain(x):",
        "    y = x",
        "    y = jnp.sin(y)",
        "    y = (y @ y.T) / y.shape[1]",
        "    return y",
    ]


def test_eager_dispatches_count_every_intermediate_written_and_read():
    x = jnp.ones((8, 8), jnp.float32)
    ops = ("sin", "cos", "times 2", "square")
    dispatches = _fusion.eager_dispatches(ops, x)
    assert [d.primitive for d in dispatches] == ["sin", "cos", "mul", "mul"]
    size = 8 * 8 * 4
    # y * 2 folds the 2 in as a literal; y * y reads y twice.
    assert [d.read_bytes for d in dispatches] == [size, size, size, 2 * size]
    assert all(d.written_bytes == size for d in dispatches)
    reduction = _fusion.eager_dispatches(("minus row max",), x)
    assert [d.primitive for d in reduction] == ["reduce_max", "broadcast_in_dim", "sub"]
    assert reduction[0].written_bytes == 8 * 4


@pytest.fixture(scope="module")
def article_chain():
    return memory.analyse_chain(memory.CHAIN_PRESETS["The article's chain, completed"], 64, 0.05)


def test_jit_fuses_the_elementwise_chain_into_one_kernel(article_chain):
    report = article_chain
    assert len(report.dispatches) == len(report.ops)
    assert report.kernels == 1 and len(report.fusions) == 1
    assert report.fusions[0].primitives == ("sin", "cos", "mul", "exp", "add", "tanh")
    # Fused: read the input once, write the result once; eager: every op reads and writes.
    assert report.jit_bytes == 2 * 64 * 64 * 4
    assert report.eager_bytes == 2 * len(report.ops) * 64 * 64 * 4
    assert report.comparison.eager.median > 0 and report.comparison.jitted.median > 0
    assert report.eager_gbps > 0 and report.jit_gbps > 0
    assert report.reference.copy_bandwidth_gbps > 0
    assert "GB/s" in memory.bandwidth_story(report)
    story = memory.fusion_story(report)
    # Counted from the profiler trace: the article's chain is one program per op.
    assert sum(n for _, n in report.programs) == len(report.ops)
    assert f"jaxpr's {len(report.ops)} operations as {len(report.ops)} dispatched programs" in story
    assert "into 1 kernel, and `cost_analysis()` counts 2× the array's bytes" in story
    assert f"cut the bytes moved {len(report.ops):.3g}×" in story


@pytest.mark.parametrize(
    ("preset", "boundary", "after"),
    [
        ("A reduction in the chain", "reduce", {"exponential", "tanh"}),
        ("A matmul in the chain", "dot", {"tanh"}),
    ],
    ids=["reduce", "dot"],
)
def test_fusion_stops_at_a_boundary(preset, boundary, after):
    """The reduction (or dot) ends its kernel: what follows it runs in another one. (XLA may copy
    the cheap ops before it into both kernels rather than store them.)"""
    report = memory.analyse_chain(memory.CHAIN_PRESETS[preset], 32, 0.02)
    assert report.kernels >= 2
    assert len(report.fusions) == len(parse_fusions(report.hlo_text))
    kernels = [set(f.ops) for f in report.fusions] + [{op.opcode} for op in report.unfused]
    assert any(boundary in ops for ops in kernels)
    assert any(after & ops for ops in kernels)
    assert not [ops for ops in kernels if boundary in ops and after & ops]
    rows = memory.fusion_rows(report.fusions)
    assert [r["kernel"] for r in rows] == [f.name for f in report.fusions]
    story = memory.fusion_story(report)
    assert f"into {report.kernels} kernels" in story and "through memory" in story
    assert "fusion stops at" not in story  # where is the compiled program's to say (below)
    ratio = report.jit_bytes / (32 * 32 * 4)
    assert f"counts {ratio:.3g}× the array's bytes" in story and ratio > 2
    assert "no intermediate goes to memory" not in story


def test_the_story_names_no_break_xla_did_not_make():
    """XLA:CPU fused the row max with its neighbours (one kernel of exp, max, subtract; sin in
    the next): the story said "fusion stops at `minus row max`" from the op's kind alone."""
    report = memory.analyse_chain(("exp", "minus row max", "sin"), 64, 0.02)
    with_max = [f for f in report.fusions if "reduce_max" in f.primitives]
    assert with_max and "exp" in with_max[0].primitives  # fused with its neighbour
    assert "fusion stops" not in memory.fusion_story(report)


def test_one_op_has_nothing_to_fuse():
    """A chain of one op: no next op, no intermediate, and nothing fused."""
    report = memory.analyse_chain(("sin",), 32, 0.02)
    story = memory.fusion_story(report)
    assert "nothing to fuse" in story
    assert "Fusing cut" not in story and "for the next to read back" not in story


def test_a_matmul_chain_is_said_to_compute_its_flops():
    """The matmul preset's time went to transcendentals in the bandwidth paragraph; XLA counts
    hundreds of flops per transcendental there."""
    report = memory.analyse_chain(memory.CHAIN_PRESETS["A matmul in the chain"], 64, 0.02)
    cost = report.cost or {}
    assert cost["flops"] > 10 * cost["transcendentals"]
    said = memory.bandwidth_story(report)
    if "Well below the roof" in said:
        assert f"{cost['flops']:,.0f} floating-point operations" in said


def test_the_roof_words_agree_with_the_share_shown():
    """100.4 % of the roof printed "100%" and said "Above the roof"; 49.6 % printed "50%" and
    said "Well below"."""
    import dataclasses

    report = memory.analyse_chain(("sin",), 32, 0.02)

    def at_share(share: float) -> str:
        roof = dataclasses.replace(report.reference, copy_bandwidth_gbps=report.jit_gbps / share)
        return memory.bandwidth_story(dataclasses.replace(report, reference=roof))

    at_roof = at_share(1.004)
    assert "100% of this device's copy bandwidth" in at_roof and "Above the roof" not in at_roof
    half = at_share(0.4996)
    assert "50% of this device's copy bandwidth" in half and "Near the roof" in half


def test_recomputed_primitives_are_those_in_several_kernels():
    assert memory.recomputed_primitives(parse_fusions(OLD_STYLE), (("sin", 1),)) == ()
    text = """\
%f1 (p: f32[4]) -> f32[] {
  %p = f32[4]{0} parameter(0)
  %s = f32[4]{0} sine(%p), metadata={op_name="jit(c)/sin"}
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(%s, %z), dimensions={0}, to_apply=%add, metadata={op_name="jit(c)/reduce_max"}
}

%f2 (p: f32[4], q: f32[]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %q = f32[] parameter(1)
  %s = f32[4]{0} sine(%p), metadata={op_name="jit(c)/sin"}
  %b = f32[4]{0} broadcast(%q), dimensions={}, metadata={op_name="jit(c)/sub"}
  ROOT %d = f32[4]{0} subtract(%s, %b), metadata={op_name="jit(c)/sub"}
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %m = f32[] fusion(%x), kind=kLoop, calls=%f1
  ROOT %o = f32[4]{0} fusion(%x, %m), kind=kLoop, calls=%f2
}
"""  # noqa: E501
    found = parse_fusions(text)
    assert [f.primitives for f in found] == [("sin", "reduce_max"), ("sin", "sub")]
    one_sin = (("sin", 1), ("reduce_max", 1), ("sub", 2))
    assert memory.recomputed_primitives(found, one_sin) == ("sin",)
    # Two sin ops, one per kernel: nothing is computed twice; nothing is said unread.
    assert memory.recomputed_primitives(found, (("sin", 2), ("sub", 2))) == ()
    assert memory.recomputed_primitives(found, ()) == ()


def test_chain_figure_compares_eager_and_jit(article_chain):
    fig = memory.chain_figure(article_chain)
    assert len(fig.data) == 3
    assert list(fig.data[0].y) == [len(article_chain.dispatches), article_chain.kernels]
    assert fig.data[2].y[1] == pytest.approx(article_chain.jit_gbps)
    assert any("copy bandwidth" in a.text for a in fig.layout.annotations)
    assert article_chain.device in fig.layout.title.text


def test_check_chain_refuses_with_the_limit_named():
    assert memory.check_chain(("sin",), 64, "cpu") is None
    assert "empty" in (memory.check_chain((), 64, "cpu") or "")
    assert "nope" in (memory.check_chain(("sin", "nope"), 64, "cpu") or "")
    limit = memory.chain_limit("cpu")
    assert str(limit) in (memory.check_chain(("sin",), limit + 1, "cpu") or "")
    assert str(memory.MAX_CHAIN_OPS) in (
        memory.check_chain(("sin",) * (memory.MAX_CHAIN_OPS + 1), 8, "cpu") or ""
    )
    with pytest.raises(ValueError, match="empty"):
        memory.analyse_chain((), 8)


def test_the_eager_and_jit_columns_are_the_reports_own_numbers() -> None:
    from jaxplay import memory

    report = memory.analyse_chain(("sin", "cos"), 64)
    columns = memory.eager_vs_jit_rows(report)
    assert list(columns) == ["eager", "jit"]
    assert all(len(rows) == len(memory.COMPARED) for rows in columns.values())
    assert columns["eager"][0] == str(len(report.dispatches))
    assert columns["jit"][0] == str(report.kernels)


def test_the_eager_count_is_the_traced_programs_the_story_names() -> None:
    """``jnp.max`` is one dispatched program of two operations: the table said 3 kernels beside
    the story's "3 operations as 2 dispatched programs"."""
    report = memory.analyse_chain(("minus row max",), 64, 0.02)
    if not report.programs:
        pytest.skip("no profiler trace on this backend")
    programs = sum(n for _, n in report.programs)
    assert programs < len(report.dispatches)
    assert memory.eager_vs_jit_rows(report)["eager"][0] == str(programs)
    assert f"as {programs} dispatched programs" in memory.fusion_story(report)


def test_two_sins_each_in_its_kernel_are_not_called_recomputed():
    """The chain ``sin, matmul, sin`` has two ``sin`` equations, one on each side of the matmul:
    each is computed once, and the caption said XLA recomputed ``sin``. Where XLA really does
    (the reduction preset at size 8: the chain's one ``sin`` in two kernels), it is said."""
    split = memory.analyse_chain(("sin", "matmul", "sin"), 16, budget_s=0.01)
    assert memory.recomputed_caption(split) is None, [f.primitives for f in split.fusions]
    stops = memory.CHAIN_PRESETS["A reduction in the chain"]
    report = memory.analyse_chain(stops, 8, budget_s=0.01)
    kernels = sum(1 for f in report.fusions if "sin" in f.primitives)
    assert kernels > dict(report.lowered_ops)["sin"] == 1
    assert "sin" in (memory.recomputed_caption(report) or "")
    # sigmoid lowers to neg, exp, add, div: its div beside the matmul's is not a recomputation.
    for chain in (("sigmoid", "matmul"), ("sigmoid", "matmul", "sigmoid")):
        report = memory.analyse_chain(chain, 64, budget_s=0.01)
        assert memory.recomputed_caption(report) is None, [f.primitives for f in report.fusions]

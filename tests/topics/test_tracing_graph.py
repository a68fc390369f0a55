"""The jaxpr dataflow graph: edges follow the variables, sub-jaxprs collapse and expand, a cap."""

from __future__ import annotations

import re

import jax.numpy as jnp
from jax import lax

from jaxplay import tracing
from jaxplay.tracing._jaxpr_tree import Atom, Block, Eqn


def _block(fn, *specs: tuple[tuple[int, ...], str]) -> tracing.Staged:
    return tracing.stage(fn, [tracing.InputSpec(s, d) for s, d in specs])


def _balanced(dot: str) -> bool:
    unquoted = re.sub(r'"(?:[^"\\]|\\.)*"', "", dot)
    return unquoted.count("{") == unquoted.count("}")


def test_seed_graph_edges_follow_the_variables() -> None:
    staged = _block(tracing.simple_function, ((3,), "float32"), ((), "float32"))
    graph = tracing.build_graph(staged.jaxpr, arg_names=staged.arg_names)
    assert graph.edges == (
        ("in:0", "eqn:0"),
        ("in:1", "eqn:0"),
        ("eqn:0", "eqn:1"),
        ("eqn:1", "out:0"),
    )
    assert graph.nodes == graph.total == 2 and not graph.truncated and graph.message is None
    assert '"in:0" [label="x\\nf32[3]"' in graph.dot
    assert "with 1.0" in graph.dot
    assert graph.dot.startswith("digraph jaxpr {") and _balanced(graph.dot)


def test_fan_out_draws_one_edge_per_consumer() -> None:
    def fan(x):
        y = jnp.sin(x)
        return y * y + jnp.cos(y)

    staged = _block(fan, ((4,), "float32"))
    graph = tracing.build_graph(staged.jaxpr)
    sources = [src for src, _ in graph.edges]
    assert sources.count("eqn:0") == 2  # sin feeds mul (once: both operands) and cos


def test_one_equation_inside_is_said_as_one() -> None:
    import jax

    def outer(x):
        return jax.jit(jnp.sin)(x) * 2  # a pjit around one sin: "1 equations inside" before

    graph = tracing.build_graph(_block(outer, ((4,), "float32")).jaxpr)
    assert "1 equation inside" in graph.dot and "1 equations" not in graph.dot


def test_sub_jaxprs_collapse_and_expand() -> None:
    preset = tracing.find_preset("while")
    staged = _block(preset.fn, *preset.args)
    assert [p for p, _ in tracing.expandable(staged.jaxpr)] == ["0"]
    collapsed = tracing.build_graph(staged.jaxpr)
    assert collapsed.nodes == 1 and "equations inside" in collapsed.dot
    assert "subgraph" not in collapsed.dot
    expanded = tracing.build_graph(staged.jaxpr, expand={"0"})
    assert expanded.nodes == expanded.total == 1 + 8
    assert expanded.dot.count("subgraph") == 2 and _balanced(expanded.dot)
    # The input reaches the loop body and the condition through the carry.
    assert ("in:0", "eqn:0/body_jaxpr/1") in expanded.edges
    assert ("in:0", "eqn:0/cond_jaxpr/1") in expanded.edges
    assert tracing.build_graph(staged.jaxpr, expand=True).dot == expanded.dot


def test_cond_branches_receive_the_operands_not_the_index() -> None:
    def choose(p, x):
        return lax.cond(p > 0, lambda v: jnp.sin(v), lambda v: jnp.cos(v), x)

    staged = _block(choose, ((), "float32"), ((3,), "float32"))
    cond = next(e for e in staged.jaxpr.eqns if e.primitive == "cond")
    graph = tracing.build_graph(staged.jaxpr, expand={cond.path})
    inner = [dst for src, dst in graph.edges if src == "in:1"]
    assert {f"eqn:{cond.path}/branches[0]/0", f"eqn:{cond.path}/branches[1]/0"} <= set(inner)
    # The predicate goes to the cond node itself (it picks the branch).
    assert any(dst == f"eqn:{cond.path}" for src, dst in graph.edges if src.startswith("eqn:"))


def test_while_constants_bind_to_the_right_sub_jaxpr() -> None:
    def loop(x, limit, scale):
        return lax.while_loop(lambda v: v.sum() < limit, lambda v: v * scale, x)

    staged = _block(loop, ((3,), "float32"), ((), "float32"), ((), "float32"))
    graph = tracing.build_graph(staged.jaxpr, expand=True, arg_names=staged.arg_names)
    cond_dsts = {dst for src, dst in graph.edges if src == "in:1"}
    body_dsts = {dst for src, dst in graph.edges if src == "in:2"}
    assert cond_dsts and all("/cond_jaxpr/" in d for d in cond_dsts)
    assert body_dsts and all("/body_jaxpr/" in d for d in body_dsts)


def test_the_graph_is_capped_with_a_message() -> None:
    def unrolled(x):
        for _ in range(200):
            x = jnp.sin(x) + 1.0
        return x

    staged = _block(unrolled, ((2,), "float32"))
    graph = tracing.build_graph(staged.jaxpr, max_nodes=50)
    assert graph.truncated and graph.nodes == 50 and graph.total == 400
    assert graph.message and "350 of 400" in graph.message and "50" in graph.message
    assert graph.dot.count('[label="sin') + graph.dot.count('[label="add') == 50
    assert '"truncated"' in graph.dot and _balanced(graph.dot)
    assert not tracing.build_graph(staged.jaxpr, max_nodes=400).truncated


def test_marked_line_and_quoting() -> None:
    block = Block(
        constvars=(),
        invars=(Atom("a", "f32[2]"),),
        outvars=(Atom("b", "f32[2]"),),
        eqns=(Eqn("0", 'odd"name\\', "", (Atom("a", "f32[2]"),), (Atom("b", "f32[2]"),), 7, ""),),
    )
    graph = tracing.build_graph(block, mark_line=7)
    assert 'label="odd\\"name\\\\\\nline 7"' in graph.dot
    assert '"#ffd54f"' in graph.dot
    assert '"#ffd54f"' not in tracing.build_graph(block, mark_line=8).dot

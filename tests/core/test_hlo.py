"""The HLO parser, on real compiled modules and on hand-written text of other XLA styles."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from jaxplay.core import hlo
from jaxplay.core.hlo import Fusion, SourceLine, entry_ops, parse_fusions


def _compiled_text(fn, *args) -> str:
    return jax.jit(fn).lower(*args).compile().as_text()


def _chain(x):
    y = jnp.sin(x)
    y = jnp.cos(y) * 2.0
    return jnp.exp(y) + 1.0


def _with_dot(x):
    y = jnp.tanh(jnp.sin(x) * 2.0)
    w = y @ y.T
    return jnp.cos(w) + 1.0


def _fusion_count_from_module(compiled) -> int:
    """Fusion instructions outside fused computations, from XLA's own module object."""
    modules = getattr(compiled.runtime_executable(), "hlo_modules", None)
    if modules is None:
        pytest.skip("this jaxlib does not expose hlo_modules()")
    module = modules()[0]
    fused: set[str] = set()
    counted = []
    for comp in module.computations():
        for ins in comp.instructions():
            if "Fusion" in str(ins.opcode):
                text = ins.to_string()
                fused.add(text.split("calls=")[1].split(",")[0].strip().lstrip("%"))
                counted.append((comp.name, ins.name))
    return sum(1 for comp, _ in counted if comp not in fused)


def test_elementwise_chain_is_one_loop_fusion_with_every_op():
    x = jnp.ones((16, 16), jnp.float32)
    fusions = parse_fusions(_compiled_text(_chain, x))
    assert len(fusions) == 1
    (f,) = fusions
    assert f.kind == "loop"
    assert f.shape == "f32[16,16]" and f.dtype == "f32" and f.dims == (16, 16)
    assert f.output_bytes == 16 * 16 * 4
    for op in ("sine", "cosine", "multiply", "exponential", "add"):
        assert op in f.ops
    assert "parameter" not in f.ops and "constant" not in f.ops
    assert f.primitives[:2] == ("sin", "cos")


def test_source_lines_point_at_this_file():
    x = jnp.ones((8,), jnp.float32)
    (f,) = parse_fusions(_compiled_text(_chain, x))
    assert f.sources, "jax attaches source locations to every op"
    assert all(Path(s.file).name == Path(__file__).name for s in f.sources)
    assert {s.function for s in f.sources} == {"_chain"}
    lines = {s.line for s in f.sources}
    first = _chain.__code__.co_firstlineno
    assert lines <= set(range(first, first + 4)) and len(lines) >= 2


@pytest.mark.parametrize("fn", [_chain, _with_dot], ids=["chain", "dot"])
def test_fusion_count_matches_the_compiled_module(fn):
    x = jnp.ones((32, 32), jnp.float32)
    compiled = jax.jit(fn).lower(x).compile()
    assert len(parse_fusions(compiled.as_text())) == _fusion_count_from_module(compiled)


def test_a_dot_breaks_the_chain_into_several_kernels():
    x = jnp.ones((32, 32), jnp.float32)
    fusions = parse_fusions(_compiled_text(_with_dot, x))
    assert len(fusions) >= 2
    with_tanh = [f for f in fusions if "tanh" in f.ops]
    with_cos = [f for f in fusions if "cosine" in f.ops]
    assert with_tanh and with_cos
    assert not set(with_tanh) & set(with_cos), "the ops before and after the dot share no kernel"


def test_unoptimized_text_has_no_fusions():
    x = jnp.ones((4,), jnp.float32)
    assert parse_fusions(jax.jit(_chain).lower(x).as_text()) == []


# Hand-written module in the older metadata style (source_file/source_line), with a tuple-output
# reduction fusion, a nested fusion and a GPU backend config.
OLD_STYLE = """\
HloModule jit_f, entry_computation_layout={(f32[4,8]{1,0})->(f32[4]{0}, f32[4]{0})}

%add_region (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add = f32[] add(f32[] %a, f32[] %b)
}

%inner_computation (p0: f32[4,8]) -> f32[4,8] {
  %p0 = f32[4,8]{1,0} parameter(0)
  ROOT %neg = f32[4,8]{1,0} negate(f32[4,8]{1,0} %p0), metadata={op_name="jit(f)/neg" source_file="/src/model.py" source_line=7}
}

%fused_reduce (param_0: f32[4,8]) -> (f32[4], f32[4]) {
  %param_0 = f32[4,8]{1,0} parameter(0)
  %inner = f32[4,8]{1,0} fusion(f32[4,8]{1,0} %param_0), kind=kLoop, calls=%inner_computation
  %exp = f32[4,8]{1,0} exponential(f32[4,8]{1,0} %inner), metadata={op_name="jit(f)/exp" source_file="/src/model.py" source_line=8}
  %zero = f32[] constant(0)
  %r1 = f32[4]{0} reduce(f32[4,8]{1,0} %exp, f32[] %zero), dimensions={1}, to_apply=%add_region
  %r2 = f32[4]{0} reduce(f32[4,8]{1,0} %inner, f32[] %zero), dimensions={1}, to_apply=%add_region
  ROOT %tuple = (f32[4]{0}, f32[4]{0}) tuple(f32[4]{0} %r1, f32[4]{0} %r2)
}

%gemm_computation (a: f32[4,8], b: f32[8,4]) -> f32[4,4] {
  %a = f32[4,8]{1,0} parameter(0)
  %b = f32[8,4]{1,0} parameter(1)
  ROOT %d = f32[4,4]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY %main (x: f32[4,8]) -> (f32[4], f32[4]) {
  %x = f32[4,8]{1,0} parameter(0)
  ROOT %reduce_fusion = (f32[4]{0}, f32[4]{0}) fusion(f32[4,8]{1,0} %x), kind=kInput, calls=%fused_reduce, metadata={op_name="jit(f)/reduce_sum" source_file="/src/model.py" source_line=9}
  %t = f32[8,4]{0,1} transpose(%x), dimensions={1,0}
  %gemm = f32[4,4]{1,0} fusion(%x, %t), kind=kCustom, calls=%gemm_computation, backend_config={"operation_queue_id":"0","fusion_backend_config":{"kind":"__triton_gemm","triton_gemm_config":{"block_m":"16"}}}
}
"""  # noqa: E501


def test_older_metadata_style_tuple_outputs_and_nesting():
    fusions = parse_fusions(OLD_STYLE)
    assert [f.name for f in fusions] == ["reduce_fusion", "gemm"]
    red, gemm = fusions
    assert red.kind == "input" and red.computation == "fused_reduce" and red.parent == "main"
    assert red.outputs == (("f32", (4,)), ("f32", (4,)))
    assert red.dtype == "f32" and red.output_bytes == 32
    assert red.ops == ("negate", "exponential", "reduce", "reduce", "tuple")
    assert red.operands == ("x",)
    assert red.sources == (
        SourceLine("/src/model.py", 9),
        SourceLine("/src/model.py", 7),
        SourceLine("/src/model.py", 8),
    )
    assert str(red.sources[0]) == "model.py:9"
    assert gemm.kind == "custom" and gemm.backend_kind == "__triton_gemm"
    assert gemm.ops == ("dot",) and gemm.operands == ("x", "t") and gemm.sources == ()


def test_entry_ops_leave_out_fused_bodies_and_reducers():
    names = [op.name for op in entry_ops(OLD_STYLE)]
    assert names == ["x", "reduce_fusion", "t", "gemm"]


def test_stack_frame_tables_resolve_function_names():
    text = """\
HloModule m

FileNames
1 "/home/u/app.py"

FunctionNames
1 "layer"

FileLocations
1 {file_name_id=1 function_name_id=1 line=42 end_line=42 column=4 end_column=9}

StackFrames
1 {file_location_id=1 parent_frame_id=1}

%fc (p: bf16[2,3]) -> bf16[2,3] {
  %p = bf16[2,3]{1,0:T(8,128)} parameter(0)
  ROOT %s = bf16[2,3]{1,0:T(8,128)} sine(%p), metadata={op_name="jit(g)/sin" stack_frame_id=1}
}

ENTRY %main (x: bf16[2,3]) -> bf16[2,3] {
  %x = bf16[2,3]{1,0} parameter(0)
  ROOT %f = bf16[2,3]{1,0:T(8,128)} fusion(%x), kind=kLoop, calls=%fc
}
"""
    (f,) = parse_fusions(text)
    assert f.shape == "bf16[2,3]" and f.output_bytes == 12
    assert f.sources == (SourceLine("/home/u/app.py", 42, "layer"),)
    assert str(f.sources[0]) == "app.py:42 (layer)"
    assert f.instructions[-1].primitive == "sin"


def test_fusion_is_frozen_and_hashable():
    (f,) = parse_fusions(OLD_STYLE)[:1]
    assert isinstance(f, Fusion)
    with pytest.raises(AttributeError):
        f.name = "other"  # type: ignore[misc]
    assert hash(f) == hash(parse_fusions(OLD_STYLE)[0])
    assert hlo.KINDS["kOutput"] == "output"

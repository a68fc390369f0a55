"""Staging: the texts of every stage, their structured views, and the source line of each line."""

from __future__ import annotations

import inspect
import json
import re
from typing import Any

import jax
import jax.numpy as jnp
import pytest

from jaxplay import tracing
from jaxplay.core import codec, hlo
from jaxplay.tracing import (
    _display,
    _inputs,
    _jaxpr_tree,
    _locations,
    _presets,
    _sandboxed,
    _variants,
)


def _stage(key: str) -> tracing.Staged:
    preset = tracing.find_preset(key)
    specs = [tracing.InputSpec(s, d) for s, d in preset.args]
    return tracing.stage(preset.fn, specs, source=tracing.preset_ref(preset))


def _line_of(fn, snippet: str) -> int:
    """The file line number of the line of ``fn``'s source that contains ``snippet``."""
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, line in enumerate(lines) if snippet in line]
    assert len(hits) == 1, (snippet, hits)
    return hits[0]


@pytest.fixture(scope="module")
def staged_presets() -> dict[str, tracing.Staged]:
    return {p.key: _stage(p.key) for p in tracing.PRESETS}


# --- inputs --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shape"), [("4, 8", (4, 8)), ("(4,8)", (4, 8)), ("3", (3,)), ("()", ()), ("", ())]
)
def test_parse_shape(text: str, shape: tuple[int, ...]) -> None:
    assert tracing.parse_shape(text) == shape


def test_parse_shape_refuses_bad_and_huge_shapes_naming_the_limit() -> None:
    with pytest.raises(ValueError, match="'x' is not a size"):
        tracing.parse_shape("4, x")
    # A digit to str.isdigit but not to int() (Python's own message before), and more digits
    # than int() reads.
    with pytest.raises(ValueError, match="'²' is not a size"):
        tracing.parse_shape("2, ²")
    with pytest.raises(ValueError, match="is not a size"):
        tracing.parse_shape("9" * 5_000)
    assert tracing.parse_shape("２, 3") == (2, 3)  # full-width digits are Python's digits
    with pytest.raises(ValueError, match=f"limit of {_inputs.MAX_ELEMENTS:,} elements"):
        tracing.parse_shape("100000, 100000")
    with pytest.raises(ValueError, match=f"limit of {_inputs.MAX_RANK} dimensions"):
        tracing.parse_shape("1,1,1,1,1,1,1")


# --- structured views match the text -------------------------------------------------------------


@pytest.mark.parametrize("key", [p.key for p in tracing.PRESETS])
def test_equation_rows_match_the_jaxpr_text(staged_presets, key: str) -> None:
    """One row per equation printed (sub-jaxprs included), in order, with the printed types."""
    staged = staged_presets[key]
    binders = re.findall(r"(\S+:\S+) = \S", staged.jaxpr_text)
    rows = staged.equations
    assert len(rows) == len(binders) > 0
    assert [b.split(":", 1)[1] for b in binders] == [r.outputs.split(", ")[-1] for r in rows]
    assert len(staged.jaxpr_lines) == len(staged.jaxpr_text.splitlines())
    assert len(staged.stablehlo_lines) == len(staged.stablehlo_text.splitlines())
    assert len(staged.hlo_lines) == len(staged.hlo_text.splitlines())


def test_seed_rows_shapes_and_primitives(staged_presets) -> None:
    """Staged as the article calls it (y a Python float, weakly typed): y is converted first."""
    rows = staged_presets["seed"].equations
    assert [r.primitive for r in rows] == ["convert_element_type", "mul", "add"]
    assert "weak_type=False" in rows[0].params
    assert rows[1].inputs == "f32[3], f32[]"
    assert rows[1].outputs == "f32[3]"
    assert rows[2].inputs == "f32[3], 1.0:f32[]"
    assert staged_presets["seed"].arg_names == ("x", "y")
    article_way = jax.make_jaxpr(tracing.simple_function)(jnp.ones(3), 2.0)
    assert [e.primitive.name for e in article_way.jaxpr.eqns] == [r.primitive for r in rows]


def test_sub_jaxprs_are_nested_rows(staged_presets) -> None:
    rows = staged_presets["while"].equations
    assert rows[0].primitive == "while" and rows[0].depth == 0
    inner = [r for r in rows if r.depth == 1]
    assert {r.path.split("/")[1] for r in inner} == {"body_jaxpr", "cond_jaxpr"}
    assert len(rows) == 1 + len(inner)


def test_control_flow_presets_hold_their_bodies_as_sub_jaxprs(staged_presets) -> None:
    """What the presets' blurbs promise: one equation holding the branches, body or call."""
    top = {k: [r.primitive for r in s.equations if r.depth == 0] for k, s in staged_presets.items()}
    assert top["cond"].count("cond") == 1
    assert top["scan"].count("scan") == 1
    assert top["custom_vjp"].count("custom_vjp_call") == 1
    branches = {r.path.split("/")[1] for r in staged_presets["cond"].equations if r.depth == 1}
    assert branches == {"branches[0]", "branches[1]"}


def test_fusions_match_the_compiled_module(staged_presets) -> None:
    staged = staged_presets["seed"]
    assert len(staged.fusions) == 1
    assert {"multiply", "add"} <= set(staged.fusions[0].ops)
    softmax = staged_presets["softmax"]
    assert len(softmax.fusions) == len(hlo.parse_fusions(softmax.hlo_text)) >= 2
    assert any("exponential" in f.ops for f in softmax.fusions)


@pytest.mark.parametrize("shape,several", [((4, 8), True), ((2, 3, 5), True), ((4, 1), False)])
def test_the_softmax_blurb_says_when_reductions_split_the_work(shape, several) -> None:
    """The preset's note: several fusions, except with a last axis of size 1 (XLA drops the
    reductions there and one fusion is left)."""
    preset = tracing.find_preset("softmax")
    specs = [tracing.InputSpec(shape, "float32")]
    staged = tracing.stage(preset.fn, specs, source=tracing.preset_ref(preset))
    assert (len(staged.fusions) > 1) is several, [f.ops for f in staged.fusions]


# --- source lines --------------------------------------------------------------------------------


def test_seed_source_lines_in_every_stage(staged_presets) -> None:
    staged = staged_presets["seed"]
    mul = _line_of(tracing.simple_function, "z = x * y")
    add = _line_of(tracing.simple_function, "return z + 1")
    assert [r.source_line for r in staged.equations] == [mul, mul, add]
    assert {n for n in staged.jaxpr_lines if n} == {mul, add}
    shlo = staged.stablehlo_text.splitlines()
    assert {staged.stablehlo_lines[i] for i, t in enumerate(shlo) if "stablehlo.multiply" in t} == {
        mul
    }
    assert {staged.stablehlo_lines[i] for i, t in enumerate(shlo) if "stablehlo.add" in t} == {add}
    hlo = staged.hlo_text.splitlines()
    assert {staged.hlo_lines[i] for i, t in enumerate(hlo) if " multiply(" in t} == {mul}
    assert {staged.hlo_lines[i] for i, t in enumerate(hlo) if " add(" in t} == {add}


def test_softmax_exp_comes_from_its_line(staged_presets) -> None:
    staged = staged_presets["softmax"]
    exp_line = _line_of(_presets.softmax, "jnp.exp(shifted)")
    assert [r.primitive for r in staged.equations if r.source_line == exp_line] == ["exp"]
    shlo = staged.stablehlo_text.splitlines()
    exp_ops = [i for i, t in enumerate(shlo) if "stablehlo.exponential" in t]
    assert exp_ops and all(staged.stablehlo_lines[i] == exp_line for i in exp_ops)
    fused = [f for f in staged.fusions if "exponential" in f.ops]
    assert exp_line in fused[0].source_lines


def test_sub_jaxpr_equations_map_to_the_lambda_lines(staged_presets) -> None:
    rows = staged_presets["cond"].equations
    sin_line = _line_of(_presets.cond_example, "jnp.sin(v)")
    cos_line = _line_of(_presets.cond_example, "jnp.cos(v)")
    assert {r.source_line for r in rows if r.primitive == "sin"} == {sin_line}
    assert {r.source_line for r in rows if r.primitive == "cos"} == {cos_line}


def test_a_function_in_any_file_maps_to_its_lines() -> None:
    def local(x):
        y = jnp.sin(x)
        return y * 3.0

    lines, start = inspect.getsourcelines(local)
    ref = _jaxpr_tree.SourceRef(inspect.getsourcefile(local), start, start + len(lines) - 1)
    staged = tracing.stage(local, [tracing.InputSpec((4,), "float32")], source=ref)
    assert [r.source_line for r in staged.equations] == [start + 1, start + 2]
    # Outside the shown span, nothing maps.
    other = _jaxpr_tree.SourceRef(ref.file, 1, start - 1)
    staged = tracing.stage(local, [tracing.InputSpec((4,), "float32")], source=other)
    assert not any(n for n in (*staged.jaxpr_lines, *staged.stablehlo_lines, *staged.hlo_lines))


def test_the_callers_stack_is_not_recorded() -> None:
    """Staging from deep inside a web server must not list the server's frames in the texts."""
    staged = _stage("seed")
    preset = tracing.find_preset("softmax")  # not scalar: grad(f) sums it in _variants.py
    summed = tracing.stage_variant(
        preset.fn,
        [tracing.InputSpec((4, 8), "float32")],
        "grad(f)",
        source=tracing.preset_ref(preset),
    ).staged
    for caller in (__file__, *(f"{name}.py" for name in ("_staging", "_variants", "_inputs"))):
        for texts in (staged, summed):
            assert caller not in texts.stablehlo_text
            assert caller not in texts.hlo_text


def test_stablehlo_location_chains_resolve_to_the_innermost_file_location() -> None:
    text = "\n".join(
        [
            "module @m {",
            "  %0 = stablehlo.sine %arg0 : tensor<3xf32> loc(#loc6)",
            "  %1 = stablehlo.cosine %0 : tensor<3xf32> loc(#loc7)",
            "  %2 = stablehlo.add %0, %1 : tensor<3xf32> loc(unknown)",
            "}",
            '#loc1 = loc("/src/a.py":12:4 to :10)',
            '#loc2 = loc("/src/a.py":20:1 to :9)',
            '#loc3 = loc("/src/b.py":3:1)',
            '#loc4 = loc("f"(#loc1))',
            "#loc5 = loc(callsite(#loc4 at #loc2))",
            '#loc6 = loc("jit(f)/sin"(#loc5))',
            '#loc7 = loc("jit(f)/cos"(#loc3))',
        ]
    )
    out = _locations.stablehlo_line_sources(text, _jaxpr_tree.SourceRef("/src/a.py", 1, 30))
    assert out == (None, 12, None, None, None, None, None, None, None, None, None, None)


# --- through the codec ---------------------------------------------------------------------------


def _through_json(value: Any, returns: Any) -> Any:
    """``value`` as a worker sends it and the server decodes it."""
    data = json.loads(json.dumps(codec.encode(value)))
    return codec.decode(data, codec.dataclass_types(returns))


def test_staged_round_trips_through_the_codec(staged_presets) -> None:
    for staged in staged_presets.values():
        assert _through_json(staged, tracing.Staged).capped() == staged


def test_malformed_data_is_refused() -> None:
    data = codec.encode(_stage("seed"))
    del data["jaxpr"]
    with pytest.raises(ValueError, match="fields do not match"):
        codec.decode(data, codec.dataclass_types(tracing.Staged))
    data = codec.encode(_stage("seed"))
    data["jaxpr_lines"] = {"__tuple__": ["one"]}
    with pytest.raises(ValueError, match="jaxpr_lines"):
        codec.decode(data, codec.dataclass_types(tracing.Staged))


# --- variants and diffs --------------------------------------------------------------------------


def test_variants() -> None:
    preset = tracing.find_preset("softmax")
    specs = [tracing.InputSpec(s, d) for s, d in preset.args]
    grad = tracing.stage_variant(preset.fn, specs, "grad(f)")
    assert grad.staged is not None and "not one scalar" in grad.note
    vmap = tracing.stage_variant(preset.fn, specs, "vmap(f)")
    assert vmap.staged.jaxpr.invars[0].type == f"f32[{_variants.VMAP_BATCH},4,8]"
    jitted = tracing.stage_variant(preset.fn, specs, "jit(f)")
    assert [e.primitive for e in jitted.staged.jaxpr.eqns] in (["jit"], ["pjit"])
    ints = tracing.stage_variant(preset.fn, [tracing.InputSpec((4, 8), "int32")], "grad(f)")
    assert ints.staged is None and ints.error.startswith("TypeError")


def test_unified_diff_is_exact() -> None:
    a = "one\ntwo\nthree"
    b = "one\n2\nthree\nfour"
    assert tracing.unified_diff(a, b, "a", "b") == "\n".join(
        ["--- a", "+++ b", "@@ -1,3 +1,4 @@", " one", "-two", "+2", " three", "+four"]
    )
    assert tracing.unified_diff(a, a, "a", "b") == ""


def test_side_by_side_rows() -> None:
    rows = tracing.side_by_side("one\ntwo\nthree", "one\n2\nthree\nfour")
    assert [(r.tag, r.left_no, r.left, r.right_no, r.right) for r in rows] == [
        ("equal", 1, "one", 1, "one"),
        ("replace", 2, "two", 2, "2"),
        ("equal", 3, "three", 3, "three"),
        ("insert", None, "", 4, "four"),
    ]
    html = tracing.diff_html(rows)
    assert html.count("<tr") == 4


def test_without_locations_strips_every_kind() -> None:
    text = "\n".join(
        [
            "    b:f32[3] = sin a                # file.py:3:4 (f)",
            "    %0 = stablehlo.sine %arg0 : tensor<3xf32> loc(#loc3)",
            '#loc3 = loc("file.py":3:4)',
            '  %s = f32[3]{0} sine(%p), metadata={op_name="jit(f)/sin" stack_frame_id=1}',
        ]
    )
    assert tracing.without_locations(text).splitlines() == [
        "    b:f32[3] = sin a",
        "    %0 = stablehlo.sine %arg0 : tensor<3xf32>",
        "  %s = f32[3]{0} sine(%p)",
    ]


# --- display -------------------------------------------------------------------------------------


def test_pane_html_marks_the_selected_lines_and_escapes() -> None:
    text = "a <script>alert(1)</script>\nb\nc"
    sources = (5, None, 5)
    html = tracing.pane_html(text, sources, 5)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert html.count(_display.HIGHLIGHT) == tracing.highlighted(sources, 5) == 2
    only = tracing.pane_html(text, sources, 5, only_marked=True)
    assert ">b<" not in only and "⋯" in only
    assert _display.HIGHLIGHT not in tracing.pane_html(text, sources, None)
    capped = tracing.pane_html(text, sources, 5, max_lines=1)
    assert capped.count(_display.HIGHLIGHT) == 1 and "2 more lines not shown" in capped
    one_over = tracing.pane_html(text, sources, 5, max_lines=2)
    assert "1 more line not shown" in one_over  # not "1 more lines"


# --- the sandbox path ----------------------------------------------------------------------------


def test_inspect_stages_returns_every_variant() -> None:
    """What the worker runs: the function's own file is the shown source."""

    def visitor(x):
        return jnp.sum(jnp.tanh(x) ** 2)

    staged = _sandboxed.inspect_stages(visitor, (jnp.ones(3),))
    variants = _through_json(staged, _sandboxed.StagedVariants).variants
    assert [v.name for v in variants] == list(tracing.VARIANTS)
    assert all(v.staged is not None for v in variants)
    line = _line_of(visitor, "jnp.tanh")
    assert line in [r.source_line for r in variants[0].staged.equations]


def test_sandbox_stages_a_visitors_function() -> None:
    source = "import jax.numpy as jnp\n\ndef f(x):\n    y = jnp.sin(x)\n    return y * 2\n"
    result = tracing.sandbox_stages(source, "f", [tracing.InputSpec((3,), "float32")])
    assert result.error is None
    main = result.variant("f")
    assert [r.source_line for r in main.staged.equations] == [4, 5]
    assert "<code-lab>" in main.staged.jaxpr_text
    missing = tracing.sandbox_stages(source, "g", [])
    assert missing.error and "no function named 'g'" in missing.error


def test_the_jaxpr_story_names_what_was_converted_and_why() -> None:
    preset = tracing.find_preset("seed")
    ints = [tracing.InputSpec((3,), "int32"), tracing.InputSpec((), "float32")]
    story = tracing.jaxpr_story(tracing.stage(preset.fn, ints), ints, preset.arg_names)
    assert story.startswith("The jaxpr has 3 equations at the top level: `convert_element_type`")
    assert "`x` (int32) is converted to float32 first" in story
    plain = [tracing.InputSpec((3,), "float32"), tracing.InputSpec((), "float32")]
    story = tracing.jaxpr_story(tracing.stage(preset.fn, plain), plain, preset.arg_names)
    assert story == "The jaxpr has 2 equations at the top level: `mul`, `add`."
    same = tracing.stage(lambda x, y: x, plain)  # nothing computed: ": ." before
    said = tracing.jaxpr_story(same, plain, ("x", "y"))
    assert said == "The jaxpr has no equation: its outputs are its inputs or constants."


def test_pane_lines_wrap_inside_the_pane_rather_than_run_off_its_edge() -> None:
    html = tracing.pane_html("x" * 300 + "\nshort", (None, None), None)
    assert html.count("white-space:pre-wrap") == 2 and "overflow-wrap:anywhere" in html

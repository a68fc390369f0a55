"""A visitor's code cannot forge the Tracing page's stages, nor freeze the server with their texts.

The stages of a Code Lab function come from a worker that ran the visitor's code. It used to
resolve its inspector by name after that code ran (so the code could swap it for a forger), and
the server then ran a quadratic regex and a cubic diff on whatever came back: 100,000 spaces
froze the server for everyone for minutes. Each test here fails (or hangs) with its guard taken
out: the inspectors bound before the user's code runs, the server's re-caps on decoding, the
linear patterns of ``without_locations`` and the bounded diff.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from jaxplay import sandbox, tracing
from jaxplay.core import codec
from jaxplay.sandbox import InspectionFailed, JaxprText
from jaxplay.sandbox import _inspectors as inspectors
from jaxplay.sandbox._results import RunResult
from jaxplay.tracing import _display, _sandboxed, _staging
from jaxplay.tracing._jaxpr_tree import Block, Eqn
from jaxplay.tracing._staging import Staged

#: The equation cap while these tests run (the real one, 20,000, only makes them slower).
EQUATIONS = 1_000
#: Generous: every view below takes well under a second; without its guard, minutes.
BOUND_S = 5.0

FORGER = """
import dataclasses
import jaxplay.tracing._sandboxed as sandboxed
import jax.numpy as jnp

def f(x):
    return jnp.sin(x) * 2

def forged(fn, args):
    real = original(fn, args)
    text = "FORGED" + " " * 100_000
    return dataclasses.replace(real, variants=tuple(
        dataclasses.replace(v, staged=dataclasses.replace(v.staged, jaxpr_text=text))
        if v.staged else v
        for v in real.variants
    ))

original = sandboxed.inspect_stages
sandboxed.inspect_stages = forged
"""


def test_user_code_cannot_swap_the_stages_inspector() -> None:
    result = tracing.sandbox_stages(FORGER, "f", [tracing.InputSpec((3,), "float32")])
    assert result.error is None
    text = result.variant("f").staged.jaxpr_text
    assert "FORGED" not in text
    assert "sin" in text


#: Patches what the bound inspector calls in turn (its own module's helpers): the result's
#: content is then the visitor's to choose; what the server must hold is its size and cost.
DEEP_FORGER = """
import dataclasses
import jaxplay.tracing._sandboxed as sandboxed
import jax.numpy as jnp

def f(x):
    return jnp.sin(x) * 2

def cut(staged):
    return dataclasses.replace(staged, jaxpr_text="FORGED" + " \\n" * 120_000)

sandboxed._cut = cut
"""


def test_a_forged_helper_gets_the_visitor_their_own_text_within_the_servers_caps() -> None:
    """Binding the inspector before the visitor's code runs keeps it from being swapped, but
    the helpers it calls live in the same process: the result's content is the visitor's to
    forge (shown to them as the output of their own code, escaped). Its size is not: the server
    caps every text and line again after decoding, and the views stay fast."""
    result = tracing.sandbox_stages(DEEP_FORGER, "f", [tracing.InputSpec((3,), "float32")])
    assert result.error is None, result.error
    text = result.variant("f").staged.jaxpr_text
    assert text.startswith("FORGED")  # the visitor's own text, for their own code
    assert len(text) <= _sandboxed.MAX_SANDBOX_TEXT + 200
    started = time.perf_counter()
    tracing.unified_diff(tracing.without_locations(text), text[::-1], "a", "b")
    assert time.perf_counter() - started < BOUND_S


def _forged_staged(text: str, big: bool) -> Staged:
    """What a forging worker could send: real structure, hostile texts (and, if ``big``, lists)."""
    eqn = Eqn("0", "p" * 10_000, "q" * 100_000, (), (), 1, "")
    many = 2 * EQUATIONS if big else 1
    lines = (1,) * (30_000 if big else 1)
    return Staged(
        jaxpr_text=text,
        stablehlo_text=text,
        hlo_text=text,
        jaxpr=Block((), (), (), (eqn,) * many),
        arg_names=("x" * 10_000,) * (1_000 if big else 1),
        jaxpr_lines=lines,
        stablehlo_lines=lines,
        hlo_lines=lines,
        fusions=(),
        notes=("n" * 100_000,) * (100 if big else 1),
    )


#: Against two alternating lines: difflib's matcher is cubic here (1,000 lines took 35 s).
ONE_LINE_REPEATED = "\n".join(["x"] * 3_000)
ADVERSARIAL = {
    "100k spaces": " " * 100_000,
    "100k spaces before a loc": " " * 100_000 + "x",
    "spaces and hashes": " #" * 50_000,
    "a 1 MB line": "x" * 1_000_000,
    "100k lines": "\n".join(f"line {i}" for i in range(100_000)),
    "one repeated line": "\n".join(["x"] * 5_000),
    "two repeated lines": "\n".join(["x", "y"] * 2_500),
}


def _forged_result(text: str) -> Callable[..., RunResult]:
    def run_code(source: str, **kwargs: Any) -> RunResult:
        variants = [
            tracing.Variant(n, "", _forged_staged(text, n == "f"), None) for n in tracing.VARIANTS
        ]
        extra = [tracing.Variant("f", "", None, "e")] * 10_000
        raw = {"stages": codec.encode(_sandboxed.StagedVariants(tuple(variants + extra)))}
        return RunResult(ok=True, inspections=inspectors.decode(raw, ("stages",)))

    return run_code


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_a_forged_inspection_is_recapped_and_shown_in_bounded_time(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the page's own path: the sandbox's result decoded, every view drawn."""
    monkeypatch.setattr(_staging, "MAX_EQUATIONS", EQUATIONS)
    monkeypatch.setattr(sandbox, "run_code", _forged_result(ADVERSARIAL[name]))
    start = time.perf_counter()
    result = tracing.sandbox_stages("def f(x): return x", "f", [tracing.InputSpec((3,), "float32")])
    assert result.error is None
    assert len(result.variants) == len(tracing.VARIANTS)
    staged = result.variant("f").staged
    for label, attr in tracing.STAGES:
        text = getattr(staged, attr)
        lines = text.splitlines()
        assert len(text) <= _staging.MAX_TEXT + len(lines)
        assert len(lines) <= _staging.MAX_TEXT_LINES
        assert all(len(line) <= _staging.MAX_LINE_CHARS + 1 for line in lines)
        assert len(staged.lines_of(label)) <= max(len(lines), 1)
    assert len(staged.jaxpr.eqns) <= EQUATIONS
    assert all(len(e.params) <= 4_001 for e in staged.jaxpr.eqns)
    assert all(len(n) <= 201 for n in staged.arg_names)
    assert len(staged.notes) <= 32 + len(tracing.STAGES)
    other = result.variant("grad(f)").staged
    for _, attr in tracing.STAGES:
        left, right = getattr(staged, attr), getattr(other, attr) + "\nchanged"
        tracing.pane_html(left, staged.jaxpr_lines, 1)
        plain = [tracing.without_locations(t) for t in (left, right)]
        tracing.side_by_side(*plain)
        tracing.unified_diff(*plain, "a", "b")
    assert time.perf_counter() - start < BOUND_S * 4


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_the_views_are_bounded_on_adversarial_texts(name: str) -> None:
    """Straight into the views, without the decoder's caps: the patterns and diff themselves."""
    text = ADVERSARIAL[name]
    for view in (
        lambda: tracing.without_locations(text),
        lambda: tracing.without_locations(text[:200_000].replace("x", "loc(")),
        lambda: tracing.side_by_side(text, text[::-1]),
        lambda: tracing.side_by_side(ONE_LINE_REPEATED, text),
        lambda: tracing.unified_diff(text, text + "\nz", "a", "b"),
    ):
        start = time.perf_counter()
        view()
        assert time.perf_counter() - start < BOUND_S


def test_without_locations_still_strips_what_it_did() -> None:
    assert tracing.without_locations("  a = sin b   # f.py:3 (f)") == "  a = sin b"
    assert tracing.without_locations("a #b # c") == "a #b"
    assert tracing.without_locations("%0 = sine %a  loc(#loc3) : x") == "%0 = sine %a : x"
    assert tracing.without_locations("x = 1 #not a comment") == "x = 1 #not a comment"


def test_a_cut_diff_says_so() -> None:
    long = "\n".join(str(i) for i in range(_display.MAX_DIFF_LINES + 10))
    assert tracing.diff(long, long).notes
    assert not tracing.diff("a\nb", "a\nc").notes
    repetitive = tracing.diff("\n".join(["x"] * 3000), "\n".join(["x", "y"] * 1500))
    assert any("repetitive" in n for n in repetitive.notes)
    assert repetitive.opcodes[0] == ("equal", 0, 1, 0, 1)


def test_inspections_are_decoded_by_type_and_bounded() -> None:
    raw = {"jaxpr": codec.encode(JaxprText("j" * 2_000_000)), "x": 1}
    got = inspectors.decode(raw, ("jaxpr", "x"))
    assert set(got) == {"jaxpr"}
    assert len(got["jaxpr"].text) <= codec.MAX_TEXT + 1
    deep: Any = 0
    for _ in range(500):
        deep = [deep]
    nested = inspectors.decode({"jaxpr": {"__dataclass__": "JaxprText", "text": deep}}, ("jaxpr",))
    assert isinstance(nested["jaxpr"], InspectionFailed)


def test_the_recompilation_labs_rows_are_checked_before_parsing() -> None:
    """The lab's table is a data editor: its rows arrive as the client's JSON, whatever the
    column types say. Too many rows, a long cell, a dtype or static value the lab does not
    offer: each refused with its reason, before any parse or compile."""
    good = [("4, 8", "float32", "True"), ("3", "int32", "[1, 2] (a list)")]
    calls = tracing.lab_calls(good)
    assert [c.shape for c in calls] == [(4, 8), (3,)]
    assert tracing.lab_calls([(None, None, None)]) == (tracing.LabCall((), "float32", "True"),)
    refused = {
        "over the limit": [("3", "float32", "True")] * (tracing.MAX_LAB_CALLS + 1),
        "characters long": [("1, " * 100_000, "float32", "True")],
        "x dtype is one of": [("3", "complex1024", "True")],
        "use_tanh is one of": [("3", "float32", "__import__('os')")],
        "not a size": [("3, x", "float32", "True")],
        "recompiling, not size": [("2048, 2048", "float32", "True")],
    }
    for words, rows in refused.items():
        with pytest.raises(ValueError, match=words):
            tracing.lab_calls(rows)


def test_a_forged_primitive_name_is_no_link_in_the_story() -> None:
    """A Code Lab run can rewrite the worker's staging: a primitive named with a backtick and a
    link closed the story's code span, and the link (or a tracking image) went live."""
    import dataclasses

    staged = tracing.stage(lambda x: x * 2.0, [tracing.InputSpec((3,), "float32")])
    forged = "sin` [**sign in again**](http://127.0.0.1:9/login) ![t](http://127.0.0.1:9/t.png) `x"
    eqns = tuple(dataclasses.replace(e, primitive=forged) for e in staged.jaxpr.eqns)
    staged = dataclasses.replace(staged, jaxpr=dataclasses.replace(staged.jaxpr, eqns=eqns))
    specs = [tracing.InputSpec((3,), "float32")]
    shown = _staging.jaxpr_story(staged, specs, ["x"])
    assert "`` sin` [**sign in again**]" in shown  # one code span its backticks cannot close
    capped = _staging.jaxpr_story(staged.capped(), specs, ["x"])
    assert "http" not in capped and "`?`" in capped


def test_a_stages_result_of_a_million_values_is_refused_before_it_is_read() -> None:
    """The ``stages`` inspector took 1,000,000 values: a forged result (990,000 empty argument
    names) held the server's interpreter 1 to 1.9 s a run. It is refused at its bound now, and a
    real 200-step chain (about 150,000 values) still fits."""
    import jax.numpy as jnp

    from jaxplay.core import codec
    from jaxplay.sandbox import _inspectors
    from jaxplay.tracing import _sandboxed

    real = codec.encode(_sandboxed.inspect_stages(lambda x: x + 1, (jnp.ones(3),)))
    staged = real["variants"]["__tuple__"][0]["staged"]
    staged["arg_names"] = {"__tuple__": [""] * 990_000}
    forged = {"stages": real}
    start = time.process_time()
    got = _inspectors.decode(forged, ["stages"])["stages"]
    assert isinstance(got, sandbox.InspectionFailed) and "more than 200,000 values" in got.error
    assert time.process_time() - start < 2.0  # a loose guard: the refusal comes early
    assert _inspectors.STAGES_VALUES >= 150_000  # room for the legitimate large programs

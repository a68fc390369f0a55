"""Every text a visitor types reaches the server capped: boxes, the editor, the PartitionSpec.

A browser's ``max_chars`` binds only the browser: a client sends a widget's or a component's
value of any size (a 4 MB editor value cost 2 GB in ``ast.parse`` on every rerun; a 500 kB
PartitionSpec, a minute of the quadratic tokenizer). Each test fails with its guard taken out.
"""

from __future__ import annotations

from pages import _editor

import re
import time
from typing import Any

import pytest

from jaxplay import devices, sandbox, tracing
from jaxplay.devices import _sharding
from jaxplay.hosting import catalog
from jaxplay.hosting.hostile_links import EDITOR_CODE, SPEC_500K
from tests.support.apptest import assert_clean, open_page

PAGES = catalog.ROOT / "pages"
#: Widgets that take free text, and the helpers that cap them (the only places they may appear).
TEXT_WIDGETS = re.compile(r"\.(text_input|text_area|chat_input)\(")
CAPPING = {"_ui.py", "_editor.py"}


def test_every_text_widget_goes_through_the_cap() -> None:
    offenders = [
        f"{path.name}:{n}"
        for path in sorted(PAGES.glob("*.py"))
        if path.name not in CAPPING
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if TEXT_WIDGETS.search(line)
    ]
    assert not offenders, f"text widgets outside _ui.text_box: {offenders}"
    boxes = sum(p.read_text(encoding="utf-8").count("_ui.text_box(") for p in PAGES.glob("*.py"))
    assert boxes >= 10
    ui = (PAGES / "_ui.py").read_text(encoding="utf-8")
    assert ui.count(".text_input(") == 1 and "capped(text, max_chars" in ui


def test_a_long_box_value_is_cut_with_a_message() -> None:
    spec = catalog.find("grad")
    at = open_page(spec, grad_preset="type a formula", grad_formula="x + " * 100_000)
    assert_clean(at)
    assert any("only the first 1,000 are used" in w.value for w in at.warning)


@pytest.mark.timeout(120)
def test_a_4mb_editor_value_is_cut_before_the_page_parses_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed: list[int] = []
    real = sandbox.defined_functions
    monkeypatch.setattr(sandbox, "defined_functions", lambda s: parsed.append(len(s)) or real(s))
    at = open_page(catalog.find("code-lab"), code_lab_source=EDITOR_CODE)
    assert_clean(at)
    assert parsed and max(parsed) <= sandbox.MAX_SOURCE_CHARS
    assert at.session_state["code_lab_source"] == EDITOR_CODE[: sandbox.MAX_SOURCE_CHARS]
    assert any("only the first 100,000 are used" in w.value for w in at.warning)


def test_the_editor_cuts_what_it_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a component's value enters: the callback, before any page code sees the text."""
    state: dict[str, Any] = {"ed": {"value": EDITOR_CODE}}
    monkeypatch.setattr(_editor.st, "session_state", state)
    got: list[str] = []
    _editor._reported("ed", got.append, "value")
    assert got == [EDITOR_CODE[: sandbox.MAX_SOURCE_CHARS]]
    assert state["_ed_cut"] == len(EDITOR_CODE)
    state["ed"] = {"value": "x = 1\n"}
    _editor._reported("ed", got.append, "value")
    assert got[-1] == "x = 1\n" and "_ed_cut" not in state


@pytest.mark.timeout(60)
def test_a_500kb_partition_spec_is_refused_at_once() -> None:
    start = time.perf_counter()
    with pytest.raises(devices.ShardingProblem, match="at most 200"):
        devices.parse_spec(SPEC_500K)
    assert time.perf_counter() - start < 1.0


@pytest.mark.timeout(180)
def test_the_spec_tokenizer_is_linear() -> None:
    """Without the length cap: 2 MB of tokens in one pass, ~5 s on a loaded machine (the old
    tokenizer copied the rest of the text per token: ~60 s)."""
    spec = "P(" + "'x', " * 400_000 + ")"
    start = time.perf_counter()
    tokens = _sharding._tokens(spec)
    assert len(tokens) > 800_000
    assert time.perf_counter() - start < 20.0
    assert _sharding._tokens("  P('x' ,  None)  ")[-1] == (")", ")", 16)
    with pytest.raises(devices.ShardingProblem) as err:
        _sharding._tokens("P(x,   !)")
    assert err.value.col == 8


@pytest.mark.parametrize(
    "edits",
    [
        {"edited_rows": {99: {"x shape": "3"}}},  # a row the table has not
        {"edited_rows": {0: {"no such column": "3"}}},
        {"deleted_rows": [40]},
        {"added_rows": [5]},  # a number where a row belongs
        {"added_rows": 5},
    ],
)
def test_table_edits_streamlit_cannot_apply_are_dropped_with_a_message(edits: dict) -> None:
    """A browser sends only rows and columns the table has; a scripted client's others raised in
    Streamlit's own code (an error page for that visitor, the page's state lost)."""
    at = open_page(
        catalog.find("tracing"), tracing_tab="Recompilation", tracing_calls_article=edits
    )
    assert_clean(at)
    assert any("could not be read" in w.value for w in at.warning)
    assert {m.label: m.value for m in at.metric}["Compilations"] == "2"


def test_a_500kb_partition_spec_link_on_the_page() -> None:
    at = open_page(catalog.find("devices"), devices_tab="Sharding", devices_spec=SPEC_500K)
    assert_clean(at)
    texts = " ".join(e.value for e in [*at.warning, *at.error])
    assert "only the first 1,000 are used" in texts


def test_every_data_editor_bounds_its_edits() -> None:
    """A data editor's edits are the browser's JSON, applied by Streamlit row by row: every
    table editor is ``_ui.table_editor``, which drops edits over bounds or malformed."""
    calls = [
        (path.name, source.count("data_editor("), source.count("_ui.table_editor("))
        for path in sorted(PAGES.glob("*.py"))
        if path.name != "_ui.py"
        for source in [path.read_text(encoding="utf-8")]
    ]
    assert [name for name, editors, _ in calls if editors] == []
    assert sum(keyed for _, _, keyed in calls) >= 1


#: Code too deeply nested for Python's parser: RecursionError or MemoryError in ``ast.parse``.
DEEP_CODE = ("x = " + "1+" * 30_000 + "1", "-" * 3_000 + "1", "y = " + "2**" * 3_000 + "2")


@pytest.mark.parametrize("code", DEEP_CODE, ids=["long-sum", "signs", "powers"])
def test_code_too_deep_to_parse_leaves_the_code_lab_and_tracing_working(code: str) -> None:
    """A 60 KB shared snippet of ``1+1+…`` was an error page for whoever opened its link, with no
    editor left to fix it; the Tracing page's "function from the Code Lab" too."""
    at = open_page(catalog.find("code-lab"), code_lab_source=code)
    assert_clean(at)
    assert "code_lab_editor" in {e.key for e in at.get("bidi_component")}  # the editor is there
    at = open_page(catalog.find("tracing"), code_lab_source=code, tracing_preset="code_lab")
    assert_clean(at)
    assert any("nested too deeply to read" in e.value for e in at.error)


def test_a_function_of_many_arguments_is_refused_before_its_boxes_are_drawn() -> None:
    """A Code Lab ``def`` of 1,000 parameters drew 2,000 bound boxes on the Tracing page, and
    Streamlit's cost per widget grows with the widgets drawn: 10 s of the server's interpreter a
    rerun (a 100,000-character snippet holds about 16,000 parameters). Refused with the limit."""
    params = ", ".join(f"a{i}" for i in range(1_000))
    code = f"def f({params}):\n    return a0\n"
    at = open_page(catalog.find("tracing"), code_lab_source=code, tracing_preset="code_lab")
    assert_clean(at)
    assert any("takes 1,000 arguments" in e.value for e in at.error)
    assert not [e for e in at.text_input if (e.key or "").startswith("tracing_code_lab_shape_")]
    limit = ", ".join(f"a{i}" for i in range(tracing.MAX_ARGS))
    at = open_page(
        catalog.find("tracing"),
        code_lab_source=f"def f({limit}):\n    return a0\n",
        tracing_preset="code_lab",
        tracing_code_lab_shape_0="x",  # stops before the sandbox: only the boxes are wanted
    )
    shapes = [e for e in at.text_input if (e.key or "").startswith("tracing_code_lab_shape_")]
    assert len(shapes) == tracing.MAX_ARGS

"""AppTests of the Code Lab page: run, errors marked, output as text, inspections, reset."""

from __future__ import annotations

import pytest

from jaxplay import article
from jaxplay.hosting import catalog
from tests.support.apptest import assert_clean, editor_text, open_page

SPEC = catalog.find("code-lab")


def _run(at, source: str):  # type: ignore[no-untyped-def]
    at.session_state["code_lab_source"] = source
    at.run()
    at.button(key="code_lab_run").click().run()
    assert_clean(at)
    return at


def _codes(at) -> list[str]:  # type: ignore[no-untyped-def]
    return [c.value for c in at.code]


def test_starts_with_the_default_example_and_keeps_code_in_session() -> None:
    at = open_page(SPEC)
    assert_clean(at)
    assert at.session_state["code_lab_source"] == article.by_id(article.DEFAULT_ID).source
    assert editor_text(at) == at.session_state["code_lab_source"]


def test_run_shows_output_value_and_arrays() -> None:
    at = open_page(SPEC)
    _run(at, "import jax.numpy as jnp\nx = jnp.arange(6.0).reshape(2, 3)\nprint('hi')\nx.sum()")
    codes = _codes(at)
    assert "hi" in codes
    assert any("Array(15., dtype=float32)" in c for c in codes)
    table = at.dataframe[0].value
    assert list(table["name"]) == ["x"] and list(table["shape"]) == ["(2, 3)"]


def test_error_marks_the_line_and_output_is_text() -> None:
    at = open_page(SPEC)
    _run(at, "print('<script>alert(1)</script>')\nx = 1\nraise ValueError('boom')")
    assert at.error, "an error box is shown"
    codes = _codes(at)
    assert "<script>alert(1)</script>" in codes  # shown verbatim in a code block
    assert "ValueError: boom" in codes
    assert any("→ 3 | raise ValueError('boom')" in c for c in codes)
    assert not any("<script>" in m.value for m in at.markdown)


def test_edit_survives_a_page_switch() -> None:
    at = open_page(SPEC, code_lab_source="y = 41 + 1")
    at.switch_page("pages/home.py").run()
    at.switch_page(SPEC.path).run()
    assert_clean(at)
    assert editor_text(at) == "y = 41 + 1"


def test_reset_restores_the_example() -> None:
    at = open_page(SPEC, code_lab_source="y = 1")
    at.button(key="code_lab_reset").click().run()
    assert editor_text(at) == article.by_id(article.DEFAULT_ID).source


def test_inspect_shows_the_jaxpr() -> None:
    at = open_page(
        SPEC,
        code_lab_source="import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x) * 2\n",
        code_lab_inspectors=["jaxpr"],
        code_lab_args="(3,)",
    )
    at.button(key="code_lab_run").click().run()
    assert_clean(at)
    assert any("sin" in c and "f32[3]" in c for c in _codes(at))


def test_each_inspection_is_drawn_by_its_type() -> None:
    """Eager vs jit as three metrics and a caption; a failed inspection as its message."""
    at = open_page(
        SPEC,
        code_lab_source="import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x) * 2\n",
        code_lab_inspectors=["compare_jit"],
        code_lab_args="(3,)",
    )
    at.button(key="code_lab_run").click().run(timeout=60)
    assert_clean(at)
    assert [m.label for m in at.metric] == ["Eager (median)", "jit (median)", "Speed-up"]
    assert any("Measured inside the sandbox" in c.value for c in at.caption)
    at.session_state["code_lab_source"] = "def f(x):\n    return x.nope\n"
    at.session_state["code_lab_inspectors"] = ["jaxpr"]
    at.run()
    at.button(key="code_lab_run").click().run(timeout=60)
    assert any(w.value == "This inspection failed:" for w in at.warning)
    assert any("AttributeError" in c for c in _codes(at))


@pytest.mark.parametrize(
    ("args", "says"),
    [("(3, 'a')", "not a shape"), ("{[]}", "Could not read")],  # `{[]}`: a TypeError once
)
def test_bad_shapes_are_refused_as_every_typed_text_is_not_a_traceback(args, says) -> None:
    at = open_page(
        SPEC,
        code_lab_source="def f(x):\n    return x\n",
        code_lab_inspectors=["jaxpr"],
        code_lab_args=args,
    )
    assert_clean(at)
    assert any(e.value.startswith("**Not shapes:**") and says in e.value for e in at.error)


def test_a_matrix_gets_a_heatmap() -> None:
    at = open_page(SPEC)
    _run(at, "import jax.numpy as jnp\nm = jnp.eye(3)")
    charts = at.get("plotly_chart")
    assert len(charts) == 1


def test_public_server_without_bwrap_refuses_with_a_message(monkeypatch) -> None:
    from jaxplay import sandbox as runner

    runner.shutdown()
    monkeypatch.setenv("JAXPLAY_PUBLIC", "1")
    monkeypatch.setenv("JAXPLAY_SANDBOX", "process")
    try:
        at = open_page(SPEC)
        assert_clean(at)
        assert any("JAXPLAY_PUBLIC" in e.value for e in at.error)
        assert at.button(key="code_lab_run").disabled
    finally:
        # The settings first: a pool another thread makes from here on is an ordinary one, and
        # the public one goes (shut down after the undo, it once outlived the test and refused
        # a later test's run).
        monkeypatch.undo()
        runner.shutdown()


def test_choosing_an_inspection_runs_it_at_once() -> None:
    """Pressing "Show the jaxpr" shows one without pressing Run (it only lit the pill before)."""
    at = open_page(
        SPEC, code_lab_source="import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x) * 2\n"
    )
    assert not any("sin" in c and "f32[3]" in c for c in _codes(at))
    at.button_group(key="code_lab_inspectors").set_value(["jaxpr"]).run()
    assert_clean(at)
    assert any("sin" in c and "f32[3]" in c for c in _codes(at))


def test_an_inspection_not_in_the_shown_run_says_when_it_comes() -> None:
    at = open_page(SPEC, code_lab_source="def f(x):\n    return x\n")
    at.button(key="code_lab_run").click().run()
    at.session_state["code_lab_inspectors"] = ["jaxpr"]  # no on_change: as after a refused run
    at.run()
    assert_clean(at)
    infos = [i.value for i in at.info]
    assert any("shown after the next **Run**" in i for i in infos), infos

"""The pytrees page through AppTest: every tab, sentences that follow the input, refusals without
stale results, escaped visitor text, and the Code Lab button."""

from __future__ import annotations

import re

import pytest

from jaxplay import pytrees
from jaxplay.hosting import catalog
from tests.support.apptest import assert_clean, editor_text, open_page, timed_calls
from tests.support.markdown_check import active_elements

SPEC = catalog.find("pytrees")


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def test_default_view_counts_the_mlps_leaves() -> None:
    at = open_page(SPEC)
    assert_clean(at)
    assert "JAX sees **4 leaves** and 3 other nodes" in texts(at.markdown)
    assert "called `double` 4 times" in texts(at.markdown)
    assert "written `'w', 'b'` and come out `'b', 'w'`" in texts(at.info)
    assert at.get("plotly_chart") and at.dataframe


def test_a_typed_literal_changes_the_sentence() -> None:
    at = open_page(SPEC, pytrees_example=pytrees.LITERAL, pytrees_literal="[1, [2, 3], ()]")
    assert_clean(at)
    shown = texts(at.markdown)
    assert "JAX sees **3 leaves** and 3 other nodes, 1 of which holds no leaf" in shown
    assert not at.info  # no dict, nothing sorted
    other = open_page(SPEC, pytrees_example=pytrees.LITERAL, pytrees_literal="{'b': 1, 'a': None}")
    assert "JAX sees **1 leaf** and 2 other nodes, 1 of which holds no leaf" in texts(
        other.markdown
    )


def test_a_refused_literal_shows_why_and_nothing_stale() -> None:
    at = open_page(SPEC, pytrees_example=pytrees.LITERAL, pytrees_literal="[1] * 10**9")
    assert_clean(at)
    assert "Not accepted" in texts(at.error)
    assert not at.get("plotly_chart") and not at.dataframe


def test_visitor_text_in_a_refusal_renders_as_text() -> None:
    payload = "{'![px](http://127.0.0.1:9/p.png)': 1}"
    at = open_page(SPEC, pytrees_example=pytrees.LITERAL, pytrees_literal=payload)
    assert_clean(at)
    errors = [e.value for e in at.error]
    assert errors and "the dict key" in errors[0] and "px" in errors[0]
    assert all(active_elements(e) == [] for e in errors)


def test_classes_tab_registered_and_not() -> None:
    at = open_page(SPEC, pytrees_tab="Your own classes")
    assert_clean(at)
    assert "a node with **2 leaves**" in texts(at.success)
    plain = open_page(SPEC, pytrees_tab="Your own classes", pytrees_class="plain")
    assert_clean(plain)
    warning = texts(plain.warning)
    assert "**1 leaf** itself: 3 of 4 calls below raise" in warning
    assert "jax.jit: TypeError" in warning
    assert "`jax.jit(affine)(layer, jnp.ones(3))` raises **TypeError**" in texts(plain.error)


def test_static_tab_counts_compilations() -> None:
    at = open_page(SPEC, pytrees_tab="Static vs dynamic fields", pytrees_calls=5)
    assert_clean(at)
    assert "5 calls, 5 distinct data values" in texts(at.success)
    assert "**jit compiled 1 program**" in texts(at.success)
    static = open_page(
        SPEC,
        pytrees_tab="Static vs dynamic fields",
        pytrees_change="static",
        pytrees_calls=6,
        pytrees_distinct=3,
    )
    assert "3 distinct meta values: **jit compiled 3 programs**" in texts(static.success)
    weak = open_page(SPEC, pytrees_tab="Static vs dynamic fields", pytrees_change="weak")
    assert "(2 leaf types)" in texts(weak.success)
    assert "**jit compiled 2 programs**" in texts(weak.success)
    array = open_page(SPEC, pytrees_tab="Static vs dynamic fields", pytrees_change="array")
    # Every call raises; JAX's exception type depends on which of its caches met the array first
    # (TypeError from hashing it, ValueError from jit's static check), so the page names what ran.
    # JAX accepts the first call when nothing is cached to compare with, then raises.
    raised = re.search(r"[34] calls of 4 raised \(([A-Za-z, ]+)\)", texts(array.error))
    assert raised and set(raised.group(1).split(", ")) <= {"TypeError", "ValueError"}, texts(
        array.error
    )


def test_none_tab_and_is_leaf() -> None:
    at = open_page(SPEC, pytrees_tab="None & empty")
    assert_clean(at)
    assert "**1 leaf** in a tree of 6 nodes" in texts(at.markdown)
    leaf = open_page(SPEC, pytrees_tab="None & empty", pytrees_none_is_leaf=True)
    assert "`None` is a leaf: **2 leaves**" in texts(leaf.markdown)


def test_grad_and_vmap_tab() -> None:
    at = open_page(SPEC, pytrees_tab="grad & vmap", pytrees_batch=7)
    assert_clean(at)
    assert "**the same tree as `params`**, every leaf with its parameter's shape" in texts(
        at.markdown
    )
    assert "returned shape **(7,)**" in texts(at.success)
    table = at.dataframe[0].value.set_index("leaf")
    assert table.loc["params['out']['b']", "grad shape"] == "()"  # a scalar's shape, shown
    assert table.loc["x", "in_axes"] == "axis 0"
    wrong = open_page(SPEC, pytrees_tab="grad & vmap", pytrees_axes="all-zero")
    assert "raises **ValueError**" in texts(wrong.error)


def test_open_in_code_lab_loads_the_snippet_that_ran() -> None:
    at = open_page(SPEC, pytrees_example="nested", pytrees_fn="size")
    at.button(key="pytrees_open_basics").click().run()
    assert_clean(at)
    expected = pytrees.snippet(pytrees.find_example("nested").build, pytrees.MAP_FUNCTIONS["size"])
    assert at.session_state["code_lab_source"] == expected
    assert editor_text(at) == expected


def test_dict_key_orders_are_one_note_for_the_whole_tree() -> None:
    """Two dicts written out of order: one note naming both (it was one box per dict)."""
    at = open_page(
        SPEC,
        pytrees_example=pytrees.LITERAL,
        pytrees_literal="{'b': 1, 'a': {'d': 2, 'c': 3}}",
    )
    assert_clean(at)
    notes = [i.value for i in at.info if "sorts dict keys" in i.value]
    assert len(notes) == 1, notes
    assert notes[0].count("they were written") == 2


def test_the_parameters_run_in_the_compute_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each new size compiled programs (about 23 MB) that JAX kept in the server process."""
    ran = timed_calls(monkeypatch)
    at = open_page(SPEC, pytrees_tab="grad & vmap", pytrees_batch=6)
    assert_clean(at)
    assert "params_run" in ran

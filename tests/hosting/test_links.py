"""Link parameters that were not honoured are reported in plain words."""

from __future__ import annotations

from jaxplay.hosting.links import ignored_params, notice
from tests.support.markdown_check import active_elements, plain_text


def test_valid_params_are_silent() -> None:
    before = {"jit_preset": "softmax", "jit_n": "3", "snippet": "abc"}
    after = {"jit_preset": "softmax"}  # jit_n equals its default and was removed
    notes = ignored_params(
        before, after, {"jit_preset": "softmax", "jit_n": 3}, ["jit_preset", "jit_n"]
    )
    assert notes == []


def test_invalid_value_and_unknown_name_are_reported() -> None:
    before = {"jit_dtype": "float99", "hack": "1", "jit_flag": "true"}
    after: dict[str, str] = {"hack": "1"}
    values = {"jit_dtype": "float32", "jit_flag": True}
    notes = ignored_params(before, after, values, ["jit_dtype", "jit_flag"])
    assert len(notes) == 2
    assert "jit_dtype=float99 is not a valid value" in notes[1] or "float99" in " ".join(notes)
    assert any("hack is not a setting" in n for n in notes)


def test_long_values_are_shortened() -> None:
    notes = ignored_params({"k": "x" * 500}, {}, {"k": "y"}, ["k"])
    assert len(notes[0]) < 120


def test_app_reports_an_unknown_link_parameter() -> None:
    from streamlit.testing.v1 import AppTest

    from jaxplay.hosting import catalog

    at = AppTest.from_file(str(catalog.ROOT / "app.py"), default_timeout=120)
    at.query_params["no_such_setting"] = "1"
    at.run()
    assert not at.exception
    assert any("no_such_setting is not a setting" in plain_text(w.value) for w in at.warning)


def test_a_widget_the_session_already_had_is_not_a_links_part() -> None:
    """A preset's callback set compose_t0 from jacfwd to jit while the address still said
    jacfwd: the run found the parameter gone and noted it as an ignored part of a link."""
    before = {"compose_t0": "jacfwd", "compose_preset": "x"}
    values = {"compose_t0": "jit", "compose_preset": "x"}
    keys = ["compose_t0", "compose_preset"]
    assert ignored_params(before, {"compose_preset": "x"}, values, keys) != []
    assert ignored_params(before, {"compose_preset": "x"}, values, keys, settled=keys) == []
    fresh = ignored_params({"compose_t0": "nope"}, {}, values, keys, settled=["compose_preset"])
    assert fresh == ["compose_t0=nope is not a valid value; the default is shown"]


def test_the_note_shows_a_links_names_and_values_as_text() -> None:
    """``/?![px](http://127.0.0.1:9/p.png)=1`` drew the attacker's image in the note."""
    payload = "![px](http://127.0.0.1:9/p.png) [x](http://127.0.0.1:9/l)"
    notes = ignored_params({payload: payload, "k": payload}, {}, {"k": "y"}, ["k"])
    note = notice(notes)
    assert active_elements(note) == []
    assert "![px](http://127.0.0.1:9/p.png)" in plain_text(note)
    assert notice([]) == ""


def test_the_app_escapes_an_unknown_link_parameter() -> None:
    from streamlit.testing.v1 import AppTest

    from jaxplay.hosting import catalog

    at = AppTest.from_file(str(catalog.ROOT / "app.py"), default_timeout=120)
    at.query_params["![px](http://127.0.0.1:9/p.png)"] = "[x](http://127.0.0.1:9/l)"
    at.run()
    assert not at.exception
    notes = [w.value for w in at.warning if "ignored" in w.value]
    assert notes and all(active_elements(n) == [] for n in notes), notes


def test_a_widget_of_a_closed_tab_waits_for_its_tab() -> None:
    """Only the open tab runs: a link's setting of another tab's widget is not ignored."""
    before = {"vmap_tab": "jaxpr", "vmap_layout": "X is (D, batch)", "vmap_nope": "1"}
    keys = ["vmap_tab", "vmap_jaxpr_batch"]
    notes = ignored_params(before, before, {"vmap_tab": "jaxpr"}, keys, waiting=["vmap_layout"])
    assert notes == ["vmap_nope is not a setting of this page; it was ignored"]

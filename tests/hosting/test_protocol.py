"""A public server ignores the client messages that change shared state (issue 20, item 4).

Any client can send Streamlit's ``clear_cache`` message; it emptied every cache on the server and,
with the snippet store kept in ``st.cache_resource``, reset every visitor's share limit.
"""

from __future__ import annotations

import pages._protocol

import json
import math
import tracemalloc

import pytest
import streamlit as st
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.runtime.app_session import AppSession

from jaxplay import sandbox
from jaxplay.core import untrusted
from jaxplay.hosting import catalog, protocol, snippets
from tests.support.apptest import open_page


class _Session(AppSession):
    """An ``AppSession`` with only what its message handlers touch (no runtime behind it)."""

    def __init__(self) -> None:
        self._session_state = {}  # type: ignore[assignment]

    def __del__(self) -> None:
        pass


def _unguarded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Streamlit's own handler for this test (an earlier test's app run may have installed the
    guard); whatever was there is put back after it."""
    current = AppSession.handle_backmsg
    monkeypatch.setattr(
        AppSession, "handle_backmsg", getattr(current, "_jaxplay_original", current)
    )


@pytest.fixture
def guarded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard installed over Streamlit, taken off again after the test."""
    _unguarded(monkeypatch)
    assert not getattr(AppSession.handle_backmsg, "_jaxplay_guard", False)
    pages._protocol.install()
    pages._protocol.install()  # app.py calls it every run: the second call changes nothing


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[BackMsg]:
    """The guard installed over a stand-in for Streamlit's handler that records what reaches
    it (the messages the guard lets through, as it left them)."""
    handled: list[BackMsg] = []
    monkeypatch.setattr(AppSession, "handle_backmsg", lambda self, msg: handled.append(msg))
    pages._protocol.install()
    return handled


def _cached_calls() -> tuple[list[int], object]:
    calls: list[int] = []
    st.cache_resource.clear()  # the same function in every test: start empty

    @st.cache_resource(max_entries=4)
    def measured(x: int) -> int:
        calls.append(x)
        return x

    return calls, measured


@pytest.mark.parametrize("public", [True, False])
def test_clear_cache_from_a_client_is_ignored_in_public_mode(
    guarded: None, monkeypatch: pytest.MonkeyPatch, public: bool
) -> None:
    if public:
        monkeypatch.setenv("JAXPLAY_PUBLIC", "1")
    else:
        monkeypatch.delenv("JAXPLAY_PUBLIC", raising=False)
    calls, measured = _cached_calls()
    measured(1)  # type: ignore[operator]
    _Session().handle_backmsg(BackMsg(clear_cache=True))
    measured(1)  # type: ignore[operator]
    # Public: the cached result survives; private (a developer's own server): Streamlit's own.
    assert calls == ([1] if public else [1, 1])


def test_the_guard_is_installed_once(guarded: None) -> None:
    wrapper = AppSession.handle_backmsg
    pages._protocol.install()
    assert AppSession.handle_backmsg is wrapper
    assert getattr(wrapper, "_jaxplay_guard", False)


def test_the_app_installs_the_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    _unguarded(monkeypatch)
    open_page(catalog.HOME)
    assert getattr(AppSession.handle_backmsg, "_jaxplay_guard", False)


def test_every_message_a_client_may_send_has_a_decision() -> None:
    """A Streamlit upgrade that adds a message type fails here until someone decides on it."""
    handled_in_session = {
        "rerun_script",
        "stop_script",
        "app_heartbeat",
        "backend_operation_request",
    }
    types = {field.name for field in BackMsg.DESCRIPTOR.oneofs_by_name["type"].fields}
    assert types == handled_in_session | set(protocol.REFUSED) | set(protocol.REFUSED_ALWAYS)
    payload = BackMsg.DESCRIPTOR.fields_by_name["backend_operation_request"].message_type
    operations = {field.name for field in payload.oneofs_by_name["payload"].fields}
    assert operations == set(protocol.REFUSED_OPERATIONS_ALWAYS) | set(protocol.REFUSED_OPERATIONS)


def test_the_rule_refuses_only_in_public_mode() -> None:
    public = {"JAXPLAY_PUBLIC": "1"}
    for msg_type in protocol.REFUSED:
        assert protocol.refusal(msg_type, environ=public)
        assert protocol.refusal(msg_type, environ={}) is None
    for msg_type in ("rerun_script", "stop_script", "app_heartbeat"):
        assert protocol.refusal(msg_type, environ=public) is None
    # No page uploads a file: refused in every mode (each name asked made an upload URL).
    assert protocol.refusal("file_urls_request", environ={})
    assert protocol.refusal("file_urls_request", environ=public)
    op = "backend_operation_request"
    assert protocol.refusal(op, "install_skills", environ=public)
    assert protocol.refusal(op, "install_skills", environ={}) is None
    # No page shows a lazy table or a download made on request: refused in every mode.
    for operation in ("dataframe_chunk", "deferred_file"):
        assert protocol.refusal(op, operation, environ={})
        assert protocol.refusal(op, operation, environ=public)


def test_the_debug_messages_stay_refused_by_streamlit() -> None:
    """Streamlit handles the two debug messages before ``handle_backmsg``: it refuses them unless
    in development mode or its own e2e tests, neither of which a pip-installed server is in."""
    from streamlit import config

    assert not config.get_option("global.developmentMode")
    assert not config.get_option("global.e2eTest")


def test_the_snippet_store_and_its_share_limit_outlive_streamlit_caches(tmp_path) -> None:
    store = snippets.shared_store(str(tmp_path / "s.sqlite3"))
    store.limiter.try_acquire("visitor")
    st.cache_resource.clear()
    st.cache_data.clear()
    assert snippets.shared_store(str(tmp_path / "s.sqlite3")) is store
    store.close()


def test_no_page_keeps_limits_or_stores_in_a_streamlit_cache() -> None:
    """``st.cache_resource`` is emptied by one client message: nothing that counts visitors (a
    rate limiter, the snippet store holding one) may live there."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for path in [root / "app.py", *sorted((root / "pages").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef) or node.returns is None:
                continue
            cached = any("cache_resource" in ast.unparse(d) for d in node.decorator_list)
            returns = ast.unparse(node.returns)
            assert not (cached and ("Store" in returns or "Limiter" in returns)), (path, node.name)


def test_a_client_message_is_bounded_near_what_the_app_needs() -> None:
    """``server.maxMessageSize`` bounds what one client message carries before any cap in the
    app can cut it: 50 MB let one message carry 50 MB of "code" (~600 MB of server memory per MB
    parsed). The largest legitimate message, the editor's text at its cap as escaped JSON, fits."""
    import json
    import tomllib

    from jaxplay import sandbox
    from jaxplay.hosting import catalog

    config = tomllib.loads((catalog.ROOT / ".streamlit" / "config.toml").read_text())
    limit_mb = config["server"]["maxMessageSize"]
    largest = len(json.dumps("\u4e2d" * sandbox.MAX_SOURCE_CHARS, ensure_ascii=True).encode())
    assert largest < limit_mb * 2**20 <= 10 * 2**20, (largest, limit_mb)


def _rerun(*states: WidgetState) -> BackMsg:
    message = BackMsg()
    message.rerun_script.widget_states.widgets.extend(states)
    return message


def _choice(*labels: str) -> WidgetState:
    state = WidgetState(id="$$ID-choice-compose_widths")
    state.string_array_value.data.extend(labels)
    return state


def _json(text: str) -> WidgetState:
    return WidgetState(id="$$ID-editor-code_lab_editor", json_value=text)


def test_a_choice_loses_its_repeated_labels_in_place() -> None:
    """A browser never repeats a label; a scripted client that did made a page loop per copy."""
    message = _rerun(_choice("4", "8", "4", "4", "16", "8"))
    assert protocol.widget_refusal(message.rerun_script.widget_states.widgets) is None
    assert list(message.rerun_script.widget_states.widgets[0].string_array_value.data) == [
        "4",
        "8",
        "16",
    ]


@pytest.mark.parametrize(
    ("state", "said"),
    [
        (_choice(*(str(i) for i in range(protocol.MAX_CHOICES + 1))), "a choice of 257 labels"),
        (
            WidgetState(
                id="$$ID-x", double_array_value={"data": [1.0] * (protocol.MAX_NUMBERS + 1)}
            ),
            "an array of 257 numbers",
        ),
        (_json('{"value": "x = 1", "junk": [' + ",".join(["{}"] * 20_000) + "]}"), "arrays"),
        (_json("[" * 100 + "]" * 100), "nested 100 deep"),
        (_json("[" + ",".join(["1"] * 200_000) + "]"), "values"),
        (_json("{not json"), "not JSON"),
        (WidgetState(id="x" * 100_000, string_value="a"), "a widget id Streamlit does not make"),
        (
            WidgetState(
                id="$$ID-x-tracing_calls_article",
                string_value='{"added_rows": [' + ",".join(["{}"] * 2_600_000) + "]}",
            ),
            "a text of 7,800,017 characters",
        ),
    ],
)
def test_a_widget_value_no_browser_sends_is_refused(state: WidgetState, said: str) -> None:
    refused = protocol.widget_refusal([state])
    assert refused is not None and said in refused


def test_the_longest_text_a_widget_takes_is_let_through() -> None:
    """The code editor's plain text box takes the sandbox's longest source; a data editor's
    JSON at the text bound decodes cheaply (a tenth of the 200 MB that 8 MB of rows held)."""
    code = "x" * sandbox.MAX_SOURCE_CHARS
    assert protocol.widget_refusal([WidgetState(id="$$ID-x-code", string_value=code)]) is None
    rows = '{"added_rows": [' + ",".join(["{}"] * (protocol.MAX_TEXT_CHARS // 3 - 10)) + "]}"
    assert len(rows) <= protocol.MAX_TEXT_CHARS
    assert protocol.widget_refusal([WidgetState(id="$$ID-x-t", string_value=rows)]) is None
    tracemalloc.start()
    try:
        assert json.loads(rows)["added_rows"]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000


def test_the_editors_long_code_is_one_value() -> None:
    """Four megabytes of code in the editor is one JSON string: the page cuts it and says so."""
    code = "x = [1, {2: 3}]\n" * 260_000
    assert protocol.widget_refusal([_json(json.dumps({"value": code}))]) is None


@pytest.mark.parametrize("public", [True, False])
def test_the_guard_drops_a_refused_value_and_the_rerun_goes_on(
    monkeypatch: pytest.MonkeyPatch, recorded: list[BackMsg], public: bool
) -> None:
    """In every mode; the rerun's other values reach Streamlit, which keeps the widget's last
    value (a dropped rerun left a browser "Running…" for ever)."""
    if public:
        monkeypatch.setenv("JAXPLAY_PUBLIC", "1")
    else:
        monkeypatch.delenv("JAXPLAY_PUBLIC", raising=False)
    handled = recorded
    _Session().handle_backmsg(_rerun(_json("[" * 100 + "]" * 100), _choice("4", "4", "8")))
    assert len(handled) == 1
    widgets = handled[0].rerun_script.widget_states.widgets
    assert [w.WhichOneof("value") for w in widgets] == ["string_array_value"]
    assert list(widgets[0].string_array_value.data) == ["4", "8"]


def test_each_refused_value_is_dropped_with_its_reason() -> None:
    message = _rerun(
        WidgetState(id="made-up", string_value="a"),
        _choice("4", "8"),
        _json("[" * 100 + "]" * 100),
    )
    widgets = message.rerun_script.widget_states.widgets
    reasons = protocol.drop_refused(widgets)
    assert len(reasons) == 2, reasons
    assert reasons[0].startswith("a widget id Streamlit does not make"), reasons
    assert reasons[1].startswith("a JSON value of") and "nested 100 deep" in reasons[1], reasons
    assert [w.id for w in widgets] == [_choice("4").id]


def test_a_choice_longer_than_its_widget_takes_keeps_its_first_labels() -> None:
    """As Streamlit keeps a link's; from a widget value it raised instead (an error page)."""
    state = _choice("a", "b", "a", "c", "d")
    assert protocol.widget_refusal([state], {"other": 1, "compose_widths": 2}) is None
    assert list(state.string_array_value.data) == ["a", "b"]


@pytest.mark.parametrize(
    "text", ['"\\' * 500_000, '"' * 1_000_000, '"\\\\' * 300_000, "\\" * 1_000_000]
)
def test_the_json_check_reads_each_character_once(text: str) -> None:
    """Strings that never close: a scan that could fail from every quote was quadratic (32 KB
    took 3.3 s on the event loop every visitor waits on; these megabytes, hours)."""
    refused = untrusted.json_text_refusal(text)
    assert refused is not None and "not JSON" in refused


def test_a_value_of_another_kind_than_its_widgets_is_refused() -> None:
    """An int for the sidebar's language switch raised in Streamlit's own code, on every page."""
    kinds = {"$$ID-abc-language": "string_array_value"}
    wrong = WidgetState(id="$$ID-abc-language", int_value=3)
    assert protocol.widget_refusal([wrong], kinds=kinds) == (
        "a int_value for a widget of string_array_value"
    )
    right = WidgetState(id="$$ID-abc-language")
    right.string_array_value.data.append("中文")
    cleared = WidgetState(id="$$ID-abc-language")
    assert protocol.widget_refusal([right, cleared], kinds=kinds) is None
    # A number box registers a double; the browser sends an integer box's value as an int.
    number = WidgetState(id="$$ID-n-prng_n_keys", int_value=500)
    assert protocol.widget_refusal([number], kinds={number.id: "double_value"}) is None
    # The editor's Run: a component's event trigger, under Streamlit's internal prefix.
    run = WidgetState(id="$$STREAMLIT_INTERNAL_KEY_$$ID-e-code_lab_editor__run")
    run.json_trigger_value = '{"event": "run", "value": "print(1)"}'
    assert protocol.widget_refusal([run], kinds={run.id: "json_trigger_value"}) is None


def test_a_number_that_is_not_finite_is_refused() -> None:
    """``int(inf)`` raised in an integer box's decoding (an error page); no browser sends one."""
    for value in (math.inf, -math.inf, math.nan):
        state = WidgetState(id="$$ID-x-jit_rows", double_value=value)
        assert "not finite" in (protocol.widget_refusal([state]) or "")
        array = WidgetState(id="$$ID-x-range", double_array_value={"data": [1.0, value]})
        assert "not all finite" in (protocol.widget_refusal([array]) or "")
    assert protocol.widget_refusal([WidgetState(id="$$ID-x-n", double_value=1e308)]) is None


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("not json", "not JSON"),
        ('{"edited_rows": [1]}', "of another kind"),
        ('{"edited_rows": {"x": {}}}', "no row position"),
        ('{"edited_rows": {"0": 5}}', "has no cells"),
        ('{"added_rows": 5}', "of another kind"),
        ('{"added_rows": [5]}', "has no cells"),
        ('{"deleted_rows": ["a"]}', "no row position"),
        ('{"deleted_rows": [-1]}', "no row position"),
        ("[]", "no object"),
        ('{"added_rows": [' + ",".join(["{}"] * 20_000) + "]}", "objects"),
    ],
)
def test_a_data_editors_edits_of_another_shape_are_refused(text: str, said: str) -> None:
    """Streamlit decodes a data editor's edits before the page runs: these raised there."""
    refused = protocol.widget_refusal(
        [WidgetState(id="$$ID-t-tracing_calls_article", string_value=text)],
        decoded={"$$ID-t-tracing_calls_article": "data editor's edits"},
    )
    assert refused is not None and said in refused, refused


def test_a_browsers_table_edits_pass() -> None:
    edits = {
        "edited_rows": {"0": {"x shape": "4", "x dtype": "float32"}, "2": {"use_tanh": True}},
        "added_rows": [{"x shape": "3, 3"}, {}],
        "deleted_rows": [1],
    }
    table = "$$ID-t-tracing_calls_article"
    state = WidgetState(id=table, string_value=json.dumps(edits))
    assert protocol.widget_refusal([state], decoded={table: "data editor's edits"}) is None
    # A text box's text is no table's: not read as JSON.
    assert protocol.widget_refusal([WidgetState(id="$$ID-b", string_value="[[[")]) is None


CHART = "$$ID-c-prng_tree_chart"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("5", "no object"),  # Streamlit's decoder: `"selection" in 5` raised
        ('{"selection": 5}', "selection that is no object"),
        ('{"selection": {"points": 5}}', "points that is no list"),
        ('{"selection": {"points": [5]}}', "points item of another kind"),  # the page's callback
        ('{"selection": {"point_indices": ["0"]}}', "point_indices item of another kind"),
        ('{"selection": {"box": [[]]}}', "box item of another kind"),
        ("not json", "not JSON"),
        ('{"selection": {"points": [' + ",".join(["{}"] * 20_000) + "]}}", "objects"),
    ],
)
def test_a_chart_selection_of_another_shape_is_refused(text: str, said: str) -> None:
    refused = protocol.widget_refusal(
        [WidgetState(id=CHART, string_value=text)], decoded={CHART: "chart selection"}
    )
    assert refused is not None and said in refused, refused


def test_a_browsers_chart_selection_passes() -> None:
    for event in (
        {"selection": {"points": [], "point_indices": [], "box": [], "lasso": []}},
        {
            "selection": {
                "points": [{"customdata": ["root"], "x": 1.5, "curve_number": 0}],
                "point_indices": [0],
                "box": [{"x": [0, 1], "y": [0, 1]}],
                "lasso": [],
            }
        },
        {},  # no selection: Streamlit reads an empty one
    ):
        state = WidgetState(id=CHART, string_value=json.dumps(event))
        assert protocol.widget_refusal([state], decoded={CHART: "chart selection"}) is None


def test_too_many_widget_values_are_all_dropped() -> None:
    """500,000 made-up ids in one message cost Streamlit 5 s and 315 MB to store and sweep."""
    message = _rerun(*(WidgetState(id=f"$$ID-{i:x}", trigger_value=True) for i in range(1_001)))
    widgets = message.rerun_script.widget_states.widgets
    assert protocol.drop_refused(widgets) == ["1,001 widget values (at most 1,000)"]
    assert len(widgets) == 0
    small = _rerun(_choice("4"))
    assert protocol.drop_refused(small.rerun_script.widget_states.widgets) == []


def test_an_address_too_long_or_of_too_many_parts_is_refused() -> None:
    """Streamlit re-encodes the whole address for each parameter the app drops: 998 unknown
    names beside 400,000 emoji cost 43 s of CPU and 2.3 GB."""
    assert protocol.query_refusal("") is None
    assert protocol.query_refusal("jit_rows=300&jit_cols=100&lang=zh") is None
    assert protocol.query_refusal("grad_formula=" + "%E4%BD%A0" * 3_000) is None  # 3,000 你
    long = protocol.query_refusal("snippet=" + "x" * protocol.MAX_QUERY_CHARS)
    assert long is not None and "characters" in long
    many = protocol.query_refusal("&".join(f"z{i}=" for i in range(protocol.MAX_QUERY_PARAMS + 1)))
    assert many is not None and "101 parameters" in many


def test_the_guard_empties_a_refused_address_and_the_rerun_goes_on(
    recorded: list[BackMsg],
) -> None:
    handled = recorded
    message = _rerun(_choice("4"))
    message.rerun_script.page_name = "jit"
    message.rerun_script.query_string = "&".join(f"z{i}=" for i in range(998))
    _Session().handle_backmsg(message)
    assert len(handled) == 1
    assert handled[0].rerun_script.query_string == ""
    assert handled[0].rerun_script.page_name == "jit"
    assert len(handled[0].rerun_script.widget_states.widgets) == 1


def test_a_reruns_fields_are_kept_to_what_a_browser_sends(recorded: list[BackMsg]) -> None:
    """A million cached-message hashes held 150 MB a message (1.1 GB after ten, kept after the
    socket closed); a 7 MB page name cost half a second. Each is emptied, the rerun goes on."""
    handled = recorded
    message = _rerun(_choice("4"))
    rerun = message.rerun_script
    rerun.page_name = "jit"
    rerun.cached_message_hashes.extend(f"h{i}" for i in range(protocol.MAX_CACHED_HASHES + 1))
    rerun.fragment_id = "f" * (protocol.MAX_NAME_CHARS + 1)
    rerun.context_info.locale = "zh-CN"
    rerun.context_info.url = "u" * (protocol.MAX_CONTEXT_CHARS + 1)
    _Session().handle_backmsg(message)
    (kept,) = [m.rerun_script for m in handled]
    assert not kept.cached_message_hashes and not kept.fragment_id and not kept.context_info.url
    assert kept.page_name == "jit" and kept.context_info.locale == "zh-CN"
    assert len(kept.widget_states.widgets) == 1
    browsers = _rerun(_choice("4"))
    browsers.rerun_script.cached_message_hashes.extend(["a" * 40] * 50)
    browsers.rerun_script.page_name = "jit"
    assert protocol.trim_rerun(browsers.rerun_script) == []


def test_a_label_its_widget_does_not_offer_is_refused() -> None:
    offered = {"$$ID-a-pick": frozenset({"adam", "sgd"}), "$$ID-b-many": frozenset({"x", "y"})}
    one = WidgetState(id="$$ID-a-pick", string_value="momentum")
    assert protocol.widget_refusal([one], offered=offered) == (
        "a choice of a label its widget does not offer"
    )
    many = WidgetState(id="$$ID-b-many")
    many.string_array_value.data.extend(["x", "z"])
    assert protocol.widget_refusal([many], offered=offered) is not None
    fine = WidgetState(id="$$ID-b-many")
    fine.string_array_value.data.extend(["y", "x"])
    nothing = WidgetState(id="$$ID-b-many")
    nothing.string_array_value.SetInParent()  # a multiselect emptied: no label to refuse
    chosen = WidgetState(id="$$ID-a-pick", string_value="sgd")
    assert protocol.widget_refusal([fine, nothing, chosen], offered=offered) is None


def test_a_session_past_its_budget_is_ignored_and_an_operations_long_ids_too(
    recorded: list[BackMsg],
) -> None:
    """5,000 reruns sent at once held the server 8.6 s; a backend operation's 7.9 MB request id
    came back in its answer and in the log whole (150 of them: 1.2 GB)."""
    handled = recorded
    flooding, other = _Session(), _Session()
    flooding.id, other.id = "flooding", "other"  # type: ignore[attr-defined]
    for _ in range(protocol.RERUN_BURST + 20):
        flooding.handle_backmsg(_rerun(_choice("4")))
    assert len(handled) <= protocol.RERUN_BURST + 2  # the burst, and what refilled meanwhile
    other.handle_backmsg(_rerun(_choice("4")))  # another session keeps its own budget
    assert handled[-1].WhichOneof("type") == "rerun_script" and len(handled) <= 33
    beating = _Session()
    beating.id = "beating"  # type: ignore[attr-defined]
    before = len(handled)
    for _ in range(protocol.MESSAGE_BURST + 50):
        beating.handle_backmsg(BackMsg(app_heartbeat=True))
    assert (
        before + protocol.MESSAGE_BURST - 30 <= len(handled) < before + protocol.MESSAGE_BURST + 30
    )
    long = BackMsg()
    long.backend_operation_request.request_id = "r" * (protocol.MAX_ID_CHARS + 1)
    long.backend_operation_request.install_skills.SetInParent()
    assert protocol.operation_refusal(long.backend_operation_request) is not None
    count = len(handled)
    other.handle_backmsg(long)
    assert len(handled) == count


def test_a_file_url_request_is_ignored_in_every_mode(
    monkeypatch: pytest.MonkeyPatch, recorded: list[BackMsg]
) -> None:
    monkeypatch.delenv("JAXPLAY_PUBLIC", raising=False)
    handled = recorded
    message = BackMsg()
    message.file_urls_request.file_names.extend(["f"] * 1_000)
    _Session().handle_backmsg(message)
    _Session().handle_backmsg(_rerun(_choice("4")))
    assert [m.WhichOneof("type") for m in handled] == ["rerun_script"]


def test_an_integer_boxs_infinite_link_value_is_an_invalid_one() -> None:
    """``?jit_rows=inf`` was an error page for everyone who opened the link: Streamlit ignores
    a link value whose decoding raises ``ValueError``, and ``int(inf)`` raised another error."""
    from streamlit.elements.widgets.number_input import NumberInputSerde
    from streamlit.proto.NumberInput_pb2 import NumberInput

    pages._protocol.install()
    serde = NumberInputSerde(300, NumberInput.INT, 1, 1_000_000)
    for value in (math.inf, -math.inf, math.nan):
        with pytest.raises(ValueError):
            serde.deserialize(value)
    assert serde.deserialize(400.0) == 400

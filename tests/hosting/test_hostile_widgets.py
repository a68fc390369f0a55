"""A scripted client's widget values, checked before Streamlit decodes them (``pages/_protocol``).

A browser never repeats a label in a choice nor sends a component thousands of small JSON
objects; a script speaking Streamlit's protocol can. Repeated labels made the Compose page time
200,000 copies of one width (82 s of the server's interpreter, every visitor stalled), and 8 MB
of ``{}`` in the Code Lab editor's value held 200 MB after its socket closed. Here a real server
gets those messages from :class:`pages._visitor.Visitor`: the repeats are dropped before the
page sees them, a refused value is dropped from its rerun (which runs with the values the page
already had, so the client gets its answer), and the server keeps serving.
"""

from __future__ import annotations

from pages._visitor import Visitor

import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg

from jaxplay import vmap
from jaxplay.hosting import protocol, serve

ENV = {"JAXPLAY_WARM_UP": "off", "JAXPLAY_CHECK_CLAIMS": "0"}


@pytest.fixture(scope="module")
def room() -> Iterator[serve.Room]:
    with serve.Room(1, env=ENV) as room:
        yield room


def _resident_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _healthy(url: str) -> bool:
    with urllib.request.urlopen(url + "/_stcore/health", timeout=10) as response:
        return response.status == 200


def test_a_choice_repeated_in_a_message_is_measured_once(room: serve.Room) -> None:
    visitor = Visitor(room.url)
    try:
        visitor.open("compose", "compose_tab=jacfwd+vs+jacrev")
        visitor.change("compose_widths", ["4"] * 200)
        run = visitor.click("compose_jac_measure")
    finally:
        visitor.close()
    assert not run.errors, run.errors
    assert "Timing jit(jacfwd) and jit(jacrev) at 1 width" in run.labels, run.labels


def test_a_choice_longer_than_its_widget_takes_is_cut_as_a_links_is(room: serve.Room) -> None:
    visitor = Visitor(room.url)
    try:
        visitor.open("vmap", "vmap_tab=Nested+vmap%3A+2-D+convolution")
        run = visitor.change("vmap_images", list(vmap.PATTERNS))
    finally:
        visitor.close()
    # Streamlit raised on it ("This app has encountered an error"); the guard keeps the first
    # four (tests/hosting/test_protocol.py), and the page draws them.
    assert len(vmap.PATTERNS) > vmap.MAX_IMAGES
    assert not run.errors, run.errors
    assert run.status.endswith("SUCCESSFULLY"), run.status


@pytest.mark.parametrize(
    ("address", "query", "value"),
    [
        ("compose", "compose_tab=jacfwd+vs+jacrev", [str(i) for i in range(300)]),
        ("code-lab", "", {"value": "x = 1", "junk": [{}] * 50_000}),
    ],
    ids=["too-many-labels", "json-of-small-objects"],
)
def test_a_refused_value_is_dropped_and_the_page_answers_with_what_it_had(
    room: serve.Room, address: str, query: str, value: object
) -> None:
    visitor = Visitor(room.url)
    try:
        visitor.open(address, query)
        key = (
            "compose_widths"
            if address == "compose"
            else next(w.key for w in visitor.widgets.values() if w.kind == "bidi_component")
        )
        before = _resident_mb(room.pids[0])
        run = visitor.change(key, value)
        grown = _resident_mb(room.pids[0]) - before
    finally:
        visitor.close()
    # Applied, 300 labels raised in Streamlit's code (an error) and 50,000 objects held memory.
    assert not run.errors, run.errors
    assert run.status.endswith("SUCCESSFULLY"), run.status
    assert grown < 50, f"the server grew {grown:.0f} MB"
    assert _healthy(room.url)
    assert protocol.MAX_CHOICES < 300


def test_a_value_of_the_wrong_kind_is_dropped_and_the_session_goes_on(room: serve.Room) -> None:
    """An int sent for the sidebar's language switch raised in Streamlit's code on every page."""
    visitor = Visitor(room.url)
    try:
        visitor.open("sharp-bits")
        language = visitor.widgets["language"]
        message = BackMsg()
        message.rerun_script.page_name = "sharp-bits"
        state = message.rerun_script.widget_states.widgets.add()
        state.id, state.int_value = language.id, 7
        visitor.send(message)
        run = visitor._read_run()
    finally:
        visitor.close()
    # Applied, the value raised in Streamlit's own code (an error); dropped, the page answers.
    assert not run.errors, run.errors
    assert run.status.endswith("SUCCESSFULLY"), run.status


def test_a_link_with_an_infinite_number_opens_the_page_with_a_note(room: serve.Room) -> None:
    """``?jit_rows=inf`` was an error page for everyone who opened the link."""
    visitor = Visitor(room.url)
    try:
        run = visitor.open("jit", "jit_rows=inf&jit_cols=1e309")
    finally:
        visitor.close()
    assert not run.errors, run.errors
    shown = " ".join(run.texts).replace("\\", "")  # the note's Markdown escapes
    assert "jit_rows=inf is not a valid value" in shown, shown[-2000:]
    assert "jit_cols=1e309 is not a valid value" in shown


def test_table_edits_no_browser_sends_are_dropped(room: serve.Room) -> None:
    """Streamlit decodes a data editor's edits before the page runs: text that is not JSON,
    or a list of edited rows, raised there (an error page)."""
    visitor = Visitor(room.url)
    try:
        visitor.open("tracing", "tracing_tab=Recompilation")
        table = next(w for w in visitor.widgets.values() if w.key.startswith("tracing_calls_"))
        runs = []
        for text in ("not json", '{"edited_rows": [1]}', '{"edited_rows": {"x": {}}}'):
            message = BackMsg()
            message.rerun_script.page_name = "tracing"
            message.rerun_script.query_string = visitor.query_string
            state = message.rerun_script.widget_states.widgets.add()
            state.id, state.string_value = table.id, text
            visitor.send(message)
            runs.append(visitor._read_run())
    finally:
        visitor.close()
    assert [run.errors for run in runs] == [[], [], []]
    assert all(run.status.endswith("SUCCESSFULLY") for run in runs)


def test_chart_selections_no_browser_sends_are_dropped_or_pick_nothing(room: serve.Room) -> None:
    """A chart's selection is JSON text Streamlit decodes, and the PRNG page's click callback
    reads: a number, a selection that is a number (both kept by the session, so its next rerun
    failed too), a point that is a number or a node name that is an empty list raised."""
    forged = (
        "5",
        '{"selection": 5}',
        '{"selection": {"points": [5], "point_indices": [], "box": [], "lasso": []}}',
        '{"selection": {"points": [{"customdata": []}], "point_indices": [0]}}',
        '{"selection": {"points": [{"customdata": {"a": 1}}], "point_indices": [0]}}',
        '{"selection": {"points": [{"customdata": ["no such node"]}], "point_indices": [0]}}',
    )
    visitor = Visitor(room.url)
    runs = []
    try:
        visitor.open("prng", "prng_tab=Key+tree")
        chart = visitor.widgets["prng_tree_chart"]
        for text in forged:
            message = BackMsg()
            message.rerun_script.page_name = "prng"
            message.rerun_script.query_string = visitor.query_string
            state = message.rerun_script.widget_states.widgets.add()
            state.id, state.string_value = chart.id, text
            visitor.send(message)
            runs.append(visitor._read_run())
            runs.append(visitor._rerun())  # the session's next rerun, with the values it kept
    finally:
        visitor.close()
    assert [run.errors for run in runs] == [[]] * len(runs)
    assert all(run.status.endswith("SUCCESSFULLY") for run in runs)


def test_an_address_of_a_thousand_parts_is_dropped_and_the_page_answers(room: serve.Room) -> None:
    """Streamlit re-encoded the whole address once per part the app dropped: 43 s and 2.3 GB."""
    visitor = Visitor(room.url)
    try:
        before = _resident_mb(room.pids[0])
        run = visitor.open("sharp-bits", "snippet=" + "x" * 400_000 + "&z=".join([""] * 998))
        grown = _resident_mb(room.pids[0]) - before
    finally:
        visitor.close()
    assert not run.errors, run.errors
    assert run.seconds < 30 and grown < 100, (run.seconds, grown)


@pytest.mark.parametrize(
    ("page_name", "key", "value"),
    [
        ("compose", "compose_preset", "no such preset"),  # KeyError in the preset's callback
        ("memory", "memory_variants", ["nope"]),  # TypeError encoding it back
        ("sharp-bits", "language", []),  # KeyError on every later run of the session
    ],
)
def test_a_choice_of_a_label_no_option_has_is_dropped(
    room: serve.Room, page_name: str, key: str, value: object
) -> None:
    """Streamlit hands an unknown label to the page as it came; each of these was an error
    page ("This app has encountered an error"), the empty language for the whole session."""
    visitor = Visitor(room.url)
    try:
        visitor.open(page_name)
        changed = visitor.change(key, value)
        again = visitor.open("sharp-bits")
    finally:
        visitor.close()
    for run in (changed, again):
        assert not run.errors, run.errors
        assert run.status.endswith("SUCCESSFULLY"), run.status


def test_a_flood_of_file_names_or_cached_hashes_costs_the_server_nothing(room: serve.Room) -> None:
    """2.4 million file names in a ``file_urls_request`` held the server 16 s and 1.1 GB; a
    million cached-message hashes in a rerun, 150 MB a message, kept after the socket closed."""
    visitor = Visitor(room.url)
    try:
        visitor.open("sharp-bits")
        before = _resident_mb(room.pids[0])
        flood = BackMsg()
        flood.file_urls_request.file_names.extend(["f"] * 1_000_000)
        visitor.send(flood)
        message = BackMsg()
        message.rerun_script.page_name = "sharp-bits"
        message.rerun_script.cached_message_hashes.extend(f"{i:x}" for i in range(1_000_000))
        visitor.send(message)
        run = visitor._read_run()
    finally:
        visitor.close()
    assert not run.errors and run.status.endswith("SUCCESSFULLY"), run
    assert _resident_mb(room.pids[0]) - before < 60
    assert _healthy(room.url)


def test_a_file_put_to_the_upload_route_is_not_kept(room: serve.Room) -> None:
    """No page takes a file, yet Streamlit's upload route stored any PUT for the session that
    asked (three of 150 MB held 452 MB after the socket closed). Now a file over 1 MB is
    refused, and one under it is dropped, not kept."""
    import requests
    from streamlit.web.server.starlette.starlette_app_utils import generate_xsrf_token_string

    visitor = Visitor(room.url)
    try:
        visitor.open("sharp-bits")
        token = generate_xsrf_token_string()
        headers = {"X-Xsrftoken": token, "Cookie": f"_streamlit_xsrf={token}; {visitor.cookie}"}
        route = f"{room.url}/_stcore/upload_file/{visitor.session_id}"
        big = requests.put(
            f"{route}/big", files={"file": ("x.bin", b"\0" * 2**21)}, headers=headers, timeout=60
        )
        assert big.status_code >= 400
        before = _resident_mb(room.pids[0])
        for i in range(40):
            small = b"\1" * (900 * 2**10)
            requests.put(f"{route}/f{i}", files={"file": ("x", small)}, headers=headers, timeout=60)
        kept = _resident_mb(room.pids[0]) - before
    finally:
        visitor.close()
    assert kept < 20, f"the server grew {kept:.0f} MB for 35 MB of files"
    assert _healthy(room.url)

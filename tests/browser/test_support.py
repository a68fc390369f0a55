"""The browser tests' own waiting: ``wait_for_run`` returns only once the script run an action
caused has finished (in Streamlit 1.67 the status widget never says "Running"), also when the
browser never showed the script running (the server's script_finished messages count)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.browser import (
    act,
    require_chromium,
    runs_done,
    streamlit_server,
    wait_for_run,
)

pytestmark = pytest.mark.browser

require_chromium()

#: A script whose run, after a click, lasts a while and then shows its result; a second run
#: follows on its own (st.rerun), as a page that fixes up its address does.
SLOW_APP = """
import time
import streamlit as st

st.title("Waiting")
runs = st.session_state.setdefault("runs", 0)
if st.button("Go", key="go"):
    time.sleep(1.5)
    st.session_state.runs = runs + 1
    st.rerun()
if runs:
    time.sleep(0.5)
    st.markdown(f"done {runs}")
"""


@pytest.fixture(scope="module")
def slow_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    script = Path(tmp_path_factory.mktemp("app")) / "slow.py"
    script.write_text(SLOW_APP)
    with streamlit_server(str(script)) as url:
        yield url


def _main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def test_wait_for_run_outlasts_the_run_a_click_caused(slow_app: str, page) -> None:
    page.goto(slow_app)
    wait_for_run(page)
    assert "done" not in _main_text(page)
    for n in (1, 2):
        act(page, lambda: page.locator(".st-key-go button").click())
        assert f"done {n}" in _main_text(page)


def test_the_websocket_messages_alone_tell_a_run_finished(slow_app: str, page) -> None:
    """A browser short of CPU can render a whole run at once, the script-state attribute never
    leaving ``notRunning``; the messages the run brought still end the wait."""
    page.goto(slow_app)
    wait_for_run(page)
    before = runs_done(page)
    assert before is not None and before["finished"] > 0  # the context's watch_runs is in place
    page.locator(".st-key-go button").click()
    # As if the attribute had never changed: only the server's script_finished can end the wait.
    wait_for_run(page, before={**before, "done": 10**9})
    assert "done" in _main_text(page)
    assert runs_done(page)["finished"] > before["finished"]


def test_exception_boxes_are_read_at_one_instant(tmp_path: Path, page) -> None:
    """What the click-through checks after every action: an exception box is found, and a page
    without one reads as clean (read in one go: a box that goes meanwhile is no wait)."""
    from tests.support.browser import exception_texts

    script = tmp_path / "boxes.py"
    script.write_text(
        "import streamlit as st\n"
        "st.error('an error alert is no exception')\n"
        "if st.button('Fail', key='fail'):\n"
        "    st.exception(ValueError('boom'))\n"
    )
    with streamlit_server(str(script)) as url:
        page.goto(url)
        wait_for_run(page)
        assert exception_texts(page) == []
        act(page, lambda: page.locator(".st-key-fail button").click())
        shown = exception_texts(page)
        assert len(shown) == 1 and "boom" in shown[0]

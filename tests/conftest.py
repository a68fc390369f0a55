"""Test setup: JAX's process settings before anything starts its backend, and shared helpers."""

from __future__ import annotations

import json
import os

os.environ.setdefault("JAXPLAY_CPU_DEVICES", "8")
# The start-up check of every claim runs them all in the background: tests/test_claims.py runs
# them one by one instead, and tests/test_claims_page.py turns the check on for its page.
os.environ.setdefault("JAXPLAY_CHECK_CLAIMS", "0")

from jaxplay.hosting import environment  # noqa: E402

environment.configure()

from collections.abc import Iterator  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402
from streamlit.runtime.pages_manager import PagesManager  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from jaxplay.hosting import catalog  # noqa: E402
from tests import postgres_support  # noqa: E402
from tests.browser_support import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

APP_TIMEOUT_S = 120


@pytest.fixture(autouse=True)
def _through_app_navigation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run pages through ``app.py``'s ``st.navigation``, as the server does.

    ``AppTest`` resets Streamlit's legacy-``pages/``-folder flag before every run, so from the
    second run on it would run ``pages/<name>.py`` on its own, without ``app.py`` (its page
    config, sidebar and link notes). The server leaves that mode for good on its first run
    (``pages/_legacy.py``); this does the same for every run of every test.
    """
    original = PagesManager.__init__

    def init(self: PagesManager, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init)


def open_page(spec: catalog.PageSpec, **session: object) -> AppTest:
    """Run ``app.py``, switch to ``spec`` and run it, as a visitor clicking its link would.

    Keyword arguments are put into ``session_state`` before the page runs (widget values by key).
    """
    at = AppTest.from_file(str(catalog.ROOT / "app.py"), default_timeout=APP_TIMEOUT_S)
    at.run()
    at.switch_page(spec.path)
    for key, value in session.items():
        at.session_state[key] = value
    at.run()
    return at


def editor(at: AppTest, key: str = "code_lab_editor") -> dict[str, Any]:
    """What the page sent to the code editor ``key`` (``pages/_editor.py``) in the last run.

    AppTest runs no JavaScript, so a custom component is opaque to it; this is the component's
    data: ``doc`` (the code the editor shows), ``revision`` and ``error_line``.
    """
    found = [e for e in at.get("bidi_component") if e.key == key]
    assert len(found) == 1, f"{len(found)} editors with key {key!r}"
    return json.loads(found[0].proto.json)


def editor_text(at: AppTest, key: str = "code_lab_editor") -> str:
    """The code the editor ``key`` shows after the last run (the browser has no edits of its own
    in an AppTest)."""
    return editor(at, key)["doc"]


def assert_clean(at: AppTest) -> None:
    """No exception element and no uncaught error on the page."""
    assert not at.exception, [e.value for e in at.exception]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    """pytest-playwright launches Debian's chromium (Playwright's own download is not possible)."""
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[postgres_support.Server]:
    """A throwaway PostgreSQL server for the session (skips without the binaries, except in CI)."""
    with postgres_support.running_server(postgres_support.require_binaries()) as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: postgres_support.Server) -> Iterator[str]:
    """A ``postgresql://`` URL whose tables live in a fresh schema, dropped after the test."""
    url = postgres_server.new_schema()
    yield url
    postgres_server.drop_schema(url)

"""One ``streamlit run app.py`` for every browser test that does not need a server of its own.

A test that checks a fresh server (a first visit, a shared link opened first), another
environment (public mode, a snippet store) or another script starts its own with
``streamlit_server``; the rest share this one (startup is about ten seconds of CPU each).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.browser import StillBrowser, streamlit_server, watch_runs


@pytest.fixture(scope="session")
def browser(browser) -> StillBrowser:
    """pytest-playwright's browser, its pages without CSS animations (see ``StillBrowser``)."""
    return StillBrowser(browser)


@pytest.fixture(scope="session")
def app_url() -> Iterator[str]:
    with streamlit_server("app.py") as url:
        yield url


@pytest.fixture
def context(context):
    """pytest-playwright's browser context, counting the app's websocket messages
    (:func:`tests.support.browser.watch_runs`) so that every wait after an action sees its run."""
    watch_runs(context)
    return context

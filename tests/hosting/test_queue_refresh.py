"""The sidebar's queue line refreshes itself only while there is a queue to watch."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from jaxplay import sandbox
from jaxplay.core import measure_lock
from jaxplay.hosting import catalog, publicmode
from tests.support.apptest import APP_TIMEOUT_S, assert_clean


def test_the_refresh_runs_only_while_something_runs_or_waits() -> None:
    assert publicmode.queue_refresh_s(None, 0) is None
    assert publicmode.queue_refresh_s({"running": 0, "queued": 0, "spares_ready": 2}, 0) is None
    refresh = publicmode.QUEUE_REFRESH_S
    assert publicmode.queue_refresh_s({"running": 1, "queued": 0}, 0) == refresh
    assert publicmode.queue_refresh_s({"running": 0, "queued": 3}, 0) == refresh
    assert publicmode.queue_refresh_s(None, 1) == refresh


@pytest.fixture
def public_app(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Public mode without bubblewrap; the runner pool is rebuilt from it and removed after."""
    sandbox.shutdown()
    monkeypatch.setenv("JAXPLAY_PUBLIC", "1")
    monkeypatch.setenv("JAXPLAY_SANDBOX", "process")
    try:
        yield
    finally:
        sandbox.shutdown()
        measure_lock.set_throttle(None)


@pytest.mark.parametrize("waiting", [0, 2])
def test_the_sidebar_shows_the_queues_idle_or_busy(
    public_app: None, monkeypatch: pytest.MonkeyPatch, waiting: int
) -> None:
    """Both ways of drawing the line (once, or as a refreshing fragment) show the same text."""
    monkeypatch.setattr(measure_lock, "waiting_count", lambda: waiting)
    at = AppTest.from_file(str(catalog.ROOT / "app.py"), default_timeout=APP_TIMEOUT_S)
    at.run()
    assert_clean(at)
    sidebar = " ".join(c.value for c in at.sidebar.caption)
    assert "Public server" in sidebar
    assert f"measurements waiting: {waiting}" in sidebar

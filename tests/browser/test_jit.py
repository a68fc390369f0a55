"""The jit page in a real browser: its measurement shows its stages while it runs, and a refused
input leaves nothing of the previous result on the page (only a browser shows stale elements)."""

from __future__ import annotations

import pytest

from tests.support.browser import exception_texts, require_chromium

pytestmark = pytest.mark.browser

require_chromium()

RUN_MS = 180_000
#: Streamlit's app element says whether the script is running (the load test reads it too).
IDLE = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return !!app && app.getAttribute('data-test-script-state') === 'notRunning';
}"""


def _idle(page) -> None:
    page.wait_for_timeout(500)
    page.wait_for_function(IDLE, timeout=RUN_MS)


def test_the_measurement_shows_its_stages_then_a_refusal_clears_it(app_url: str, page) -> None:
    page.set_viewport_size({"width": 1024, "height": 768})
    # A size nobody measured yet in this server: its stages are measured while we watch.
    page.goto(
        f"{app_url}/jit?jit_preset=Your+formula&jit_formula=x+%40+x.T&jit_rows=1500&jit_cols=400"
    )
    stage = page.get_by_text("Measuring:", exact=False).first
    stage.wait_for(timeout=RUN_MS)  # the status box names the stage while it runs
    page.locator('[data-testid="stProgress"]').first.wait_for(timeout=RUN_MS)
    page.get_by_text("Measured on", exact=False).first.wait_for(timeout=RUN_MS)
    _idle(page)
    assert page.get_by_text("What XLA compiled", exact=False).count()
    assert not exception_texts(page)

    # x @ x.T of a tall x: a 10**10-element result, refused before anything runs.
    rows = page.get_by_label("rows")
    rows.fill("100000")
    rows.press("Enter")
    page.get_by_text("the limit is", exact=False).first.wait_for(timeout=RUN_MS)
    _idle(page)
    assert not page.get_by_text("What XLA compiled", exact=False).count()
    assert not page.get_by_text("Measured on", exact=False).count()
    assert not page.locator('[data-testid="stPlotlyChart"]').count()
    assert not exception_texts(page)

"""A public server against hostile links, in a real browser.

One crafted link posted in a workshop chat took the first public build down for everyone: the
health check did not answer for 90 s and another visitor's page took 111 s. Here the server runs
in public mode; one visitor opens the costliest formula link while the health endpoint is polled
and a second visitor opens a page: the health check must answer within 2 s, and the page within
2 s more than it takes while the same page is opened without the link's settings. Then every
Markdown payload is opened and no attacker image or link may appear in the page.
"""

from __future__ import annotations

import threading
import time
import urllib.request

import pytest

from jaxplay.hosting.hostile_links import HEAVY_LINKS, MARKDOWN_LINKS
from tests.support.browser import require_chromium, streamlit_server, wait_for_run

pytestmark = pytest.mark.browser

require_chromium()

#: The health check answers within this; a second visitor's page loads within this more than it
#: takes on this machine without the hostile link (a fresh browser page's own load, measured first:
#: on two busy cores that alone is one to three seconds).
RESPONSIVE_S = 2.0


def _home_load_s(browser, base: str) -> float:
    """Seconds a fresh browser page takes to show the home page's title."""
    page = browser.new_page()
    try:
        started = time.monotonic()
        page.goto(base + "/")
        page.locator("h1").filter(has_text="jaxplay").wait_for(timeout=30_000)
        return time.monotonic() - started
    finally:
        page.close()


@pytest.fixture(scope="module")
def public_url():
    env = {"JAXPLAY_PUBLIC": "1", "JAXPLAY_RUNNER_SPARES": "1"}
    with streamlit_server("app.py", env=env) as url:
        yield url


def _health_latencies(base: str, stop: threading.Event, out: list[float]) -> None:
    while not stop.is_set():
        started = time.monotonic()
        try:
            with urllib.request.urlopen(base + "/_stcore/health", timeout=60) as response:
                response.read()
        except OSError:
            pass
        out.append(time.monotonic() - started)
        stop.wait(0.1)


def _home_load_beside(browser, base: str, link: str) -> tuple[float, list[float]]:
    """Seconds the home page takes while another visitor opens ``link``, and the health
    endpoint's latencies meanwhile."""
    latencies: list[float] = []
    stop = threading.Event()
    poller = threading.Thread(target=_health_latencies, args=(base, stop, latencies))
    poller.start()
    other = browser.new_page()
    try:
        other.goto(base + link)
        time.sleep(1.0)  # the link is being handled
        home_s = _home_load_s(browser, base)
        wait_for_run(other, timeout_ms=120_000)
    finally:
        stop.set()
        poller.join()
        other.close()
    return home_s, latencies


@pytest.mark.quiet  # the bystander's times are the server's, not another test's load
@pytest.mark.timeout(600)  # waiting for the other workers' tests to end counts too
@pytest.mark.parametrize("name,link", HEAVY_LINKS, ids=[n for n, _ in HEAVY_LINKS])
def test_a_heavy_link_leaves_the_server_responsive(public_url: str, browser, name, link) -> None:
    """The control is the same page opened without the link's settings: a second chromium
    page drawing the jit page's charts costs the two cores time on its own, which is not what
    the link does to the server."""
    warm = browser.new_page()
    try:
        warm.goto(public_url + "/")
        wait_for_run(warm)
        control_s, _ = _home_load_beside(browser, public_url, link.split("?")[0])
        second_visitor_s, latencies = _home_load_beside(browser, public_url, link)
    finally:
        warm.close()
    assert max(latencies) <= RESPONSIVE_S, (name, max(latencies))
    assert second_visitor_s <= control_s + RESPONSIVE_S, (name, second_visitor_s, control_s)


@pytest.mark.parametrize("name,link", MARKDOWN_LINKS, ids=[n for n, _ in MARKDOWN_LINKS])
def test_markdown_in_a_link_shows_as_text(public_url: str, browser, name, link) -> None:
    page = browser.new_page()
    try:
        page.goto(public_url + link)
        wait_for_run(page)
        page.wait_for_timeout(500)
        main = page.locator('[data-testid="stMain"]')
        assert main.locator('img[src*="127.0.0.1:9"]').count() == 0, name
        assert main.locator('a[href*="127.0.0.1:9"]').count() == 0, name
        assert "127.0.0.1:9" in main.inner_text(), f"{name}: the payload is not shown as text"
    finally:
        page.close()

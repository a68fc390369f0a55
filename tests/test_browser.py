"""Real-browser smoke tests: headless chromium against `streamlit run app.py`.

Every registered page must load, show its title and show no Streamlit exception box. A
screenshot of each page is kept in a temporary folder whose path a failure message names.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from jaxplay.hosting import catalog
from tests.browser_support import (
    exception_texts,
    require_chromium,
    streamlit_server,
    wait_for_run,
)

pytestmark = pytest.mark.browser

require_chromium()

SHOTS = Path(tempfile.mkdtemp(prefix="jaxplay-screens-"))


@pytest.fixture(scope="module")
def app_url():
    with streamlit_server("app.py") as url:
        yield url


def _url(base: str, spec: catalog.PageSpec) -> str:
    return base + "/" if spec is catalog.HOME else f"{base}/{spec.url_path}"


@pytest.mark.parametrize("spec", catalog.PAGES, ids=lambda s: s.url_path)
def test_page_loads_in_chromium(app_url: str, page, spec: catalog.PageSpec) -> None:  # noqa: ANN001
    page.goto(_url(app_url, spec))
    wait_for_run(page)
    shot = SHOTS / f"{spec.url_path}.png"
    page.screenshot(path=str(shot), full_page=True)
    title = page.locator("h1").first.inner_text(timeout=30_000)
    expected = "jaxplay" if spec is catalog.HOME else spec.title
    assert expected.lower() in title.lower(), f"title {title!r}; screenshot: {shot}"
    errors = exception_texts(page)
    assert not errors, f"{spec.path} shows an exception: {errors}; screenshot: {shot}"


@pytest.mark.parametrize(
    "url_path",
    # A page whose file name is its address, and one whose is not (code_lab.py vs /code-lab).
    [p.url_path for p in catalog.TOPICS if p.url_path in {"jit", "code-lab"}],
)
def test_first_visit_by_a_shared_link_gets_the_app(page, url_path: str) -> None:  # noqa: ANN001
    """A fresh server whose first visitor opens a deep link still runs app.py's navigation.

    Streamlit starts in its legacy ``pages/`` mode; without pages/_ui's switch the page would
    run alone: legacy file-list navigation and JAX without the simulated devices.
    """
    spec = catalog.find(url_path)
    query = {"jit": "jit_rows=2000", "code-lab": "code_lab_dtype=int32"}[url_path]
    with streamlit_server("app.py") as url:
        page.goto(f"{_url(url, spec)}?{query}")
        wait_for_run(page)
        page.locator("h1").filter(has_text=spec.title).first.wait_for(timeout=60_000)
        shot = SHOTS / f"deep-link-first-{url_path}.png"
        page.screenshot(path=str(shot), full_page=True)
        nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
        assert "_ui" not in nav and "ui\n" not in nav, f"legacy navigation; screenshot: {shot}"
        for other in catalog.PAGES:
            assert other.title in nav, f"{other.title} missing from navigation; screenshot: {shot}"
        assert "8 devices" in page.locator('[data-testid="stSidebar"]').inner_text()
        assert page.url.split("?")[0].endswith(f"/{url_path}"), page.url
        assert query in page.url, f"the link's settings were lost: {page.url}"


def test_detector_catches_a_raising_page(page) -> None:  # noqa: ANN001
    """The check above can fail: on a page that raises, it finds the exception box."""
    with streamlit_server("tests/fixtures/broken_app.py") as url:
        page.goto(url + "/")
        wait_for_run(page)
        page.screenshot(path=str(SHOTS / "broken.png"), full_page=True)
        assert exception_texts(page), f"no exception box found; screenshot: {SHOTS / 'broken.png'}"

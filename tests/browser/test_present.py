"""Projector-ready: every page at 1024×768 with the browser at 150% zoom, in present mode.

Browser zoom is emulated as the browser does it: at 150% a 1024×768 window lays the page out in
a 683×512 CSS-pixel viewport and draws each CSS pixel as 1.5 device pixels. So the pages open in
a 683×512 viewport with ``device_scale_factor=1.5``; each screenshot is the 1024×768 pixels a
projector shows. (A 1024×768 viewport at scale 1.5 would lay the page out 1024 CSS pixels wide,
as at 100% zoom, only sharper; CSS ``zoom`` on the page would leave media queries and Streamlit's
own width measurements at 1024.)

On every registered page (parametrized over the catalog), opened with ``?present=1`` and without
it: every tab of a tab row in view without scrolling the row, no text is clipped horizontally (an
element narrower than its text that hides the rest, a
select box too narrow for its choice, or text running past the right edge of the window outside
any scrolling box; a code block or table that scrolls is fine), chart text is at least 10 CSS
pixels, and nothing is fetched from another host (the tab icon included). On the Code Lab the
Run button is in view without scrolling, in present mode and without it. The sidebar stays
collapsed across pages, and present mode starts collapsed and survives the navigation.

Screenshots go to a temporary folder (named in failures); with ``JAXPLAY_UPDATE_SCREENS=1`` those
in present mode go to ``docs/screens/<address>.png`` for the README.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from PIL import Image

from jaxplay.hosting import catalog
from tests.support.browser import (
    ROOT,
    act,
    exception_texts,
    require_chromium,
    wait_for_run,
    watch_runs,
)
from tests.support.browser import (
    screenshot as window_png,
)

pytestmark = pytest.mark.browser

require_chromium()

ZOOMED = {"viewport": {"width": 683, "height": 512}, "device_scale_factor": 1.5}
TEMP = Path(tempfile.mkdtemp(prefix="jaxplay-present-"))
SHOTS = ROOT / "docs" / "screens" if os.environ.get("JAXPLAY_UPDATE_SCREENS") == "1" else TEMP
#: A cold server's first run of a page computes everything it shows, on a busy machine.
RUN_MS = 240_000

#: Text clipped horizontally in the main area: (where, text, widths) for each case found.
CLIPPED_JS = """() => {
    const main = document.querySelector('[data-testid="stMain"]');
    const right = document.documentElement.clientWidth;
    const scrolls = (el) => {
        for (let a = el.parentElement; a && a !== main; a = a.parentElement) {
            const x = getComputedStyle(a).overflowX;
            if (x === 'auto' || x === 'scroll') return true;
        }
        return false;
    };
    const hasText = (el) => [...el.childNodes].some(
        (n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim());
    const where = (el) => {
        const t = el.closest('[data-testid]');
        return el.tagName.toLowerCase() + (t ? ' in ' + t.getAttribute('data-testid') : '');
    };
    const found = [];
    for (const el of main.querySelectorAll('*')) {
        if (!el.getClientRects().length) continue;  // not displayed (a closed tab, an expander)
        const style = getComputedStyle(el);
        if (style.visibility === 'hidden') continue;
        if (el.tagName === 'INPUT' && el.getAttribute('role') === 'combobox') {
            // A select box shows its choice in an input: cut off if wider than the box.
            if (el.value && el.scrollWidth > el.clientWidth + 1) {
                const widths = `${el.scrollWidth} > ${el.clientWidth}`;
                found.push([where(el), el.value.slice(0, 80), widths]);
            }
            continue;
        }
        const text = (el.innerText || el.textContent || '').trim();
        if (!text) continue;
        const hides = ['hidden', 'clip'].includes(style.overflowX);
        if (hides && el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0) {
            found.push([where(el), text.slice(0, 80), `${el.scrollWidth} > ${el.clientWidth}`]);
        } else if (hasText(el) && el.getBoundingClientRect().right > right + 1 && !scrolls(el)) {
            const r = el.getBoundingClientRect();
            const edge = `right edge ${Math.round(r.right)} > ${right}`;
            found.push([where(el), text.slice(0, 80), edge]);
        }
    }
    return found;
}"""

#: Font sizes (CSS px) of chart text smaller than 10 px: [text, size].
SMALL_CHART_TEXT_JS = """() => [
        ...document.querySelectorAll('[data-testid="stMain"] .main-svg text')]
    .filter((t) => t.textContent.trim() && t.getClientRects().length)
    .map((t) => [t.textContent.trim().slice(0, 30), parseFloat(getComputedStyle(t).fontSize)])
    .filter(([, size]) => size < 10)"""


@pytest.fixture
def zoomed(browser):
    context = browser.new_context(**ZOOMED)
    watch_runs(context)
    page = context.new_page()
    foreign: list[str] = []
    page.on("request", lambda r: foreign.append(r.url) if _foreign(r.url) else None)
    page.foreign = foreign
    yield page
    context.close()


def _foreign(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https", "ws", "wss") and parts.hostname != "127.0.0.1"


def _address(base: str, spec: catalog.PageSpec, query: str = "") -> str:
    return (base + "/" if spec is catalog.HOME else f"{base}/{spec.url_path}") + query


def screenshot(page, name: str) -> Path:
    """What the projector shows (the window, not the whole page), as a small palette PNG; only
    present mode's go to the README's folder."""
    folder = TEMP if name.startswith("plain-") else SHOTS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    image = Image.open(io.BytesIO(window_png(page))).convert("RGB")
    image.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    return path


#: Tabs a visitor cannot see without scrolling the tab row: (tab label, its right edge, the row's).
HIDDEN_TABS_JS = """() => {
    const found = [];
    for (const row of document.querySelectorAll('[data-testid="stTabs"] [role="tablist"]')) {
        if (!row.getClientRects().length) continue;  // a closed tab's inner tabs
        const edge = row.getBoundingClientRect().right;
        for (const tab of row.querySelectorAll('[role="tab"]')) {
            const right = tab.getBoundingClientRect().right;
            if (right > edge + 1) found.push([tab.innerText, Math.round(right), Math.round(edge)]);
        }
    }
    return found;
}"""


@pytest.mark.parametrize("present", [True, False], ids=["present", "plain"])
@pytest.mark.parametrize("spec", catalog.PAGES, ids=lambda s: s.url_path)
def test_no_text_is_clipped(app_url: str, zoomed, spec: catalog.PageSpec, present: bool) -> None:
    """In present mode (screenshot kept) and without it, at 150% zoom: the page loads, shows
    its title and no exception box (the click-through opens every page at a desktop's size)."""
    page = zoomed
    page.goto(_address(app_url, spec, "?present=1" if present else ""))
    wait_for_run(page, RUN_MS)
    page.mouse.move(0, 0)  # no caption unfolded under the pointer
    shot = screenshot(page, spec.url_path if present else f"plain-{spec.url_path}")
    assert not exception_texts(page), f"{exception_texts(page)}; screenshot: {shot}"
    title = page.locator("h1").first.inner_text(timeout=30_000)
    expected = "jaxplay" if spec is catalog.HOME else spec.title
    assert expected.lower() in title.lower(), f"title {title!r}; screenshot: {shot}"
    font = page.evaluate("getComputedStyle(document.documentElement).fontSize")
    assert font == ("20px" if present else "16px")
    assert ("present=1" in page.url) == present
    clipped = page.evaluate(CLIPPED_JS)
    assert not clipped, f"clipped text on {spec.url_path}: {clipped}; screenshot: {shot}"
    hidden = page.evaluate(HIDDEN_TABS_JS)
    assert not hidden, f"tabs past the end of their row on {spec.url_path}: {hidden}; {shot}"
    small = page.evaluate(SMALL_CHART_TEXT_JS)
    assert not small, f"chart text under 10 px on {spec.url_path}: {small}; screenshot: {shot}"
    assert not page.foreign, page.foreign
    icon = page.locator('link[rel~="icon"]').first.get_attribute("href") or ""
    assert icon.startswith("data:image/svg+xml"), icon[:80]


@pytest.mark.parametrize("query", ["", "?present=1"])
def test_the_code_labs_run_is_in_view(app_url: str, zoomed, query: str) -> None:
    page = zoomed
    page.goto(_address(app_url, catalog.find("code-lab"), query))
    wait_for_run(page, RUN_MS)
    run = page.locator(".st-key-code_lab_run button")
    box = run.bounding_box()
    assert box is not None and box["y"] + box["height"] <= ZOOMED["viewport"]["height"], box


def _sidebar_open(page) -> bool:
    return page.evaluate(
        """() => {
            const s = document.querySelector('[data-testid="stSidebar"]');
            return !!s && s.getBoundingClientRect().right > 0;
        }"""
    )


@pytest.mark.quiet  # a page change under another worker's load once outwaited its timeout
@pytest.mark.timeout(600)
def test_the_sidebar_stays_collapsed_across_pages(app_url: str, browser) -> None:
    # At 100% zoom on a 1024 px wide window the sidebar starts open: collapse it, change page.
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    watch_runs(context)
    page = context.new_page()
    try:
        page.goto(_address(app_url, catalog.HOME))
        wait_for_run(page, RUN_MS)
        assert _sidebar_open(page)
        page.locator('[data-testid="stSidebar"]').hover()
        page.locator('button[aria-label="Collapse sidebar"]').click()
        page.wait_for_function(
            "() => !document.querySelector('[data-testid=stSidebar]') || "
            "document.querySelector('[data-testid=stSidebar]')"
            ".getBoundingClientRect().right <= 0"
        )
        for spec in (catalog.find("prng"), catalog.find("code-lab")):
            # A topic card on the home page (back to it through the browser's history).
            link = page.locator(f'[data-testid="stMain"] a[href="{spec.url_path}"] >> visible=true')
            act(page, lambda link=link: link.first.click(), RUN_MS)
            assert urlsplit(page.url).path.endswith(spec.url_path)
            assert not _sidebar_open(page), spec.url_path
            act(page, page.go_back, RUN_MS)
            assert not _sidebar_open(page), "home"
    finally:
        context.close()


def test_present_mode_starts_collapsed_and_survives_the_navigation(app_url: str, zoomed) -> None:
    page = zoomed
    page.goto(_address(app_url, catalog.HOME, "?present=1"))
    wait_for_run(page, RUN_MS)
    assert not _sidebar_open(page)
    page.locator('button[aria-label="Expand sidebar"]').click()
    nav = page.locator('[data-testid="stSidebarNav"] a[href$="prng"]')
    act(page, lambda: nav.first.click(), RUN_MS)
    assert urlsplit(page.url).path.endswith("/prng") and "present=1" in page.url
    assert page.evaluate("getComputedStyle(document.documentElement).fontSize") == "20px"

"""The app in Chinese in a real browser: the glyphs render (Debian's ``fonts-noto-cjk``), present
mode at 1024×768 and 150% zoom clips no Chinese label, ``?lang=`` and the sidebar's switch
survive page changes, the browser's own language is the default, and two visitors read two
languages at once.

Screenshots of the translated pages in present mode go to a temporary folder (named in
failures); with ``JAXPLAY_UPDATE_SCREENS=1`` to ``docs/screens/zh/<address>.png`` for the README.
"""

from __future__ import annotations

import io
import os
from urllib.parse import parse_qs, urlsplit

import pytest
from PIL import Image

from jaxplay.hosting import catalog
from tests.browser import test_present
from tests.pages.test_languages import TRANSLATED
from tests.support.browser import (
    ROOT,
    act,
    exception_texts,
    require_chromium,
    screenshot,
    wait_for_run,
    watch_runs,
)

pytestmark = pytest.mark.browser

require_chromium()

SHOTS = (
    ROOT / "docs" / "screens" / "zh"
    if os.environ.get("JAXPLAY_UPDATE_SCREENS") == "1"
    else test_present.TEMP / "zh"
)
RUN_MS = test_present.RUN_MS

#: Whether the page's font draws a Chinese character as a glyph: a missing one is drawn as the
#: same box as a private-use character (which no font here has), so the two images would match.
GLYPHS_JS = """() => {
    const font = getComputedStyle(document.querySelector('[data-testid="stMain"]')).font;
    const draw = (text) => {
        const canvas = document.createElement('canvas');
        canvas.width = 64; canvas.height = 64;
        const g = canvas.getContext('2d');
        g.font = font.replace(/\\d+(\\.\\d+)?px/, '40px');
        g.fillText(text, 4, 48);
        return Array.from(g.getImageData(0, 0, 64, 64).data).join(',');
    };
    return draw('演') !== draw('\\uE000') && draw('演') !== draw('示');
}"""


def _lang(url: str) -> list[str]:
    return parse_qs(urlsplit(url).query).get("lang", [])


@pytest.mark.parametrize("url_path", TRANSLATED)
def test_a_translated_page_in_present_mode_renders_chinese_unclipped(app_url, zoomed, url_path):
    page = zoomed
    spec = catalog.find(url_path)
    page.goto(test_present._address(app_url, spec, "?present=1&lang=zh"))
    wait_for_run(page, RUN_MS)
    page.mouse.move(0, 0)
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / f"{url_path}.png"
    image = Image.open(io.BytesIO(screenshot(page))).convert("RGB")
    image.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(shot, optimize=True)
    assert not exception_texts(page), f"{exception_texts(page)}; screenshot: {shot}"
    assert page.evaluate(GLYPHS_JS), f"Chinese drawn without a Chinese font; screenshot: {shot}"
    clipped = page.evaluate(test_present.CLIPPED_JS)
    assert not clipped, f"clipped text on {url_path}: {clipped}; screenshot: {shot}"
    hidden = page.evaluate(test_present.HIDDEN_TABS_JS)
    assert not hidden, f"tabs past the end of their row on {url_path}: {hidden}; {shot}"
    assert _lang(page.url) == ["zh"] and "present=1" in page.url


@pytest.fixture
def zoomed(browser):
    context = browser.new_context(**test_present.ZOOMED)
    watch_runs(context)
    page = context.new_page()
    yield page
    context.close()


def test_the_language_survives_page_changes_and_the_switch_changes_it(app_url, page):
    page.goto(f"{app_url}/?lang=zh")
    wait_for_run(page, RUN_MS)
    assert "演示模式" in page.locator('[data-testid="stSidebar"]').inner_text()
    nav = page.locator('[data-testid="stSidebarNav"] a[href$="sharp-bits"]')
    act(page, lambda: nav.first.click(), RUN_MS)
    assert urlsplit(page.url).path.endswith("/sharp-bits") and _lang(page.url) == ["zh"]
    assert "演示模式" in page.locator('[data-testid="stSidebar"]').inner_text()
    english = page.locator('[data-testid="stSidebar"] button:has-text("English")')
    act(page, lambda: english.first.click(), RUN_MS)
    assert "Present mode" in page.locator('[data-testid="stSidebar"]').inner_text()
    assert _lang(page.url) == ["en"]
    # A link the app made (a home card) keeps the language in a new tab.
    act(page, lambda: page.goto(f"{app_url}/?lang=zh"), RUN_MS)
    card = page.locator('[data-testid="stMain"] a[href^="prng"]').first
    assert "lang=zh" in (card.get_attribute("href") or "")


def test_the_browsers_language_is_the_default(app_url, browser):
    context = browser.new_context(locale="zh-CN")
    watch_runs(context)
    page = context.new_page()
    try:
        page.goto(f"{app_url}/")
        wait_for_run(page, RUN_MS)
        assert "演示模式" in page.locator('[data-testid="stSidebar"]').inner_text()
        assert _lang(page.url) == ["zh"]
    finally:
        context.close()


def test_two_visitors_read_two_languages_at_once(app_url, browser):
    contexts = [browser.new_context(locale="en-US") for _ in range(2)]
    try:
        pages = []
        for context, lang in zip(contexts, ("zh", "en"), strict=True):
            watch_runs(context)
            page = context.new_page()
            page.goto(f"{app_url}/?lang={lang}", wait_until="commit")  # both load at once
            pages.append(page)
        for page in pages:
            wait_for_run(page, RUN_MS)
        zh, en = (p.locator('[data-testid="stSidebar"]').inner_text() for p in pages)
        assert "演示模式" in zh and "Present mode" not in zh
        assert "Present mode" in en and "演示模式" not in en
    finally:
        for context in contexts:
            context.close()


def test_screens_folder_is_linked_from_the_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for url_path in TRANSLATED:
        assert f"docs/screens/zh/{url_path}.png" in readme
        assert (ROOT / "docs" / "screens" / "zh" / f"{url_path}.png").exists()

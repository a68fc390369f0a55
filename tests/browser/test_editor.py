"""The Code Lab's editor in a real chromium: typing with Tab and auto-indent, Ctrl+Enter runs,
a failed run marks its line, and the editor loads nothing from other sites.

One server for the module; each test opens /code-lab in a fresh page (a fresh session).
Screenshots go to a temporary folder that failure messages name.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.support.browser import (
    exception_texts,
    require_chromium,
    screenshot,
    wait_for_run,
)

pytestmark = pytest.mark.browser

require_chromium()

SHOTS = Path(tempfile.mkdtemp(prefix="jaxplay-editor-"))
RUN_TIMEOUT_MS = 90_000


@pytest.fixture
def browser_context_args(browser_context_args: dict) -> dict:
    """The smallest screen the Code Lab is laid out for."""
    return {**browser_context_args, "viewport": {"width": 1024, "height": 768}}


def _open(page, url: str) -> None:
    page.goto(f"{url}/code-lab")
    wait_for_run(page)
    page.locator(".cm-content").wait_for(timeout=60_000)
    # A fresh load of /code-lab (not of /code_lab, the file's name) gets Streamlit's "Page not
    # found" notice over the right page; close it so the page takes clicks.
    notice = page.get_by_role("dialog").filter(has_text="Page not found")
    if notice.count():
        page.keyboard.press("Escape")
        notice.wait_for(state="hidden", timeout=10_000)


def _lines(page) -> list[str]:
    return page.locator(".cm-line").all_text_contents()


def _focused(page) -> bool:
    return "cm-focused" in (page.locator(".cm-editor").get_attribute("class") or "")


def _printed(page, text: str, shot: str) -> None:
    """Wait for a code block showing ``text`` (the run's printed output or its error)."""
    block = page.locator('[data-testid="stCode"]').filter(has_text=text)
    try:
        block.first.wait_for(timeout=RUN_TIMEOUT_MS)
    finally:
        screenshot(page, path=str(SHOTS / f"{shot}.png"))
    assert not exception_texts(page), f"exception; screenshot: {SHOTS / shot}.png"


def test_type_with_tab_and_auto_indent_then_ctrl_enter_runs(app_url: str, page) -> None:
    _open(page, app_url)
    run = page.get_by_role("button", name="Run")
    box = run.bounding_box()
    assert box and box["y"] + box["height"] <= 768, f"Run is below the fold at 1024x768: {box}"

    page.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    for line in ["def total(n):", "s = 0", "for i in range(n):"]:
        page.keyboard.type(line)
        page.keyboard.press("Enter")
    # Enter indents: one level in the def's body, two after the for's colon.
    assert _lines(page) == ["def total(n):", "    s = 0", "    for i in range(n):", " " * 8]
    # Shift-Tab dedents and Tab indents the line; the focus stays in the editor.
    page.keyboard.press("Shift+Tab")
    assert _lines(page)[-1] == " " * 4
    page.keyboard.press("Tab")
    assert _lines(page)[-1] == " " * 8
    assert _focused(page), "Tab moved the focus out of the editor"
    page.keyboard.type("s += i")
    page.keyboard.press("Enter")
    page.keyboard.press("Shift+Tab")
    page.keyboard.type("return s")
    page.keyboard.press("Enter")
    page.keyboard.press("Shift+Tab")
    page.keyboard.type('print("total", total(5))  # ' + "a long line " * 12)
    assert _lines(page)[:-1] == [
        "def total(n):",
        "    s = 0",
        "    for i in range(n):",
        "        s += i",
        "    return s",
    ]
    # No wrapping: the long line stays one line, and the editor scrolls sideways instead.
    heights = [
        b["height"]
        for b in page.locator(".cm-line").evaluate_all(
            "lines => lines.map(l => l.getBoundingClientRect().toJSON())"
        )
    ]
    assert max(heights) < 1.5 * min(heights), heights
    assert page.locator(".cm-scroller").evaluate("s => s.scrollWidth > s.clientWidth")

    page.keyboard.press("Control+Enter")
    _printed(page, "total 10", "ctrl-enter")

    # Escape, then Tab, leaves the editor (CodeMirror's way out of a Tab-capturing editor).
    page.locator(".cm-content").click()
    assert _focused(page)
    expect(page.locator(".cm-content")).to_be_focused()  # the check below can see the focus
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    # The focus moves at once; CodeMirror redraws its "focused" class a moment later (a timer),
    # so wait for the editable element to lose the focus rather than read the class.
    expect(page.locator(".cm-content")).not_to_be_focused(timeout=5_000)


def test_a_failed_run_marks_its_line(app_url: str, page) -> None:
    _open(page, app_url)
    page.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.type("x = 1\ny = 2\nraise ValueError('boom')\nz = 3")
    # Run at once, right after the last keystroke: the editor hands its text over on the way.
    page.get_by_role("button", name="Run").click()
    _printed(page, "ValueError: boom", "error-line")
    marked = page.locator(".cm-errorLine")
    marked.first.wait_for(timeout=30_000)
    assert marked.all_text_contents() == ["raise ValueError('boom')"]
    marker = page.locator(".cm-errorGutter .cm-gutterElement:visible").filter(has_text="●")
    assert marker.count() == 1
    line_box, marker_box = marked.bounding_box(), marker.bounding_box()
    assert line_box and marker_box
    assert abs(line_box["y"] - marker_box["y"]) < 3, (line_box, marker_box)

    # In long code, the editor scrolls itself to the marked line (the cursor was at the end).
    page.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    code = [f"a{i} = {i}" for i in range(60)]
    code[4] = "raise KeyError('far up')"
    page.keyboard.insert_text("\n".join(code))
    page.get_by_role("button", name="Run").click()
    _printed(page, "KeyError: 'far up'", "error-line-scrolled")
    marked.first.wait_for(timeout=30_000)
    scroller = page.locator(".cm-scroller").bounding_box()
    line_box = marked.bounding_box()
    assert scroller and line_box
    assert scroller["y"] <= line_box["y"] <= scroller["y"] + scroller["height"] - line_box["height"]


def test_the_editor_loads_nothing_from_other_sites(app_url: str, page) -> None:
    requests: list[tuple[str, str]] = []
    page.on("request", lambda r: requests.append((r.resource_type, r.url)))
    _open(page, app_url)
    page.locator(".cm-content").click()
    page.keyboard.type("# typed\n")
    screenshot(page, path=str(SHOTS / "offline.png"))
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(app_url))
    foreign = [
        (kind, url)
        for kind, url in requests
        if not url.startswith((origin + "/", "blob:", "data:"))
        # app.py's page icon (:material/bolt:) is Streamlit's favicon lookup, not the editor.
        and not url.startswith("https://fonts.gstatic.com/s/i/short-term/release/materialsymbols")
    ]
    assert not foreign, f"requests to other sites: {foreign}"
    # The editor is there, with its theme (CodeMirror adds its styles itself, in the page).
    assert page.locator(".cm-editor").count() == 1
    font = page.locator(".cm-scroller").evaluate("s => getComputedStyle(s).fontFamily")
    assert "Source Code Pro" in font or "monospace" in font, font

"""Two visitors, one after the other, open every page and every tab and press every action button.

The second visitor is the point: Streamlit replays a cached function's elements for the next
caller, so a cached function that draws (a progress bar handed in) works for the first visitor
and crashes the page of everyone after ("This app has encountered an error"). Per page
(parametrized over the catalog, so a new page is toured too), the first visitor, in a fresh
chromium session, opens it; opens every tab (and the tabs a tab reveals); and presses each
``st.button`` of the main area that is in view and enabled, discovered from the page (its key is
the element's ``st-key-`` class), never the navigation or links. After every step: no exception
box and no error page. A button that opened another page is followed there and checked, then
the tour returns.

The second visitor takes the same path, step by step, speaking Streamlit's own websocket
protocol (:class:`pages._visitor.Visitor`, a room's virtual visitor): what is replayed for it is
the server's, the browser only draws the same elements again, and a browser doing so cost about
half of this file's time. After every step: no exception element, no page not found.

Bounded: a button that does the same as one already pressed (the same label and the same key but
for its last part, e.g. ``walkthrough_run_<example>``) is skipped, and at most
:data:`MAX_PRESSES` buttons are pressed per page.
"""

from __future__ import annotations

from pages._visitor import ProtocolError, Visitor

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from jaxplay.hosting import catalog
from tests.support.browser import (
    act,
    exception_texts,
    require_chromium,
    streamlit_server,
    wait_for_run,
    watch_runs,
)

pytestmark = pytest.mark.browser

require_chromium()

MAX_PRESSES = 10
#: A measurement on a busy two-core machine, a cold page: give each step time.
STEP_MS = 240_000
ERROR_PAGE = "This app has encountered an error"

#: The buttons of the main area in view and enabled: [key, label].
BUTTONS_JS = """() => [...document.querySelectorAll(
        '[data-testid="stMain"] [data-testid="stButton"] button')]
    .filter((b) => b.getClientRects().length && !b.disabled)
    .map((b) => {
        const box = b.closest('[class*="st-key-"]');
        const cls = box && [...box.classList].find((c) => c.startsWith('st-key-'));
        const text = b.querySelector('[data-testid="stMarkdownContainer"]') || b;
        return [cls ? cls.slice(7) : null, text.innerText.trim()];
    })
    .filter(([key]) => key)"""

#: The tabs of the main area in view: [label, selected].
TABS_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] [role="tab"]')]
    .filter((t) => t.getClientRects().length)
    .map((t) => [t.innerText.trim(), t.getAttribute('aria-selected') === 'true'])"""


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = Path(tmp_path_factory.mktemp("snippets")) / "snippets.sqlite3"
    with streamlit_server("app.py", env={"JAXPLAY_SNIPPET_DB": str(store)}) as url:
        yield url


def _address(base: str, spec: catalog.PageSpec) -> str:
    return base + "/" if spec is catalog.HOME else f"{base}/{spec.url_path}"


class Tour:
    """One visitor's tour of one page; ``failures`` says what broke, and after what."""

    def __init__(self, page, address: str, visitor: str) -> None:
        self.page, self.address, self.visitor = page, address, visitor
        self.failures: list[str] = []
        self.pressed: set[tuple[str, str]] = set()
        self.log: list[str] = []
        #: The path taken, for the next visitor: (the address, the button pressed there or None
        #: for a view opened).
        self.steps: list[tuple[str, str | None]] = []

    def broken(self, after: str) -> bool:
        """Record (and say) whether the page shows an exception box or the error page."""
        boxes = exception_texts(self.page)
        main = self.page.locator('[data-testid="stApp"]').inner_text()
        if boxes or ERROR_PAGE in main:
            shown = boxes or [ERROR_PAGE]
            self.failures.append(f"{self.visitor}, after {after}: {shown}")
            return True
        return False

    def open(self, tabs: tuple[str, ...]) -> bool:
        """The page as opened, then ``tabs`` clicked in order; False if that broke it."""
        self.page.goto(self.address)
        wait_for_run(self.page, STEP_MS)
        self.steps.append((self.page.url, None))
        if self.broken("opening the page"):
            return False
        return all(self.open_tab(tab) for tab in tabs)

    def open_tab(self, label: str) -> bool:
        """Click the tab ``label``; False if that broke the page or the tab is not shown (it
        was revealed by a press that this path does not repeat)."""
        shown = [name for name, _ in self.page.evaluate(TABS_JS)]
        if label not in shown:
            self.log.append(f"tab {label} not shown")
            return False
        tabs = self.page.locator('[data-testid="stMain"] [role="tab"] >> visible=true')
        tabs.nth(shown.index(label)).click()
        # A bound tab may rerun the page, or only switch what is shown.
        wait_for_run(self.page, STEP_MS)
        self.steps.append((self.page.url, None))
        self.log.append(f"tab {label}")
        return not self.broken(f"opening the tab {label!r}")

    def buttons(self) -> list[tuple[str, str]]:
        """The buttons in view, once the list stays the same for a moment (elements of a run
        can still be arriving when the script has stopped)."""
        found = None
        for _ in range(20):
            now = [tuple(b) for b in self.page.evaluate(BUTTONS_JS)]
            if now == found:
                break
            found = now
            self.page.wait_for_timeout(300)
        return found or []

    def press_buttons(self, tabs: tuple[str, ...]) -> None:
        for key, label in self.buttons():
            same = (label, key.rsplit("_", 1)[0])
            if same in self.pressed or len(self.pressed) >= MAX_PRESSES:
                continue
            self.pressed.add(same)
            button = self.page.locator(f'[class~="st-key-{key}"] button').first
            if not button.is_visible() or not button.is_enabled():
                continue  # an earlier press changed the view
            path = urlsplit(self.page.url).path
            self.steps.append((self.page.url, key))
            act(self.page, button.click, STEP_MS)
            self.log.append(f"pressed {label!r} ({key})")
            left = urlsplit(self.page.url).path != path
            if self.broken(f"pressing {label!r} ({key})" + (" and its page" if left else "")):
                if not self.open(tabs):
                    return
            elif left and not self.open(tabs):
                return

    def run(self) -> list[str]:
        if not self.open(()):
            return self.failures
        views: list[tuple[str, ...]] = [()]
        seen: set[str] = set()
        while views:
            tabs = views.pop(0)
            # The whole path: a tab inside a tab is in view only once its parent is open (one
            # inside the tab a page opens with: once the page is opened afresh).
            if tabs and not all(self.open_tab(tab) for tab in tabs) and not self.open(tabs):
                continue
            self.press_buttons(tabs)
            for label, selected in self.page.evaluate(TABS_JS):
                if label not in seen:
                    seen.add(label)
                    if not selected:
                        views.append((*tabs, label))
        return list(dict.fromkeys(self.failures))


def follow(base: str, steps: list[tuple[str, str | None]]) -> tuple[list[str], list[str]]:
    """The second visitor: ``steps`` (a :class:`Tour`'s) over the protocol, each view opened by
    its address in a fresh session and its buttons pressed there; returns (failures, log)."""
    failures: list[str] = []
    log: list[str] = []
    visitor = Visitor(base, timeout_s=STEP_MS / 1000)
    opened = ""
    try:
        for address, key in steps:
            parts = urlsplit(address)
            page = catalog.page_name(parts.path.strip("/") or catalog.HOME.url_path)
            what = f"opening {parts.path}?{parts.query}"
            try:
                if key is None or address != opened:
                    # Each view by its link, in a session of its own: a session that already
                    # drew a tab bar keeps its tab over the address's (as a browser's would).
                    visitor.close()
                    visitor = Visitor(base, timeout_s=STEP_MS / 1000)
                    _check(visitor.open(page, parts.query), what, failures)
                    opened = address
                    log.append(what)
                if key is not None:
                    if key not in visitor.widgets:
                        log.append(f"no button {key} (the first visitor's press changed the view)")
                        continue
                    what = f"pressing {key} on {parts.path}?{parts.query}"
                    _check(visitor.click(key), what, failures)
                    log.append(what)
            except ProtocolError as error:
                failures.append(f"second visitor, {what}: {error}")
                opened = ""
    finally:
        visitor.close()
    return failures, log


def _check(run, what: str, failures: list[str]) -> None:
    """What a browser shows as an exception box or an error page, the run's messages carry as an
    exception element, a page not found or a script that did not compile."""
    broken = [e for e in run.errors if not e.startswith("status: ")]
    if broken:
        failures.append(f"second visitor, after {what}: {broken}")


@pytest.mark.timeout(600)  # every button of a page, twice, on two cores shared with other tests
@pytest.mark.parametrize("spec", catalog.PAGES, ids=lambda s: s.url_path)
def test_two_visitors_click_through(app_url: str, browser, spec: catalog.PageSpec) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    watch_runs(context)
    try:
        tour = Tour(context.new_page(), _address(app_url, spec), "first visitor")
        failures = tour.run()
    finally:
        context.close()
    again, followed = follow(app_url, tour.steps)
    failures += again
    logs = ["first visitor: " + "; ".join(tour.log), "second visitor: " + "; ".join(followed)]
    print("\n".join(logs))  # what was toured, for -s / -rP
    assert not failures, "\n".join(failures + logs)


def test_the_second_visitor_catches_a_cached_function_that_draws() -> None:
    """The check above can fail: a cached function that draws is fine for the first visitor,
    and the protocol visitor after it finds the error page."""
    with streamlit_server("tests/fixtures/replay_app.py") as url:
        first, _ = follow(url, [(url + "/", None)])
        assert not first
        again, _ = follow(url, [(url + "/", None)])
        assert again and "This app has encountered an error" in again[0], again

"""Real-browser first visits: every page as the first visit of a freshly started server, by a
shared link, then one input the page must accept; and the detector of exception boxes itself.

That every page loads on a running server, shows its title and no exception box is
``test_present.py``'s (at a projector's size) and ``test_clickthrough.py``'s (at a desktop's).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from jaxplay.hosting import catalog
from tests.support.browser import (
    exception_texts,
    require_chromium,
    screenshot,
    streamlit_server,
    wait_for_run,
)

pytestmark = pytest.mark.browser

require_chromium()

SHOTS = Path(tempfile.mkdtemp(prefix="jaxplay-screens-"))


def _url(base: str, spec: catalog.PageSpec) -> str:
    return base + "/" if spec is catalog.HOME else f"{base}/{spec.url_path}"


@dataclass(frozen=True)
class FirstVisit:
    """A first visit to a page by a shared link, and one input the page must then accept.

    Attributes:
        query: the link's query string: a bound widget's value (none for the home page).
        act: what the visitor does next (fill a box, move a slider, click).
        done: a JavaScript predicate, true once the page ran again with that input.
    """

    query: str
    act: Callable[[Any], None]
    done: str


#: A cold server's first run of a page compiles everything it shows: give it time.
RUN_MS = 120_000


def _ready(page: Any, selector: str) -> Any:
    """The first element matching ``selector``, once the page has drawn it."""
    element = page.locator(selector).first
    element.wait_for(timeout=RUN_MS)
    return element


def _fill(key: str, value: str) -> Callable[[Any], None]:
    """Type ``value`` into the text or number box of widget ``key`` and press Enter."""

    def act(page: Any) -> None:
        box = _ready(page, f".st-key-{key} input")
        box.fill(value)
        box.press("Enter")

    return act


def _param(key: str, *values: str) -> str:
    """True once the address says ``key`` is one of ``values`` (the widget ran and rebound)."""
    return f"() => {list(values)!r}.includes(new URLSearchParams(location.search).get({key!r}))"


def _slider_right(key: str) -> Callable[[Any], None]:
    def act(page: Any) -> None:
        # The slider's keyboard control is a visually hidden range input.
        thumb = page.locator(f'.st-key-{key} input[type="range"]').first
        thumb.wait_for(state="attached", timeout=RUN_MS)
        thumb.focus()
        page.keyboard.press("ArrowRight")

    return act


def _code_lab_edit(page: Any) -> None:
    # The editor is a CodeMirror component: typed into as a visitor does, run with Ctrl+Enter.
    _ready(page, '[data-testid="stMain"] .cm-content').click()
    page.keyboard.press("Control+a")
    page.keyboard.type("print('answer', 41 + 1)")
    page.keyboard.press("Control+Enter")


def _click_pill(label: str) -> Callable[[Any], None]:
    def act(page: Any) -> None:
        _ready(page, ".st-key-walkthrough_section button")
        page.locator(".st-key-walkthrough_section button", has_text=label).first.click()

    return act


def _click_nav(title: str) -> Callable[[Any], None]:
    def act(page: Any) -> None:
        nav = page.locator('[data-testid="stSidebarNav"]')
        nav.get_by_role("link", name=title, exact=True).click()

    return act


_TEXT = "() => document.querySelector('[data-testid=\"stMain\"]').innerText.includes({!r})"

#: One first visit per page: cheap widgets, small sizes (each is a freshly started server).
FIRST_VISITS: dict[str, FirstVisit] = {
    "home": FirstVisit(
        "", _click_nav("Article walkthrough"), "() => location.pathname.endsWith('/article')"
    ),
    "jit": FirstVisit(
        "jit_rows=300&jit_cols=100", _fill("jit_rows", "400"), _param("jit_rows", "400")
    ),
    "grad": FirstVisit("grad_hi=2.5", _fill("grad_hi", "2"), _param("grad_hi", "2", "2.0")),
    "vmap": FirstVisit(
        "vmap_out_axes=1", _fill("vmap_out_axes", "-1"), _param("vmap_out_axes", "-1")
    ),
    "compose": FirstVisit(
        "compose_tab=Per-sample+gradients&compose_features=4",
        _slider_right("compose_features"),
        _param("compose_features", "5"),
    ),
    "tracing": FirstVisit(
        "tracing_seed_shape_0=4",
        _fill("tracing_seed_shape_0", "5"),
        _param("tracing_seed_shape_0", "5"),
    ),
    "prng": FirstVisit("prng_seed=42", _fill("prng_seed", "43"), _param("prng_seed", "43")),
    "devices": FirstVisit(
        "devices_tab=Sharding&devices_shape=4%2C+4",
        _fill("devices_shape", "8, 4"),
        _param("devices_shape", "8, 4"),
    ),
    "memory": FirstVisit(
        "memory_panel=Fusion&memory_chain_size=64",
        _fill("memory_chain_size", "32"),
        _param("memory_chain_size", "32"),
    ),
    "pytrees": FirstVisit(
        "pytrees_tab=Static+vs+dynamic+fields&pytrees_calls=5",
        _slider_right("pytrees_calls"),
        _param("pytrees_calls", "6"),
    ),
    "sharp-bits": FirstVisit(
        "sharp_case=Out-of-bounds+indexing&sharp_bounds_index=5",
        _slider_right("sharp_bounds_index"),
        _param("sharp_bounds_index", "6"),
    ),
    "state": FirstVisit(
        "state_steps=30", _slider_right("state_steps"), _param("state_steps", "40")
    ),
    "code-lab": FirstVisit("code_lab_dtype=int32", _code_lab_edit, _TEXT.format("answer 42")),
    "article": FirstVisit(
        "walkthrough_section=vmap", _click_pill("jit"), _TEXT.format("1. jax.jit")
    ),
}


def test_every_page_has_a_first_visit() -> None:
    assert set(FIRST_VISITS) == {spec.url_path for spec in catalog.PAGES}


@pytest.mark.parametrize("spec", catalog.PAGES, ids=lambda s: s.url_path)
def test_first_visit_by_a_shared_link_gets_the_page(page, spec: catalog.PageSpec) -> None:
    """A fresh server whose first visitor opens a page's link runs it through app.py.

    Streamlit starts in its legacy ``pages/`` mode (see pages/_startup.py): the page must show, no
    "Page not found" dialog, with the app's navigation, the link's settings kept, and it must
    take input (the visitor changes a widget and the page runs again).
    """
    visit = FIRST_VISITS[spec.url_path]
    address = _url("", spec) + (f"?{visit.query}" if visit.query else "")
    with streamlit_server("app.py", env={"JAXPLAY_RUNNER_SPARES": "0"}) as url:
        page.goto(url + address)
        wait_for_run(page)
        title = "jaxplay" if spec is catalog.HOME else spec.title
        page.locator("h1").filter(has_text=title).first.wait_for(timeout=RUN_MS)
        shot = SHOTS / f"first-visit-{spec.url_path}.png"
        screenshot(page, path=str(shot), full_page=True)
        assert "Page not found" not in page.locator("body").inner_text(), shot
        assert not page.locator('[role="dialog"]').count(), f"a dialog is open; screenshot: {shot}"
        nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
        assert all(other.title in nav for other in catalog.PAGES), f"legacy nav: {shot}"
        assert "8 devices" in page.locator('[data-testid="stSidebar"]').inner_text(), shot
        if visit.query:
            assert urlsplit(page.url).path.endswith(f"/{spec.url_path}"), page.url
            kept = parse_qs(urlsplit(page.url).query)
            assert all(kept.get(k) == v for k, v in parse_qs(visit.query).items()), page.url
        assert not exception_texts(page), shot
        visit.act(page)
        page.wait_for_function(visit.done, timeout=RUN_MS)
        wait_for_run(page)
        assert not exception_texts(page), shot


def test_detector_catches_a_raising_page(page) -> None:
    """The check above can fail: on a page that raises, it finds the exception box."""
    with streamlit_server("tests/fixtures/broken_app.py") as url:
        page.goto(url + "/")
        wait_for_run(page)
        screenshot(page, path=str(SHOTS / "broken.png"), full_page=True)
        assert exception_texts(page), f"no exception box found; screenshot: {SHOTS / 'broken.png'}"

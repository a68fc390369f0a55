"""A shared link in a real browser: a fresh visitor sees the shared view, and page switches keep
the address and the widgets in step.

The server is fresh, so the link is also its first visit (the case ``pages/_startup.py`` handles).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from jaxplay.hosting import catalog
from tests.support.browser import (
    act,
    exception_texts,
    require_chromium,
    screenshot,
    streamlit_server,
    wait_for_run,
)

pytestmark = pytest.mark.browser

require_chromium()

SHOTS = Path(tempfile.mkdtemp(prefix="jaxplay-share-"))
IGNORED_NOTE = "Parts of this link were ignored"

#: The shared view: non-default values for a selectbox, a slider and the open tab of /vmap.
SHARED = {"vmap_layout": "X is (D, batch)", "vmap_jaxpr_batch": "5", "vmap_tab": "jaxpr"}
DEFAULTS = {"vmap_layout": "X is (batch, D)", "vmap_jaxpr_batch": "4", "vmap_tab": "in_axes editor"}


def _tab(page) -> str:
    return page.locator('.st-key-vmap_tab [role="tab"][aria-selected="true"]').inner_text()


def _layout(page) -> str:
    """The option the X-layout selectbox shows."""
    box = page.locator('.st-key-vmap_layout input[role="combobox"]')
    box.wait_for(timeout=90_000)
    return box.input_value()


def _batch(page) -> str:
    thumb = page.locator('.st-key-vmap_jaxpr_batch [data-testid="stSliderThumbValue"]')
    thumb.wait_for(timeout=90_000)
    return thumb.inner_text().strip()


def _params(page) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(page.url).query).items()}


def _check_clean(page, shot: str) -> None:
    path = SHOTS / f"{shot}.png"
    screenshot(page, path=str(path), full_page=True)
    errors = exception_texts(page)
    assert not errors, f"exception: {errors}; screenshot: {path}"
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert IGNORED_NOTE not in main, f"part of the link was ignored; screenshot: {path}"


def _go(page, title: str) -> None:
    """Switch page by the sidebar navigation, as a visitor does."""
    nav = page.locator('[data-testid="stSidebarNav"]')
    nav.get_by_role("link", name=title, exact=True).click()
    page.wait_for_timeout(500)
    wait_for_run(page)


def test_shared_link_opens_the_shared_view(page) -> None:
    vmap, grad = catalog.find("vmap"), catalog.find("grad")
    query = "&".join(f"{k}={v.replace(' ', '+')}" for k, v in SHARED.items())
    with streamlit_server("app.py") as url:
        # A fresh visitor (and the server's first) opens the shared link: the jaxpr tab is
        # open with the shared batch size ...
        page.goto(f"{url}/{vmap.url_path}?{query}")
        wait_for_run(page)
        assert _batch(page) == SHARED["vmap_jaxpr_batch"]
        assert _tab(page) == SHARED["vmap_tab"]
        _check_clean(page, "shared")
        assert _params(page) == SHARED, page.url

        # ... and the editor tab has the shared layout; the address follows the open tab
        # (only the open tab runs: the closed jaxpr tab's batch size leaves the address) ...
        tab = page.locator('.st-key-vmap_tab [role="tab"]', has_text=DEFAULTS["vmap_tab"])
        act(page, tab.click)
        assert _layout(page) == SHARED["vmap_layout"]
        _check_clean(page, "editor")
        assert _params(page) == {"vmap_layout": SHARED["vmap_layout"]}, page.url
        # ... but the session keeps it: back on the jaxpr tab, the shared batch size again.
        act(page, page.locator('.st-key-vmap_tab [role="tab"]', has_text="jaxpr").click)
        assert _batch(page) == SHARED["vmap_jaxpr_batch"]
        assert _params(page) == {k: SHARED[k] for k in ("vmap_tab", "vmap_jaxpr_batch")}

        # Another page by the sidebar: its own address, none of vmap's settings.
        _go(page, grad.title)
        page.locator("h1").filter(has_text=grad.title).first.wait_for(timeout=60_000)
        _check_clean(page, "switched")
        assert urlsplit(page.url).path.endswith(f"/{grad.url_path}"), page.url
        assert not [k for k in _params(page) if not k.startswith("grad_")], page.url

        # Back again: the address and the widgets agree (each setting is the URL's, or the
        # default where the URL does not name it).
        _go(page, vmap.title)
        page.locator("h1").filter(has_text=vmap.title).first.wait_for(timeout=60_000)
        _check_clean(page, "back")
        assert urlsplit(page.url).path.endswith(f"/{vmap.url_path}"), page.url
        params = _params(page)
        assert not [k for k in params if not k.startswith("vmap_")], page.url
        assert _tab(page) == params.get("vmap_tab", DEFAULTS["vmap_tab"]), page.url
        if _tab(page) == DEFAULTS["vmap_tab"]:
            assert _layout(page) == params.get("vmap_layout", DEFAULTS["vmap_layout"]), page.url

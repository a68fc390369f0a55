"""Starting ``streamlit run`` on a free port (through :mod:`jaxplay.hosting.serve`) and checking a
page in a real chromium (the waiting is ``benchmarks/_browser.py``'s, which benchmarks share)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks._browser import FRAMES_JS as FRAMES_JS
from benchmarks._browser import QUIET_MS as QUIET_MS
from benchmarks._browser import act as act
from benchmarks._browser import exception_texts as exception_texts
from benchmarks._browser import runs_done as runs_done
from benchmarks._browser import wait_for_run as wait_for_run
from benchmarks._browser import watch_runs as watch_runs
from jaxplay.hosting import serve
from jaxplay.hosting.chromium import CHROMIUM, FULL_CHROMIUM, HEADLESS_SHELL, chromium_available
from jaxplay.hosting.chromium import CHROMIUM_ARGS as CHROMIUM_ARGS
from jaxplay.hosting.chromium import free_port as free_port

ROOT = Path(__file__).resolve().parents[2]


def require_chromium() -> None:
    """Skip the calling test module without chromium, except in CI, where that is an error."""
    import pytest

    if chromium_available():
        return
    if os.environ.get("CI"):
        raise RuntimeError(
            f"CI needs chromium for the browser tests: {HEADLESS_SHELL}"
            f" (apt-get install chromium-headless-shell) or {FULL_CHROMIUM}"
        )
    pytest.skip(f"no chromium at {CHROMIUM}", allow_module_level=True)


def require_haproxy() -> None:
    """Skip the calling test module without HAProxy, except in CI, where that is an error."""
    import pytest

    if serve.haproxy_path() is not None:
        return
    if os.environ.get("CI"):
        raise RuntimeError(f"CI needs {serve.HAPROXY} for the room tests (apt-get install haproxy)")
    pytest.skip(f"no {serve.HAPROXY} on PATH (apt-get install haproxy)", allow_module_level=True)


@contextmanager
def streamlit_server(
    script: str = "app.py", env: dict[str, str] | None = None, startup_s: float = 90.0
) -> Iterator[str]:
    """Run ``streamlit run script`` on a free local port; yield its base URL; stop it after."""
    with serve.Room(1, script=script, env=env, startup_s=startup_s) as room:
        yield room.url


#: Every page of a test's browser without CSS animations and transitions. While a run lasts,
#: Streamlit's running indicators animate, and headless chromium draws every frame in software:
#: about a tenth of a core per page waiting for a run, a third of that without them (measured on
#: this VM), on a two-core machine where the server under test needs the rest. No test checks
#: motion; a transition's end state is what they look at, and it is reached at once.
STILL_JS = """document.addEventListener("DOMContentLoaded", () => {
    const style = document.createElement("style");
    style.textContent = "*, *::before, *::after { animation: none !important; "
        + "transition: none !important; }";
    document.head.appendChild(style);
});"""


class StillBrowser:
    """A playwright ``Browser`` whose every context (and page) runs :data:`STILL_JS` first; the
    rest of the browser's API is the browser's own."""

    def __init__(self, browser: Any) -> None:
        self._browser = browser

    def new_context(self, **options: Any) -> Any:
        context = self._browser.new_context(**options)
        context.add_init_script(STILL_JS)
        return context

    def new_page(self, **options: Any) -> Any:
        """A page in a context of its own, closed with the page (as ``Browser.new_page``)."""
        context = self.new_context(**options)
        page = context.new_page()
        page.on("close", lambda _page: context.close())
        return page

    def __getattr__(self, name: str) -> Any:
        return getattr(self._browser, name)


#: How long a screenshot may take. Playwright's own 30 s was once not enough in CI: the page was
#: idle and its fonts loaded, yet chromium's software compositor, sharing two cores with the
#: server under test, the compute worker and the other xdist worker's tests, drew no frame in
#: time. The screenshots check text and layout, not speed.
SCREENSHOT_MS = 120_000


def screenshot(page: Any, **options: Any) -> bytes:
    """``page.screenshot(**options)`` with :data:`SCREENSHOT_MS` to draw its frame."""
    return page.screenshot(timeout=SCREENSHOT_MS, **options)

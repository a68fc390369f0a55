"""Load test: K concurrent real browser sessions against one jaxplay server.

Starts ``streamlit run app.py`` on a free local port, then drives K headless chromium sessions
(one browser, a context each, so each is its own Streamlit session) for a bounded time. Each
session loops: open a page through the navigation, move a widget on it, then run a Code Lab
snippet and wait for its printed result. It reports sessions served, actions, failures, and the
p50/p95 time for a page to finish rendering and for a snippet's result to appear.

    .venv/bin/python benchmarks/load.py --sessions 10 --duration 120 [--warm-pages]

Everything stays on 127.0.0.1. The run stops by itself after ``--duration`` seconds (plus the
time for actions in flight to finish or time out).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from google.protobuf.message import DecodeError  # noqa: E402
from playwright.async_api import Page, WebSocket, async_playwright  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402
from streamlit.proto.RootContainer_pb2 import RootContainer  # noqa: E402

from jaxplay.hosting import catalog, serve  # noqa: E402
from jaxplay.hosting.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

ACTION_TIMEOUT_MS = 120_000
#: Pages every session visits in turn (the Code Lab is visited by the snippet step).
TOUR = [p for p in catalog.TOPICS if p.url_path not in {"code-lab"}]


@dataclass
class Stats:
    page_s: list[float] = field(default_factory=list)
    snippet_s: list[float] = field(default_factory=list)
    widget_moves: int = 0
    failures: list[str] = field(default_factory=list)
    sessions_served: int = 0


class RunCounter:
    """Counts the script runs the server finished for one browser page.

    It reads the page's own websocket messages: each full run ends with a ``script_finished``
    message. (The page's DOM is no reliable signal: the status widget shows an icon and "Stop",
    never the word "Running", and a busy browser can apply a run's start and end in one render,
    so the app element's ``data-test-script-state`` need not change at all.) A run cut short by
    a rerun does not count. A fragment's run counts when it drew in the main area: a widget
    inside a part of the page reruns that part alone, while the sidebar's queue line, which
    refreshes itself while anything is queued, would end a wait before the run it was for.
    """

    FINISHED = (
        ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY,
        ForwardMsg.ScriptFinishedStatus.FINISHED_WITH_COMPILE_ERROR,
    )
    FRAGMENT = ForwardMsg.ScriptFinishedStatus.FINISHED_FRAGMENT_RUN_SUCCESSFULLY

    def __init__(self) -> None:
        self.done = 0
        #: Whether a delta for the main area came since the last run finished.
        self._main_drawn = False

    def attach(self, page: Page) -> None:
        page.on("websocket", self._socket)

    def _socket(self, socket: WebSocket) -> None:
        if "_stcore/stream" in socket.url:
            socket.on("framereceived", self._frame)

    def _frame(self, payload: str | bytes) -> None:
        if isinstance(payload, str):
            return
        message = ForwardMsg()
        try:
            message.ParseFromString(payload)
        except DecodeError:
            return
        kind = message.WhichOneof("type")
        if kind in ("delta", "ref_hash"):  # a large element sent before comes as its hash
            path = message.metadata.delta_path
            self._main_drawn |= bool(path) and path[0] == RootContainer.MAIN
        elif kind == "script_finished":
            status = message.script_finished
            if status in self.FINISHED or (status == self.FRAGMENT and self._main_drawn):
                self.done += 1
            self._main_drawn = False


_COUNTERS: dict[Page, RunCounter] = {}


def track_runs(page: Page) -> None:
    """Start counting ``page``'s finished script runs; call it before the page's ``goto``."""
    counter = RunCounter()
    counter.attach(page)
    _COUNTERS[page] = counter


async def runs_done(page: Page) -> int:
    """Script runs finished so far in ``page`` (see :func:`track_runs`); take it before an
    action and pass it on to :func:`wait_rendered`."""
    return _COUNTERS[page].done


async def wait_rendered(page: Page, title: str, before: int = -1) -> None:
    """Until the page's title is shown and a script run finished after ``before``.

    ``before``: :func:`runs_done` taken before the action (the rerun an action asks for can
    start a moment after it); -1 for a page just loaded, whose first run is awaited.
    """
    await page.locator("h1").filter(has_text=title).first.wait_for(timeout=ACTION_TIMEOUT_MS)
    counter = _COUNTERS[page]
    deadline = time.monotonic() + ACTION_TIMEOUT_MS / 1000
    while counter.done <= max(before, 0):
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"{title}: no script run finished within {ACTION_TIMEOUT_MS // 1000} s "
                f"(runs finished {counter.done}, before {before})"
            )
        await asyncio.sleep(0.05)
    if await page.locator('[data-testid="stException"]').count():
        raise RuntimeError(f"exception box on {title}")


async def open_page(page: Page, spec: catalog.PageSpec) -> float:
    before = await runs_done(page)
    start = time.perf_counter()
    await page.locator('[data-testid="stSidebarNav"] a').filter(has_text=spec.title).first.click()
    await wait_rendered(page, spec.title, before)
    return time.perf_counter() - start


async def move_a_widget(page: Page, title: str) -> bool:
    """Change the first slider, select box, radio or checkbox found, and wait for the rerun."""
    main = page.locator('[data-testid="stMain"]')
    slider = main.locator('[data-testid="stSlider"] [role="slider"]').first
    select = main.locator('[data-testid="stSelectbox"]').first
    radio = main.locator('[data-testid="stRadio"] label').nth(1)
    checkbox = main.locator('[data-testid="stCheckbox"] label').first
    before = await runs_done(page)
    if await slider.count():
        await slider.focus()
        await slider.press("ArrowRight")
    elif await select.count():
        await select.click()
        options = page.locator('[role="option"]')
        await options.first.wait_for(timeout=ACTION_TIMEOUT_MS)
        await options.nth(1 if await options.count() > 1 else 0).click()
    elif await radio.count():
        await radio.click()
    elif await checkbox.count():
        await checkbox.click()
    else:
        return False
    await wait_rendered(page, title, before)
    return True


async def type_code(page: Page, code: str) -> None:
    """Put ``code`` in the Code Lab's editor (a CodeMirror component) in place of what it holds,
    as one paste (typed key by key, its brackets and indents would be completed), and apply it
    with Ctrl+Enter as a visitor does (the run itself is the Run button's)."""
    editor = page.locator(".st-key-code_lab_editor .cm-content")
    await editor.click(timeout=ACTION_TIMEOUT_MS)
    await page.keyboard.press("Control+a")
    await page.keyboard.insert_text(code)
    await page.keyboard.press("Control+Enter")


async def run_snippet(page: Page, lab: catalog.PageSpec, marker: str) -> float:
    await open_page(page, lab)
    await type_code(page, f"import jax.numpy as jnp\nprint('{marker}', jnp.ones(3).sum())\n")
    start = time.perf_counter()
    await page.locator(".st-key-code_lab_run button").click()
    await page.get_by_text(f"{marker} 3.0").first.wait_for(timeout=ACTION_TIMEOUT_MS)
    return time.perf_counter() - start


async def session(browser, url: str, index: int, deadline: float, stats: Stats) -> None:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    track_runs(page)
    lab = catalog.find("code-lab")
    step = 0
    try:
        await page.goto(url + "/", timeout=ACTION_TIMEOUT_MS)
        await wait_rendered(page, "jaxplay")
        stats.sessions_served += 1
        while time.monotonic() < deadline:
            spec = TOUR[(index + step) % len(TOUR)]
            doing = "opening the page"
            try:
                stats.page_s.append(await open_page(page, spec))
                doing = "moving a widget"
                if await move_a_widget(page, spec.title):
                    stats.widget_moves += 1
                doing = "running a snippet"
                stats.snippet_s.append(await run_snippet(page, lab, f"s{index}-{step}"))
            except Exception as err:
                stats.failures.append(
                    f"session {index} step {step} ({spec.url_path}, {doing}): {err!r}"[:300]
                )
                await page.goto(url + "/", timeout=ACTION_TIMEOUT_MS)
            step += 1
    except Exception as err:
        stats.failures.append(f"session {index} could not start: {err!r}"[:300])
    finally:
        await context.close()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main_async(sessions: int, duration: float, warm_pages: bool = False) -> Stats:
    stats = Stats()
    with serve.Room(1) as room:
        url = room.url
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            # Warm the server (first import of JAX, the sandbox pool) before the clock starts.
            warm = await browser.new_page()
            track_runs(warm)
            await warm.goto(url + "/", timeout=ACTION_TIMEOUT_MS)
            await wait_rendered(warm, "jaxplay")
            if warm_pages:  # every page's default view once: the caches the sessions share
                for spec in [*TOUR, catalog.find("code-lab")]:
                    await open_page(warm, spec)
            await warm.close()
            deadline = time.monotonic() + duration
            await asyncio.gather(
                *(session(browser, url, i, deadline, stats) for i in range(sessions))
            )
            await browser.close()
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10, help="concurrent browser sessions (K)")
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of load")
    parser.add_argument(
        "--warm-pages",
        action="store_true",
        help="open every page once before the clock starts (as if the server warmed its caches)",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    stats = asyncio.run(main_async(args.sessions, args.duration, args.warm_pages))
    elapsed = time.perf_counter() - started
    print(
        f"sessions: {args.sessions} concurrent, {args.duration:.0f} s of load "
        f"({elapsed:.0f} s total){', pages warmed first' if args.warm_pages else ''}; "
        f"1-minute load average {os.getloadavg()[0]:.1f} at the end"
    )
    print(f"sessions served: {stats.sessions_served}/{args.sessions}")
    print(
        f"page renders: {len(stats.page_s)}  p50 {percentile(stats.page_s, 0.5):.2f} s  "
        f"p95 {percentile(stats.page_s, 0.95):.2f} s"
    )
    print(f"widget moves: {stats.widget_moves}")
    print(
        f"snippet runs: {len(stats.snippet_s)}  p50 {percentile(stats.snippet_s, 0.5):.2f} s  "
        f"p95 {percentile(stats.snippet_s, 0.95):.2f} s"
    )
    if stats.snippet_s:
        print(f"snippet mean: {statistics.mean(stats.snippet_s):.2f} s")
    print(f"failures: {len(stats.failures)}")
    for failure in stats.failures[:20]:
        print("  -", failure)
    sys.exit(1 if stats.failures or stats.sessions_served < args.sessions else 0)


if __name__ == "__main__":
    main()

"""What a visitor's first visit of a page costs the server, in CPU seconds: the first visitor's,
and the second's and third's, once another visitor has filled the caches.

Starts ``streamlit run app.py`` (public mode, as the hosting guide deploys it), opens the home
page once (JAX started, as a running server has it), then for each page lets three fresh
headless chromium sessions open it one after another. After each visit it waits until the
server has been quiet (under 3% of a core for a whole second) and reads the CPU seconds the
server and every process it started (sandbox workers too) used, from ``/proc``, sampled every
50 ms and kept for processes that exit. Visitors with the page's default settings should share
one computation: the second and third visits should cost what drawing the page costs, not what
computing it costs.

    .venv/bin/python benchmarks/first_visit_cost.py --pages grad compose --servers 2

CPU seconds hold up when other work shares the machine; the wall-clock seconds printed beside
them do not (they include waiting for the CPU).

Measured 2026-12-01 on the development VM (2 cores, CPU only, 1-minute load average 12-15 from
other work), ``--servers 2``, medians (min-max) in CPU-s of the server and its workers:

=========  ==========================  ==================  =====================================
page       visit                       before (main)       after (only the open tab computes)
=========  ==========================  ==================  =====================================
grad       first visitor, caches cold  6.54 (5.40-7.67)    0.86 (0.85-0.87)
grad       second visitor              0.66 (0.62-0.70)    0.51 (0.49-0.52)
grad       third visitor               0.70 (0.62-0.77)    0.62 (0.53-0.71)
compose    first visitor, caches cold  3.94 (3.66-4.22)    1.10 (0.94-1.25)
compose    second visitor              0.74 (0.58-0.89)    0.48 (0.45-0.50)
compose    third visitor               0.64 (0.57-0.71)    0.63 (0.47-0.80)
=========  ==========================  ==================  =====================================

Visitors with default settings already shared the page's computations (every one is cached by
its plain-valued arguments; a second visitor's visit costs what drawing the page costs, about
what the home page costs). What a default first visit paid for was every tab's work at once:
derivatives, checks, ``check_grads``, the Hessian diagonal, per-sample gradients, the HVP
fixes. Now each tab computes when it is opened (``st.tabs(..., bind="query-params")`` tells
which one is), and a second visitor draws one tab's chart instead of four.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import BrowserContext, Page, sync_playwright  # noqa: E402

from benchmarks._cpu import ProcTree  # noqa: E402
from jaxplay.hosting import serve  # noqa: E402
from jaxplay.hosting.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

VISITORS = ("first visitor (caches cold)", "second visitor", "third visitor")


def settle(tree: ProcTree, timeout_s: float = 300.0) -> float:
    """Wait until the tree used under 3% of a core for one second; its CPU-s at that second's
    start (the quiet second is not part of the visit that ended before it)."""
    deadline = time.monotonic() + timeout_s
    before = tree.total_s()
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = tree.total_s()
        if now - before < 0.03:
            return before
        before = now
    raise RuntimeError("the server did not go quiet")


#: Streamlit marks the app element with its script's state (``running``, ``notRunning``); the
#: status widget is no signal (in Streamlit 1.67 it never says "Running").
_FINISHED_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return app && app.getAttribute('data-test-script-state') === 'notRunning';
}"""


def visit(browser, url: str) -> tuple[float, BrowserContext]:
    """Open ``url`` in a fresh session (its own cookies): seconds until the script finished,
    and the session's browser context (closed by the caller once the server is quiet: closing
    it earlier would end the session and stop its script)."""
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    page: Page = context.new_page()
    started = time.perf_counter()
    page.goto(url)
    page.locator("h1").first.wait_for(timeout=300_000)
    page.wait_for_function(_FINISHED_JS, timeout=300_000)
    return time.perf_counter() - started, context


def one_server(pages: list[str]) -> dict[tuple[str, str], tuple[float, float]]:
    env = {"JAXPLAY_PUBLIC": "1", "JAXPLAY_RUNNER_SPARES": "1"}
    out: dict[tuple[str, str], tuple[float, float]] = {}
    with serve.Room(1, env=env) as room, sync_playwright() as p:
        url = room.url
        pid = room.pids[0]
        tree = ProcTree(pid)
        tree.start()
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            _, home = visit(browser, url + "/")
            for page in pages:
                for who in VISITORS:
                    before = settle(tree)
                    wall, context = visit(browser, f"{url}/{page}")
                    out[(page, who)] = (settle(tree) - before, wall)
                    context.close()
            home.close()
        finally:
            browser.close()
            tree.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pages", nargs="+", default=["grad", "compose"])
    parser.add_argument("--servers", type=int, default=2, help="fresh servers, one after another")
    args = parser.parse_args()
    runs = [one_server(args.pages) for _ in range(args.servers)]
    print(
        f"{args.servers} fresh servers; machine: {os.cpu_count()} cores, "
        f"1-minute load average {os.getloadavg()[0]:.1f} at the end"
    )
    print(f"{'page':<10} {'visit':<30} {'CPU-s median':>12} {'(min-max)':>13} {'wall s':>7}")
    for page in args.pages:
        for who in VISITORS:
            cpu = [r[(page, who)][0] for r in runs]
            wall = [r[(page, who)][1] for r in runs]
            print(
                f"{page:<10} {who:<30} {statistics.median(cpu):12.2f} "
                f"({min(cpu):5.2f}-{max(cpu):5.2f}) {statistics.median(wall):7.2f}"
            )


if __name__ == "__main__":
    main()

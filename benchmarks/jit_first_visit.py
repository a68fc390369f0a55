"""What a visit of the jit page costs the server: the first visitor's, then a second visitor's.

The jit page measures its default view (the article's softmax at 10000 x 1000) when someone opens
it: seconds of compute. Visitors with the default settings should share that one measurement
rather than repeat it. This starts ``streamlit run app.py`` in public mode (as the hosting guide
deploys it) from ``--root`` (default: this checkout; pass an unpacked older commit to compare),
and drives it with headless chromium, one visitor after the other:

1. visitor 1 opens the home page, then the jit page through the navigation;
2. visitor 1 leaves; visitor 2 (a new browser context: a new Streamlit session) does the same.

For each step it reads the CPU seconds (user + system, all threads) of the server process and
every process it started, from ``/proc/<pid>/stat``, before the step and after it, once the
script run finished and the server has been quiet (under 3% of a core for 1 s): work a step
started in the background is counted in that step. Each repeat is a fresh server.

    .venv/bin/python benchmarks/jit_first_visit.py --repeats 3
    .venv/bin/python benchmarks/jit_first_visit.py --repeats 3 --root /tmp/jaxplay-before
    .venv/bin/python benchmarks/jit_first_visit.py --repeats 3 --warm-up jit --no-claims

Everything stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import Page, sync_playwright  # noqa: E402

from benchmarks._cpu import ProcTree  # noqa: E402
from jaxplay.hosting import serve  # noqa: E402
from jaxplay.hosting.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

TIMEOUT_MS = 180_000
QUIET_SHARE = 0.03
QUIET_WINDOW_S = 1.0
STEPS = ("visitor 1: home", "visitor 1: jit", "visitor 2: home", "visitor 2: jit")

#: True once the page's script run finished (Streamlit marks its app element with the state).
_IDLE_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return !!app && app.getAttribute('data-test-script-state') === 'notRunning';
}"""


def wait_quiet(tree: ProcTree, limit_s: float = 300.0) -> float:
    """Wait until the server tree used under :data:`QUIET_SHARE` of a core for a whole window."""
    deadline = time.monotonic() + limit_s
    before = tree.total_s()
    while time.monotonic() < deadline:
        time.sleep(QUIET_WINDOW_S)
        now = tree.total_s()
        if now - before < QUIET_SHARE * QUIET_WINDOW_S:
            return now
        before = now
    raise RuntimeError("the server never went quiet")


@contextmanager
def server(root: Path, settings: dict[str, str]) -> Iterator[tuple[str, int]]:
    """``streamlit run app.py`` from ``root`` on a free port, public mode, with ``settings``
    (environment variables) besides; yields (url, pid)."""
    env = {
        "JAXPLAY_PUBLIC": "1",
        "JAXPLAY_VISITOR_KEY": "session",
        "PYTHONDONTWRITEBYTECODE": "1",
        **settings,
    }
    with serve.Server(env=env, cwd=root, startup_s=120) as process:
        yield process.url, process.pid


def rendered(page: Page, title: str) -> None:
    page.locator("h1").filter(has_text=title).first.wait_for(timeout=TIMEOUT_MS)
    page.wait_for_timeout(300)
    page.wait_for_function(_IDLE_JS, timeout=TIMEOUT_MS)
    if page.locator('[data-testid="stException"]').count():
        raise RuntimeError(f"an exception box on {title}")


def one_server(root: Path, browser, settings: dict[str, str]) -> dict[str, tuple[float, float]]:
    """(CPU seconds, wall seconds) of each step of :data:`STEPS` on a fresh server."""
    costs: dict[str, tuple[float, float]] = {}
    with server(root, settings) as (url, pid):
        tree = ProcTree(pid)
        cpu = wait_quiet(tree)
        for visitor in (1, 2):
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            for name in ("home", "jit"):
                start = time.perf_counter()
                if name == "home":
                    page.goto(url + "/", timeout=TIMEOUT_MS)
                else:
                    nav = page.locator('[data-testid="stSidebarNav"] a').filter(has_text="jit")
                    nav.first.click()
                rendered(page, "jaxplay" if name == "home" else "jit")
                wall = time.perf_counter() - start
                after = wait_quiet(tree)
                costs[f"visitor {visitor}: {name}"] = (after - cpu, wall)
                cpu = after
            context.close()
            cpu = wait_quiet(tree)
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="fresh servers")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to serve")
    parser.add_argument(
        "--warm-up",
        help="JAXPLAY_WARM_UP for the server (default: its own, which in public mode warms every "
        "page in the background from the first page served: that lands in visitor 1's home)",
    )
    parser.add_argument(
        "--no-claims",
        action="store_true",
        help="JAXPLAY_CHECK_CLAIMS=0: no start-up check of the pages' statements",
    )
    args = parser.parse_args()
    root = args.root.resolve()
    settings = {"JAXPLAY_WARM_UP": args.warm_up} if args.warm_up else {}
    if args.no_claims:
        settings["JAXPLAY_CHECK_CLAIMS"] = "0"
    runs = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for i in range(args.repeats):
            runs.append(one_server(root, browser, settings))
            print(f"server {i + 1}: " + ", ".join(f"{k} {v[0]:.2f}" for k, v in runs[-1].items()))
        browser.close()
    commit = subprocess.run(
        ["git", "-C", str(root), "log", "-1", "--format=%h %s"], capture_output=True, text=True
    ).stdout.strip()
    print(f"\n{root} ({commit or 'not a git checkout'}); settings: {settings or 'the defaults'}")
    print(f"{os.cpu_count()} cores, 1-minute load average {os.getloadavg()[0]:.1f} at the end")
    print(f"median of {len(runs)} fresh servers (min-max)")
    print(f"{'step':<18} {'server CPU-s':>12} {'(min-max)':>13} {'wall s':>7}")
    for step in STEPS:
        cpu = [r[step][0] for r in runs]
        wall = [r[step][1] for r in runs]
        print(
            f"{step:<18} {statistics.median(cpu):12.2f} ({min(cpu):5.2f}-{max(cpu):5.2f}) "
            f"{statistics.median(wall):7.2f}"
        )


if __name__ == "__main__":
    main()

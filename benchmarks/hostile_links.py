"""Hostile links against a public server: the worst health-check stall and the memory growth.

Starts ``streamlit run app.py`` in public mode, opens each link of
``jaxplay/hosting/hostile_links.py`` (every ``*_LINKS`` table there: formulas and sizes, Markdown,
the mispriced work and pages that measured on load) in turn in a fresh headless chromium session,
opens each group of ``CONCURRENT_LINKS`` at once (four new seeds of the state page), sends the
``PROTOCOL_PAYLOADS`` a scripted client sends instead of a link (``clear_cache`` 50 times, a 4 MB
editor value), and polls the health endpoint (``/_stcore/health``) every 100 ms from another thread
and samples the server process's resident memory. A stall is the longest time the health check took
to answer while a link was being handled: the server's GIL held by one visitor's input shows up
here; the growth is the server's peak resident memory while it handled the link, over what it held
just before. The goal (the hardening issue's): every stall ≤ 2 s, memory growth ≤ 2 GB.

    .venv/bin/python benchmarks/hostile_links.py
    .venv/bin/python benchmarks/hostile_links.py --quick   # one link of each table, 2 seeds
    .venv/bin/python benchmarks/hostile_links.py --only sort   # links whose name has "sort"
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pages._visitor import Visitor  # noqa: E402

from playwright.sync_api import sync_playwright  # noqa: E402

from benchmarks._browser import wait_for_run  # noqa: E402
from jaxplay.hosting import hostile_links as hostile_payloads  # noqa: E402
from jaxplay.hosting import serve  # noqa: E402
from jaxplay.hosting.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

GOAL_STALL_S = 2.0
GOAL_GROWTH_BYTES = 2 * 2**30


def rss_bytes(pid: int) -> int:
    """Resident memory of ``pid`` (from ``/proc``), 0 if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@dataclass
class Probe:
    """Polls the health endpoint and the server's memory until stopped."""

    base: str
    pid: int
    worst_s: float = 0.0
    peak_rss: int = 0
    start_rss: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                with urllib.request.urlopen(self.base + "/_stcore/health", timeout=60) as r:
                    r.read()
            except OSError:
                pass
            self.worst_s = max(self.worst_s, time.monotonic() - started)
            self.peak_rss = max(self.peak_rss, rss_bytes(self.pid))
            self._stop.wait(0.1)

    def reset(self) -> None:
        self.worst_s = 0.0
        self.start_rss = self.peak_rss = rss_bytes(self.pid)

    def __enter__(self) -> Probe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def wait_done(page, timeout_s: float) -> float:
    """Seconds until the page's script has finished (the app's own script state, as the browser
    tests wait: Streamlit 1.67's status widget never says "Running")."""
    started = time.monotonic()
    wait_for_run(page, timeout_ms=int(timeout_s * 1000))
    return time.monotonic() - started


def link_tables() -> dict[str, tuple[tuple[str, str], ...]]:
    """Every ``*_LINKS`` table of (name, link) pairs in ``jaxplay/hosting/hostile_links.py``."""
    return {
        name: table
        for name, table in vars(hostile_payloads).items()
        if name.endswith("_LINKS") and name != "CONCURRENT_LINKS"
    }


def chosen(quick: bool, only: str | None) -> list[tuple[str, tuple[str, ...]]]:
    """(name, links opened at once) to open, in order."""
    groups: list[tuple[str, tuple[str, ...]]] = []
    for table in link_tables().values():
        rows = table[:1] if quick else table
        groups += [(name, (link,)) for name, link in rows]
    for name, links in getattr(hostile_payloads, "CONCURRENT_LINKS", ()):
        groups.append((name, links[:2] if quick else links))
    if only:
        groups = [g for g in groups if only.lower() in g[0].lower()]
    return groups


def clear_cache_flood(base: str) -> None:
    """A client that sends Streamlit's ``clear_cache`` 50 times (a no-op in public mode), then
    asks for a page."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    visitor = Visitor(base)
    try:
        visitor.open("")
        for _ in range(50):
            visitor.send(BackMsg(clear_cache=True))
        visitor.open("")
    finally:
        visitor.close()


def editor_4mb(base: str) -> None:
    """A client that sets the Code Lab editor's value to 4 MB of code (the editor keeps
    ``sandbox.MAX_SOURCE_CHARS``; the server's message limit is 8 MB)."""
    visitor = Visitor(base)
    try:
        visitor.open("code-lab")
        editor = next(w for w in visitor.widgets.values() if w.kind == "bidi_component")
        visitor.change(editor.key, {"value": "x = 1\n" * 700_000})
    finally:
        visitor.close()


#: Payloads a client sends over the websocket rather than in a link: (name, what it does).
PROTOCOL_PAYLOADS = (
    ("protocol: clear_cache sent 50 times", clear_cache_flood),
    ("protocol: the Code Lab editor set to 4 MB", editor_4mb),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--page-timeout", type=float, default=60.0)
    parser.add_argument("--quick", action="store_true", help="one link of each table")
    parser.add_argument("--only", help="only links whose name contains this")
    args = parser.parse_args()
    env = {"JAXPLAY_PUBLIC": "1", "JAXPLAY_RUNNER_SPARES": "1"}
    rows = []
    with serve.Room(1, env=env) as room, sync_playwright() as pw:
        base = room.url
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        pid = room.pids[0]
        warm = browser.new_page()
        warm.goto(base + "/")
        wait_done(warm, args.page_timeout)
        warm.close()
        with Probe(base, pid) as probe:
            for name, links in chosen(args.quick, args.only):
                probe.reset()
                pages = [browser.new_page() for _ in links]
                started = time.monotonic()
                try:
                    for page, link in zip(pages, links, strict=True):
                        page.goto(base + link)
                    for page in pages:
                        wait_done(page, args.page_timeout)
                    handled = f"{time.monotonic() - started:.1f} s"
                except Exception as exc:
                    handled = f"not done ({type(exc).__name__})"
                for page in pages:
                    page.close()
                time.sleep(0.3)
                rows.append((name, handled, probe.worst_s, probe.peak_rss - probe.start_rss))
            for name, payload in PROTOCOL_PAYLOADS:
                if args.only and args.only.lower() not in name.lower():
                    continue
                probe.reset()
                started = time.monotonic()
                try:
                    payload(base)
                    handled = f"{time.monotonic() - started:.1f} s"
                except Exception as exc:
                    handled = f"not done ({type(exc).__name__})"
                time.sleep(0.3)
                rows.append((name, handled, probe.worst_s, probe.peak_rss - probe.start_rss))
        browser.close()
    print(f"{'link':<48} {'handled in':>14} {'worst health':>13} {'memory growth':>14}")
    for name, handled, stall, growth in rows:
        print(f"{name:<48} {handled:>14} {stall:>11.2f} s {growth / 2**20:>10.0f} MiB")
    worst = max(r[2] for r in rows)
    growth = max(r[3] for r in rows)
    ok = worst <= GOAL_STALL_S and growth <= GOAL_GROWTH_BYTES
    print(
        f"\nworst stall {worst:.2f} s (goal ≤ {GOAL_STALL_S:g} s), largest growth "
        f"{growth / 2**20:.0f} MiB (goal ≤ {GOAL_GROWTH_BYTES / 2**30:g} GiB): "
        + ("met" if ok else "NOT met")
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Static cache: what a browser's first load of the app costs the server processes, with and
without the room's proxy keeping Streamlit's script files (``jaxplay.hosting.serve``).

Starts a room of ``--processes`` (2) behind HAProxy, records in chromium what a browser's first
view of ``--page`` (the jit page) fetches from the server (the page and every ``/static/`` file:
scripts, style, fonts, each element's script as the page first shows it), and fetches that
list ``--loads`` times each way: straight from a process (what every browser's first view costs
without the proxy's cache), then through the proxy (its first load fills the cache). Per load:
the CPU seconds of the server processes and of the proxy (``/proc``), the bytes, and how many
files the proxy served itself (``X-Jaxplay-Cache: hit``); it prints the mean, the median and
the range over the loads::

    .venv/bin/python benchmarks/static_cache.py --loads 20

The fetches are one after another from one client, as a room's browsers arriving over some
seconds would be; the proxy's cache misses files fetched while another fetch of them is still
being stored, which a burst of simultaneous first loads would show.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._cpu import CLK_TCK, proc_stat  # noqa: E402
from jaxplay.hosting import serve  # noqa: E402

#: As a browser asks (no compression is offered back by Streamlit 1.67's static files).
HEADERS = {"Accept-Encoding": "gzip, deflate, br, zstd"}


def cpu_s(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        stat = proc_stat(pid)
        total += stat[1] if stat else 0
    return total / CLK_TCK


def files_a_browser_fetches(base: str, page: str) -> list[str]:
    """The paths chromium fetches from the server for a first view of ``page``: the page itself
    and every ``/static/`` file, in order, each once."""
    from playwright.sync_api import sync_playwright

    from benchmarks._browser import wait_for_run, watch_runs
    from jaxplay.hosting.chromium import CHROMIUM, CHROMIUM_ARGS

    paths: list[str] = [""]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context()
        watch_runs(context)
        tab = context.new_page()

        def seen(request: Any) -> None:
            path = request.url[len(base) + 1 :].split("?")[0]
            if request.url.startswith(base) and path.startswith("static/") and path not in paths:
                paths.append(path)

        tab.on("request", seen)
        tab.goto(f"{base}/{page}")
        wait_for_run(tab, 300_000)
        tab.wait_for_timeout(2000)  # the charts' scripts load as they are drawn
        browser.close()
    return paths


def files_the_page_names(base: str) -> list[str]:
    """Without a browser: the page, the files it names, and the Plotly chart's script (fewer
    than a browser fetches; what ``tests/hosting/test_room.py`` runs the benchmark with)."""
    with urllib.request.urlopen(urllib.request.Request(base + "/", headers=HEADERS)) as r:
        page = r.read().decode()
    named = re.findall(r'(?:src|href)="\.?/?(static/[^"]+)"', page)
    import streamlit  # the package's own files: where the chart's hashed name is

    js = Path(streamlit.__file__).parent / "static" / "static" / "js"
    plotly = sorted(p.name for p in js.glob("PlotlyChart.*.js"))
    return ["", *named, *(f"static/js/{name}" for name in plotly)]


def load(base: str, paths: list[str]) -> tuple[int, int]:
    """Fetch every path once; (bytes, files the proxy served itself)."""
    size = hits = 0
    header = serve.CACHE_HEADER.lower()
    for path in paths:
        with urllib.request.urlopen(urllib.request.Request(f"{base}/{path}", headers=HEADERS)) as r:
            size += len(r.read())
            hits += r.headers.get(header) == "hit"
    return size, hits


def measure(base: str, paths: list[str], loads: int, servers: list[int], proxy: int) -> dict:
    rows = []
    for _ in range(loads):
        s0, p0, t0 = cpu_s(servers), cpu_s([proxy]), time.perf_counter()
        size, hits = load(base, paths)
        rows.append(
            (cpu_s(servers) - s0, cpu_s([proxy]) - p0, time.perf_counter() - t0, size, hits)
        )
    return {
        "servers_cpu_s": [r[0] for r in rows],
        "proxy_cpu_s": [r[1] for r in rows],
        "wall_s": [r[2] for r in rows],
        "bytes": rows[-1][3],
        "hits": [r[4] for r in rows],
    }


def report(name: str, result: dict, files: int) -> None:
    def spread(values: list[float]) -> str:
        # /proc counts in ticks (10 ms here): the mean over the loads is finer than any one.
        return (
            f"mean {statistics.mean(values) * 1e3:5.1f} ms, median "
            f"{statistics.median(values) * 1e3:.0f} ({min(values) * 1e3:.0f}-"
            f"{max(values) * 1e3:.0f})"
        )

    print(
        f"{name:<34} servers {spread(result['servers_cpu_s'])}  proxy "
        f"{spread(result['proxy_cpu_s'])}  wall {spread(result['wall_s'])}  "
        f"{result['bytes'] / 1e6:.1f} MB, {files} files, proxy served "
        f"{statistics.median(result['hits']):.0f} (first load {result['hits'][0]})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--loads", type=int, default=20)
    parser.add_argument("--page", default="jit", help="the page whose first view is fetched")
    args = parser.parse_args()
    env = {"JAXPLAY_WARM_UP": "off", "JAXPLAY_CHECK_CLAIMS": "0"}
    with serve.Room(processes=args.processes, env=env, proxy=True) as room:
        assert room.proxy is not None and room.proxy.process is not None
        proxy = room.proxy.process.pid
        time.sleep(3)  # the processes' own start-up settles
        direct = room.servers[0].url
        paths = files_a_browser_fetches(direct, args.page)
        print(
            f"{os.cpu_count()} cores; {args.loads} loads each way of the files chromium fetched "
            f"for a first view of /{args.page}; per load"
        )
        report(
            "straight from a process",
            measure(direct, paths, args.loads, room.pids, proxy),
            len(paths),
        )
        report(
            "through the proxy",
            measure(room.url, paths, args.loads, room.pids, proxy),
            len(paths),
        )


if __name__ == "__main__":
    main()

"""Capacity: what each visitor action costs the server in CPU seconds, and how many visitors fit.

Starts ``streamlit run app.py`` (public mode, as the hosting guide deploys it) inside a cgroup of
its own, drives it with real headless chromium sessions, one action at a time with quiet gaps,
and reads the CPU seconds the server and its sandbox workers used for each action:

* **cgroup** (the figure reported): the kernel's CPU counter of a cgroup the server was started
  in (cgroup v1 ``cpuacct.usage`` or v2 ``cpu.stat``). Every process the server starts lands in
  it, and it keeps counting processes that have exited, so single-use sandbox workers, killed
  before anyone waits for them, are counted in full. The browsers are not in it.
* **/proc** (a cross-check): the server's and every descendant's own ``utime+stime``, sampled
  every 50 ms and kept per process after it exits. It misses each process's last few
  milliseconds and processes whose parent died first. The parent's ``cutime/cstime`` is not
  used: it only counts children the parent waited for, and a worker killed with its sandbox is
  reaped by init, not by the server, so its CPU would be lost.
* inside the server (``benchmarks/server_probe.py``): the CPU of its Python threads (where the
  GIL can serialise) and how long jaxplay's measurement lock was held.

For every action it waits until the server has been idle (under 3% of a core for 1 s), takes
the counters, does the action, waits until the server is idle again (so a Code Lab run includes
starting the next spare worker), and takes them again. Per server started (``--servers``):

1. the first session visits every page in the navigation order: each page's **first visit**
   with the server's caches cold, ``--new-changes`` widget changes to values nobody chose
   before, and ``--runs`` Code Lab runs;
2. ``--cached-sessions`` fresh sessions repeat the tour: a page view when another visitor
   already filled the caches, the first widget change again (a value another visitor chose),
   and Code Lab runs; then every page again in the same tab, as a visitor's later views are
   (a tab's first view of a page also fetches its elements' scripts, the Plotly chart's 4.7 MB;
   the tab has them by then);
3. idle cost: the server alone, then with ``--idle-sessions`` open sessions, for
   ``--idle-seconds`` each.

It prints the median and spread of each action and a capacity model for a workshop pattern
(the model, pure arithmetic on the saved measurements, is ``benchmarks/capacity_model.py``; the
counters are ``benchmarks/_cpu.py``)::

    .venv/bin/python benchmarks/capacity.py --servers 2 --json capacity.json
    .venv/bin/python benchmarks/capacity.py --from-json capacity.json --change-every 20

CPU seconds hold up when other work shares the machine; the wall-clock latencies printed beside
them do not (they include waiting for the CPU).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._cpu import CLK_TCK, CpuCgroup, ProcTree, proc_stat  # noqa: E402
from benchmarks.capacity_model import (  # noqa: E402
    CHANGE_CACHED,
    CHANGE_NEW,
    RUN,
    SERVER_START,
    VIEW_AGAIN,
    VIEW_CACHED,
    VIEW_COLD,
    Pattern,
    print_model,
    print_table,
)
from benchmarks.load import (  # noqa: E402
    ACTION_TIMEOUT_MS,
    open_page,
    runs_done,
    track_runs,
    type_code,
    wait_rendered,
)
from jaxplay.hosting import serve  # noqa: E402
from jaxplay.hosting.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

QUIET_WINDOW_S = 1.0
QUIET_CORE_SHARE = 0.03

#: The widget each page's visitors change: (widget key, how), a widget shown when the page
#: opens. Each change goes one step from the widget's current value: "step" types the number
#: input's value plus one (a narrow number input has no + button), "select" picks the next
#: option, "pills" the next pill, "tab" opens the next tab, "button" clicks it (no value), "text"
#: types the next of TEXTS (the same sequence in every session).
WIDGETS: dict[str, tuple[str, str]] = {
    "jit": ("jit_rows", "step"),
    "grad": ("grad_hi", "step"),
    "vmap": ("vmap_layout", "select"),
    "compose": ("compose_function", "select"),
    "tracing": ("tracing_preset", "select"),
    "prng": ("prng_seed", "text"),
    "devices": ("devices_tab", "tab"),  # on CPU devices its first tab has no widget
    "memory": ("memory_size", "step"),
    "article": ("walkthrough_section", "pills"),
}
TEXTS = ("1", "2", "3", "4", "5")
SNIPPET = "import jax.numpy as jnp\nprint('{marker}', jnp.ones(3).sum())\n"


@dataclass(frozen=True)
class Snapshot:
    wall: float
    cgroup_s: float  # NaN without a cgroup
    tree_s: float
    server_s: float
    python_s: float
    lock_s: float  # NaN when the lock could not be probed


@dataclass
class Record:
    """One measured action: CPU seconds by counter, and wall-clock seconds."""

    kind: str
    page: str
    server: int
    session: int
    cpu_s: float  # the figure reported: the cgroup's, or /proc's without a cgroup
    cgroup_s: float
    tree_s: float
    server_s: float
    workers_s: float
    python_s: float
    lock_s: float
    latency_s: float  # until the page finished rendering (or the run's output appeared)
    settled_s: float  # until the server went quiet again (the window the counters cover)
    #: ``cpu_s`` less what the server and one open session use when idle over ``settled_s``
    #: (the public sidebar's refresh, the file watcher): counted once, in the idle cost.
    net_s: float = float("nan")


class Meter:
    """The counters of one running server."""

    def __init__(
        self, cgroup: CpuCgroup, tree: ProcTree, server_pid: int, probe_file: Path
    ) -> None:
        self.cgroup = cgroup
        self.tree = tree
        self.server_pid = server_pid
        self.probe_file = probe_file
        self.lock_note = ""

    async def _probe(self, after: float) -> dict[str, Any]:
        deadline = time.time() + 5
        data: dict[str, Any] = {}
        while time.time() < deadline:
            with contextlib.suppress(OSError, ValueError):
                data = json.loads(self.probe_file.read_text())
                if data.get("t", 0) > after:
                    break
            await asyncio.sleep(0.05)
        if data.get("lock_missing"):
            self.lock_note = data["lock_missing"]
        return data

    def _counters(self) -> tuple[float, float, float, float, float]:
        """(perf_counter, time, cgroup CPU-s, /proc CPU-s, the server process's own CPU-s)."""
        stat = proc_stat(self.server_pid)
        return (
            time.perf_counter(),
            time.time(),
            self.cgroup.usage_s() if self.cgroup.available else float("nan"),
            self.tree.total_s(),
            (stat[1] / CLK_TCK) if stat else float("nan"),
        )

    async def snapshot(self, counters: tuple[float, ...] | None = None) -> Snapshot:
        """The counters now (or ``counters`` taken earlier, while the server was quiet)."""
        wall, stamp, cgroup, tree, server = counters or self._counters()
        probe = await self._probe(stamp)
        lock = probe.get("lock_busy_s")
        return Snapshot(
            wall=wall,
            cgroup_s=cgroup,
            tree_s=tree,
            server_s=server,
            python_s=float(probe.get("python_threads_cpu_s", float("nan"))),
            lock_s=float(lock) if lock is not None else float("nan"),
        )

    async def settle(self, timeout_s: float = 300.0, required: bool = True) -> Snapshot:
        """Wait until the server used under 3% of a core for a whole second.

        Returns the counters at the start of that quiet second: the idle second itself is not
        part of the action that ended before it.
        """
        start = time.monotonic()
        await asyncio.sleep(0.3)
        before = self._counters()
        usage = 2 if self.cgroup.available else 3
        while True:
            await asyncio.sleep(QUIET_WINDOW_S)
            now = self._counters()
            if now[usage] - before[usage] < QUIET_CORE_SHARE * QUIET_WINDOW_S:
                return await self.snapshot(before)
            if time.monotonic() - start > timeout_s:
                if required:
                    raise RuntimeError(f"the server did not go quiet within {timeout_s:.0f} s")
                return await self.snapshot(now)
            before = now

    async def measure(
        self,
        kind: str,
        page: str,
        action: Callable[[], Awaitable[None]],
        server: int,
        session: int,
    ) -> Record:
        await self.settle()
        before = await self.snapshot()
        await action()
        latency = time.perf_counter() - before.wall
        after = await self.settle()
        return _record(kind, page, server, session, before, after, latency)


def _record(
    kind: str, page: str, server: int, session: int, a: Snapshot, b: Snapshot, latency: float
) -> Record:
    cgroup = b.cgroup_s - a.cgroup_s
    tree = b.tree_s - a.tree_s
    total = cgroup if cgroup == cgroup else tree  # NaN check: no cgroup
    server_s = b.server_s - a.server_s
    return Record(
        kind=kind,
        page=page,
        server=server,
        session=session,
        cpu_s=total,
        cgroup_s=cgroup,
        tree_s=tree,
        server_s=server_s,
        workers_s=total - server_s,
        python_s=b.python_s - a.python_s,
        lock_s=b.lock_s - a.lock_s,
        latency_s=latency,
        settled_s=b.wall - a.wall,
    )


# --- the server -------------------------------------------------------------------------------


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    meter: Meter


@contextlib.contextmanager
def probed_server(
    workdir: Path, public: bool = True, options: tuple[str, ...] = (), startup_s: float = 180.0
) -> Iterator[Server]:
    """``streamlit run app.py`` (public mode unless told), in a cgroup of its own, probed.

    ``options``: more ``--name value`` arguments for ``streamlit run``.
    """
    cgroup = CpuCgroup()
    if not cgroup.available:
        print(f"note: no cgroup ({cgroup.why}); CPU figures come from /proc sampling alone")
    port = serve.free_port()
    probe_file = workdir / f"probe-{port}.json"
    env = {
        "JAXPLAY_PUBLIC": "1" if public else "0",
        "JAXPLAY_VISITOR_KEY": "session",  # every browser context is its own visitor
        "JAXPLAY_SNIPPET_DB": str(workdir / "snippets.sqlite3"),
        "JAXPLAY_PROBE_FILE": str(probe_file),
        # One-offs of a server's start that a public server runs in the background (every page
        # warmed, every claim checked): they would land on whichever action came first, and
        # every action's cost, a page's cold first visit too, is measured here.
        "JAXPLAY_WARM_UP": "off",
        "JAXPLAY_CHECK_CLAIMS": "0",
        # The model's inputs are at the default sampling budgets, whatever the shell exports.
        "JAXPLAY_MEASURE_SCALE": "1",
    }
    probe = [sys.executable, "-m", "benchmarks.server_probe"]
    log = (workdir / f"server-{port}.log").open("wb")
    server = serve.Server(
        port,
        env=env,
        options=options,
        launcher=[*cgroup.prefix(), *probe] if cgroup.available else probe,
        log=log,
        startup_s=startup_s,
    )
    server.start()
    assert server.process is not None
    tree = ProcTree(server.pid)
    tree.start()
    try:
        try:
            server.wait_healthy()
        except RuntimeError as error:
            raise RuntimeError(
                f"{error}\n" + (workdir / f"server-{port}.log").read_text()[-3000:]
            ) from None
        yield Server(server.url, server.process, Meter(cgroup, tree, server.pid, probe_file))
    finally:
        tree.stop()
        server.stop()
        log.close()
        left = cgroup.remove()
        if left:
            print(f"note: killed {len(left)} process(es) the server left behind: {left}")


# --- browser actions --------------------------------------------------------------------------


async def click_next(items: Any, attribute: str, is_current: Callable[[str | None], bool]) -> None:
    """Click the item after the current one (the first after the last): the current is the last
    whose ``attribute`` ``is_current`` accepts, or the first."""
    count = await items.count()
    if not count:
        raise RuntimeError("nothing to pick: the widget shows no option, pill or tab")
    current = 0
    for i in range(count):
        if is_current(await items.nth(i).get_attribute(attribute)):
            current = i
    await items.nth((current + 1) % count).click()


async def change_widget(page: Any, title: str, key: str, how: str, nth: int) -> None:
    """Move the widget ``key`` one step from its current value and wait for the rerun.

    ``nth``: how many changes this session made to it before (for "text").
    """
    root = page.locator(f".st-key-{key}").first
    await root.wait_for(timeout=ACTION_TIMEOUT_MS)
    before = await runs_done(page)
    if how == "step":
        field = root.locator("input")
        value = float(await field.input_value())
        await field.fill(str(int(value) + 1) if value.is_integer() else str(value + 1))
        await field.press("Enter")
    elif how == "select":
        await root.locator('[data-testid="stSelectbox"]').click()
        options = page.locator('[role="option"]')
        await options.first.wait_for(timeout=ACTION_TIMEOUT_MS)
        await click_next(options, "aria-selected", lambda value: value == "true")
    elif how == "pills":
        active = lambda testid: (testid or "").endswith("Active")
        await click_next(root.locator("button"), "data-testid", active)
    elif how == "tab":
        await click_next(root.locator('[role="tab"]'), "aria-selected", lambda v: v == "true")
    elif how == "button":
        await root.locator("button").click()
    elif how == "text":
        field = root.locator("input")
        await field.fill(TEXTS[nth % len(TEXTS)])
        await field.press("Enter")
    else:
        raise ValueError(how)
    await wait_rendered(page, title, before)


async def prepare_snippet(page: Any, marker: str) -> None:
    before = await runs_done(page)
    await type_code(page, SNIPPET.format(marker=marker))
    await wait_rendered(page, "Code Lab", before)


async def run_snippet(page: Any, marker: str) -> None:
    before = await runs_done(page)
    await page.locator(".st-key-code_lab_run button").click()
    await page.get_by_text(f"{marker} 3.0").first.wait_for(timeout=ACTION_TIMEOUT_MS)
    await wait_rendered(page, "Code Lab", before)


async def tour(
    browser: Any,
    server: Server,
    index: int,
    session: int,
    first: bool,
    args: argparse.Namespace,
    records: list[Record],
) -> None:
    """One visitor's tour of every page; the first session of a server finds its caches cold."""
    from jaxplay.hosting import catalog  # the one jaxplay import here (the page registry)

    meter = server.meter
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    track_runs(page)
    view = VIEW_COLD if first else VIEW_CACHED
    topics = [spec for spec in catalog.TOPICS if not args.pages or spec.url_path in args.pages]

    def keep(record: Record) -> None:
        records.append(record)
        print(
            f"  [{index}.{session}] {record.kind:<46} {record.page:<9} "
            f"{record.cpu_s:6.2f} CPU-s  ({record.latency_s:5.1f} s)",
            flush=True,
        )

    async def home() -> None:
        await page.goto(server.url + "/", timeout=ACTION_TIMEOUT_MS)
        await wait_rendered(page, "jaxplay")

    async def home_again() -> None:
        before = await runs_done(page)
        nav = page.locator('[data-testid="stSidebarNav"] a')
        await nav.filter(has_text=catalog.HOME.title).first.click()
        await wait_rendered(page, "jaxplay", before)

    def visit(spec: Any) -> Callable[[], Awaitable[None]]:
        async def action() -> None:
            await open_page(page, spec)

        return action

    try:
        keep(await meter.measure(view, "home", home, index, session))
        for spec in topics:
            keep(await meter.measure(view, spec.url_path, visit(spec), index, session))
            widget = WIDGETS.get(spec.url_path)
            if widget is not None:
                kind = CHANGE_NEW if first else CHANGE_CACHED
                for nth in range(args.new_changes if first else 1):

                    async def change(
                        spec: Any = spec, widget: tuple[str, str] = widget, nth: int = nth
                    ) -> None:
                        await change_widget(page, spec.title, *widget, nth)

                    keep(await meter.measure(kind, spec.url_path, change, index, session))
            if spec.url_path == "code-lab":
                for r in range(args.runs if first else max(1, args.runs - 1)):
                    marker = f"cap{index}x{session}x{r}"
                    await prepare_snippet(page, marker)

                    async def run(marker: str = marker) -> None:
                        await run_snippet(page, marker)

                    keep(await meter.measure(RUN, "code-lab", run, index, session))
        if not first:  # the same tab views every page again (see VIEW_AGAIN)
            keep(await meter.measure(VIEW_AGAIN, "home", home_again, index, session))
            for spec in topics:
                keep(await meter.measure(VIEW_AGAIN, spec.url_path, visit(spec), index, session))
    finally:
        await context.close()


async def idle_costs(
    browser: Any, server: Server, args: argparse.Namespace
) -> tuple[float, float, float, float]:
    """(server alone, CPU-s per s; per open session, CPU-s per s; server RSS MiB; per session)."""
    meter = server.meter
    await meter.settle(required=False)
    a = await meter.snapshot()
    await asyncio.sleep(args.idle_seconds)
    b = await meter.snapshot()
    alone = (b.tree_s - a.tree_s if b.cgroup_s != b.cgroup_s else b.cgroup_s - a.cgroup_s) / (
        b.wall - a.wall
    )
    rss_before = _rss_mib(server.process.pid)
    contexts = []
    for _ in range(args.idle_sessions):
        context = await browser.new_context(viewport={"width": 1280, "height": 900})
        page = await context.new_page()
        track_runs(page)
        await page.goto(server.url + "/", timeout=ACTION_TIMEOUT_MS)
        await wait_rendered(page, "jaxplay")
        contexts.append(context)
    await meter.settle(required=False, timeout_s=30)
    rss_after = _rss_mib(server.process.pid)
    a = await meter.snapshot()
    await asyncio.sleep(args.idle_seconds)
    b = await meter.snapshot()
    busy = (b.tree_s - a.tree_s if b.cgroup_s != b.cgroup_s else b.cgroup_s - a.cgroup_s) / (
        b.wall - a.wall
    )
    for context in contexts:
        await context.close()
    n = max(1, args.idle_sessions)
    return alone, (busy - alone) / n, rss_after, (rss_after - rss_before) / n


def _rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


async def measure_all(args: argparse.Namespace) -> dict[str, Any]:
    from playwright.async_api import async_playwright

    records: list[Record] = []
    idle: list[dict[str, float]] = []
    notes: set[str] = set()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="jaxplay-capacity-") as tmp:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for index in range(1, args.servers + 1):
                print(f"server {index} of {args.servers}", flush=True)
                started = time.perf_counter()
                options = tuple(
                    part
                    for option in args.server_option
                    for part in (f"--{option.partition('=')[0]}", option.partition("=")[2])
                )
                with probed_server(Path(tmp), args.public, options) as server:
                    meter = server.meter
                    if not meter.cgroup.available:
                        notes.add(f"no cgroup: {meter.cgroup.why}")
                    healthy = time.perf_counter() - started
                    snap = await meter.settle()
                    first = len(records)
                    records.append(
                        Record(
                            kind=SERVER_START,
                            page="-",
                            server=index,
                            session=0,
                            cpu_s=snap.cgroup_s if snap.cgroup_s == snap.cgroup_s else snap.tree_s,
                            cgroup_s=snap.cgroup_s,
                            tree_s=snap.tree_s,
                            server_s=snap.server_s,
                            workers_s=0.0,
                            python_s=snap.python_s,
                            lock_s=snap.lock_s,
                            latency_s=healthy,
                            settled_s=time.perf_counter() - started,
                        )
                    )
                    for session in range(1 + args.cached_sessions):
                        await tour(browser, server, index, session, session == 0, args, records)
                    alone, per_session, rss, rss_per = await idle_costs(browser, server, args)
                    for record in records[first:]:
                        idle_s = 0.0 if record.kind == SERVER_START else record.settled_s
                        record.net_s = record.cpu_s - (alone + per_session) * idle_s
                    idle.append(
                        {
                            "server_alone_cpu_per_s": alone,
                            "per_session_cpu_per_s": per_session,
                            "server_rss_mib": rss,
                            "rss_per_session_mib": rss_per,
                        }
                    )
                    print(
                        f"  idle: server alone {alone * 1e3:.1f} ms CPU/s; each open session "
                        f"{per_session * 1e3:.1f} ms CPU/s more; server RSS {rss:.0f} MiB",
                        flush=True,
                    )
                    if meter.lock_note:
                        notes.add(f"lock not measured: {meter.lock_note}")
            await browser.close()
    return {
        "records": [asdict(r) for r in records],
        "idle": idle,
        "notes": sorted(notes),
        "machine": {
            "cores": os.cpu_count(),
            "load_before": load_before,
            "load_after": os.getloadavg(),
            "date": datetime.date.today().isoformat(),
            "counter": "/proc sampling" if any("no cgroup" in n for n in notes) else "cgroup",
        },
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--servers", type=int, default=3, help="fresh servers (cold repeats)")
    parser.add_argument("--cached-sessions", type=int, default=2, help="sessions after the first")
    parser.add_argument("--new-changes", type=int, default=2, help="new-value changes per page")
    parser.add_argument("--runs", type=int, default=3, help="Code Lab runs in the first session")
    parser.add_argument(
        "--pages",
        type=lambda text: [p.strip() for p in text.split(",") if p.strip()],
        default=[],
        help="only these pages (addresses, comma-separated; default: all)",
    )
    parser.add_argument("--idle-sessions", type=int, default=4)
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    parser.add_argument(
        "--public",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="JAXPLAY_PUBLIC=1, as the hosting guide deploys it (default)",
    )
    parser.add_argument(
        "--server-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a streamlit run option, e.g. server.fileWatcherType=none (repeatable)",
    )
    parser.add_argument("--json", type=Path, help="save the measurements here")
    parser.add_argument("--from-json", type=Path, help="skip measuring: model these results")
    parser.add_argument("--view-every", type=float, default=30.0)
    parser.add_argument("--change-every", type=float, default=10.0)
    parser.add_argument("--run-every", type=float, default=60.0)
    parser.add_argument("--cold-view-share", type=float, default=0.0)
    parser.add_argument(
        "--first-view-share",
        type=float,
        default=0.0,
        help="of the cached views, the browser's first of that page (default: a one-off each)",
    )
    # The workshop pattern, as benchmarks/room_load.py drives it: a quarter of changes new.
    parser.add_argument("--new-change-share", type=float, default=0.25)
    parser.add_argument("--utilisation", type=float, default=0.7)
    parser.add_argument("--cores", type=int, default=16)
    parser.add_argument(
        "--processes", type=int, default=1, help="server processes behind the proxy (the model)"
    )
    parser.add_argument(
        "--slots",
        type=int,
        help="measurements at once (default: one per process when each has cores of its own)",
    )
    args = parser.parse_args()
    if args.from_json:
        data = json.loads(args.from_json.read_text())
    else:
        data = asyncio.run(measure_all(args))
        if args.json:
            args.json.write_text(json.dumps(data, indent=1))
    m = data["machine"]
    print(
        f"\nmachine: {m['cores']} cores, load average {m['load_before'][0]:.1f} before, "
        f"{m['load_after'][0]:.1f} after; {m['date']}; counter: {m['counter']}"
    )
    print_table(data)
    pattern = Pattern(
        view_every_s=args.view_every,
        change_every_s=args.change_every,
        run_every_s=args.run_every,
        cold_view_share=args.cold_view_share,
        new_change_share=args.new_change_share,
        first_view_share=args.first_view_share,
        utilisation=args.utilisation,
        cores=args.cores,
        processes=args.processes,
        slots=args.slots or (args.processes if args.cores >= args.processes else 1),
    )
    print_model(data, pattern)


if __name__ == "__main__":
    main()

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
   and Code Lab runs;
3. idle cost: the server alone, then with ``--idle-sessions`` open sessions, for
   ``--idle-seconds`` each.

It prints the median and spread of each action and a capacity model for a workshop pattern::

    .venv/bin/python benchmarks/capacity.py --servers 3 --json capacity.json
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
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.load import (  # noqa: E402
    ACTION_TIMEOUT_MS,
    open_page,
    runs_done,
    track_runs,
    wait_rendered,
)
from jaxplay.hosting import serve  # noqa: E402
from jaxplay.hosting.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
QUIET_WINDOW_S = 1.0
QUIET_CORE_SHARE = 0.03

#: The widget each page's visitors change: (widget key, how), a widget shown when the page
#: opens. Each change goes one step from the widget's current value: "step" presses the number
#: input's +, "select" picks the next option, "pills" the next pill, "button" clicks it (no
#: value), "text" types the next of TEXTS (the same sequence in every session).
WIDGETS: dict[str, tuple[str, str]] = {
    "jit": ("jit_rows", "step"),
    "grad": ("grad_hi", "step"),
    "vmap": ("vmap_layout", "select"),
    "compose": ("compose_function", "select"),
    "tracing": ("tracing_preset", "select"),
    "prng": ("prng_seed", "text"),
    "devices": ("devices_refresh", "button"),
    "memory": ("memory_size", "step"),
    "article": ("walkthrough_section", "pills"),
}
TEXTS = ("1", "2", "3", "4", "5")
SNIPPET = "import jax.numpy as jnp\nprint('{marker}', jnp.ones(3).sum())\n"

VIEW_COLD = "page view, caches cold (first visit)"
VIEW_CACHED = "page view, caches filled by another visitor"
CHANGE_NEW = "widget change, a new value"
CHANGE_CACHED = "widget change, a value another visitor chose"
RUN = "Code Lab run (incl. next spare)"
SERVER_START = "server start (until healthy)"


# --- counters ---------------------------------------------------------------------------------


class CpuCgroup:
    """A cgroup the server is started in; its counter covers every process it ever held."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self.kind = ""
        self.why = ""
        tag = f"jaxplay-capacity-{os.getpid()}-{time.monotonic_ns()}"
        candidates = [
            (Path("/sys/fs/cgroup/cpuacct"), "v1"),
            (Path("/sys/fs/cgroup/unified"), "v2"),
            (Path("/sys/fs/cgroup"), "v2"),
        ]
        for parent, kind in candidates:
            marker = "cpuacct.usage" if kind == "v1" else "cgroup.controllers"
            if not (parent / marker).exists():
                continue
            path = parent / tag
            try:
                path.mkdir()
            except OSError as err:
                self.why = f"cannot create a cgroup under {parent}: {err}"
                continue
            self.path, self.kind = path, kind
            if self._join_works():
                self.why = ""
                return
            self.why = f"cannot move a process into {path}"
            self.remove()
        self.why = self.why or "no cgroup v1 cpuacct or cgroup v2 hierarchy found"

    def _join_works(self) -> bool:
        probe = subprocess.run([*self.prefix(), "true"], capture_output=True, check=False)
        return probe.returncode == 0

    @property
    def available(self) -> bool:
        return self.path is not None

    def prefix(self) -> list[str]:
        """A command prefix that moves the process into the cgroup, then execs the rest."""
        assert self.path is not None
        join = 'echo $$ > "$0" || exit 125; exec "$@"'
        return ["sh", "-c", join, str(self.path / "cgroup.procs")]

    def usage_s(self) -> float:
        assert self.path is not None
        if self.kind == "v1":
            return int((self.path / "cpuacct.usage").read_text()) / 1e9
        for line in (self.path / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6
        raise RuntimeError(f"no usage_usec in {self.path / 'cpu.stat'}")

    def pids(self) -> list[int]:
        if self.path is None:
            return []
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def remove(self) -> list[int]:
        """Kill what our server left in the cgroup (by pid) and remove it; the pids killed."""
        if self.path is None:
            return []
        left = self.pids()
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            try:
                self.path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)
        self.path = None
        return left


def _stat(pid: int) -> tuple[int, int, int] | None:
    """(ppid, utime+stime ticks, start time) of a process, or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = text.rsplit(")", 1)[1].split()
    return int(rest[1]), int(rest[11]) + int(rest[12]), int(rest[19])


class ProcTree(threading.Thread):
    """Samples the CPU time of a process and all its descendants, keeping exited ones."""

    def __init__(self, root: int, interval_s: float = 0.05) -> None:
        super().__init__(daemon=True, name="proc-tree")
        self.root = root
        self.interval_s = interval_s
        self._seen: dict[tuple[int, int], int] = {}
        self._lock = threading.Lock()
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval_s):
            self.scan()

    def stop(self) -> None:
        self._stop_event.set()

    def scan(self) -> None:
        stats: dict[int, tuple[int, int, int]] = {}
        children: dict[int, list[int]] = defaultdict(list)
        for name in os.listdir("/proc"):
            if name.isdigit():
                stat = _stat(int(name))
                if stat is not None:
                    stats[int(name)] = stat
                    children[stat[0]].append(int(name))
        stack = [self.root]
        with self._lock:
            while stack:
                pid = stack.pop()
                if pid in stats:
                    _, ticks, start = stats[pid]
                    key = (pid, start)
                    self._seen[key] = max(self._seen.get(key, 0), ticks)
                    stack.extend(children[pid])

    def total_s(self) -> float:
        self.scan()
        with self._lock:
            return sum(self._seen.values()) / CLK_TCK

    def live(self) -> list[int]:
        with self._lock:
            keys = list(self._seen)
        return [pid for pid, start in keys if (s := _stat(pid)) is not None and s[2] == start]


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

    def __init__(self, cgroup: CpuCgroup, tree: ProcTree, probe_file: Path) -> None:
        self.cgroup = cgroup
        self.tree = tree
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
        stat = _stat(self.tree.root)
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
        yield Server(server.url, server.process, Meter(cgroup, tree, probe_file))
    finally:
        tree.stop()
        server.stop()
        log.close()
        left = cgroup.remove()
        if left:
            print(f"note: killed {len(left)} process(es) the server left behind: {left}")


# --- browser actions --------------------------------------------------------------------------


async def change_widget(page: Any, title: str, key: str, how: str, nth: int) -> None:
    """Move the widget ``key`` one step from its current value and wait for the rerun.

    ``nth``: how many changes this session made to it before (for "text").
    """
    root = page.locator(f".st-key-{key}").first
    await root.wait_for(timeout=ACTION_TIMEOUT_MS)
    before = await runs_done(page)
    if how == "step":
        await root.locator('[data-testid="stNumberInputStepUp"]').click()
    elif how == "select":
        await root.locator('[data-testid="stSelectbox"]').click()
        options = page.locator('[role="option"]')
        await options.first.wait_for(timeout=ACTION_TIMEOUT_MS)
        count = await options.count()
        selected = 0
        for i in range(count):
            if await options.nth(i).get_attribute("aria-selected") == "true":
                selected = i
        await options.nth((selected + 1) % count).click()
    elif how == "pills":
        buttons = root.locator("button")
        count = await buttons.count()
        active = 0
        for i in range(count):
            testid = await buttons.nth(i).get_attribute("data-testid") or ""
            if testid.endswith("Active"):
                active = i
        await buttons.nth((active + 1) % count).click()
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
    editor = page.locator(".st-key-code_lab_editor textarea")
    await editor.fill(SNIPPET.format(marker=marker))
    before = await runs_done(page)
    await editor.press("Control+Enter")
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

    try:
        keep(await meter.measure(view, "home", home, index, session))
        for spec in catalog.TOPICS:
            if args.pages and spec.url_path not in args.pages:
                continue

            async def visit(spec: Any = spec) -> None:
                await open_page(page, spec)

            keep(await meter.measure(view, spec.url_path, visit, index, session))
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


# --- report and model -------------------------------------------------------------------------


def _median(values: list[float]) -> float:
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


def _groups(records: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[(r["kind"], r["page"])].append(r)
    return groups


def print_table(data: dict[str, Any]) -> None:
    records = data["records"]
    print()
    print(
        "CPU seconds per action, server process + its sandbox workers, browsers excluded. net: "
        "less the idle server's and session's own use over the action's window (median, min, "
        "max); raw and the rest: medians of the counters as read (py thr: the server's Python "
        "threads; lock: seconds the measurement lock was held; wall: until rendered)."
    )
    header = (
        f"{'action':<46} {'page':<9} {'n':>3} {'net':>7} {'min':>6} {'max':>6} {'raw':>6} "
        f"{'server':>7} {'workers':>7} {'py thr':>7} {'lock':>6} {'wall':>7}"
    )
    print(header)
    print("-" * len(header))
    order = [SERVER_START, VIEW_COLD, VIEW_CACHED, CHANGE_NEW, CHANGE_CACHED, RUN]
    groups = _groups(records)
    for kind in order:
        for (k, page), rows in groups.items():
            if k != kind:
                continue
            cpu = [r["net_s"] for r in rows]
            print(
                f"{kind:<46} {page:<9} {len(rows):>3} {_median(cpu):7.3f} {min(cpu):6.3f} "
                f"{max(cpu):6.3f} {_median([r['cpu_s'] for r in rows]):6.3f} "
                f"{_median([r['server_s'] for r in rows]):7.3f} "
                f"{_median([r['workers_s'] for r in rows]):7.3f} "
                f"{_median([r['python_s'] for r in rows]):7.3f} "
                f"{_median([r['lock_s'] for r in rows]):6.3f} "
                f"{_median([r['latency_s'] for r in rows]):6.1f}s"
            )
    both = [r for r in records if r["cgroup_s"] == r["cgroup_s"] and r["kind"] != SERVER_START]
    if both:
        cg = sum(r["cgroup_s"] for r in both)
        tr = sum(r["tree_s"] for r in both)
        print(
            f"cross-check over {len(both)} actions: /proc sampling saw {tr:.1f} CPU-s, the cgroup "
            f"counted {cg:.1f} CPU-s ({tr / cg:.1%})."
        )
    idle = data["idle"]
    if idle:
        alone = _median([i["server_alone_cpu_per_s"] for i in idle])
        per = _median([i["per_session_cpu_per_s"] for i in idle])
        print(
            f"idle: the server alone uses {alone * 1e3:.1f} ms CPU per s; each open session adds "
            f"{per * 1e3:.1f} ms per s (medians of {len(idle)} servers)."
        )
    for note in data.get("notes", []):
        print("note:", note)


@dataclass(frozen=True)
class Pattern:
    """A workshop's pattern: how often each visitor does what, and the target utilisation."""

    view_every_s: float
    change_every_s: float
    run_every_s: float
    cold_view_share: float
    new_change_share: float
    utilisation: float
    cores: int

    def rates(self) -> dict[str, float]:
        """Actions of each kind per second per visitor."""
        p, q = self.cold_view_share, self.new_change_share
        return {
            VIEW_COLD: p / self.view_every_s,
            VIEW_CACHED: (1 - p) / self.view_every_s,
            CHANGE_NEW: q / self.change_every_s,
            CHANGE_CACHED: (1 - q) / self.change_every_s,
            RUN: 1 / self.run_every_s,
        }


@dataclass(frozen=True)
class Cost:
    """What one action of a kind costs: mean over pages of each page's median."""

    cpu_s: float  # net CPU seconds, server and workers
    python_s: float  # of which on the server's Python threads (GIL-bound at most)
    lock_s: float  # seconds the measurement lock was held


@dataclass(frozen=True)
class Inputs:
    costs: dict[str, Cost]
    idle_per_s: float  # CPU-s per second of one open session
    alone_per_s: float  # CPU-s per second of the server with nobody connected
    cold_tour_s: float  # one-off: first visits of every page, beyond their cached cost


def model_inputs(data: dict[str, Any]) -> Inputs:
    groups = _groups(data["records"])

    def mean_of_medians(kind: str, field: str) -> float:
        medians = [
            _median([r[field] for r in rows]) for (k, _), rows in groups.items() if k == kind
        ]
        medians = [m for m in medians if m == m]
        return statistics.mean(medians) if medians else 0.0

    costs = {
        kind: Cost(
            mean_of_medians(kind, "net_s"),
            mean_of_medians(kind, "python_s"),
            mean_of_medians(kind, "lock_s"),
        )
        for kind in (VIEW_COLD, VIEW_CACHED, CHANGE_NEW, CHANGE_CACHED, RUN)
    }
    medians = {key: _median([r["net_s"] for r in rows]) for key, rows in groups.items()}
    cold = {p: m for (k, p), m in medians.items() if k == VIEW_COLD}
    cached = {p: m for (k, p), m in medians.items() if k == VIEW_CACHED}
    idle = data["idle"]
    return Inputs(
        costs=costs,
        idle_per_s=_median([i["per_session_cpu_per_s"] for i in idle]) if idle else 0.0,
        alone_per_s=_median([i["server_alone_cpu_per_s"] for i in idle]) if idle else 0.0,
        cold_tour_s=sum(cold[p] - cached.get(p, 0.0) for p in cold),
    )


def capacity(inputs: Inputs, pattern: Pattern) -> dict[str, float]:
    """Per visitor: CPU demand d, Python-thread demand, lock demand; and visitors that fit.

    d = c_idle + sum over action kinds of (rate x CPU-s); visitors per core = u / d. On
    ``cores`` cores the CPU allows cores x u / d, the server's Python threads (one GIL) allow
    u / (its Python-thread demand, idle counted as all Python), and the measurement lock allows
    u / (its held seconds per second): the smallest is the answer.
    """
    rates = pattern.rates()
    u = pattern.utilisation
    demand = inputs.idle_per_s + sum(rates[k] * c.cpu_s for k, c in inputs.costs.items())
    python = inputs.idle_per_s + sum(rates[k] * c.python_s for k, c in inputs.costs.items())
    lock = sum(rates[k] * c.lock_s for k, c in inputs.costs.items())
    cpu_bound = pattern.cores * u / demand
    gil_bound = u / python if python > 0 else float("inf")
    lock_bound = u / lock if lock > 0 else float("inf")
    return {
        "demand": demand,
        "python": python,
        "lock": lock,
        "per_core": u / demand,
        "cpu_bound": cpu_bound,
        "gil_bound": gil_bound,
        "lock_bound": lock_bound,
        "visitors": min(cpu_bound, gil_bound, lock_bound),
    }


def print_model(data: dict[str, Any], pattern: Pattern) -> None:
    inputs = model_inputs(data)
    c = capacity(inputs, pattern)
    rates = pattern.rates()
    print()
    print(
        f"Capacity model: each visitor views a page every {pattern.view_every_s:g} s "
        f"({pattern.cold_view_share:.0%} of them with cold caches), changes a widget every "
        f"{pattern.change_every_s:g} s ({pattern.new_change_share:.0%} of them to a value nobody "
        f"chose before) and runs code every {pattern.run_every_s:g} s; target "
        f"{pattern.utilisation:.0%} busy."
    )
    print(
        f"  {'input (mean over pages of each page median)':<46} {'per s':>7} {'CPU-s':>7} "
        f"{'py thr':>7} {'lock s':>7}"
    )
    for kind, cost in inputs.costs.items():
        print(
            f"  {kind:<46} {rates[kind]:7.4f} {cost.cpu_s:7.3f} {cost.python_s:7.3f} "
            f"{cost.lock_s:7.3f}"
        )
    print(f"  {'open session, per second (c_idle)':<46} {1:7.4f} {inputs.idle_per_s:7.4f}")
    print(
        "  d = c_idle + sum(rate x CPU-s); visitors per core = u / d; on n cores: "
        "min(n u / d, u / d_python, u / lock)"
    )
    print(
        f"  d = {c['demand'] * 1e3:.1f} ms CPU per s per visitor -> {c['per_core']:.1f} visitors "
        f"per core at {pattern.utilisation:.0%}"
    )
    print(
        f"  {pattern.cores} cores: CPU allows {c['cpu_bound']:.0f}; the server's Python threads "
        f"({c['python'] * 1e3:.1f} ms per s per visitor, one GIL) allow {c['gil_bound']:.0f}; the "
        f"measurement lock ({c['lock'] * 1e3:.1f} ms held per s per visitor) allows "
        f"{c['lock_bound']:.0f} -> {c['visitors']:.0f} visitors"
    )
    print(
        f"  fixed: the server alone {inputs.alone_per_s * 1e3:.1f} ms CPU per s; one-off first "
        f"visits of every page {inputs.cold_tour_s:.1f} CPU-s beyond their cached cost"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    parser.add_argument("--new-change-share", type=float, default=0.5)
    parser.add_argument("--utilisation", type=float, default=0.7)
    parser.add_argument("--cores", type=int, default=16)
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
        utilisation=args.utilisation,
        cores=args.cores,
    )
    print_model(data, pattern)


if __name__ == "__main__":
    main()

"""Room load: how many workshop visitors a room of server processes holds, at the protocol level.

Starts a room (``jaxplay.hosting.serve.Room``: ``--processes`` streamlit processes behind HAProxy,
public mode, loopback only) and drives it with Locust users that each speak Streamlit's own
websocket protocol (``pages/_visitor.py``): no browsers, so hundreds fit on this machine.
Each visitor follows the workshop pattern (every period jittered by +-20 %, phases random):

* a **page view** every ``--view-every`` s (a topic page, as the navigation opens it);
* a **value change** every ``--change-every`` s on the jit, grad or memory page's number input
  (opening that page first if the visitor is elsewhere), ``--new-share`` of them a value nobody
  chose before, the rest one of a few values chosen before (warmed on every process first);
* a **Code Lab run** every ``--run-every`` s (the page's example, in a fresh sandbox);
* and, as a browser does, the answers to every fragment's ``auto_rerun`` timer.

The visitors ramp through ``--ramp`` (5,10,20,40 by default), ``--stage-s`` seconds each. Per
stage it prints, per action kind, the count, the p50/p95 wait and the errors; the server's CPU
(every process of every server's tree and the proxy, from ``/proc``, in cores); the health
endpoint's worst answer time (polled through the proxy four times a second); and this load
generator's own CPU (if it nears one core, the figures measure the client). At the end: the
largest room held at p95 <= ``--p95-limit`` s for every kind with no errors. The ramp stops after
the first stage not held unless ``--keep-going``. Visitors stop at ``--max-visitors`` (500).

    .venv/bin/python benchmarks/room_load.py --processes 2 --ramp 5,10,20,40 --stage-s 60
    .venv/bin/python benchmarks/room_load.py --processes 2 --ramp 2 --stage-s 10 \\
        --pages grad --no-warm --view-every 4 --change-every 2 --run-every 8 --json out.json

Actions started in a stage count in that stage even when they end after it; at the end new
actions stop and the ones in flight finish (up to the protocol timeout).
"""

from __future__ import annotations

# Locust patches the standard library for gevent as it is imported: first, before any socket.
from locust import User, constant, task  # isort: skip
from locust.env import Environment  # isort: skip
from locust.log import setup_logging  # isort: skip

import argparse
import itertools
import json
import os
import random
import resource
import statistics
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import gevent

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pages._visitor import ProtocolError, Run, Visitor  # noqa: E402

from benchmarks._cpu import ProcTree  # noqa: E402
from jaxplay.hosting import catalog, serve, settings  # noqa: E402

MAX_VISITORS = 500
#: The page each value change happens on and its number input's key.
CHANGES = {"jit": "jit_rows", "grad": "grad_hi", "memory": "memory_size"}
#: Values chosen before: the widget's default plus this many steps (warmed on every process).
CHOSEN_STEPS = (1, 2, 3)
#: New values start this many steps above the default, one more for each.
NEW_FROM = 100
#: Number inputs whose new values go down from the default instead, one step more for each:
#: above its default the memory page's size soon predicts a run of more than the 3 s the page
#: runs by itself, and waits for the visitor's button (computing nothing). Until 2026-12-06 its
#: new values were 228 and up, so none of them measured anything.
NEW_BELOW = {"memory_size"}

VIEW = "page view"
CHANGE_NEW = "value change, new value"
CHANGE_CHOSEN = "value change, chosen before"
RUN = "Code Lab run"
REFRESH = "fragment auto-rerun"
KINDS = (VIEW, CHANGE_NEW, CHANGE_CHOSEN, RUN, REFRESH)


@dataclass
class Record:
    stage: int
    kind: str
    seconds: float
    error: str | None
    page: str = ""  # where a value changed (the new values' wait is reported per page too)


@dataclass
class Shared:
    """What the visitors of one run share (Locust users are greenlets in this process)."""

    url: str = ""
    args: argparse.Namespace | None = None
    stage: int = -1
    stopping: bool = False
    in_flight: int = 0
    records: list[Record] = field(default_factory=list)
    new_values: itertools.count = field(default_factory=lambda: itertools.count(NEW_FROM))
    new_below: itertools.count = field(default_factory=itertools.count)


SHARED = Shared()


def change_value(run_widgets: dict, key: str, new: bool) -> float:
    """A value for the number input ``key``: one nobody chose before, or one chosen before."""
    element = run_widgets[key].element
    if new and key in NEW_BELOW:
        below = int((element.default - element.min) / element.step)  # values above the least
        return element.default - element.step * (1 + next(SHARED.new_below) % below)
    steps = next(SHARED.new_values) if new else random.choice(CHOSEN_STEPS)
    value = element.default + element.step * steps
    if element.has_max and value > element.max:
        value = element.max - element.step * (steps % 50)
    return value


class RoomVisitor(User):
    """One workshop visitor: a Locust user holding one protocol session."""

    wait_time = constant(0)

    def on_start(self) -> None:
        args = SHARED.args
        assert args is not None
        self.visitor = Visitor(SHARED.url, timeout_s=args.timeout_s)
        now = time.monotonic()
        self.due = {
            VIEW: now + random.uniform(0, args.view_every),
            "change": now + random.uniform(0, args.change_every),
            RUN: now + (random.uniform(0, args.run_every) if args.run_every else float("inf")),
        }
        self._act(VIEW, lambda: self.visitor.open(catalog.page_name(random.choice(args.pages))))

    def _act(self, kind: str, action, page: str = "") -> Run | None:
        stage = SHARED.stage
        SHARED.in_flight += 1
        started = time.monotonic()
        error: str | None = None
        run = None
        try:
            run = action()
            if run.errors:
                error = run.errors[0]
        except (ProtocolError, OSError) as failure:
            error = f"{type(failure).__name__}: {failure}"[:300]
        finally:
            SHARED.in_flight -= 1
        seconds = time.monotonic() - started
        SHARED.records.append(Record(stage, kind, seconds, error, page))
        self.environment.events.request.fire(
            request_type="WS",
            name=kind,
            response_time=seconds * 1000,
            response_length=0,
            exception=RuntimeError(error) if error else None,
            context={},
        )
        return run

    def _next(self, name: str, period: float) -> None:
        self.due[name] = time.monotonic() + period * random.uniform(0.8, 1.2)

    @task
    def workshop(self) -> None:
        args = SHARED.args
        assert args is not None
        if SHARED.stopping:
            gevent.sleep(0.5)
            return
        now = time.monotonic()
        fragment = self.visitor.due(now)
        if fragment is not None:
            self._act(REFRESH, lambda: self.visitor.auto_rerun(fragment))
            return
        name = min(self.due, key=self.due.__getitem__)
        if self.due[name] > now:
            timer = self.visitor.next_timer()
            wake = min(self.due[name], timer if timer is not None else float("inf"))
            gevent.sleep(max(0.0, min(wake - now, 1.0)))
            return
        if name == VIEW:
            self._next(VIEW, args.view_every)
            self._act(VIEW, lambda: self.visitor.open(catalog.page_name(random.choice(args.pages))))
        elif name == RUN:
            self._next(RUN, args.run_every)
            if self.visitor.page != "code-lab":
                self._act(VIEW, lambda: self.visitor.open("code-lab"))
            if "code_lab_run" in self.visitor.widgets:
                self._act(RUN, lambda: self.visitor.click("code_lab_run"))
        else:
            self._next("change", args.change_every)
            pages = [p for p in args.pages if p in CHANGES] or list(CHANGES)
            if self.visitor.page not in CHANGES:
                self._act(VIEW, lambda: self.visitor.open(random.choice(pages)))
            key = CHANGES.get(self.visitor.page)
            if key in self.visitor.widgets:
                new = random.random() < args.new_share
                value = change_value(self.visitor.widgets, key, new)
                kind = CHANGE_NEW if new else CHANGE_CHOSEN
                self._act(kind, lambda: self.visitor.change(key, value), self.visitor.page)

    def on_stop(self) -> None:
        self.visitor.close()


# --- the server's side ------------------------------------------------------------------------


class Watch:
    """Samples the server trees' CPU and the health endpoint's answer time in the background."""

    def __init__(self, url: str, roots: list[int]) -> None:
        self.url = url
        self.cpu = ProcTree(*roots)
        self.worst_health_s = 0.0
        self._greenlets = [gevent.spawn(self._health), gevent.spawn(self._sample)]

    def _health(self) -> None:
        while True:
            started = time.monotonic()
            try:
                with urllib.request.urlopen(self.url + serve.HEALTH, timeout=60) as response:
                    response.read()
            except OSError:
                pass
            self.worst_health_s = max(self.worst_health_s, time.monotonic() - started)
            gevent.sleep(0.25)

    def _sample(self) -> None:
        while True:
            self.cpu.scan()
            gevent.sleep(0.5)

    def stop(self) -> None:
        gevent.killall(self._greenlets)


def _client_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def waits(mine: list[Record]) -> dict[str, float | int]:
    """Count, errors and the p50/p95 wait of some records."""
    answered = [r.seconds for r in mine if r.error is None]
    return {
        "count": len(mine),
        "errors": sum(r.error is not None for r in mine),
        "p50_s": statistics.median(answered) if answered else float("nan"),
        "p95_s": percentile(answered, 0.95) if answered else float("nan"),
    }


def summarize(stage: int, records: list[Record]) -> dict[str, dict[str, float | int]]:
    kinds: dict[str, dict[str, float | int]] = {}
    for kind in KINDS:
        mine = [r for r in records if r.stage == stage and r.kind == kind]
        if mine:
            kinds[kind] = waits(mine)
    return kinds


def new_values_by_page(stage: int, records: list[Record]) -> dict[str, dict[str, float | int]]:
    """The new values' waits per page: which page's fresh measurements a room waits for."""
    mine = [r for r in records if r.stage == stage and r.kind == CHANGE_NEW]
    return {
        page: waits([r for r in mine if r.page == page]) for page in sorted({r.page for r in mine})
    }


# --- the run ----------------------------------------------------------------------------------


def warm(url: str, processes: int, pages: list[str], run_every: float) -> None:
    """Every page, every value chosen before and one Code Lab run, on every process at once."""

    def one(process: int) -> None:
        visitor = Visitor(url, timeout_s=600)
        if processes > 1:
            visitor.cookie = f"{serve.COOKIE}=s{process}"
        for page in pages:
            visitor.open(catalog.page_name(page))
            key = CHANGES.get(page)
            if key in visitor.widgets:
                element = visitor.widgets[key].element
                for steps in CHOSEN_STEPS:
                    visitor.change(key, element.default + element.step * steps)
        if run_every:
            visitor.open("code-lab")
            visitor.click("code_lab_run")
        visitor.close()
        print(f"  warmed process {process}", flush=True)

    gevent.joinall([gevent.spawn(one, i) for i in range(processes)], raise_error=True)


def run(args: argparse.Namespace) -> dict:
    env = {"JAXPLAY_PUBLIC": "1", "JAXPLAY_VISITOR_KEY": "session"}
    db = Path(os.environ.get("TMPDIR", "/tmp")) / f"jaxplay-room-load-{os.getpid()}.sqlite3"
    result: dict = {"args": {k: v for k, v in vars(args).items() if k != "json"}, "stages": []}
    with serve.Room(
        args.processes,
        env=env,
        snippet_db=str(db),
        result_db=str(db.with_suffix(".results.sqlite3")),
        pin=args.pin,
    ) as room:
        shares = ", ".join(settings.cpu_list(c) for c in room.shares) or "every core each"
        print(f"room: {room.url}, {args.processes} process(es) on cores {shares}", flush=True)
        result["cores"] = [sorted(c) for c in room.shares]
        if args.warm:
            print("warming every page on every process ...", flush=True)
            warm(room.url, len(room.servers), args.pages, args.run_every)
        roots = room.pids + ([room.proxy.process.pid] if room.proxy and room.proxy.process else [])
        watch = Watch(room.url, roots)
        SHARED.url, SHARED.args = room.url, args
        environment = Environment(user_classes=[RoomVisitor], host=room.url)
        runner = environment.create_local_runner()
        try:
            for index, visitors in enumerate(args.ramp):
                SHARED.stage = -1  # actions started while visitors join count in no stage
                runner.start(visitors, spawn_rate=args.spawn_rate)
                if runner.spawning_greenlet is not None:
                    runner.spawning_greenlet.join()
                SHARED.stage = index
                watch.worst_health_s = 0.0
                cpu0, client0, t0 = watch.cpu.total_s(), _client_cpu_s(), time.monotonic()
                gevent.sleep(args.stage_s)
                SHARED.stage = -1
                wall = time.monotonic() - t0
                stage = {
                    "visitors": visitors,
                    "seconds": wall,
                    "server_cores": (watch.cpu.total_s() - cpu0) / wall,
                    "client_cores": (_client_cpu_s() - client0) / wall,
                    "worst_health_s": watch.worst_health_s,
                }
                result["stages"].append(stage)
                # Provisional (actions still in flight are not in it yet): only to stop early.
                more = index < len(args.ramp) - 1 and not args.keep_going
                if more and not held(summarize(index, SHARED.records), args.p95_limit):
                    print(f"{visitors} visitors not held: the ramp stops", flush=True)
                    break
                print(f"  stage {index}: {visitors} visitors done", flush=True)
        finally:
            SHARED.stopping = True
            deadline = time.monotonic() + args.timeout_s
            while SHARED.in_flight and time.monotonic() < deadline:
                gevent.sleep(0.2)
            runner.quit()
            watch.stop()
    db.unlink(missing_ok=True)
    db.with_suffix(".results.sqlite3").unlink(missing_ok=True)
    held_rooms = []
    for index, stage in enumerate(result["stages"]):
        stage["kinds"] = summarize(index, SHARED.records)
        stage["new_values_by_page"] = new_values_by_page(index, SHARED.records)
        stage["held"] = held(stage["kinds"], args.p95_limit)
        report(stage)
    for stage in result["stages"]:
        if not stage["held"]:
            break
        held_rooms.append(stage["visitors"])
    result["largest_held"] = max(held_rooms, default=0)
    result["errors"] = [r.error for r in SHARED.records if r.error][:20]
    print(
        f"largest room held (every kind p95 <= {args.p95_limit} s, no errors): "
        f"{result['largest_held']} visitors on {args.processes} process(es)"
    )
    for error in result["errors"][:5]:
        print(f"  error: {error}")
    return result


def held(kinds: dict[str, dict[str, float | int]], limit: float) -> bool:
    """Every kind of action answered at p95 <= ``limit`` and none failed."""
    return bool(kinds) and all(k["errors"] == 0 and k["p95_s"] <= limit for k in kinds.values())


def report(stage: dict) -> None:
    print(
        f"{stage['visitors']:4d} visitors, {stage['seconds']:.0f} s: server "
        f"{stage['server_cores']:.2f} cores, health worst {stage['worst_health_s']:.2f} s, "
        f"client {stage['client_cores']:.2f} cores -> {'held' if stage['held'] else 'NOT held'}"
    )
    rows = [(kind, row) for kind, row in stage["kinds"].items()]
    rows += [(f"  new values, {page}", row) for page, row in stage["new_values_by_page"].items()]
    for name, row in rows:
        print(
            f"     {name:<28} {row['count']:5d}  p50 {row['p50_s']:6.2f} s  "
            f"p95 {row['p95_s']:6.2f} s  errors {row['errors']}"
        )
    sys.stdout.flush()


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--ramp", default="5,10,20,40", help="visitors per stage, e.g. 5,10,20")
    parser.add_argument("--stage-s", type=float, default=60.0)
    parser.add_argument("--view-every", type=float, default=30.0)
    parser.add_argument("--change-every", type=float, default=10.0)
    parser.add_argument("--new-share", type=float, default=0.25)
    parser.add_argument("--run-every", type=float, default=60.0, help="0: no Code Lab runs")
    parser.add_argument("--p95-limit", type=float, default=3.0)
    parser.add_argument("--spawn-rate", type=float, default=5.0, help="visitors started per s")
    parser.add_argument("--timeout-s", type=float, default=120.0, help="one action at most")
    parser.add_argument(
        "--pages",
        default=",".join(p.url_path for p in (catalog.HOME, *catalog.TOPICS)),
        help="the pages visitors view (addresses, comma-separated)",
    )
    parser.add_argument("--warm", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument(
        "--pin",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="each process on its own share of the cores (the launcher's default)",
    )
    parser.add_argument("--keep-going", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    args.ramp = [int(n) for n in args.ramp.split(",") if n.strip()]
    args.pages = [p.strip() for p in args.pages.split(",") if p.strip()]
    known = {p.url_path for p in (catalog.HOME, *catalog.TOPICS)}
    if not args.ramp or any(n < 1 or n > MAX_VISITORS for n in args.ramp):
        parser.error(f"--ramp: between 1 and {MAX_VISITORS} visitors per stage")
    if unknown := set(args.pages) - known:
        parser.error(f"--pages: no such page {sorted(unknown)}")
    if not 0 <= args.new_share <= 1:
        parser.error("--new-share: between 0 and 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    setup_logging("WARNING")  # a visitor's crash is printed, not lost
    result = run(args)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

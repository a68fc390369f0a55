"""The capacity model: from measured costs per visitor action to how many visitors a machine
holds, and the report of both.

Pure: it reads the measurements ``benchmarks/capacity.py`` saves (``--json``) and computes; it
starts nothing and reads no counter, so its arithmetic is tested apart from the driver
(``tests/repo/test_capacity.py``) and ``--from-json`` models old measurements on new patterns.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

#: The kinds of action measured, as the report names them (also the keys of saved records).
VIEW_COLD = "page view, caches cold (first visit)"
VIEW_CACHED = "page view, caches filled by another visitor"
#: A page viewed again by the same tab, through the navigation: the server's caches filled and
#: the tab holding the page's script files. A tab's first view of a page (VIEW_CACHED) also
#: fetches those files from the server (the Plotly chart's alone is 4.7 MB); the home page's
#: first view is the app's first load (the page, its scripts, a new session).
VIEW_AGAIN = "page view again, the browser has its files"
CHANGE_NEW = "widget change, a new value"
CHANGE_CACHED = "widget change, a value another visitor chose"
RUN = "Code Lab run (incl. next spare)"
SERVER_START = "server start (until healthy)"


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
    order = [SERVER_START, VIEW_COLD, VIEW_CACHED, VIEW_AGAIN, CHANGE_NEW, CHANGE_CACHED, RUN]
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
    #: Server processes behind the proxy (each its own GIL) and measurements that run at once
    #: (the launcher pins each process to its share of the cores: one slot per process; one
    #: process alone, or processes sharing their cores, measure one at a time).
    processes: int = 1
    slots: int = 1
    #: Of the views with the caches filled, the share that are a tab's first view of that page.
    #: 0, the steady state: a tab's first view of each page is a one-off per tab
    #: (:attr:`Inputs.arrival_s`), as a page's cold first visit is one per deployment.
    first_view_share: float = 0.0

    def rates(self) -> dict[str, float]:
        """Actions of each kind per second per visitor."""
        p, q, f = self.cold_view_share, self.new_change_share, self.first_view_share
        return {
            VIEW_COLD: p / self.view_every_s,
            VIEW_CACHED: (1 - p) * f / self.view_every_s,
            VIEW_AGAIN: (1 - p) * (1 - f) / self.view_every_s,
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
    #: One-off per tab: its first view of every page (the page's files served), beyond the cost
    #: of viewing it again (NaN: views again not measured).
    arrival_s: float = float("nan")


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
        for kind in (VIEW_COLD, VIEW_CACHED, VIEW_AGAIN, CHANGE_NEW, CHANGE_CACHED, RUN)
    }
    medians = {key: _median([r["net_s"] for r in rows]) for key, rows in groups.items()}
    cold = {p: m for (k, p), m in medians.items() if k == VIEW_COLD}
    cached = {p: m for (k, p), m in medians.items() if k == VIEW_CACHED}
    again = {p: m for (k, p), m in medians.items() if k == VIEW_AGAIN}
    if not again:
        # A file measured before views again were (capacity-2core-2026-12-06.json and earlier):
        # every view counts as a first one.
        costs[VIEW_AGAIN] = costs[VIEW_CACHED]
    idle = data["idle"]
    return Inputs(
        costs=costs,
        idle_per_s=_median([i["per_session_cpu_per_s"] for i in idle]) if idle else 0.0,
        alone_per_s=_median([i["server_alone_cpu_per_s"] for i in idle]) if idle else 0.0,
        cold_tour_s=sum(cold[p] - cached.get(p, 0.0) for p in cold),
        # Per page at least 0: a view again cannot cost more than the first (a negative
        # difference is the counters' noise).
        arrival_s=(
            sum(max(0.0, cached[p] - again.get(p, cached[p])) for p in cached)
            if again
            else float("nan")
        ),
    )


def capacity(inputs: Inputs, pattern: Pattern) -> dict[str, float]:
    """Per visitor: CPU demand d, Python-thread demand, lock demand; and visitors that fit.

    d = c_idle + sum over action kinds of (rate x CPU-s); visitors per core = u / d. On
    ``cores`` cores the CPU allows cores x u / d, the servers' Python threads (one GIL per
    process) allow processes x u / (the Python-thread demand, idle counted as all Python), and
    the measurement slots allow slots x u / (the lock's held seconds per second): the smallest is
    the answer. (A room's visitors spread evenly over its processes, as the proxy's round robin
    spreads new sessions; a slot's held seconds are those measured on the cores one slot has.)
    """
    rates = pattern.rates()
    u = pattern.utilisation
    demand = inputs.idle_per_s + sum(rates[k] * c.cpu_s for k, c in inputs.costs.items())
    python = inputs.idle_per_s + sum(rates[k] * c.python_s for k, c in inputs.costs.items())
    lock = sum(rates[k] * c.lock_s for k, c in inputs.costs.items())
    cpu_bound = pattern.cores * u / demand
    gil_bound = pattern.processes * u / python if python > 0 else float("inf")
    lock_bound = pattern.slots * u / lock if lock > 0 else float("inf")
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
        f"({pattern.cold_view_share:.0%} of them with cold caches, "
        f"{pattern.first_view_share:.0%} of the rest a tab's first view of the page), "
        f"changes a widget every "
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
        "min(n u / d, processes u / d_python, slots u / lock)"
    )
    print(
        f"  d = {c['demand'] * 1e3:.1f} ms CPU per s per visitor -> {c['per_core']:.1f} visitors "
        f"per core at {pattern.utilisation:.0%}"
    )
    print(
        f"  {pattern.cores} cores, {pattern.processes} server process(es), {pattern.slots} "
        f"measurement slot(s): CPU allows {c['cpu_bound']:.0f}; the servers' Python threads "
        f"({c['python'] * 1e3:.1f} ms per s per visitor, one GIL per process) allow "
        f"{c['gil_bound']:.0f}; the measurement slots ({c['lock'] * 1e3:.1f} ms held per s per "
        f"visitor) allow {c['lock_bound']:.0f} -> {c['visitors']:.0f} visitors"
    )
    print(
        f"  fixed: the server alone {inputs.alone_per_s * 1e3:.1f} ms CPU per s; one-off first "
        f"visits of every page {inputs.cold_tour_s:.1f} CPU-s beyond their cached cost; per "
        f"tab, its first view of every page "
        + (
            f"{inputs.arrival_s:.2f} CPU-s beyond viewing it again"
            if inputs.arrival_s == inputs.arrival_s
            else "not measured (no views again in this file)"
        )
    )

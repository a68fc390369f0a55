"""What a widget inside a tab costs the server when its tab reruns alone, against the whole page.

Every tab body is a part of its page (``pages/_ui.part``, an ``st.fragment``): the browser asks
for that part's rerun when one of its widgets changes. This starts one server
(``jaxplay.hosting.serve``, loopback), opens a page's tab over Streamlit's protocol
(``pages/_visitor.py``), warms two values of one of the tab's number inputs (both cached
after), then changes the widget back and forth ``--changes`` times as the browser does (the
part alone) and as a page without parts would (the whole page), alternating the two modes
``--rounds`` times. Per change: the server process's CPU (``/proc`` utime+stime, all its
threads) and the wall time until the run finished; medians and spread over the rounds.

    .venv/bin/python benchmarks/part_rerun.py
    .venv/bin/python benchmarks/part_rerun.py --page jit --query "jit_tab=Size+sweep" --key ...
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

from pages._visitor import Visitor  # noqa: E402

from jaxplay.hosting import catalog, serve  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--page", default="prng")
    parser.add_argument("--query", default="prng_tab=Parallel+streams")
    parser.add_argument("--key", default="prng_n_keys", help="a number input inside the tab")
    parser.add_argument("--values", default="500,1000")
    parser.add_argument("--changes", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    values = [int(v) for v in args.values.split(",")]
    env = {"JAXPLAY_WARM_UP": "off", "JAXPLAY_CHECK_CLAIMS": "0"}
    with serve.Room(1, env=env) as room:
        pid = room.pids[0]
        visitor = Visitor(room.url)
        run = visitor.open(catalog.page_name(args.page), args.query)
        if run.errors or args.key not in visitor.widgets:
            print(f"cannot use {args.key} on {args.page}?{args.query}: {run.errors}")
            return 1
        if not visitor.widgets[args.key].fragment_id:
            print(f"{args.key} is not inside a part of the page")
            return 1
        for value in values * 2:  # both values computed and cached
            visitor.change(args.key, value, whole=True)
        per_change: dict[str, list[float]] = {"part": [], "whole page": []}
        walls: dict[str, list[float]] = {"part": [], "whole page": []}
        for _ in range(args.rounds):
            for mode in per_change:
                seconds = []
                before = cpu_s(pid)
                for i in range(args.changes):
                    started = time.perf_counter()
                    done = visitor.change(args.key, values[i % 2], whole=mode == "whole page")
                    seconds.append(time.perf_counter() - started)
                    if done.errors:
                        print(f"{mode}: {done.errors}")
                        return 1
                per_change[mode].append((cpu_s(pid) - before) / args.changes)
                walls[mode].append(statistics.median(seconds))
        visitor.close()
    print(
        f"{args.page}?{args.query}, {args.key} changed {args.changes} times per round between "
        f"cached values {values}, {args.rounds} rounds; server CPU per change (median, min-max "
        "over rounds) and the median wall time of a change:"
    )
    for mode, cpu in per_change.items():
        print(
            f"  {mode:>10}: {statistics.median(cpu) * 1e3:6.1f} ms CPU "
            f"({min(cpu) * 1e3:.1f}-{max(cpu) * 1e3:.1f}), "
            f"{statistics.median(walls[mode]) * 1e3:6.1f} ms wall"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

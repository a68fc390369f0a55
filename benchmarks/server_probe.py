"""``streamlit run`` with two counters inside the server process, for ``benchmarks/capacity.py``.

Run from the repository root, with the arguments of ``streamlit``::

    JAXPLAY_PROBE_FILE=/tmp/probe.json python -m benchmarks.server_probe run app.py ...

Before Streamlit starts it installs, in this process only (nothing in ``jaxplay`` changes):

* a timed wrapper around jaxplay's measurement lock (``MEASURE_LOCK``): the seconds it was held
  (outermost acquire to outermost release), so the benchmark can say how busy that one lock,
  which serialises timed measurements across every visitor, is per action;
* a count of the CPU seconds spent on *Python* threads (Streamlit's script runs, its event loop,
  the pool's helper threads), as opposed to threads Python does not know about (XLA's compute
  pools). Python threads are where the GIL can serialise work; their CPU time is an upper bound
  on GIL-held time (a Python thread inside XLA's compiler has released the GIL).

Every half second it writes both, with a wall-clock stamp, as JSON to ``$JAXPLAY_PROBE_FILE``.
If the lock's module cannot be found (the package was restructured), the server still runs and
the file says why the lock is not measured.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WRITE_EVERY_S = 0.5
_CLK_TCK = os.sysconf("SC_CLK_TCK")


class TimedRLock:
    """A re-entrant lock that adds up how long it was held (outermost hold only)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._local = threading.local()
        self._stats = threading.Lock()
        self.busy_s = 0.0
        self.holds = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        ok = self._inner.acquire(blocking, timeout)
        if ok:
            depth = getattr(self._local, "depth", 0)
            if depth == 0:
                self._local.since = time.perf_counter()
            self._local.depth = depth + 1
        return ok

    def release(self) -> None:
        depth = self._local.depth - 1
        self._local.depth = depth
        if depth == 0:
            held = time.perf_counter() - self._local.since
            with self._stats:
                self.busy_s += held
                self.holds += 1
        self._inner.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


class PythonThreadsCpu:
    """CPU seconds of every Python thread: finished ones (added as they end) plus live ones."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.finished_s = 0.0
        original = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]
        probe = self

        def bootstrap_inner(thread: threading.Thread) -> None:
            try:
                original(thread)
            finally:
                # By now the thread has left threading.enumerate(): no double count.
                spent = time.thread_time()
                with probe._lock:
                    probe.finished_s += spent

        threading.Thread._bootstrap_inner = bootstrap_inner  # type: ignore[attr-defined]

    def total_s(self) -> float:
        live = 0.0
        for thread in threading.enumerate():
            native = thread.native_id
            if native is None:
                continue
            try:
                fields = Path(f"/proc/self/task/{native}/stat").read_text().rsplit(")", 1)[1]
            except OSError:
                continue
            parts = fields.split()
            live += (int(parts[11]) + int(parts[12])) / _CLK_TCK
        with self._lock:
            return self.finished_s + live


def install_lock_probe() -> tuple[TimedRLock | None, str]:
    """Wrap jaxplay's measurement lock; (the wrapper, "") or (None, why not)."""
    # The one place that names jaxplay's modules (update it if the package is restructured).
    try:
        from jaxplay.hosting import environment

        environment.configure()  # as app.py does first, before anything imports JAX
        from jaxplay.core import measure_lock
    except ImportError as err:
        return None, f"jaxplay's measure_lock module not found ({err})"
    lock = getattr(measure_lock, "MEASURE_LOCK", None)
    if lock is None:
        return None, "jaxplay.core.measure_lock has no MEASURE_LOCK"
    probe = TimedRLock(lock)
    measure_lock.MEASURE_LOCK = probe  # _locked() looks the global up at every call
    return probe, ""


def _writer(path: Path, lock: TimedRLock | None, why: str, threads: PythonThreadsCpu) -> None:
    tmp = path.with_suffix(".tmp")
    while True:
        data = {
            "t": time.time(),
            "pid": os.getpid(),
            "lock_busy_s": lock.busy_s if lock else None,
            "lock_holds": lock.holds if lock else None,
            "lock_missing": why,
            "python_threads_cpu_s": threads.total_s(),
        }
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
        time.sleep(WRITE_EVERY_S)


def main() -> None:
    sys.path.insert(0, str(ROOT))
    threads = PythonThreadsCpu()
    lock, why = install_lock_probe()
    target = os.environ.get("JAXPLAY_PROBE_FILE")
    if target:
        threading.Thread(
            target=_writer, args=(Path(target), lock, why, threads), daemon=True, name="probe"
        ).start()
    from streamlit.web import cli

    sys.argv[0] = "streamlit"
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main()

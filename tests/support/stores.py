"""What each process of a room does with the shared result store, for the tests that start
several at once (``tests/hosting/test_results.py``).

Why a module of its own: a spawned process imports the module its function lives in, and the
test module imports JAX (about 1.8 CPU-s per process); this one imports only the store.
"""

from __future__ import annotations

import json
import time

from jaxplay.hosting import results


def burst_worker(location: str, log: str, barrier: object) -> str:
    # The four open the store at once too (a room's processes start together: PostgreSQL's
    # CREATE TABLE IF NOT EXISTS once raced here), and a worker that fails breaks the barrier
    # for the others instead of leaving them waiting.
    try:
        barrier.wait(timeout=120)  # type: ignore[attr-defined]
        store = results.ResultStore(location, "env-a", poll_s=0.02)
        barrier.wait(timeout=120)  # type: ignore[attr-defined]
    except Exception:
        barrier.abort()  # type: ignore[attr-defined]
        raise

    def compute() -> str:
        with open(log, "a", encoding="utf-8") as f:
            f.write("computed\n")
        time.sleep(0.5)
        return "the result"

    return json.dumps(store.get_or_compute("page.default", ("a",), compute, []).value)


def open_store(locations: list[str], barrier: object) -> str:
    for location in locations:
        try:
            barrier.wait(timeout=120)  # type: ignore[attr-defined]
            results.ResultStore(location, "env-a").close()
        except Exception as err:  # reported, not raised: every worker's outcome is compared
            barrier.abort()  # type: ignore[attr-defined]  # the others stop waiting for this one
            return f"{type(err).__name__}: {err}"
    return "opened"

"""What each process of a room does with the shared result store, for the tests that start
several at once (``tests/hosting/test_results.py``).

Why a module of its own: a spawned process imports the module its function lives in, and the
test module imports JAX (about 1.8 CPU-s per process); this one imports only the store.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import sys
import time
import types
from collections.abc import Iterator
from typing import Any

from jaxplay.hosting import results


@contextlib.contextmanager
def spawning() -> Iterator[Any]:
    """``multiprocessing``'s spawn context (never fork a process that runs JAX), with a bare
    ``__main__`` while the processes start.

    Why: Streamlit's script runner makes ``app.py`` this process's ``__main__`` (an AppTest run
    leaves it so), and a spawned child runs its parent's ``__main__`` first: each one imported
    Streamlit, JAX and the pages (about 2.1 CPU-s) before the test's function.
    """
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield multiprocessing.get_context("spawn")
    finally:
        sys.modules["__main__"] = main


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

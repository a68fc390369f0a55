"""Starting ``streamlit run`` on a free port (through :mod:`jaxplay.hosting.serve`) and checking a
page in a real chromium (the waiting is ``benchmarks/_browser.py``'s, which benchmarks share)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks._browser import FRAMES_JS as FRAMES_JS
from benchmarks._browser import QUIET_MS as QUIET_MS
from benchmarks._browser import act as act
from benchmarks._browser import exception_texts as exception_texts
from benchmarks._browser import runs_done as runs_done
from benchmarks._browser import wait_for_run as wait_for_run
from benchmarks._browser import watch_runs as watch_runs
from jaxplay.hosting import serve
from jaxplay.hosting.chromium import CHROMIUM, chromium_available
from jaxplay.hosting.chromium import CHROMIUM_ARGS as CHROMIUM_ARGS
from jaxplay.hosting.chromium import free_port as free_port

ROOT = Path(__file__).resolve().parents[2]


def require_chromium() -> None:
    """Skip the calling test module without chromium, except in CI, where that is an error."""
    import pytest

    if chromium_available():
        return
    if os.environ.get("CI"):
        raise RuntimeError(f"CI needs chromium at {CHROMIUM} for the browser tests")
    pytest.skip(f"no chromium at {CHROMIUM}", allow_module_level=True)


def require_haproxy() -> None:
    """Skip the calling test module without HAProxy, except in CI, where that is an error."""
    import pytest

    if serve.haproxy_path() is not None:
        return
    if os.environ.get("CI"):
        raise RuntimeError(f"CI needs {serve.HAPROXY} for the room tests (apt-get install haproxy)")
    pytest.skip(f"no {serve.HAPROXY} on PATH (apt-get install haproxy)", allow_module_level=True)


@contextmanager
def streamlit_server(
    script: str = "app.py", env: dict[str, str] | None = None, startup_s: float = 90.0
) -> Iterator[str]:
    """Run ``streamlit run script`` on a free local port; yield its base URL; stop it after."""
    with serve.Room(1, script=script, env=env, startup_s=startup_s) as room:
        yield room.url

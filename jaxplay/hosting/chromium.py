"""A headless chromium against a local server: what the browser tests and the benchmarks share.

Debian's chromium (its headless shell), not Playwright's own download (which needs the
network), started with the flags a container without a display or a GPU needs; and a free local
port for the server under test. The server launcher is :mod:`jaxplay.hosting.serve`.
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

#: Debian's headless shell (``apt-get install chromium-headless-shell``; ``.ci/run`` installs
#: it): chromium's own engine without the browser around it, the build Playwright itself runs for
#: headless pages. Why: a test's page costs its renderer seconds of CPU on a two-core machine the
#: server under test shares; the browser tours took 10% less CPU in all (176 CPU-s against 195,
#: 2026-12-06), the present-mode tests 10% less wall time.
HEADLESS_SHELL = "/usr/lib/chromium/chromium-headless-shell"
#: Debian's full chromium (``apt-get install chromium``), where the shell is not installed.
FULL_CHROMIUM = "/usr/bin/chromium"
#: The browser the tests and the benchmarks start.
CHROMIUM = HEADLESS_SHELL if Path(HEADLESS_SHELL).exists() else FULL_CHROMIUM
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def chromium_available() -> bool:
    return Path(CHROMIUM).exists() or shutil.which(CHROMIUM) is not None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])

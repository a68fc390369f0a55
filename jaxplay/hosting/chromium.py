"""A headless chromium against a local server: what the browser tests and the benchmarks share.

Debian's chromium, not Playwright's own download (which needs the network), started with the
flags a container without a display or a GPU needs; and a free local port for the server under
test. The server launcher is :mod:`jaxplay.hosting.serve`.
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

#: Debian's chromium (``apt-get install chromium``; ``.ci/run`` installs it).
CHROMIUM = "/usr/bin/chromium"
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

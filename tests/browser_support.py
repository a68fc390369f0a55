"""Starting ``streamlit run`` on a free port and checking a page in a real chromium."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = os.environ.get("JAXPLAY_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ROOT = Path(__file__).resolve().parent.parent


def chromium_available() -> bool:
    return Path(CHROMIUM).exists() or shutil.which(CHROMIUM) is not None


def require_chromium() -> None:
    """Skip the calling test module without chromium, except in CI, where that is an error."""
    import pytest

    if chromium_available():
        return
    if os.environ.get("CI"):
        raise RuntimeError(f"CI needs chromium at {CHROMIUM} for the browser tests")
    pytest.skip(f"no chromium at {CHROMIUM}", allow_module_level=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def streamlit_server(
    script: str = "app.py", env: dict[str, str] | None = None, startup_s: float = 90.0
) -> Iterator[str]:
    """Run ``streamlit run script`` on a free local port; yield its base URL; stop it after."""
    port = free_port()
    process_env = {**os.environ, **(env or {})}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            script,
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
        ],
        cwd=ROOT,
        env=process_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_s
        while True:
            if process.poll() is not None:
                output = process.stdout.read().decode(errors="replace") if process.stdout else ""
                raise RuntimeError(f"streamlit exited with {process.returncode}:\n{output}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not answer on {url} within {startup_s} s")
            time.sleep(0.3)
        yield url
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if process.stdout:
            process.stdout.close()


def wait_for_run(page, timeout_ms: int = 90_000) -> None:  # noqa: ANN001 - playwright Page
    """Wait until the app is rendered and its script has stopped running."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)
    page.wait_for_selector('[data-testid="stMainBlockContainer"]', timeout=timeout_ms)
    # The status widget shows "Running..." while the script runs; wait for it to go.
    page.wait_for_function(
        """() => {
            const w = document.querySelector('[data-testid="stStatusWidget"]');
            return !w || !w.innerText.toLowerCase().includes('running');
        }""",
        timeout=timeout_ms,
    )
    page.wait_for_timeout(500)


def exception_texts(page) -> list[str]:  # noqa: ANN001 - playwright Page
    """The text of every Streamlit exception or error-details box on the page."""
    boxes = page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]')
    texts = []
    for i in range(boxes.count()):
        box = boxes.nth(i)
        if box.get_attribute("data-testid") == "stException":
            texts.append(box.inner_text())
    return texts

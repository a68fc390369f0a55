"""Running a script on a host of fewer devices: JAX fixes its device count when it starts, so a
test that needs one device (the one-GPU VM the hosting guide describes) runs a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from jaxplay.hosting import catalog

#: How the script hands back what it found: one line, this prefix, then JSON.
MARK = "RESULT "


def result_on(devices: int, script: str, timeout_s: float = 240) -> Any:
    """What ``script`` printed after :data:`MARK` (as JSON), run in a fresh Python with
    ``JAXPLAY_CPU_DEVICES=devices`` from the repository's root; fails with its stderr."""
    env = {**os.environ, "JAXPLAY_CPU_DEVICES": str(devices), "PYTHONPATH": str(catalog.ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=catalog.ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith(MARK))
    return json.loads(line[len(MARK) :])

"""Fresh processes for the benchmarks that time what one process pays (a page's parts).

Why: what a page costs depends on what its process already compiled and cached, so each
repetition runs the benchmark's own ``--child`` in a new Python process, which prints its
figures as one JSON line last.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def child_runs(script: str, repeats: int, env: dict[str, str] | None = None) -> list[Any]:
    """``python script --child`` ``repeats`` times, one after another, each in a fresh process
    started in the repository (with ``env`` added to this environment); each one's last line,
    read as JSON."""
    runs = []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, script, "--child"],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return runs

"""``benchmarks/room_load.py`` keeps working: a tiny run against two processes behind HAProxy.

No timing is asserted (this machine's load is not the room's); the run must finish, count the
actions of each kind it did, and see no error. It runs as its own process: Locust patches the
standard library for gevent when it is imported, which must not happen inside pytest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from jaxplay.hosting import catalog
from tests.support.browser import require_haproxy

require_haproxy()

SMOKE = [
    "--processes", "2", "--ramp", "2", "--stage-s", "10", "--pages", "grad",
    "--view-every", "4", "--change-every", "3", "--run-every", "8",
]  # fmt: skip


@pytest.mark.timeout(660)
def test_a_tiny_room_load_run_counts_its_actions_and_sees_no_error(tmp_path: Path) -> None:
    out = tmp_path / "room.json"
    script = catalog.ROOT / "benchmarks" / "room_load.py"
    done = subprocess.run(
        [sys.executable, str(script), *SMOKE, "--json", str(out)],
        cwd=catalog.ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    [stage] = result["stages"]
    assert stage["visitors"] == 2
    kinds = stage["kinds"]
    assert kinds["page view"]["count"] >= 1, kinds
    changes = [k for k in kinds if k.startswith("value change")]
    assert sum(kinds[k]["count"] for k in changes) >= 1, kinds
    assert all(row["errors"] == 0 for row in kinds.values()), kinds
    # The new values again, per page they were chosen on: the same ones, each counted once.
    by_page = stage["new_values_by_page"]
    assert set(by_page) <= {"jit", "grad", "memory"}, by_page
    new = kinds.get("value change, new value", {"count": 0})["count"]
    assert sum(row["count"] for row in by_page.values()) == new, (by_page, kinds)
    assert result["errors"] == []
    assert stage["server_cores"] > 0
    assert "largest room held" in done.stdout

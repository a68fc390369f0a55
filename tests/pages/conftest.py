"""Every page test also checks that each measurement a page starts names its visitor.

The measurement lock throttles per visitor in public mode, and a measurement names its visitor
through the progress object the page passes down (``pages/_ui.py``'s boxes): a page that
measured without one would escape the throttle. So the outermost hold of the lock in a script
run must name someone, on every page, in every state these tests drive it into.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Iterator

import pytest

from jaxplay.core import measure_lock


@pytest.fixture(autouse=True)
def _measurements_name_their_visitor(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    nobody: list[str] = []
    original = measure_lock._wait_for_turn

    def spy(progress: measure_lock.Progress) -> None:
        in_script = threading.current_thread().name.startswith("ScriptRunner")
        if progress.visitor is None and in_script:
            nobody.append("".join(traceback.format_stack(limit=12)))
        original(progress)

    monkeypatch.setattr(measure_lock, "_wait_for_turn", spy)
    yield
    assert not nobody, "a page measured for nobody (no visitor), from:\n" + nobody[0]

"""A link to the memory page's heaviest settings does not run them as the page opens.

The hardening issue: ``/memory`` measured on page load with no button, and one link held the
measurement lock 13.6 s. The page now predicts the cost first (:func:`jaxplay.memory.run_cost`)
and waits for a button above :data:`jaxplay.memory.AUTO_RUN_S`.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from jaxplay import memory
from jaxplay.hosting import catalog
from tests.support.apptest import APP_TIMEOUT_S

SPEC = catalog.find("memory")
HEAVY = {
    "memory_model": "mlp",
    "memory_loop": "unrolled",
    "memory_size": "512",
    "memory_depth": "12",
}


def test_the_heavy_settings_are_priced_over_the_page_load_budget() -> None:
    keys = tuple(memory.DEFAULT_VARIANTS)
    assert memory.run_cost("mlp", keys, "unrolled", 512, 12) > 10 * memory.AUTO_RUN_S
    assert memory.run_cost("seed", keys, "scan", 128, 10) <= memory.AUTO_RUN_S  # the default


def test_a_heavy_link_waits_for_the_button(monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[object] = []

    def recorded(*args: object, **kwargs: object) -> None:
        runs.append(kwargs.get("run", args[-1] if args else None))
        raise RuntimeError("not run in this test")

    # In the server's thread, so that the stand-in is what runs (a worker runs jaxplay's own).
    monkeypatch.setenv("JAXPLAY_MEASURE_IN", "server")
    monkeypatch.setattr(memory, "analyse_variant", recorded)
    at = AppTest.from_file(str(catalog.ROOT / "app.py"), default_timeout=APP_TIMEOUT_S)
    at.run()
    at.switch_page(SPEC.path)
    at.query_params.update(HEAVY)
    at.run()
    assert not at.exception
    assert runs == []  # nothing traced, compiled or timed for the link by itself
    assert any("predicted to take about" in str(i.value) for i in at.info)
    assert not at.get("plotly_chart")
    button = next(b for b in at.button if str(b.label).startswith("Run and time"))
    button.click().run()
    assert runs and all(run is True for run in runs)  # the visitor asked: it runs

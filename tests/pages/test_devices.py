"""AppTests of the Devices & sharding page with 8 simulated devices, and with 1 in a subprocess."""

from __future__ import annotations

import jax
import pytest

from jaxplay.hosting import catalog
from tests.support.apptest import assert_clean, open_page
from tests.support.devices import result_on
from tests.support.page_texts import PAYLOAD, hostile_links, markdown_texts, shown

SPEC = catalog.find("devices")


def _texts(elements) -> str:
    """What the reader sees of the elements (Markdown rendered: escapes gone; code as is)."""
    return "\n".join(
        str(e.value) if type(e).__name__ == "Code" else shown(str(e.value)) for e in elements
    )


def test_devices_tab_lists_devices_and_the_article_error() -> None:
    at = open_page(SPEC)
    assert_clean(at)
    table = at.dataframe[0].value
    assert len(table) == 8
    # Only what the backend reports: the CPU reports no memory counters, so no such columns
    # (they were 24 cells of "not reported").
    assert list(table.columns) == ["device", "platform", "kind", "process"]
    assert "not reported" not in table.to_string()
    assert "cpu: no memory counters reported" in _texts(at.caption)
    assert not [b for b in at.button if b.key == "devices_refresh"]
    assert "RuntimeError" in _texts(at.error) and "Unknown backend" in _texts(at.code)
    assert "x0 on" in _texts(at.success)


def test_placement_and_transfer_chart() -> None:
    at = open_page(SPEC, devices_tab="Placement", devices_place_device="cpu:3", devices_top_mib=1)
    assert_clean(at)
    assert f"lives on {jax.devices()[3]} (" in _texts(at.markdown)
    assert "CpuDevice(id=3)" in _texts(at.markdown)
    at.button(key="devices_measure_transfers").click().run()
    assert_clean(at)
    assert at.get("plotly_chart"), "no transfer chart"
    assert "share one memory" in _texts(at.caption)


def test_sharding_sandbox_draws_and_explains() -> None:
    at = open_page(SPEC, devices_tab="Sharding")
    assert_clean(at)
    assert not at.error
    assert len(at.dataframe[0].value) == 8
    assert "2 distinct blocks, each held by 4 devices" in _texts(at.caption)

    at.text_input(key="devices_spec").set_value("P('z')").run()
    assert "'z' is not an axis of the mesh" in _texts(at.error)
    assert "not found in mesh" in _texts(at.code)

    at.text_input(key="devices_spec").set_value("P('x'").run()
    assert "closing parenthesis" in _texts(at.error)
    assert "P('x'\n     ^" in _texts(at.code)

    at.text_input(key="devices_spec").set_value("P('x')").run()
    at.text_input(key="devices_shape").set_value("3, 8").run()
    assert "3 is not a multiple of 2" in _texts(at.error)

    at.text_input(key="devices_shape").set_value("8, 8").run()
    at.text_input(key="devices_mesh").set_value("4, 4").run()
    assert "needs 16 devices; this process has 8" in _texts(at.error)
    assert_clean(at)


def test_collectives_tab() -> None:
    at = open_page(SPEC, devices_tab="Collectives")
    assert_clean(at)
    assert "NameError" in _texts(at.error) and "unbound axis name: batch" in _texts(at.code)
    assert "equals numpy" in _texts(at.success)
    # The default collective's result is a scalar: its reading says so (never "`float32[]`: .").
    assert "a scalar, whole on every device." in _texts(at.markdown)
    at.segmented_control(key="devices_collective").set_value("ppermute").run()
    at.selectbox(key="devices_xla").set_value(1).run()
    assert_clean(at)
    assert "all-to-all" in _texts(at.markdown)
    assert "equals numpy's" in _texts(at.success)
    at.slider(key="devices_coll_n").set_value(2).run()
    assert_clean(at)
    assert len(at.dataframe[0].value) == 2


def test_scaling_tab_measures_and_warns() -> None:
    at = open_page(SPEC, devices_tab="Scaling")
    assert_clean(at)
    assert "not what separate devices would gain" in _texts(at.warning)
    at.button(key="devices_scale").click().run()
    assert_clean(at)
    assert at.get("plotly_chart")
    points = at.session_state["devices_scaling"][1]
    a, b = points[0].timing, points[-1].timing
    # A ratio only where the quartile ranges do not overlap (a busy machine's often do).
    if b.clearly_faster_than(a):
        said = f"{a.median / b.median:.2f}× faster"
    elif a.clearly_faster_than(b):
        said = f"{b.median / a.median:.2f}× slower"
    else:
        said = "no clear difference: the quartile ranges overlap"
    assert "Measured: 1 device " in _texts(at.caption) and said in _texts(at.caption)


def test_the_sweeps_run_in_the_compute_worker_and_a_failure_is_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Transfers and scaling are timed in the compute worker, point by point: one that runs
    out of time shows why, with no traceback, and no chart."""
    from jaxplay import sandbox

    monkeypatch.setattr(sandbox, "TIMED_TIMEOUT_S", 0.01)
    at = open_page(SPEC, devices_tab="Scaling")
    at.button(key="devices_scale").click().run()
    assert not at.exception
    errors = _texts(at.error)
    assert "The measurement failed" in errors and "longer than 0.01 s" in errors, errors
    assert not at.get("plotly_chart")
    at = open_page(SPEC, devices_tab="Placement", devices_top_mib=1)
    at.button(key="devices_measure_transfers").click().run()
    assert not at.exception
    assert "longer than 0.01 s" in _texts(at.error)
    assert not at.get("plotly_chart")


def test_multi_process_launch_shows_process_indices_not_host_pids() -> None:
    at = open_page(SPEC, devices_tab="Multi-process")
    assert_clean(at)
    at.button(key="devices_launch").click().run()
    assert_clean(at)
    assert "Every process got psum = 10" in _texts(at.success)
    assert len(at.dataframe[0].value) == 4
    psums = at.dataframe[1].value
    assert list(psums.columns) == ["process", "its devices", "contributes", "psum"]
    assert list(psums["process"]) == [0, 1] and set(psums["psum"]) == {10.0}
    assert "2 processes started (process index 0, 1); all reaped" in _texts(at.caption)
    shown = " ".join(markdown_texts(at) + [c.value for c in at.code])
    for frame in at.dataframe:
        shown += frame.value.to_string()
    pids = at.session_state["devices_cluster"].pids
    assert pids and not [pid for pid in pids if str(pid) in shown]


@pytest.mark.parametrize("box", ["devices_mesh", "devices_axes", "devices_shape"])
def test_the_boxes_show_visitor_text_as_text(box: str) -> None:
    at = open_page(SPEC, devices_tab="Sharding", **{box: PAYLOAD})
    assert_clean(at)
    assert "127" in _texts(at.error)  # the refusal quotes what was typed
    assert hostile_links(at) == []


def test_a_hostile_spec_is_pointed_at_in_a_code_block() -> None:
    at = open_page(SPEC, devices_tab="Sharding", devices_spec=PAYLOAD)
    assert_clean(at)
    assert PAYLOAD in _texts(at.code) and hostile_links(at) == []


def test_explicit_sharding_tab_runs_every_step_as_named() -> None:
    at = open_page(SPEC, devices_tab="Explicit sharding")
    assert_clean(at)
    success = _texts(at.success)
    assert "float32[32@i,16]" in success and "float32[32,16@j]" in success
    said = _texts(at.markdown)
    assert "float32[32@i,16]: axis 0 (32) is split over mesh axis i (2): 2 pieces of 16" in said
    errors = _texts(at.error)
    for name in ("ShardingTypeError", "ValueError", "AssertionError"):
        assert f"Raises {name}, as written" in errors
    assert not at.warning  # no step raised something other than what it names
    at.button(key="devices_explicit_open").click().run()
    assert "explicit_mesh" not in at.session_state["code_lab_source"]
    assert "def matmul_as_written(mesh):" in at.session_state["code_lab_source"]


ONE_DEVICE_SCRIPT = """
import json
from jaxplay.hosting import catalog
from tests.support.apptest import assert_clean, open_page
from tests.support.page_texts import PAYLOAD, hostile_links, markdown_texts, shown

out = {}
for tab in TABS:
    at = open_page(catalog.find("devices"), devices_tab=tab)
    assert_clean(at)
    out[tab] = {
        "info": [str(e.value) for e in at.info],
        "error": [str(e.value) for e in at.error],
        "success": [str(e.value) for e in at.success],
        "caption": [str(e.value) for e in at.caption],
        "markdown": [str(e.value) for e in at.markdown],
        "rows": [len(d.value) for d in at.dataframe],
        "sliders": [str(s.key) for s in at.slider],
        "charts": len(at.get("plotly_chart")),
        "warning": [str(e.value) for e in at.warning],
    }
print("RESULT " + json.dumps(out))
"""


def test_page_with_one_simulated_device() -> None:
    """A fresh process (the device count is fixed once JAX starts) with JAXPLAY_CPU_DEVICES=1."""
    tabs = ["Devices", "Placement", "Sharding", "Explicit sharding", "Collectives", "Scaling"]
    out = result_on(1, f"TABS = {[*tabs, 'Multi-process']!r}\n" + ONE_DEVICE_SCRIPT)
    assert "one cpu device" in " ".join(out["Devices"]["info"])
    assert "JAXPLAY_CPU_DEVICES=8" in " ".join(out["Devices"]["info"])
    assert out["Devices"]["rows"] == [1]
    # The sharding sandbox defaults to a 1-device mesh and draws it.
    assert out["Sharding"]["error"] == []
    assert out["Sharding"]["rows"] == [1]
    assert out["Sharding"]["charts"] == 1
    # Collectives: no device-count slider, pmap's single-device branch, no XLA collectives.
    assert "devices_coll_n" not in out["Collectives"]["sliders"]
    assert any("Single device detected" in s for s in out["Collectives"]["success"])
    assert any("no collectives" in m for m in out["Collectives"]["markdown"])
    assert out["Collectives"]["rows"] == [1]
    # Scaling: one device is not compared with itself (it was: "1 device …, 1 device …").
    assert out["Scaling"]["charts"] == 0
    assert any("nothing to compare" in i for i in out["Scaling"]["info"])
    assert any("device → device is left out" in c for c in out["Placement"]["caption"])
    # Explicit sharding on a 1 × 1 mesh: every step still raises what it names.
    assert out["Explicit sharding"]["warning"] == []
    assert any("1 × 1 mesh" in m for m in out["Explicit sharding"]["markdown"])


def test_page_with_three_simulated_devices() -> None:
    """A count that is no power of two: the Sharding tab opened on an error (8 rows over a mesh
    of 3), and Scaling promised a batch of 1,024 split over 3 devices, then failed to."""
    out = result_on(3, "TABS = ['Sharding', 'Scaling']\n" + ONE_DEVICE_SCRIPT)
    assert out["Sharding"]["error"] == [] and out["Sharding"]["charts"] == 1
    assert any("split over 1, 2 devices," in m for m in out["Scaling"]["markdown"])

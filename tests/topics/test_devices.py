"""Devices: the inventory, the article's placement code and its fix, placement, transfer timings."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxplay import devices
from jaxplay.devices import _devices


def _has_gpu() -> bool:
    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:
        return False


def test_inventory_lists_every_device() -> None:
    rows = devices.inventory()
    assert [r.id for r in rows] == [d.id for d in jax.devices()]
    assert [r.key for r in rows] == [f"cpu:{i}" for i in range(8)]
    for row, d in zip(rows, jax.devices(), strict=True):
        assert (row.platform, row.kind, row.process_index) == (d.platform, d.device_kind, 0)
        stats = d.memory_stats() or {}
        assert row.bytes_in_use == stats.get("bytes_in_use")
        assert row.bytes_limit == stats.get("bytes_limit")


@pytest.mark.skipif(_has_gpu(), reason="the article's code only fails without a GPU backend")
def test_article_placement_raises_without_a_gpu_and_the_guard_works() -> None:
    written, guarded = devices.article_placement()
    assert not written.ok
    assert written.error_type == "RuntimeError"
    assert "Unknown backend" in written.message
    assert "devices('gpu')[0] if devices('gpu')" in written.raised_at  # the line that raised
    assert guarded.ok
    assert guarded.value == f"x0 on {jax.devices()[0]}, x1 on {jax.devices('cpu')[0]}"


def test_place_puts_the_array_on_the_chosen_device() -> None:
    target = jax.devices()[-1]
    p = devices.place(_devices.device_key(target), 100)
    assert p.devices == (str(target),)
    assert p.nbytes == 400 and p.committed
    with pytest.raises(ValueError, match="no device 'gpu:0'"):
        devices.place("gpu:0", 10)


def test_platforms_on_a_cpu_only_machine() -> None:
    assert devices.platforms() == ("cpu",)
    assert devices.devices_of("cpu") == devices.devices_of(None) == jax.devices()
    assert _devices.all_devices() == jax.devices()
    assert _devices.find_device("cpu:5") == jax.devices()[5]


def test_transfer_calls_move_the_data_where_they_say() -> None:
    src, dst = jax.devices()[0], jax.devices()[-1]
    calls = devices.transfer_calls(_devices.device_key(src), _devices.device_key(dst), 4096)
    assert set(calls) == set(_devices.ROUTES)
    h2d = calls["host → device"]()
    assert h2d.devices() == {dst} and h2d.shape == (1024,)
    d2d = calls["device → device"]()
    assert d2d.devices() == {dst}
    d2h = calls["device → host"]()
    assert d2h.sharding.memory_kind == _devices.host_memory_kind(src)
    np.testing.assert_array_equal(np.asarray(d2h), np.ones(1024, np.float32))
    same = devices.transfer_calls("cpu:0", "cpu:0", 4096)
    assert "device → device" not in same
    with pytest.raises(ValueError, match="MiB"):
        devices.transfer_calls("cpu:0", "cpu:1", devices.MAX_TRANSFER_BYTES + 1)


def test_transfer_points_and_figure() -> None:
    sizes = (4096, 65536)
    points = tuple(p for n in sizes for p in devices.transfer_point("cpu:0", "cpu:1", n, 0.01))
    assert [(p.route, p.nbytes) for p in points[:3]] == [(r, 4096) for r in _devices.ROUTES]
    assert len(points) == 6
    for p in points:
        assert p.timing.median > 0
        assert p.gbps == pytest.approx(p.nbytes / p.timing.median / 1e9)
    fig = devices.transfer_figure(points, "test")
    assert [t.name for t in fig.data] == list(_devices.ROUTES)
    assert list(fig.data[0].x) == [4096, 65536]
    assert fig.layout.xaxis.type == "log"


def test_visitor_sizes_are_bounded_to_a_few_hundred_mb() -> None:
    """The transfer sweep holds about three buffers of its largest size; placement one vector."""
    assert 3 * devices.MAX_TRANSFER_BYTES <= 256 * 2**20
    assert devices.MAX_PLACE_ELEMENTS * 4 <= 64 * 2**20
    with pytest.raises(ValueError, match="10,000,000"):
        devices.place("cpu:0", devices.MAX_PLACE_ELEMENTS + 1)


def test_the_inventory_rows_show_only_the_counters_a_device_reports() -> None:
    """The devices table is made here, not in the page: a memory column only where some
    device reports it (a CPU reports none; a GPU its bytes in use, limit and peak)."""
    cpu = _devices.DeviceInfo("cpu:0", 0, "cpu", "cpu", 0, None, None, None)
    gpu = _devices.DeviceInfo("cuda:0", 0, "gpu", "H200", 0, 2**20, 2**30, 3 * 2**20)
    assert devices.inventory_rows([cpu]) == [
        {"device": "cpu:0", "platform": "cpu", "kind": "cpu", "process": 0}
    ]
    assert not devices.reports_memory([cpu]) and devices.silent_platforms([cpu]) == ["cpu"]
    rows = devices.inventory_rows([cpu, gpu])
    assert rows[1]["in use (MiB)"] == 1.0 and rows[1]["limit (MiB)"] == 1024.0
    assert rows[0]["peak (MiB)"] is None
    assert devices.reports_memory([cpu, gpu]) and devices.silent_platforms([cpu, gpu]) == ["cpu"]

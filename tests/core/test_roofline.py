"""This device's roofs, measured once, and where a measurement lands on them."""

from __future__ import annotations

import jax
import pytest

from jaxplay.core import roofline


def test_machine_reference_is_measured_once() -> None:
    ref = roofline.machine_reference()
    assert roofline.machine_reference() is ref
    assert ref.copy_bandwidth_gbps > 0 and ref.matmul_gflops > 0
    assert ref.platform == jax.devices()[0].platform
    assert ref.ridge_flops_per_byte == pytest.approx(ref.matmul_gflops / ref.copy_bandwidth_gbps)


def test_roofline_point_divides_xlas_estimates_by_the_time() -> None:
    gbps, gflops = roofline.roofline_point({"bytes accessed": 4e9, "flops": 2e9}, 2.0)
    assert (gbps, gflops) == (2.0, 1.0)
    missing = roofline.roofline_point(None, 1.0)
    assert all(v != v for v in missing)


def test_a_device_is_named_once_when_its_kind_says_nothing_more() -> None:
    """Headings said "cpu (cpu)"; a GPU keeps its model name."""
    assert roofline.platform_label("cpu", "cpu") == "cpu"
    assert roofline.platform_label("gpu", "NVIDIA H200") == "gpu (NVIDIA H200)"
    assert "(" not in roofline.device_label()  # this machine's CPU

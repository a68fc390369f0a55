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


def test_the_copy_roof_counts_the_copy_of_its_input_xla_makes() -> None:
    """The roof program's input is not donated, so XLA:CPU copies the whole vector into the
    loop's buffer before the rounds (an 11th read and write the roof left out: 1/11 of the
    traffic, about 9% low). The passes come from the compiled program; the bandwidth counts
    them."""
    import jax.numpy as jnp

    elements = 1 << 12

    @jax.jit
    def scale(x, a):  # type: ignore[no-untyped-def]
        return jax.lax.fori_loop(0, roofline.COPY_ROUNDS, lambda _, y: y * a, x)

    vector, a = jnp.ones((elements,), jnp.float32), jnp.float32(1.0001)
    text = scale.lower(vector, a).compile().as_text()
    copies = sum(
        1
        for line in text.split("ENTRY", 1)[1].splitlines()
        if f"f32[{elements}]" in line.split("=", 1)[-1][:40] and " copy(" in line
    )
    assert copies == 1  # on this backend
    assert roofline.copy_passes(text, elements) == roofline.COPY_ROUNDS + copies
    reference = roofline.machine_reference()
    moved = reference.copy_bandwidth_gbps * 1e9 * reference.copy.min
    passes = round(moved / (2 * reference.copy_elements * 4))
    assert passes == roofline.COPY_ROUNDS + 1
    assert "copies the input into the loop's buffer" in reference.method_text

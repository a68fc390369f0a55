"""The static budget: flops, peak memory and the largest array, read off a traced program."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from jaxplay.core import budget


def spec(*shape: int, dtype: str = "float32") -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, jnp.dtype(dtype))


def test_matmul_flops_are_exact() -> None:
    fp = budget.trace_footprint(lambda a, b: a @ b, spec(30, 40), spec(40, 50))
    assert fp.flops == 2 * 30 * 40 * 50


def test_elementwise_work_counts_written_elements_and_weights_transcendentals() -> None:
    plain = budget.trace_footprint(lambda x: x + 1.0, spec(100))
    transcendental = budget.trace_footprint(jnp.exp, spec(100))
    assert plain.flops == 100
    assert transcendental.flops == 100 * budget.TRANSCENDENTAL_COST


def test_peak_counts_what_is_alive_at_once_not_the_sum() -> None:
    """A chain frees each step's input: peak is about two arrays, not five."""
    mib = 2**20

    def chain(x):
        for _ in range(5):
            x = jnp.sin(x)
        return x

    fp = budget.trace_footprint(chain, spec(mib // 4))  # 1 MiB of float32
    assert 2 * mib <= fp.peak_bytes < 3 * mib


def test_the_largest_intermediate_is_named() -> None:
    fp = budget.trace_footprint(lambda x: jnp.sum(x[:, None] * x[None, :]), spec(1000))
    assert fp.largest == "mul → float32[1000,1000]"
    assert fp.largest_bytes == 4 * 1000 * 1000
    assert fp.peak_bytes >= fp.largest_bytes


def test_lapack_is_priced_by_operation_count() -> None:
    n = 1000
    lu = budget.trace_footprint(jnp.linalg.det, spec(n, n))
    assert lu.flops >= 2 / 3 * n**3
    inv = budget.trace_footprint(jnp.linalg.inv, spec(n, n))
    assert 2 * n**3 <= inv.flops <= 4 * n**3


def test_scan_multiplies_its_body_and_while_is_unbounded() -> None:
    def scanned(x):
        return jax.lax.scan(lambda c, _: (jnp.sin(c), None), x, None, length=50)[0]

    once = budget.trace_footprint(jnp.sin, spec(100)).flops
    assert budget.trace_footprint(scanned, spec(100)).flops == pytest.approx(50 * once)
    looped = budget.trace_footprint(
        lambda x: jax.lax.while_loop(lambda c: c.sum() < 10.0, jnp.sin, x), spec(4)
    )
    assert looped.unbounded == ("while",)
    limits = budget.Budget(max_flops=1e12, max_peak_bytes=2**30)
    assert any("loop" in p for p in limits.violations(looped))


def test_cond_costs_its_dearest_branch() -> None:
    def branches(x):
        return jax.lax.cond(x.sum() > 0, lambda y: y @ y, jnp.sin, x)

    fp = budget.trace_footprint(branches, spec(100, 100))
    assert fp.flops >= 2 * 100**3


def test_violations_name_each_limit() -> None:
    limits = budget.Budget(max_flops=1e6, max_peak_bytes=2**20, max_equations=2)
    fp = budget.trace_footprint(lambda a: jnp.tanh(a @ a) + 1.0, spec(600, 600))
    text = " ".join(limits.violations(fp))
    # 2·600³ for the matmul, 10 per tanh, 1 per add
    assert "436 MFLOP; the limit is 1 MFLOP" in text
    assert "at once" in text and "equations" in text
    roomy = budget.Budget(max_flops=1e12, max_peak_bytes=2**30)
    assert roomy.violations(fp) == []

"""benchmarks/gpu_check.py without a GPU: it checks nothing, says why, and exits 0.

The script's GPU checks need an NVIDIA GPU and JAX's CUDA build (run it on a GPU VM, see
docs/hosting.md); here only its CPU path runs, as a subprocess, the way an operator starts it.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

from jaxplay.hosting import catalog

SCRIPT = catalog.ROOT / "benchmarks" / "gpu_check.py"


def run_check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT)],
        capture_output=True,
        text=True,
        env=env,
        cwd=catalog.ROOT,
        timeout=300,
        check=False,
    )


def test_gpu_left_out_by_jax_platforms_is_skipped() -> None:
    out = run_check({**os.environ, "JAX_PLATFORMS": "cpu"})
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("no GPU: skipped every check (JAX_PLATFORMS=cpu"), out.stdout
    assert "docs/hosting.md" in out.stdout


@pytest.mark.skipif(bool(glob.glob("/dev/nvidia[0-9]*")), reason="this machine has an NVIDIA GPU")
def test_machine_without_gpu_is_skipped() -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    out = run_check(env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("no GPU: skipped every check (JAX finds no GPU backend"), (
        out.stdout
    )
    assert "FAIL" not in out.stdout

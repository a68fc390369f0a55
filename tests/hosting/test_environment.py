"""Process settings: simulated devices and preallocation are set before the backend starts."""

from __future__ import annotations

import jax
import pytest

from jaxplay.core import timing
from jaxplay.hosting import environment, settings


def test_requested_cpu_devices_parses_and_clamps() -> None:
    assert environment.requested_cpu_devices({}) == 8
    assert environment.requested_cpu_devices({"JAXPLAY_CPU_DEVICES": "4"}) == 4
    assert environment.requested_cpu_devices({"JAXPLAY_CPU_DEVICES": "zero"}) == 8
    assert environment.requested_cpu_devices({"JAXPLAY_CPU_DEVICES": "0"}) == 1
    assert environment.requested_cpu_devices({"JAXPLAY_CPU_DEVICES": "999"}) == 64


def test_configure_sets_flags_without_overriding_the_user() -> None:
    env = {
        "XLA_FLAGS": "--foo --xla_force_host_platform_device_count=3",
        "JAXPLAY_CPU_DEVICES": "2",
    }
    assert environment.configure(env) == 2
    assert env["XLA_FLAGS"] == "--foo --xla_force_host_platform_device_count=2"
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    user = {"XLA_PYTHON_CLIENT_PREALLOCATE": "true"}
    environment.configure(user)
    assert user["XLA_PYTHON_CLIENT_PREALLOCATE"] == "true"


def test_the_test_process_sees_eight_cpu_devices() -> None:
    info = environment.describe_environment()
    assert len(jax.devices()) == 8
    assert info.cpu_device_count == 8 and info.simulated_cpu_devices == 8
    assert info.backend == "cpu"
    assert [d.id for d in info.devices] == list(range(8))
    assert "8 devices" in info.summary


def test_cpus_are_read_as_the_kernel_writes_them() -> None:
    from jaxplay.hosting import settings

    assert settings.cpus({}) is None
    assert settings.cpus({"JAXPLAY_CPUS": "0-3,8"}) == {0, 1, 2, 3, 8}
    assert settings.cpus({"JAXPLAY_CPUS": " 2 , 0 "}) == {0, 2}
    for bad in ("a", "3-1", "-1", "0-99999", ",", "1-2-3"):
        assert settings.cpus({"JAXPLAY_CPUS": bad}) is None, bad
    assert settings.cpu_list({8, 0, 1, 2, 3}) == "0-3,8"
    assert settings.cpu_list({5}) == "5"
    assert settings.cpus({"JAXPLAY_CPUS": settings.cpu_list({0, 2, 3, 7})}) == {0, 2, 3, 7}


_PINNED = """
import os, threading, time
started = threading.Event()
def early():  # a thread of the server's from before app.py runs, and one it starts later
    started.set()
    time.sleep(0.5)
    threading.Thread(target=time.sleep, args=(2,)).start()
    time.sleep(2)
threading.Thread(target=early).start()
started.wait()
from jaxplay.hosting import environment
environment.configure()
import jax.numpy as jnp
x = jnp.ones((500, 500))
(x @ x).block_until_ready()  # XLA's threads exist now
time.sleep(1)
from jaxplay.hosting import settings
allowed = {settings.cpu_list(os.sched_getaffinity(int(t))) for t in os.listdir("/proc/self/task")}
print(sorted(allowed))
print(environment.describe_environment().summary)
"""


def test_a_pinned_process_runs_every_thread_on_its_cores() -> None:
    """``JAXPLAY_CPUS``: the threads started before :func:`environment.configure`, those they
    start later and XLA's own run only on the cores named; the sidebar's line says which."""
    import os
    import subprocess
    import sys

    import pytest

    from jaxplay.hosting import catalog

    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("one core: nothing to pin to")
    out = subprocess.run(
        [sys.executable, "-c", _PINNED],
        env={**os.environ, "JAXPLAY_CPUS": str(cores[-1])},
        cwd=catalog.ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    threads, summary = out.stdout.splitlines()[-2:]
    assert threads == f"['{cores[-1]}']"
    assert summary.endswith(f"· 1 core ({cores[-1]})"), summary


def test_the_sidebar_line_names_this_process_cores() -> None:
    import os

    from jaxplay.hosting import settings

    info = environment.describe_environment()
    assert info.cores == os.sched_getaffinity(0)
    n = len(info.cores)
    ids = settings.cpu_list(info.cores).replace("-", "\u2011")  # kept on one line
    assert info.summary.endswith(f"· {n} core{'s' if n > 1 else ''} ({ids})"), info.summary


def test_without_cpu_affinity_every_core_is_usable_and_nothing_is_pinned(monkeypatch) -> None:
    """macOS has no sched_getaffinity/sched_setaffinity: the app still starts, on every core."""
    import os

    from jaxplay.core import measure_lock

    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.delattr(os, "sched_setaffinity")
    every = frozenset(range(os.cpu_count() or 1))
    assert measure_lock.usable_cores() == every
    assert environment.pin(frozenset({0})) == every
    assert measure_lock.host_resources(accelerated=False) == [f"cpu{n}" for n in sorted(every)]


def test_the_measure_scale_is_read_and_bounded() -> None:
    assert settings.measure_scale({}) == 1.0
    assert settings.measure_scale({"JAXPLAY_MEASURE_SCALE": "0.25"}) == 0.25
    assert settings.measure_scale({"JAXPLAY_MEASURE_SCALE": "fast"}) == 1.0
    assert settings.measure_scale({"JAXPLAY_MEASURE_SCALE": "-2"}) == 1.0
    assert settings.measure_scale({"JAXPLAY_MEASURE_SCALE": "1e9"}) == settings.MAX_MEASURE_SCALE


def test_a_process_measures_at_its_configured_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a server does at start-up (``pages/_startup.py``): its measurements' sampling budgets
    are scaled by ``JAXPLAY_MEASURE_SCALE`` (the servers this suite starts inherit 0.05)."""
    monkeypatch.setattr(timing, "BUDGET_SCALE", timing.BUDGET_SCALE)  # restored after
    monkeypatch.setenv("JAXPLAY_MEASURE_SCALE", "0.5")
    environment.configure()
    assert timing.BUDGET_SCALE == 0.5
    monkeypatch.delenv("JAXPLAY_MEASURE_SCALE")
    environment.configure()
    assert timing.BUDGET_SCALE == 1.0


def test_both_names_of_the_gpu_memory_fraction_reach_the_workers(monkeypatch) -> None:
    """jaxlib reads ``XLA_CLIENT_MEM_FRACTION`` and, deprecated, ``XLA_PYTHON_CLIENT_MEM_FRACTION``
    (it refuses both at once): an operator following JAX's current docs sets the new name, which
    the workers did not get, so the server was capped and its sandbox workers were not."""
    from jaxlib import xla_client

    for name in ("XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION"):
        monkeypatch.delenv("XLA_CLIENT_MEM_FRACTION", raising=False)
        monkeypatch.delenv("XLA_PYTHON_CLIENT_MEM_FRACTION", raising=False)
        monkeypatch.setenv(name, "0.1")
        assert xla_client.generate_pjrt_gpu_plugin_options()["memory_fraction"] == 0.1
        assert environment.child_environment()[name] == "0.1"
    monkeypatch.setenv("XLA_CLIENT_MEM_FRACTION", "0.1")
    with pytest.raises(ValueError, match="deprecated"):
        xla_client.generate_pjrt_gpu_plugin_options()

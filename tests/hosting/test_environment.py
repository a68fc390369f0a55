"""Process settings: simulated devices and preallocation are set before the backend starts."""

from __future__ import annotations

import jax

from jaxplay.hosting import environment


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

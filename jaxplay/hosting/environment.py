"""Process-level JAX settings and a description of the machine the app runs on.

Why a module of its own: the number of simulated CPU devices (for the sharding demos on a laptop)
and GPU preallocation must be settled *before* JAX initialises its backend, which happens on the
first device query anywhere in the process. ``app.py`` and the test suite call :func:`configure`
first thing, and every page can then show the same :class:`EnvironmentInfo`.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from jaxplay.core.i18n import ngettext
from jaxplay.core.measure_lock import usable_cores
from jaxplay.hosting import settings

_FORCE_FLAG = "--xla_force_host_platform_device_count"
#: The app's checkout (the folder holding ``jaxplay``), on every child's ``PYTHONPATH``.
_ROOT = Path(__file__).resolve().parent.parent.parent


#: The variables every child process the app starts gets, whatever the server's own environment
#: holds (a database URL with its password, tokens, paths): these, the JAX settings of
#: :data:`~jaxplay.hosting.settings.PASSED_TO_WORKERS` and the device settings of
#: :func:`configure`, nothing else.
CHILD_BASE: dict[str, str] = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "MALLOC_ARENA_MAX": "2",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONNOUSERSITE": "1",
}


def child_environment(cpu_devices: int | None = None) -> dict[str, str]:
    """The whole environment of a child process (a sandbox worker, a demo's processes), rebuilt
    from an allow-list: :data:`CHILD_BASE`, ``PYTHONPATH`` naming the app, the server's
    :data:`~jaxplay.hosting.settings.PASSED_TO_WORKERS` (among them
    ``XLA_CLIENT_MEM_FRACTION``, which caps each child's share of the GPU) and the
    simulated CPU device count: the app's, or ``cpu_devices``.

    Every ``subprocess`` call of ``jaxplay`` passes this as ``env``; nothing of the server's
    own environment reaches a child otherwise.
    """
    count = requested_cpu_devices() if cpu_devices is None else cpu_devices
    env = dict(CHILD_BASE)
    env["PYTHONPATH"] = str(_ROOT)
    env["JAXPLAY_CPU_DEVICES"] = str(count)
    env.update(settings.passed_to_workers())
    configure(env)
    return env


def requested_cpu_devices(environ: Mapping[str, str] | None = None) -> int:
    """The number of simulated CPU devices asked for (``JAXPLAY_CPU_DEVICES``; see settings)."""
    return settings.cpu_devices(environ)


def xla_flags_with_device_count(flags: str, count: int) -> str:
    """``XLA_FLAGS`` with the host device count set to ``count`` (replacing an earlier value)."""
    kept = [f for f in flags.split() if not f.startswith(_FORCE_FLAG)]
    kept.append(f"{_FORCE_FLAG}={count}")
    return " ".join(kept)


def configure(environ: dict[str, str] | None = None) -> int:
    """Apply the process-wide settings; return the number of CPU devices asked for.

    Sets ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` unless the user chose otherwise (many visitors
    and the sandbox workers share one GPU, so no process may grab 75% of its memory), and sets the
    simulated CPU device count both through ``XLA_FLAGS`` (read when the backend starts) and JAX's
    ``jax_num_cpu_devices`` option (for a JAX already imported). For this process (no
    ``environ``), pins it to ``JAXPLAY_CPUS`` when set (:func:`pin`) and scales its
    measurements' sampling budgets by ``JAXPLAY_MEASURE_SCALE``
    (:data:`jaxplay.core.timing.BUDGET_SCALE`). Safe to call more than once; once the backend
    has started, the device count can no longer change and the call leaves it be.
    """
    env = os.environ if environ is None else environ
    count = requested_cpu_devices(env)
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    env["XLA_FLAGS"] = xla_flags_with_device_count(env.get("XLA_FLAGS", ""), count)
    env["JAX_NUM_CPU_DEVICES"] = str(count)
    if environ is None:
        cores = settings.cpus()
        if cores is not None:
            pin(cores)
        import jax

        from jaxplay.core import timing

        timing.BUDGET_SCALE = settings.measure_scale()

        # Once the backend is up (e.g. a second call) its device count is fixed: leave it be.
        with contextlib.suppress(RuntimeError):
            jax.config.update("jax_num_cpu_devices", count)
    return count


def pin(cores: frozenset[int]) -> frozenset[int]:
    """Run every thread of this process, and all it starts later, on ``cores`` (those of them it
    may use); returns the cores it runs on.

    Before JAX's backend starts, XLA sizes its CPU thread pool from this affinity, so a pinned
    server's measurements use its cores only. Streamlit has started threads before ``app.py``
    runs: each is pinned (a thread inherits its creator's affinity, so the listing is repeated
    until no thread is new). Cores this process may not use are left out; if none is left, the
    process stays as it was.
    """
    allowed = usable_cores()
    wanted = set(cores) & allowed
    if not wanted or wanted == allowed or not hasattr(os, "sched_setaffinity"):
        return allowed  # nothing to change, or a system without affinity (macOS)
    done: set[int] = set()
    while True:
        try:
            threads = {int(t) for t in os.listdir("/proc/self/task")} - done
        except OSError:
            threads = {0} - done
        if not threads:
            break
        for tid in threads:
            with contextlib.suppress(OSError):  # a thread that ended meanwhile
                os.sched_setaffinity(tid, wanted)
        done |= threads
    return usable_cores()


def cores_text(cores: frozenset[int] | set[int]) -> str:
    """This process's cores for a sentence: ``2 cores (0‑1)`` (a hyphen a line does not break
    at: the sidebar is narrow)."""
    n = len(cores)
    return ngettext("{n} core ({ids})", "{n} cores ({ids})", n).format(
        n=f"{n:,}", ids=settings.cpu_list(cores).replace("-", "\u2011")
    )


@dataclass(frozen=True)
class DeviceRow:
    """One device as the environment panel lists it."""

    id: int
    platform: str
    kind: str
    process_index: int


@dataclass(frozen=True)
class EnvironmentInfo:
    """What JAX sees in this process: versions, backend, devices and flags."""

    jax_version: str
    jaxlib_version: str
    backend: str
    devices: tuple[DeviceRow, ...]
    x64_enabled: bool
    simulated_cpu_devices: int
    cpu_device_count: int
    preallocate: str
    #: The cores this process runs on (its affinity): every measurement it makes has these.
    cores: frozenset[int] = frozenset()

    @property
    def summary(self) -> str:
        """One line for the sidebar: versions, backend, device count, the cores measurements
        here run on."""
        n = len(self.devices)
        devices = ngettext("{n} device", "{n} devices", n).format(n=f"{n:,}")
        line = f"jax {self.jax_version} · {self.backend} · {devices}"
        return f"{line} · {cores_text(self.cores)}" if self.cores else line


def describe_environment() -> EnvironmentInfo:
    """Read the versions, backend and device list from the running JAX."""
    import jax
    import jaxlib

    devices = tuple(
        DeviceRow(
            id=int(d.id),
            platform=str(d.platform),
            kind=str(getattr(d, "device_kind", d.platform)),
            process_index=int(getattr(d, "process_index", 0)),
        )
        for d in jax.devices()
    )
    try:
        cpu_count = len(jax.devices("cpu"))
    except RuntimeError:
        cpu_count = 0
    match = re.search(rf"{_FORCE_FLAG}=(\d+)", os.environ.get("XLA_FLAGS", ""))
    simulated = int(match.group(1)) if match else requested_cpu_devices()
    return EnvironmentInfo(
        jax_version=jax.__version__,
        jaxlib_version=getattr(jaxlib, "__version__", "unknown"),
        backend=jax.default_backend(),
        devices=devices,
        x64_enabled=bool(jax.config.values["jax_enable_x64"]),
        simulated_cpu_devices=simulated,
        cpu_device_count=cpu_count,
        preallocate=os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "unset"),
        cores=usable_cores(),
    )

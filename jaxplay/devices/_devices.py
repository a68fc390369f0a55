"""Devices as JAX sees them: the inventory, placing an array, and honest transfer timings.

Why: the article's section on devices asks for ``devices('gpu')`` unguarded (it raises on a
machine without a GPU) and never measures a transfer. This module lists every device with what the
backend reports about its memory, runs the article's placement code as written and in its guarded
form (so a page can show the real error), and times host→device, device→device and device→host
copies through :mod:`jaxplay.core.timing`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from jaxplay.article import manual_device_placement
from jaxplay.core import capture, claims, timing
from jaxplay.core.capture import Outcome
from jaxplay.core.figures import format_bytes, log_axis, timing_line
from jaxplay.core.i18n import N_, _, ngettext

#: The largest transfer that may be timed (bytes): enough to see bandwidth, small enough to share.
#: Largest transfer timed: the host buffer, its copy on the source device and the copies made
#: while timing stay within a few hundred MB of the server's memory.
MAX_TRANSFER_BYTES = 64 * 2**20
#: Longest vector the placement demo puts on a device (40 MB of float32).
MAX_PLACE_ELEMENTS = 10**7
#: The routes timed (keys of :func:`transfer_calls`; a figure shows them translated).
ROUTES = (N_("host → device"), N_("device → device"), N_("device → host"))


def devices_count(n: int) -> str:
    """``n`` devices, in the visitor's language (``"1 device"``, ``"8 devices"``)."""
    return ngettext("{n} device", "{n} devices", n).format(n=f"{n:,}")


def platforms() -> tuple[str, ...]:
    """Platforms with devices in this process, the default backend first.

    A GPU machine has CPU devices too (the simulated ones included), and the sharding demos may
    want those: eight simulated CPUs show more than one GPU does.
    """
    import jax

    found = [jax.default_backend()]
    if found[0] != "cpu":
        try:
            jax.devices("cpu")
            found.append("cpu")
        except RuntimeError:
            pass
    return tuple(found)


def devices_of(platform: str | None = None) -> list[Any]:
    """The devices of ``platform`` (``None``: the default backend's)."""
    import jax

    return list(jax.devices(platform) if platform else jax.devices())


def device_key(device: Any) -> str:
    """``"cpu:3"``: ids alone are ambiguous when a GPU and CPUs are both present."""
    return f"{device.platform}:{device.id}"


def all_devices() -> list[Any]:
    """Every device of every platform in :func:`platforms`."""
    return [d for p in platforms() for d in devices_of(p)]


@dataclass(frozen=True)
class DeviceInfo:
    """One device, with its memory counters where the backend reports them (GPUs do, CPUs not).

    Attributes:
        bytes_in_use, bytes_limit, peak_bytes_in_use: from ``device.memory_stats()``; ``None``
            when the backend reports nothing (the CPU backend).
    """

    key: str
    id: int
    platform: str
    kind: str
    process_index: int
    bytes_in_use: int | None
    bytes_limit: int | None
    peak_bytes_in_use: int | None


def _memory_stats(device: Any) -> dict[str, int]:
    try:
        stats = device.memory_stats()
    except (RuntimeError, NotImplementedError, AttributeError):
        return {}
    return dict(stats or {})


def inventory() -> tuple[DeviceInfo, ...]:
    """Every device of this process, read fresh (memory counters change as arrays come and go)."""
    rows = []
    for d in all_devices():
        stats = _memory_stats(d)
        rows.append(
            DeviceInfo(
                key=device_key(d),
                id=int(d.id),
                platform=str(d.platform),
                kind=str(d.device_kind),
                process_index=int(d.process_index),
                bytes_in_use=stats.get("bytes_in_use"),
                bytes_limit=stats.get("bytes_limit"),
                peak_bytes_in_use=stats.get("peak_bytes_in_use"),
            )
        )
    return tuple(rows)


#: The memory counters a device may report (``memory_stats()``), as table columns in MiB.
COUNTERS = {
    N_("in use (MiB)"): "bytes_in_use",
    N_("limit (MiB)"): "bytes_limit",
    N_("peak (MiB)"): "peak_bytes_in_use",
}


def inventory_rows(infos: Sequence[DeviceInfo]) -> list[dict[str, Any]]:
    """One table row per device: its key, platform, kind and process, and a column for each
    memory counter that at least one device reports (none is shown that no backend reported).
    The column names are in the visitor's language."""
    reported = {c: a for c, a in COUNTERS.items() if any(getattr(d, a) for d in infos)}
    rows = []
    for d in infos:
        row: dict[str, Any] = {_("device"): d.key, _("platform"): d.platform, _("kind"): d.kind}
        row[_("process")] = d.process_index
        for column, attr in reported.items():
            value = getattr(d, attr)
            row[_(column)] = None if value is None else round(value / 2**20, 1)
        rows.append(row)
    return rows


def reports_memory(infos: Sequence[DeviceInfo]) -> bool:
    """Whether any device reports a memory counter (then the counters can be read again)."""
    return any(getattr(d, a) for d in infos for a in COUNTERS.values())


def silent_platforms(infos: Sequence[DeviceInfo]) -> list[str]:
    """The platforms whose devices report no memory counters (``memory_stats()`` is None)."""
    return sorted({d.platform for d in infos if d.bytes_limit is None})


def guarded_device_placement():
    """The fix: ask for GPUs inside ``try``; a missing backend raises, it does not return []."""
    import jax
    from jax import numpy as jnp

    try:
        gpus = jax.devices("gpu")  # raises RuntimeError when no GPU backend exists
    except RuntimeError:
        gpus = []
    gpu_device = gpus[0] if gpus else jax.devices()[0]
    cpu_device = jax.devices("cpu")[0]
    x_gpu = jax.device_put(jnp.ones(1000), gpu_device)
    x_cpu = jax.device_put(jnp.ones(1000), cpu_device)
    return x_gpu, x_cpu


@claims.states_nothing("names the device JAX reports for each array (``a.devices()``)")
def describe_placed(arrays: Any) -> str:
    """Where each array of a tuple lives: ``x0 on TFRT_CPU_0 (cpu)`` etc."""
    return ", ".join(f"x{i} on {next(iter(a.devices()))}" for i, a in enumerate(arrays))


def article_placement() -> tuple[Outcome, Outcome]:
    """The article's placement code as written, and guarded (both actually run)."""
    return (
        capture.run(manual_device_placement, describe=describe_placed),
        capture.run(guarded_device_placement, describe=describe_placed),
    )


@dataclass(frozen=True)
class Placement:
    """Where an array put on a device lives, as JAX reports it."""

    device: str
    devices: tuple[str, ...]
    sharding: str
    committed: bool
    nbytes: int


def place(key: str, size: int) -> Placement:
    """``device_put`` a float32 vector of ``size`` elements on the device ``key`` (``"cpu:3"``).

    Raises:
        ValueError: ``size`` outside 1..:data:`MAX_PLACE_ELEMENTS`.
    """
    import jax

    if not 1 <= size <= MAX_PLACE_ELEMENTS:
        raise ValueError(f"place 1 to {MAX_PLACE_ELEMENTS:,} elements, not {size:,}")

    x = jax.device_put(np.ones(size, np.float32), find_device(key))
    return Placement(
        device=key,
        devices=tuple(str(d) for d in x.devices()),
        sharding=repr(x.sharding),
        committed=bool(x.committed),
        nbytes=int(x.nbytes),
    )


def find_device(key: str) -> Any:
    """The device whose :func:`device_key` is ``key``."""
    found = all_devices()
    for d in found:
        if device_key(d) == key:
            return d
    raise ValueError(f"no device {key!r}; this process has {', '.join(map(device_key, found))}")


@dataclass(frozen=True)
class TransferPoint:
    """One measured transfer: a route, a size in bytes and its timing."""

    route: str
    nbytes: int
    timing: timing.Timing

    @property
    def gbps(self) -> float:
        """Bandwidth at the median time (GB/s, 1e9 bytes)."""
        return self.nbytes / self.timing.median / 1e9


def host_memory_kind(device: Any) -> str | None:
    """The host memory a device can copy into (``pinned_host``), or ``None`` if it has none."""
    kinds = {m.kind for m in device.addressable_memories()}
    for kind in ("pinned_host", "unpinned_host"):
        if kind in kinds:
            return kind
    return None


def transfer_calls(src_key: str, dst_key: str, nbytes: int) -> dict[str, Callable[[], Any]]:
    """The zero-argument calls whose time is a transfer of ``nbytes``, by route.

    host → device copies a numpy buffer (``may_alias=False``: a copy, never an alias). device →
    device copies between two devices (left out when they are the same device). device → host
    copies into the device's host memory space (``pinned_host``): ``np.asarray`` would cache its
    result on the array, so timing it again would measure nothing.
    """
    import jax
    from jax.sharding import SingleDeviceSharding

    if not 0 < nbytes <= MAX_TRANSFER_BYTES:
        raise ValueError(f"transfer size must be 4 bytes to {MAX_TRANSFER_BYTES // 2**20} MiB")
    src, dst = find_device(src_key), find_device(dst_key)
    host = np.ones(max(1, nbytes // 4), np.float32)
    on_src = jax.device_put(host, src)
    calls: dict[str, Callable[[], Any]] = {
        ROUTES[0]: lambda: jax.device_put(host, dst, may_alias=False),
    }
    if src_key != dst_key:
        calls[ROUTES[1]] = lambda: jax.device_put(on_src, dst)
    kind = host_memory_kind(src)
    if kind is not None:
        to_host = SingleDeviceSharding(src, memory_kind=kind)
        calls[ROUTES[2]] = lambda: jax.device_put(on_src, to_host)
    return calls


def transfer_point(
    src_key: str, dst_key: str, nbytes: int, budget_s: float = 0.2
) -> tuple[TransferPoint, ...]:
    """Every route's transfer of ``nbytes`` between the two devices, timed: one point of the
    page's sweep, measured apart so the page shows its progress between points (and each runs
    in the compute worker, ``jaxplay.sandbox.timed``)."""
    return tuple(
        TransferPoint(route, nbytes, timing.measure(call, budget_s=budget_s))
        for route, call in transfer_calls(src_key, dst_key, nbytes).items()
    )


def transfer_figure(points: tuple[TransferPoint, ...], where: str) -> go.Figure:
    """Bandwidth (GB/s at the median) against size, one line per route, spread as error bars."""
    fig = go.Figure()
    for route in ROUTES:
        pts = [p for p in points if p.route == route]
        if not pts:
            continue
        sizes = [p.nbytes for p in pts]
        gigabytes = [n / 1e9 for n in sizes]
        fig.add_trace(timing_line(sizes, [p.timing for p in pts], _(route), work=gigabytes))
    fig.update_layout(
        title=_("Transfer bandwidth ({where}); median, bars: interquartile range").format(
            where=where
        ),
        xaxis=log_axis(_("bytes per transfer"), [p.nbytes for p in points], format_bytes, base=4),
        yaxis={"title": "GB/s"},
        height=380,
        margin={"t": 50, "b": 40},
    )
    return fig

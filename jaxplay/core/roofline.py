"""This device's roofs and where a measurement lands on them.

Why a module of its own: "achieved 12 GB/s" means nothing without the best this device can do, so
the jit and memory pages measure the machine once (copy bandwidth and matmul rate, with the timing
harness) and place each function on that roofline. :func:`device_label` names the device a
measurement ran on, for every chart title: a timing without its device is not a fact.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

from jaxplay.core import hlo
from jaxplay.core.i18n import N_, _
from jaxplay.core.measure_lock import exclusive
from jaxplay.core.timing import Timing, block, measure


@dataclass(frozen=True)
class MachineReference:
    """What this device can do at best, measured here, to judge a result against.

    Attributes:
        device: the device measured, e.g. ``"cpu"`` or ``"gpu (NVIDIA H200)"``.
        platform: JAX's platform name.
        copy_bandwidth_gbps: GB/s of a jitted ``y = a * y`` on a large float32 vector, repeated
            in place, counting one read and one write of every element (STREAM's "scale").
        matmul_gflops: GFLOP/s of a jitted float32 ``x @ y`` (2·n³ flops per call).
        copy_elements, matmul_n: the sizes used.
        copy: the blocked timing of the copy kernel.
        matmul: the blocked timing of the matmul.
        method: one sentence on how the figures were measured, for captions.
    """

    device: str
    platform: str
    copy_bandwidth_gbps: float
    matmul_gflops: float
    copy_elements: int
    matmul_n: int
    copy: Timing
    matmul: Timing
    method: str

    @property
    def method_text(self) -> str:
        """:attr:`method` in the visitor's language."""
        return _method(_(METHOD), self.copy_elements, self.matmul_n)

    @property
    def ridge_flops_per_byte(self) -> float:
        """Arithmetic intensity where the two roofs meet: below it, memory bandwidth limits."""
        return self.matmul_gflops / self.copy_bandwidth_gbps


def device_label() -> str:
    """Where measurements run, for chart titles: ``"cpu"``, ``"gpu (NVIDIA H200)"``.

    The kind is named only when it says more than the platform (a CPU's kind is ``"cpu"``, and
    "cpu (cpu)" reads as a typo on a projector).
    """
    import jax

    device = jax.devices()[0]
    return platform_label(device.platform, getattr(device, "device_kind", device.platform))


def platform_label(platform: str, kind: str) -> str:
    """``"cpu"`` for a CPU, ``"gpu (NVIDIA H200)"`` where the kind adds something.

    Example:
        >>> platform_label("cpu", "cpu"), platform_label("gpu", "NVIDIA H200")
        ('cpu', 'gpu (NVIDIA H200)')
    """
    return platform if kind.strip().lower() in {platform.lower(), ""} else f"{platform} ({kind})"


_REFERENCE: MachineReference | None = None
_REFERENCE_LOCK = threading.Lock()


def measured() -> bool:
    """Whether this process has measured its roofs already (:func:`machine_reference`)."""
    return _REFERENCE is not None


def machine_reference(budget_s: float = 0.3) -> MachineReference:
    """This device's copy bandwidth and matmul rate, measured on first use and then cached.

    The process measures once (about a second) and every later call returns the same object, so
    every page compares against the same roofs. Each roof is the fastest sample, not the median:
    it stands for the best this device does, and load from other visitors only slows samples
    down. Sizes exceed CPU caches (32 MiB on CPU, 256 MiB on an accelerator) so the bandwidth is
    memory's, not cache's.
    """
    global _REFERENCE
    with _REFERENCE_LOCK:
        if _REFERENCE is None:
            _REFERENCE = _measure_reference(budget_s)
        return _REFERENCE


def _measure_reference(budget_s: float) -> MachineReference:
    import jax
    import jax.numpy as jnp

    device = jax.devices()[0]
    platform = str(device.platform)
    on_cpu = platform == "cpu"
    elements = 1 << 23 if on_cpu else 1 << 26
    rounds = COPY_ROUNDS
    n = 1024 if on_cpu else 4096

    # y = a * y, ten times in a loop: the loop carry is updated in place, so the figure is memory
    # bandwidth rather than the page faults of allocating a fresh 64 MiB output on every call.
    @jax.jit
    def scale(x: Any, a: Any) -> Any:
        return jax.lax.fori_loop(0, rounds, lambda _, y: y * a, x)

    matmul = jax.jit(lambda x, y: x @ y)
    with exclusive():
        vector = block(jnp.full((elements,), 1.5, jnp.float32))
        a = jnp.float32(1.0001)
        left = block(jnp.full((n, n), 0.5, jnp.float32))
        right = block(jnp.full((n, n), 0.25, jnp.float32))
        copy_timing = measure(scale, vector, a, budget_s=budget_s, lock=False)
        matmul_timing = measure(matmul, left, right, budget_s=budget_s, lock=False)
        passes = copy_passes(scale.lower(vector, a).compile().as_text() or "", elements)
    del vector, left, right
    bytes_moved = passes * 2 * elements * 4
    flops = 2 * n**3
    return MachineReference(
        device=device_label(),
        platform=platform,
        copy_bandwidth_gbps=bytes_moved / copy_timing.min / 1e9,
        matmul_gflops=flops / matmul_timing.min / 1e9,
        copy_elements=elements,
        matmul_n=n,
        copy=copy_timing,
        matmul=matmul_timing,
        method=_method(METHOD, elements, n),
    )


def copy_passes(hlo_text: str, elements: int) -> int:
    """Passes over the vector the copy roof's program makes: its rounds, and one more for each
    copy of the whole vector in the entry computation (the input is not donated, so XLA:CPU
    copies it into the loop's buffer first: left out, the roof read 1/11, about 9%, low)."""
    whole = re.compile(rf"^f32\[{elements}\]")
    copies = sum(
        1 for op in hlo.entry_ops(hlo_text) if op.opcode == "copy" and whole.match(op.shape)
    )
    return COPY_ROUNDS + copies


#: How the roofs were measured (a caption); :attr:`MachineReference.method` keeps it in
#: English, measured once per process for visitors of every language.
METHOD = N_(
    "jitted y = a·y, {rounds} rounds in place on {elements} float32 "
    "({mib} MiB, read + written each round, and once more where the compiled program first "
    "copies the input into the loop's buffer), and a {n}×{n} "
    "float32 matmul (2·n³ flops); fastest blocked sample of each, since a roof is the "
    "best the device does"
)
COPY_ROUNDS = 10


def _method(template: str, elements: int, n: int) -> str:
    return template.format(
        rounds=COPY_ROUNDS, elements=f"{elements:,}", mib=f"{elements * 4 / 2**20:.0f}", n=n
    )


def roofline_point(cost: dict[str, float] | None, seconds: float) -> tuple[float, float]:
    """Achieved (GB/s, GFLOP/s) of a call that took ``seconds``, from its ``cost_analysis``.

    XLA's ``bytes accessed`` and ``flops`` are its own estimates for the compiled program (its
    flops leave out transcendentals such as ``exp``). A figure that is missing is NaN.
    """
    if not cost or not seconds > 0:
        return float("nan"), float("nan")
    gbps = cost.get("bytes accessed", float("nan")) / seconds / 1e9
    gflops = cost.get("flops", float("nan")) / seconds / 1e9
    return float(gbps), float(gflops)

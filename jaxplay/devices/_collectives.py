"""Collectives: the article's ``pmap`` all-reduce, the same with ``jax.shard_map``, and XLA's own.

Why: devices cooperate through a handful of collective operations (all-reduce, all-gather,
permute). The article shows them with ``pmap``, which is in maintenance mode and whose all-reduce
example forgets ``axis_name`` (a ``NameError`` on current JAX). This module runs that code as
written and fixed, runs ``psum``, ``all_gather`` and a ``ppermute`` ring shift under
``jax.shard_map`` with per-device inputs and outputs beside a numpy reference, and compiles
``jit`` programs on sharded inputs to show the collectives XLA inserts by itself.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxplay.article import all_reduce_example, model_fn
from jaxplay.core import capture, claims
from jaxplay.core.capture import Outcome
from jaxplay.core.i18n import N_, _
from jaxplay.devices._devices import devices_of

AXIS = "i"
WIDTH = 4


def mesh_of(n_devices: int, platform: str | None = None) -> jax.sharding.Mesh:
    """A 1-D mesh named ``'i'`` over the first ``n_devices`` devices of ``platform``."""
    pool = devices_of(platform)
    if not 1 <= n_devices <= len(pool):
        raise ValueError(f"asked for {n_devices} devices; this process has {len(pool)}")
    return jax.make_mesh((n_devices,), (AXIS,), devices=pool[:n_devices])


def example_input(n_devices: int) -> np.ndarray:
    """Row ``j`` is device ``j``'s input: ``[4j, 4j+1, 4j+2, 4j+3]``."""
    return np.arange(n_devices * WIDTH, dtype=np.float32).reshape(n_devices, WIDTH)


# --- the article's pmap code --------------------------------------------------------------------


def article_parallel_map():
    """The article's pmap example as written (its prints returned as text, to show them)."""
    from jax import devices, pmap

    if len(devices()) > 1:
        parallel_model = pmap(model_fn)
        x_sharded = jnp.stack([jnp.ones(100) for _ in range(len(devices()))])
        results = parallel_model(x_sharded)
        return f"Parallel computation shape: {results.shape}"
    else:
        return "Single device detected, pmap will work but without parallelism"


def all_reduce_fixed(x):
    """The fix: pmap must name the axis that psum reduces over."""
    from jax import pmap
    from jax.lax import psum

    @partial(pmap, axis_name="batch")
    def local_compute(x_local):
        local_sum = jnp.sum(x_local)
        global_sum = psum(local_sum, "batch")
        return global_sum

    return local_compute(x)


def all_reduce_shard_map(x, mesh):
    """The current way: shard_map over a mesh; each device sums its rows, then psum."""

    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    def local_compute(x_local):
        local_sum = jnp.sum(x_local, keepdims=True)[0]
        return jax.lax.psum(local_sum, "i")

    return local_compute(x)


def _array_text(value: Any) -> str:
    return np.array2string(np.asarray(value), precision=4, separator=", ")


@claims.states_nothing("the article's code run as written and fixed: what each did")
def article_examples(n_devices: int) -> dict[str, Outcome]:
    """The article's pmap code as written, fixed, and with ``shard_map`` (all really run).

    The all-reduce input has one row per device (``n_devices`` of the default backend's devices,
    since ``pmap`` maps over those). The titles are English (a cached result): a page shows them
    with ``_()``.
    """
    x = example_input(n_devices)
    mesh = mesh_of(n_devices)
    return {
        N_("pmap, as written"): capture.run(article_parallel_map, describe=str),
        N_("psum in pmap, as written"): capture.run(all_reduce_example, x, describe=_array_text),
        N_("psum in pmap, fixed"): capture.run(all_reduce_fixed, x, describe=_array_text),
        N_("psum in shard_map"): capture.run(
            all_reduce_shard_map,
            jax.device_put(x, NamedSharding(mesh, P(AXIS))),
            mesh,
            describe=_array_text,
        ),
    }


# --- collectives under shard_map ----------------------------------------------------------------


def psum_body(x_local):
    return jax.lax.psum(x_local, "i")


def all_gather_body(x_local):
    return jax.lax.all_gather(x_local, "i", tiled=True)


def ring_shift_body(x_local):
    n = jax.lax.axis_size("i")
    return jax.lax.ppermute(x_local, "i", perm=[(j, (j + 1) % n) for j in range(n)])


@dataclass(frozen=True)
class Collective:
    """A collective's body under ``shard_map`` and what each device must end up with (numpy)."""

    name: str
    body: Callable[[Any], Any]
    reference: Callable[[np.ndarray], list[np.ndarray]]
    what: str


COLLECTIVES: dict[str, Collective] = {
    c.name: c
    for c in (
        Collective(
            "psum",
            psum_body,
            lambda x: [x.sum(axis=0, keepdims=True)] * len(x),
            N_("all-reduce: every device gets the sum of all devices' inputs"),
        ),
        Collective(
            "all_gather",
            all_gather_body,
            lambda x: [x] * len(x),
            N_(
                "every device gets every device's input, concatenated along axis 0 in mesh "
                "order (`tiled=True`; without it they are stacked on a new leading axis)"
            ),
        ),
        Collective(
            "ppermute",
            ring_shift_body,
            lambda x: [x[(j - 1) % len(x)][None] for j in range(len(x))],
            N_("ring shift: device j sends its input to device j+1 (the last to the first)"),
        ),
    )
}


@dataclass(frozen=True)
class CollectiveRun:
    """Per-device inputs and outputs of a collective, and numpy's answer for each device."""

    name: str
    code: str
    device_ids: tuple[int, ...]
    inputs: tuple[np.ndarray, ...]
    outputs: tuple[np.ndarray, ...]
    expected: tuple[np.ndarray, ...]

    @property
    def matches(self) -> bool:
        return all(
            o.shape == e.shape and np.allclose(o, e)
            for o, e in zip(self.outputs, self.expected, strict=True)
        )

    def rows(self) -> list[dict[str, object]]:
        """One table row per device: what it held, what the collective gave it, numpy's (the
        column names in the visitor's language)."""
        device, given, out = _("device"), _("input"), _("output")
        return [
            {
                device: d,
                given: str(i.tolist()),
                out: str(o.tolist()),
                "numpy": str(e.tolist()),
            }
            for d, i, o, e in zip(
                self.device_ids, self.inputs, self.outputs, self.expected, strict=True
            )
        ]


def per_device(array: jax.Array, mesh: jax.sharding.Mesh) -> tuple[np.ndarray, ...]:
    """Each device's shard of ``array``, in mesh order."""
    shards = {s.device.id: np.asarray(s.data) for s in array.addressable_shards}
    return tuple(shards[d.id] for d in mesh.devices.flat)


def run_collective(name: str, n_devices: int, platform: str | None = None) -> CollectiveRun:
    """Run one of :data:`COLLECTIVES` under ``jax.shard_map`` on ``n_devices`` devices."""
    collective = COLLECTIVES[name]
    mesh = mesh_of(n_devices, platform)
    x_np = example_input(n_devices)
    x = jax.device_put(x_np, NamedSharding(mesh, P(AXIS)))
    f = jax.jit(jax.shard_map(collective.body, mesh=mesh, in_specs=P(AXIS), out_specs=P(AXIS)))
    out = f(x)
    code = (
        textwrap.dedent(inspect.getsource(collective.body))
        + "\n\nmesh = jax.make_mesh((n,), ('i',))\n"
        + "x = jax.device_put(x, NamedSharding(mesh, P('i')))  # row j on device j\n"
        + f"out = jax.jit(jax.shard_map({collective.body.__name__}, mesh=mesh,\n"
        + "                            in_specs=P('i'), out_specs=P('i')))(x)\n"
    )
    return CollectiveRun(
        name=name,
        code=code,
        device_ids=tuple(int(d.id) for d in mesh.devices.flat),
        inputs=per_device(x, mesh),
        outputs=per_device(out, mesh),
        expected=tuple(np.asarray(e) for e in collective.reference(x_np)),
    )


# --- collectives XLA inserts on its own ---------------------------------------------------------


def total(x, mesh):
    return jnp.sum(x)


def to_columns(x, mesh):
    return jax.sharding.reshard(x, NamedSharding(mesh, P(None, "i")))


def replicate(x, mesh):
    return jax.sharding.reshard(x, NamedSharding(mesh, P()))


def contract_sharded(x, mesh):
    return jnp.matmul(x.T, x, out_sharding=NamedSharding(mesh, P()))


class _OfMesh(Protocol):
    """A function of an array and, by keyword, the mesh it is sharded over."""

    def __call__(self, x: Any, mesh: Any) -> Any: ...


@dataclass(frozen=True)
class XlaExample:
    """A jitted function of one array sharded by rows (``P('i', None)``) and numpy's answer."""

    name: str
    fn: _OfMesh
    reference: Callable[[np.ndarray], np.ndarray]
    why: str


XLA_EXAMPLES: tuple[XlaExample, ...] = (
    XlaExample(
        N_("sum of a row-sharded array"),
        total,
        np.sum,
        N_("each device sums its rows, then the partial sums are all-reduced"),
    ),
    XlaExample(
        N_("reshard rows → columns"),
        to_columns,
        lambda x: x,
        N_("every device trades pieces with every other: an all-to-all"),
    ),
    XlaExample(
        N_("replicate everywhere"),
        replicate,
        lambda x: x,
        N_("every device collects every piece: an all-gather"),
    ),
    XlaExample(
        N_("x.T @ x, contracting over the sharded rows"),
        contract_sharded,
        lambda x: x.T @ x,
        N_("each device multiplies its own rows; the partial products are all-reduced"),
    ),
)

_COLLECTIVE_OP = re.compile(
    r"\b(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(?:-start)?\("
)


@dataclass(frozen=True)
class CompiledCollectives:
    """Which collectives XLA put into a jitted program, and whether the result is right."""

    name: str
    code: str
    why: str
    ops: tuple[str, ...]
    hlo_lines: tuple[str, ...]
    output_sharding: str
    matches: bool


def compiled_collectives(
    example: XlaExample, n_devices: int, platform: str | None = None
) -> CompiledCollectives:
    """Compile ``example`` on an array sharded by rows over ``n_devices``; read its HLO."""
    mesh = mesh_of(n_devices, platform)
    x_np = np.arange(4 * n_devices * 2 * n_devices, dtype=np.float32).reshape(4 * n_devices, -1)
    x_np /= x_np.size
    x = jax.device_put(x_np, NamedSharding(mesh, P(AXIS, None)))
    f = jax.jit(partial(example.fn, mesh=mesh))
    hlo = f.lower(x).compile().as_text()
    if hlo is None:
        raise RuntimeError(f"XLA gave no text of the compiled {example.name!r}")
    lines = tuple(
        line.strip()[:220]
        for line in hlo.splitlines()
        if _COLLECTIVE_OP.search(line) and "=" in line
    )
    ops = tuple(sorted({m.group(1) for line in lines if (m := _COLLECTIVE_OP.search(line))}))
    out = f(x)
    return CompiledCollectives(
        name=example.name,
        code=textwrap.dedent(inspect.getsource(example.fn)),
        why=example.why,
        ops=ops,
        hlo_lines=lines,
        output_sharding=str(jax.typeof(out)),
        matches=bool(np.allclose(np.asarray(out), example.reference(x_np), rtol=1e-5)),
    )

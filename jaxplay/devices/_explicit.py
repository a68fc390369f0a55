"""Explicit sharding: mesh axis types, shardings in the types, ``reshard``, ``set_mesh``.

Why: since JAX 0.7, ``jax.make_mesh`` makes *Explicit* axes by default: an array's sharding is
part of its type (``float32[32@i,16]``: axis 0 split over mesh axis ``i``), every operation
computes the sharding of its result when it is traced, and where the result would be illegally
sharded (a matmul of two arrays split over the same mesh axis) JAX raises instead of guessing.
With *Auto* axes the sharding is not in the type (the array is still split: its ``.sharding``
says how) and XLA's partitioner decides inside ``jit``. This module runs each step for real on
this server's devices: the types JAX reports, the errors it raises for code written as it would
be for Auto axes, and the fixes (``out_sharding``, ``jax.sharding.reshard``, ``jax.set_mesh``,
``shard_map`` with inferred ``in_specs``). ``jax.set_mesh`` is a thread-local context, so one
visitor's mesh is never another's.

Each step is a small function whose source the page shows (:data:`EXPLICIT_STEPS`); the steps that
fail as written name the exception they raise, and the tests check that JAX raises exactly that.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxplay.core import capture, claims
from jaxplay.core.capture import Outcome
from jaxplay.core.i18n import N_, _, ngettext
from jaxplay.devices._devices import devices_of

#: The array every step shards: 32 × 16 float32, as in JAX's explicit-sharding tutorial.
EXPLICIT_SHAPE = (32, 16)
NAMES = ("i", "j")


def explicit_mesh_shape(available: int) -> tuple[int, int]:
    """The 2-D mesh the steps use on ``available`` devices: 2 × 4 with eight or more."""
    for shape in ((2, 4), (2, 2), (2, 1)):
        if shape[0] * shape[1] <= available:
            return shape
    return (1, 1)


def explicit_mesh(shape: tuple[int, int], devices: list[Any]) -> jax.sharding.Mesh:
    return jax.make_mesh(shape, ("i", "j"), devices=devices)  # Explicit axes: the default


def auto_mesh(shape: tuple[int, int], devices: list[Any]) -> jax.sharding.Mesh:
    return jax.make_mesh(
        shape, ("i", "j"), axis_types=(AxisType.Auto, AxisType.Auto), devices=devices
    )


# --- the steps: each takes the mesh and returns what it shows ----------------------------------


def sharding_in_the_type(mesh):
    rows = NamedSharding(mesh, P("i", None))  # axis 0 split over i
    x = jax.device_put(jnp.ones((32, 16)), rows)
    return mesh.axis_types, jax.typeof(x)


def auto_axes_type(mesh):
    rows = NamedSharding(mesh, P("i", None))  # axis 0 split over i
    x = jax.device_put(jnp.ones((32, 16)), rows)
    return mesh.axis_types, jax.typeof(x), x.sharding.spec, x.sharding.shard_shape(x.shape)


def types_under_jit(mesh):
    rows = NamedSharding(mesh, P("i", None))  # axis 0 split over i
    x = jax.device_put(jnp.ones((32, 16)), rows)

    @jax.jit
    def f(a):
        b = jnp.sin(a) * 2  # elementwise: keeps the sharding
        c = jnp.sum(b, axis=0)  # sums over the split axis
        return b, c

    b, c = f(x)
    return jax.typeof(b), jax.typeof(c)


def matmul_as_written(mesh):
    rows = NamedSharding(mesh, P("i", None))  # axis 0 split over i
    x = jax.device_put(jnp.ones((32, 16)), rows)
    with jax.set_mesh(mesh):
        return jax.typeof(x @ x.T)


def matmul_fixed(mesh):
    rows = NamedSharding(mesh, P("i", None))  # axis 0 split over i
    x = jax.device_put(jnp.ones((32, 16)), rows)
    with jax.set_mesh(mesh):
        return jax.typeof(jnp.matmul(x, x.T, out_sharding=P("i", None)))


def reshard_as_written(mesh):
    rows = NamedSharding(mesh, P("i", None))  # axis 0 split over i
    x = jax.device_put(jnp.ones((32, 16)), rows)
    return jax.typeof(jax.sharding.reshard(x, P(None, "j")))


def reshard_fixed(mesh):
    rows = NamedSharding(mesh, P("i", None))  # axis 0 split over i
    x = jax.device_put(jnp.ones((32, 16)), rows)
    with jax.set_mesh(mesh):  # a PartitionSpec names axes of this mesh
        y = jax.sharding.reshard(x, P(None, "j"))
    return jax.typeof(x), jax.typeof(y)


def constraint_explicit(mesh):
    rows = NamedSharding(mesh, P("i", None))  # axis 0 split over i
    x = jax.device_put(jnp.ones((32, 16)), rows)

    @jax.jit
    def f(a):
        return jax.lax.with_sharding_constraint(a * 2, P(None, "j"))

    with jax.set_mesh(mesh):
        return jax.typeof(f(x))


def constraint_auto(mesh):
    rows = NamedSharding(mesh, P("i", None))  # axis 0 split over i
    x = jax.device_put(jnp.ones((32, 16)), rows)
    columns = NamedSharding(mesh, P(None, "j"))

    @jax.jit
    def f(a):
        return jax.lax.with_sharding_constraint(a * 2, columns)

    y = f(x)
    return jax.typeof(y), y.sharding.spec, y.sharding.shard_shape(y.shape)


def shard_map_as_written(mesh):
    rows = NamedSharding(mesh, P("i", None))  # axis 0 split over i
    x = jax.device_put(jnp.ones((32, 16)), rows)

    def double(a):
        return a * 2

    f = jax.shard_map(double, mesh=mesh, in_specs=P("j"), out_specs=P("j"))
    return jax.typeof(f(x))


def shard_map_fixed(mesh):
    rows = NamedSharding(mesh, P("i", None))  # axis 0 split over i
    x = jax.device_put(jnp.ones((32, 16)), rows)
    local = []

    def body(a):
        local.append(a.shape)  # the block one device sees
        return a * 2

    # in_specs left out: shard_map reads them from x's type.
    y = jax.shard_map(body, mesh=mesh, out_specs=P("i"))(x)
    # Or reshard x to the in_specs first.
    x_j = jax.sharding.reshard(x, NamedSharding(mesh, P("j")))
    g = jax.shard_map(body, mesh=mesh, in_specs=P("j"), out_specs=P("j"))
    return jax.typeof(y), local[0], jax.typeof(g(x_j))


@dataclass(frozen=True)
class Step:
    """One step of the explicit-sharding story.

    Attributes:
        key: its id (tests, widget keys).
        title: what it shows.
        fn: the function run, ``fn(mesh)``; its source is what the page shows.
        axes: ``"explicit"`` or ``"auto"``: the mesh it runs on.
        raises: the exception JAX raises for this code as written (None: it runs).
        lesson: what it teaches, in words (the numbers and types come from the run).
    """

    key: str
    title: str
    fn: Callable[[Any], Any]
    axes: str
    raises: str | None
    lesson: str


EXPLICIT_STEPS: tuple[Step, ...] = (
    Step(
        "type",
        N_("The sharding is part of the type"),
        sharding_in_the_type,
        "explicit",
        None,
        N_(
            "`jax.make_mesh` makes Explicit axes by default. `jax.typeof` then shows the sharding: "
            "`@i` after an axis size means that axis is split over mesh axis `i`."
        ),
    ),
    Step(
        "auto",
        N_("Auto axes: the type does not say"),
        auto_axes_type,
        "auto",
        None,
        N_(
            "With `axis_types=(AxisType.Auto, ...)` the array is placed the same way (its "
            "`.sharding` and the block each device holds say so; on a mesh axis of size 1 nothing "
            "is split), but its type does not record it: under `jit`, XLA's partitioner decides "
            "how intermediates are split."
        ),
    ),
    Step(
        "jit",
        N_("Types propagate under jit"),
        types_under_jit,
        "explicit",
        None,
        N_(
            "Every operation computes its result's sharding while tracing: an elementwise op keeps "
            "it, a sum over the split axis gives an unsplit result (XLA all-reduces the partial "
            "sums where that mesh axis spans more than one device)."
        ),
    ),
    Step(
        "matmul",
        N_("An illegally sharded result raises (as written for Auto axes)"),
        matmul_as_written,
        "explicit",
        "ShardingTypeError",
        N_(
            "`x @ x.T` with both operands' types split over `i` would give a result split over "
            "`i` on both of its axes, which is illegal: one mesh axis can split one array axis "
            "(even one of size 1, whose blocks are whole). With Explicit axes JAX raises while "
            "tracing, naming the illegally sharded result."
        ),
    ),
    Step(
        "matmul_fixed",
        N_("Fix: say the result's sharding"),
        matmul_fixed,
        "explicit",
        None,
        N_("`out_sharding=` names the result's sharding; JAX inserts the communication to get it."),
    ),
    Step(
        "reshard",
        N_("reshard with a bare PartitionSpec (as written)"),
        reshard_as_written,
        "explicit",
        "ValueError",
        N_(
            "A bare `PartitionSpec` names mesh axes, but of which mesh? Outside a mesh context JAX "
            "cannot tell, and raises the same error on an Auto mesh: pass a `NamedSharding`, or "
            "enter the mesh with `jax.set_mesh`."
        ),
    ),
    Step(
        "reshard_fixed",
        N_("Fix: jax.set_mesh, then reshard"),
        reshard_fixed,
        "explicit",
        None,
        N_(
            "`jax.set_mesh(mesh)` makes the mesh current (here as a context; it is thread-local), "
            "and `jax.sharding.reshard` moves the data to the new sharding, which is in the new "
            "type."
        ),
    ),
    Step(
        "constraint",
        N_("with_sharding_constraint on Explicit axes asserts"),
        constraint_explicit,
        "explicit",
        "AssertionError",
        N_(
            "With Explicit axes the sharding is already known, so `with_sharding_constraint` only "
            "checks it: a different sharding is an error, and `reshard` is the way to change it."
        ),
    ),
    Step(
        "constraint_auto",
        N_("with_sharding_constraint on Auto axes constrains XLA"),
        constraint_auto,
        "auto",
        None,
        N_(
            "With Auto axes it is a strict constraint on XLA's partitioner inside `jit` (not a "
            "hint, and not an assert of the input's sharding): no error, the type stays plain, and "
            "the result is placed as requested: its `.sharding` and block (shown). Where a mesh "
            "axis has size 1 nothing is split, and JAX may print an equivalent spec."
        ),
    ),
    Step(
        "shard_map",
        N_("shard_map with in_specs that disagree with the type (as written)"),
        shard_map_as_written,
        "explicit",
        "ValueError",
        N_(
            "On Explicit axes `shard_map` does not reshard its inputs: `in_specs` must match the "
            "argument's type."
        ),
    ),
    Step(
        "shard_map_fixed",
        N_("Fix: leave in_specs out, or reshard first"),
        shard_map_fixed,
        "explicit",
        None,
        N_(
            "Without `in_specs`, `shard_map` reads them from the argument's type; or `reshard` the "
            "argument to the specs you want first."
        ),
    ),
)


def find_step(key: str) -> Step:
    """The step registered under ``key``; ``KeyError`` if none is."""
    for step in EXPLICIT_STEPS:
        if step.key == key:
            return step
    raise KeyError(key)


@claims.states_nothing("formats the values a step returned as text")
def _describe(value: Any) -> str:
    parts = value if isinstance(value, tuple) else (value,)
    return "; ".join(str(p) for p in parts)


@dataclass(frozen=True)
class StepRun:
    """A step run on this server: the outcome, and the mesh it ran on."""

    step: Step
    outcome: Outcome
    mesh_shape: tuple[int, int]

    @property
    def as_named(self) -> bool:
        """It raised exactly what the step says (or ran, for a step that runs)."""
        return self.outcome.error_type == self.step.raises


def run_explicit_steps(platform: str | None = None) -> tuple[StepRun, ...]:
    """Every step of :data:`EXPLICIT_STEPS`, on an :func:`explicit_mesh_shape` mesh of
    ``platform``'s devices."""
    pool = devices_of(platform)
    shape = explicit_mesh_shape(len(pool))
    devices = pool[: shape[0] * shape[1]]
    meshes = {"explicit": explicit_mesh(shape, devices), "auto": auto_mesh(shape, devices)}
    return tuple(
        StepRun(step, capture.run(step.fn, meshes[step.axes], describe=_describe), shape)
        for step in EXPLICIT_STEPS
    )


_DIM = re.compile(r"(\d+)(?:@(\w+|\([\w,]+\)))?")
_DIMS = re.compile(r"\d+(?:@(?:\w+|\([\w,]+\)))?")
_TYPE = re.compile(r"^(?P<dtype>[a-z]+\d*)\[(?P<dims>[^\]]*)\]$")


@claims.states(
    "devices.type_reading_matches_shards",
    "devices.auto_type_records_no_sharding",
    "devices.scalar_is_whole_on_every_device",
)
def read_type(
    text: str,
    mesh_shape: tuple[int, ...],
    names: tuple[str, ...] = NAMES,
    *,
    auto: bool = False,
    block: tuple[int, ...] | None = None,
) -> str:
    """A sharded type such as ``float32[32@i,16]`` in words, with each device's block size.

    On Explicit axes the type records the sharding. On Auto axes (``auto=True``) it does not,
    and the sentence says so; ``block`` (the shape of the block each device holds, from the
    array's ``.sharding``) then says how it is split. Returns "" for text that is not a type
    (the page then says nothing).
    """
    found = _TYPE.match(text.strip())
    if not found:
        return ""
    sizes = dict(zip(names, mesh_shape, strict=False))
    parts = []
    dims = found.group("dims")
    if ",".join(_DIMS.findall(dims)) != dims.replace(" ", ""):
        return ""
    if not dims.strip():
        return _("`{type}`: a scalar, whole on every device.").format(type=text)
    if auto:
        return _read_auto(text, [int(d.partition("@")[0]) for d in _DIMS.findall(dims)], block)
    for axis, dim in enumerate(_DIMS.findall(dims)):
        m = _DIM.fullmatch(dim)
        if not m:
            return ""
        size, split = int(m.group(1)), m.group(2)
        if not split:
            parts.append(_whole(axis, size))
            continue
        over = tuple(n for n in split.strip("()").split(",") if n)
        pieces = 1
        for n in over:
            pieces *= sizes.get(n, 1)
        named = " × ".join(f"`{n}` ({sizes.get(n, '?')})" for n in over)
        if pieces == 1:  # mesh axes of size 1: named in the type, yet nothing is split
            parts.append(
                ngettext(
                    "axis {axis} ({size}) is whole on every device (it names mesh axis "
                    "{named}, of size 1)",
                    "axis {axis} ({size}) is whole on every device (it names mesh axes "
                    "{named}, of size 1)",
                    len(over),
                ).format(axis=axis, size=size, named=named)
            )
            continue
        each = size // pieces if size % pieces == 0 else size / pieces
        split_over = ngettext(
            "axis {axis} ({size}) is split over mesh axis {named}: {pieces} of {each}",
            "axis {axis} ({size}) is split over mesh axes {named}: {pieces} of {each}",
            len(over),
        )
        of = ngettext("{n} piece", "{n} pieces", pieces).format(n=f"{pieces:,}")
        parts.append(split_over.format(axis=axis, size=size, named=named, pieces=of, each=each))
    return _("`{type}`: {parts}.").format(type=text, parts=_("; ").join(parts))


@claims.states("devices.type_reading_matches_shards")
def _whole(axis: int, size: int) -> str:
    """``axis 0 (32) is whole on every device``, in the visitor's language."""
    return _("axis {axis} ({size}) is whole on every device").format(axis=axis, size=size)


@claims.states("devices.type_reading_matches_shards")
def _read_auto(text: str, shape: list[int], block: tuple[int, ...] | None) -> str:
    if block is None or len(block) != len(shape):
        return _(
            "`{type}`: on Auto axes the type does not record the sharding; read where the array "
            "lives from its `.sharding`."
        ).format(type=text)
    parts = []
    for axis, (size, each) in enumerate(zip(shape, block, strict=True)):
        if each == size:
            parts.append(_whole(axis, size))
        else:
            pieces = size // each if each and size % each == 0 else f"{size / max(each, 1):g}"
            parts.append(
                _("axis {axis} ({size}) is split: {pieces} pieces of {each}").format(
                    axis=axis, size=size, pieces=pieces, each=each
                )
            )
    return _(
        "`{type}`: on Auto axes the type does not record the sharding, but its `.sharding` does: "
        "{parts}."
    ).format(type=text, parts=_("; ").join(parts))


_SHAPE = re.compile(r"^\((\d+(?:, \d+)*),?\)$")


@claims.states("devices.type_reading_matches_shards", "devices.auto_type_records_no_sharding")
def describe_step(run: StepRun) -> tuple[str, ...]:
    """Each type a step returned, read out (Auto steps: with the block from its ``.sharding``)."""
    if not run.outcome.ok:
        return ()
    parts = run.outcome.value.split("; ")
    auto = run.step.axes == "auto"
    block = None
    if auto:
        shapes = [m for p in parts if (m := _SHAPE.match(p))]
        block = tuple(int(n) for n in shapes[-1].group(1).split(", ")) if shapes else None
    said = (read_type(p, run.mesh_shape, auto=auto, block=block) for p in parts)
    return tuple(s for s in said if s)


@claims.states_nothing("a runnable script: code, not a statement")
def explicit_script(shape: tuple[int, int]) -> str:
    """Every step as one standalone script (for the Code Lab): the functions as the page shows
    them, then each called with its outcome printed (the failing ones caught and named)."""
    import inspect

    lines = [
        "import jax",
        "import jax.numpy as jnp",
        "from jax.sharding import AxisType, NamedSharding",
        "from jax.sharding import PartitionSpec as P",
        "",
        "",
        "def show(key, result):",
        "    parts = result if isinstance(result, tuple) else (result,)",
        "    print(key + ':', '; '.join(str(p) for p in parts))",
        "",
        "",
        f"mesh = jax.make_mesh({shape}, ('i', 'j'))  # Explicit axes: the default",
        f"auto = jax.make_mesh({shape}, ('i', 'j'), axis_types=(AxisType.Auto, AxisType.Auto))",
        "",
    ]
    for step in EXPLICIT_STEPS:
        lines += ["", inspect.getsource(step.fn).rstrip(), ""]
    lines += ["", ""]
    for step in EXPLICIT_STEPS:
        mesh = "mesh" if step.axes == "explicit" else "auto"
        call = f"{step.fn.__name__}({mesh})"
        if step.raises is None:
            lines.append(f"show({step.key!r}, {call})")
        else:
            lines += [
                "try:",
                f"    {call}",
                f"except {_catchable(step.raises)} as err:",
                f"    print({step.key + ':'!r}, 'raises', type(err).__name__)",
            ]
    return "\n".join(lines) + "\n"


def _catchable(name: str) -> str:
    """The name to catch in a script: builtins by name, JAX's own error by its base class."""
    return "Exception" if name == "ShardingTypeError" else name

"""The devices page's statements about JAX, each checked against JAX on this server's devices.

Every check places a small array (32 × 16, as the page does) on a mesh of this process's devices
and compares what the page would say with what JAX reports: the block each device holds
(``addressable_shards``), ``.sharding``, ``jax.typeof`` and the exception actually raised.
"""

from __future__ import annotations

import math
import re
from typing import Any

from jaxplay.core import claims
from jaxplay.core.claims import Verdict
from jaxplay.core.i18n import N_
from jaxplay.devices import _explicit, _sharding
from jaxplay.devices._devices import devices_of

#: (axis types, the PartitionSpec's entries, mesh shape): what the explicit-sharding steps place.
PLACEMENTS: tuple[tuple[str, tuple[Any, ...], tuple[int, int]], ...] = tuple(
    (axes, spec, shape)
    for axes in ("explicit", "auto")
    for spec in (("i", None), (None, "j"), (("i", "j"), None), (None, None))
    # (1, 2): a mesh axis of size 1 named in the type splits nothing (it was read as "split").
    for shape in ((2, 4), (2, 2), (1, 2))
)


def _mesh(axes: str, shape: tuple[int, int]) -> Any:
    pool = devices_of(None)
    if shape[0] * shape[1] > len(pool):
        shape = _explicit.explicit_mesh_shape(len(pool))
    devices = pool[: shape[0] * shape[1]]
    make = _explicit.explicit_mesh if axes == "explicit" else _explicit.auto_mesh
    return make(shape, devices), shape


def _placed(axes: str, spec: tuple[Any, ...], shape: tuple[int, int]) -> tuple[Any, Any]:
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh, shape = _mesh(axes, shape)
    x = jax.device_put(jnp.ones(_explicit.EXPLICIT_SHAPE), NamedSharding(mesh, P(*spec)))
    return x, shape


def _expected_phrases(full: tuple[int, ...], block: tuple[int, ...]) -> list[str]:
    """What a true reading says of each axis, from the block JAX placed on a device."""
    said = []
    for axis, (size, each) in enumerate(zip(full, block, strict=True)):
        if each == size:
            said.append(f"axis {axis} ({size}) is whole on every device")
        else:
            said.append(f"{size // each} pieces of {each}")
    return said


@claims.claim(
    "devices.type_reading_matches_shards",
    N_(
        "The page's reading of an array's type and sharding (which axes are split, into how many "
        "pieces of what size) is the block each device holds, on Explicit and Auto axes alike."
    ),
    cases=PLACEMENTS,
)
def _reading_matches(case: tuple[str, tuple[Any, ...], tuple[int, int]]) -> Verdict:
    import jax

    axes, spec, shape = case
    x, shape = _placed(axes, spec, shape)
    block = tuple(x.addressable_shards[0].data.shape)
    auto = axes == "auto"
    reported = x.sharding.shard_shape(x.shape) if auto else None
    said = _explicit.read_type(str(jax.typeof(x)), shape, auto=auto, block=reported)
    missing = [p for p in _expected_phrases(x.shape, block) if p not in said]
    return Verdict(not missing, f"each device holds a {block} block; the page said: {said!r}")


@claims.claim(
    "devices.scalar_is_whole_on_every_device",
    N_(
        "A scalar placed on a mesh (a collective's sum, say) has a type with no axes, and every "
        "device holds the whole value."
    ),
    cases=("explicit", "auto"),
)
def _scalar(axes: str) -> Verdict:
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh, shape = _mesh(axes, (2, 2))
    x = jax.device_put(jnp.float32(3.0), NamedSharding(mesh, P()))
    blocks = {(tuple(s.data.shape), float(s.data)) for s in x.addressable_shards}
    said = _explicit.read_type(str(jax.typeof(x)), shape, auto=axes == "auto")
    return Verdict(
        blocks == {((), 3.0)} and "a scalar, whole on every device" in said,
        f"{len(x.addressable_shards)} devices hold {blocks}; the page said: {said!r}",
    )


@claims.claim(
    "devices.auto_type_records_no_sharding",
    N_(
        "On Auto axes an array split over the mesh has a type with no `@`: the type does not "
        "record the sharding, its `.sharding` does."
    ),
    # Split: a spec naming something, on a mesh with no axis of size 1 (which splits nothing).
    cases=tuple(p for p in PLACEMENTS if p[0] == "auto" and p[1] != (None, None) and 1 not in p[2]),
)
def _auto_type(case: tuple[str, tuple[Any, ...], tuple[int, int]]) -> Verdict:
    import jax

    _axes, spec, _shape = case
    x, shape = _placed(*case)
    typed = str(jax.typeof(x))
    block = tuple(x.addressable_shards[0].data.shape)
    # On fewer devices the mesh shrinks (one device: 1 × 1) and may split nothing: then only
    # the type is checked (the claim was "not true here" on a one-GPU server).
    sizes: dict[str, int] = dict(zip(("i", "j"), shape, strict=True))
    splits = any(
        math.prod(sizes[n] for n in ((entry,) if isinstance(entry, str) else entry)) > 1
        for entry in spec
        if entry is not None
    )
    return Verdict(
        "@" not in typed and (block != tuple(x.shape)) == splits,
        f"type {typed}, each device holding {block} of {tuple(x.shape)} on a {shape} mesh",
    )


@claims.claim(
    "devices.constraint_auto_is_strict",
    N_(
        "On Auto axes `with_sharding_constraint` inside `jit` is a strict constraint, not a hint: "
        "the result has exactly the requested sharding, whatever the input's."
    ),
    cases=((None, "j"), ("j", None), (("i", "j"), None), (None, None), ("i", "j")),
)
def _constraint_strict(spec: tuple[Any, ...]) -> Verdict:
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    x, shape = _placed("auto", ("i", None), (2, 4))
    wanted = NamedSharding(x.sharding.mesh, P(*spec))
    y = jax.jit(lambda a: jax.lax.with_sharding_constraint(a * 2, wanted))(x)
    same = y.sharding.is_equivalent_to(wanted, y.ndim)
    exact = same and y.addressable_shards[0].data.shape == wanted.shard_shape(y.shape)
    # The page's words for it (the step's title and lesson) must say so, not call it a hint.
    step = next(s for s in _explicit.EXPLICIT_STEPS if s.key == "constraint_auto")
    words = f"{step.title} {step.lesson}".lower()
    said = "strict" in words and re.search(r"(?<!not )\ba hint\b", words) is None
    return Verdict(
        exact and said,
        f"asked for {wanted.spec}, got {y.sharding}; the page says: {step.lesson!r}",
    )


@claims.claim(
    "devices.shard_map_checks_explicit_inputs",
    N_(
        "On Explicit axes `shard_map` checks that its input's sharding matches `in_specs` and "
        "raises a ValueError when it does not; on Auto axes it reshards the input silently."
    ),
    cases=("Explicit", "Auto"),
)
def _shard_map_checks(kind: str) -> Verdict:
    import jax
    import jax.numpy as jnp
    from jax.sharding import AxisType, NamedSharding
    from jax.sharding import PartitionSpec as P

    devices = devices_of(None)
    mesh = jax.make_mesh(
        (len(devices),), ("batch",), axis_types=(getattr(AxisType, kind),), devices=devices
    )
    total = jax.jit(
        jax.shard_map(
            lambda block: jax.lax.psum(jnp.sum(block), "batch"),
            mesh=mesh,
            in_specs=P("batch"),
            out_specs=P(),
        )
    )
    x = jnp.arange(len(devices) * 4.0).reshape(len(devices), 4)
    seen = {}
    for placed in ("split as in_specs", "replicated"):
        spec = P("batch") if placed == "split as in_specs" else P()
        try:
            seen[placed] = float(total(jax.device_put(x, NamedSharding(mesh, spec))))
        except ValueError as error:
            seen[placed] = f"ValueError: {str(error)[:120]}"
    want = float(x.sum())
    refused = str(seen["replicated"]).startswith("ValueError")
    holds = seen["split as in_specs"] == want and (
        refused if kind == "Explicit" else seen["replicated"] == want
    )
    return Verdict(holds, f"{kind} axes, the sum of {want:g}: {seen}")


@claims.claim(
    "devices.explicit_steps_raise_as_named",
    N_(
        "Each explicit-sharding step written as for Auto axes raises exactly the exception it "
        "names (the matmul's error calls its result illegally sharded), and each fix runs."
    ),
)
def _steps_as_named(_: None) -> Verdict:
    runs = _explicit.run_explicit_steps()
    wrong = [f"{r.step.key}: {r.outcome.headline}" for r in runs if not r.as_named]
    matmul = next(r for r in runs if r.step.key == "matmul")
    named = "illegally sharded" in matmul.outcome.message
    titled = "illegally sharded" in matmul.step.title and "ambiguous" not in matmul.step.title
    if not (named and titled):
        wrong.append(f"matmul: JAX said {matmul.outcome.message!r}, the step {matmul.step.title!r}")
    return Verdict(not wrong, "; ".join(wrong))


@claims.claim(
    "devices.sum_over_a_split_axis_is_all_reduced",
    N_(
        "Under jit on Explicit axes, a sum over the split axis has an unsplit result, and XLA "
        "all-reduces the partial sums where that mesh axis spans more than one device (none "
        "on an axis of size 1)."
    ),
)
def _sum_all_reduced(_: None) -> Verdict:
    """The Explicit tab's own step on the page's own mesh: the result's type from JAX, the
    all-reduce from the compiled HLO."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    available = devices_of(None)
    shape = _explicit.explicit_mesh_shape(len(available))
    mesh = _explicit.explicit_mesh(shape, available[: math.prod(shape)])
    x = jax.device_put(jnp.ones(_explicit.EXPLICIT_SHAPE), NamedSharding(mesh, P("i", None)))
    summed = jax.jit(lambda a: jnp.sum(jnp.sin(a) * 2, axis=0))
    unsplit = all(entry is None for entry in jax.typeof(summed(x)).sharding.spec)
    reduces = "all-reduce" in (summed.lower(x).compile().as_text() or "")
    return Verdict(
        unsplit and reduces == (shape[0] > 1),
        f"mesh {shape}: result unsplit {unsplit}, all-reduce in the compiled program {reduces}",
    )


@claims.claim(
    "devices.bare_spec_needs_a_mesh",
    N_(
        "`reshard` with a bare PartitionSpec outside a mesh context raises the same ValueError on "
        "Explicit and Auto meshes: it is not a difference between the two."
    ),
    cases=("explicit", "auto"),
)
def _bare_spec(axes: str) -> Verdict:
    import jax
    from jax.sharding import PartitionSpec as P

    x, _ = _placed(axes, ("i", None), (2, 4))
    step = _explicit.find_step("reshard")
    try:
        jax.sharding.reshard(x, P(None, "j"))
    except Exception as error:
        raised = type(error).__name__
        return Verdict(
            raised == step.raises and "set_mesh" in str(error) and "Auto" in step.lesson,
            f"on {axes} axes JAX raised {raised}: {error}",
        )
    return Verdict(False, f"on {axes} axes reshard(x, P(None, 'j')) ran without a mesh")


#: (mesh shape, axis names, array shape, spec): each branch of :func:`_sharding.explain`, and
#: one that works.
SpecCase = tuple[tuple[int, ...], tuple[str, ...], tuple[int, ...], tuple[Any, ...]]
SPEC_CASES: tuple[SpecCase, ...] = (
    ((2, 4), ("a", "b"), (8, 8), ("a", "b", None)),
    ((2, 4), ("a", "b"), (8, 8), ("c", None)),
    ((2, 4), ("a", "b"), (8, 8), ("a", "a")),
    ((2, 4), ("a", "b"), (8, 8), (("a", "a"), None)),
    ((2, 4), ("a", "b"), (6, 8), ("b", None)),
    ((2, 4), ("a", "b"), (8, 8), (("a", "b"), None)),
    ((2, 4), ("a", "b"), (6, 8), (None, ("a", "b"))),
)


@claims.claim(
    "devices.spec_problems_raise",
    N_(
        "The sharding tab's plain reasons name what JAX refuses: a spec longer than the array, an "
        "axis not in the mesh, a mesh axis used twice, an axis not a multiple of its pieces; JAX "
        "accepts every spec the tab finds nothing wrong with."
    ),
    cases=SPEC_CASES,
)
def _spec_problems(case: tuple[Any, ...]) -> Verdict:
    import jax
    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh_shape, names, shape, spec = case
    pool = devices_of(None)
    if int(np.prod(mesh_shape)) > len(pool):
        return Verdict(True, "too few devices here to place this case")
    plain = _sharding.explain(mesh_shape, names, shape, spec)
    try:
        mesh = jax.make_mesh(mesh_shape, names, devices=pool[: int(np.prod(mesh_shape))])
        jax.device_put(np.zeros(shape, np.float32), NamedSharding(mesh, P(*spec)))
    except Exception as error:
        return Verdict(plain is not None, f"JAX raised {type(error).__name__}; the tab: {plain}")
    return Verdict(plain is None, f"JAX placed it; the tab said: {plain}")

"""Section 7 of the article, devices and parallelism: placement, pmap, an all-reduce.

The article's functions live here as code: the devices page runs ``manual_device_placement``,
``model_fn`` under pmap and ``all_reduce_example`` as written, and the examples below show the
very same source (:func:`~jaxplay.article._example.code`), kept token for token.
"""

import jax.numpy as jnp
from jax import device_put, devices, pmap

from jaxplay.article._example import Example, Section, code
from jaxplay.core.i18n import N_

SECTION = Section(
    7, "devices", N_("Devices and parallelism"), N_("Device placement, pmap, all-reduce with psum.")
)

# fmt: off

def manual_device_placement():
    gpu_device = devices('gpu')[0] if devices('gpu') else devices()[0]
    cpu_device = devices('cpu')[0]
    x_gpu = device_put(jnp.ones(1000), gpu_device)  # on the GPU
    x_cpu = device_put(jnp.ones(1000), cpu_device)  # on the CPU
    return x_gpu, x_cpu


def model_fn(x):
    return jnp.sin(x) ** 2 + jnp.cos(x) ** 2


def all_reduce_example(x):
    """Sum across all devices"""
    from jax.lax import psum
    @pmap
    def local_compute(x_local):
        local_sum = jnp.sum(x_local)
        global_sum = psum(local_sum, 'batch')  # sum across devices
        return global_sum
    return local_compute(x)

# fmt: on

EXAMPLES: tuple[Example, ...] = (
    Example(
        id="devices-placement-as-written",
        section=7,
        title=N_("Placing arrays on the GPU and the CPU"),
        as_written=True,
        expected_error="RuntimeError",
        error_without_gpu_only=True,
        fixed_by="devices-placement-fixed",
        source=code(
            """\
import jax.numpy as jnp
from jax import devices, device_put

print(f"Available devices: {devices()}")

""",
            manual_device_placement,
            """
# Added: the article never calls it. Calling it:
x_gpu, x_cpu = manual_device_placement()
print(x_gpu.devices(), x_cpu.devices())
""",
        ),
        explanation=N_(
            "The guard does not guard: `devices('gpu')` does not return an empty list when there "
            "is no GPU, it raises `RuntimeError: Unknown backend: 'gpu' requested`. (On a "
            "machine with a GPU it runs.) Ask for the device list once and filter by platform."
        ),
    ),
    Example(
        id="devices-placement-fixed",
        section=7,
        title=N_("Device placement that works with or without a GPU"),
        source='''\
import jax
import jax.numpy as jnp

def first_device(platform):
    """The first device of a platform, or None: never raises."""
    try:
        return jax.devices(platform)[0]
    except RuntimeError:
        return None

gpu_device = first_device("gpu") or jax.devices()[0]
cpu_device = first_device("cpu")
x_fast = jax.device_put(jnp.ones(1000), gpu_device)
x_cpu = jax.device_put(jnp.ones(1000), cpu_device)
print("default backend:", jax.default_backend())
print("x_fast on", x_fast.devices(), "| x_cpu on", x_cpu.devices())
''',
        explanation=N_(
            "Catch the `RuntimeError` (or filter `jax.devices()` by `d.platform`) and fall back "
            "to the default device. On this server's CPU both arrays land on CPU devices."
        ),
    ),
    Example(
        id="devices-pmap",
        section=7,
        title=N_("pmap across (simulated) devices"),
        as_written=True,
        source=code(
            """\
import jax.numpy as jnp
from jax import devices, pmap

""",
            model_fn,
            """
if len(devices()) > 1:
    parallel_model = pmap(model_fn)  # one copy per device
    x_sharded = jnp.stack([jnp.ones(100) for _ in range(len(devices()))])
    results = parallel_model(x_sharded)
    print(f"Parallel computation shape: {results.shape}")
else:
    print("Single device detected, pmap will work but without parallelism")
""",
        ),
        explanation=N_(
            "Runs: with several devices (on CPU this server simulates them, "
            "`JAXPLAY_CPU_DEVICES`) the leading axis is split one row per device; on a host "
            "of one device the snippet takes its `else` branch. `pmap` still works but is in "
            "maintenance mode (it is now built on `shard_map`); new code uses `jax.shard_map` "
            "or `jit` with shardings."
        ),
    ),
    Example(
        id="devices-psum-as-written",
        section=7,
        title=N_("An all-reduce with psum inside pmap"),
        as_written=True,
        expected_error="NameError",
        fixed_by="devices-psum-fixed",
        source=code(
            """\
import jax.numpy as jnp
from jax import devices, pmap

""",
            all_reduce_example,
            """
# Added: the article never calls it. Calling it:
n = len(devices())
all_reduce_example(jnp.ones((n, 4)))
""",
        ),
        explanation=N_(
            "`psum(..., 'batch')` names an axis that nothing defined: `NameError: Found an "
            "unbound axis name: batch`. The mapped axis gets its name from "
            "`pmap(..., axis_name='batch')` (or a mesh axis in `shard_map`)."
        ),
    ),
    Example(
        id="devices-psum-fixed",
        section=7,
        title=N_("psum with a named axis: pmap and shard_map"),
        source="""\
from functools import partial
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P

n = len(jax.devices())
x = jnp.arange(n * 4.0).reshape(n, 4)

@partial(jax.pmap, axis_name="batch")
def local_compute(x_local):
    return jax.lax.psum(jnp.sum(x_local), "batch")

print("pmap:", local_compute(x))  # every device holds the total

# The current way: a mesh, shard_map, and the same collective.
mesh = jax.make_mesh((n,), ("batch",))
x_sharded = jax.device_put(x, NamedSharding(mesh, P("batch")))  # one row per device

@jax.jit
@partial(jax.shard_map, mesh=mesh, in_specs=P("batch"), out_specs=P())
def total(x_block):
    return jax.lax.psum(jnp.sum(x_block), "batch")

print("shard_map:", total(x_sharded), "expected:", float(x.sum()))
""",
        explanation=N_(
            "Naming the axis fixes it: each device sums its row and `psum` adds the partial "
            "sums across devices. `shard_map` over a named mesh axis is the current API for "
            "the same collective. The input is placed on the mesh first: on this mesh's Explicit "
            "axes (`jax.make_mesh`'s default) `shard_map` checks that the input's sharding "
            "matches `in_specs` rather than moving data behind your back (on Auto axes it would "
            "reshard the input silently)."
        ),
    ),
)

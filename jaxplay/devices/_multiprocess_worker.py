"""One process of the local multi-process JAX demo.

Run as ``python -m jaxplay.devices._multiprocess_worker``.

Why a separate module run as a fresh interpreter: ``jax.distributed.initialize`` must be called
before JAX's backend starts, and the app's process started its backend long ago. So
:mod:`jaxplay.devices._multiprocess` execs this file N times; each copy joins the coordinator,
builds one global array across every process's devices, all-reduces it with ``psum`` and prints one
JSON line. The code is exactly what each host of a real multi-host cluster runs; only the address
differs.
"""

from __future__ import annotations

import argparse
import json
import sys

#: The prefix of the one stdout line that carries the report (JAX may log other lines).
REPORT_PREFIX = "JAXPLAY_REPORT "


def run_process(coordinator: str, num_processes: int, process_id: int, local_devices: int) -> dict:
    """Join the cluster, all-reduce across all processes, and return what this process saw."""
    import jax

    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_num_cpu_devices", local_devices)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=coordinator,
        num_processes=num_processes,
        process_id=process_id,
        # Process 0 serves the coordinator on this address only: JAX's default is every
        # interface ([::]:port), which any host that reaches this one could join.
        coordinator_bind_address=coordinator,
    )

    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    # One mesh axis over every device of every process: the global view all processes share.
    mesh = jax.make_mesh((jax.device_count(),), ("d",))
    sharding = NamedSharding(mesh, P("d"))
    # Device g (global order of the mesh) contributes the value g + 1.
    local_ids = [d.id for d in jax.local_devices()]
    order = [d.id for d in mesh.devices.flat]
    local_values = np.array([order.index(i) + 1 for i in sorted(local_ids, key=order.index)])
    x = jax.make_array_from_process_local_data(sharding, local_values.astype(np.float32))

    total = jax.jit(
        jax.shard_map(lambda a: jax.lax.psum(a, "d"), mesh=mesh, in_specs=P("d"), out_specs=P())
    )(x)
    local_total = float(np.asarray(total.addressable_shards[0].data).reshape(-1)[0])
    report = {
        "process_id": jax.process_index(),
        "process_count": jax.process_count(),
        "local_devices": local_ids,
        "global_devices": [
            {"id": d.id, "process_index": d.process_index, "kind": d.device_kind}
            for d in jax.devices()
        ],
        "local_values": [float(v) for v in local_values],
        "psum": local_total,
    }
    jax.distributed.shutdown()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--coordinator", required=True)
    parser.add_argument("--num-processes", type=int, required=True)
    parser.add_argument("--process-id", type=int, required=True)
    parser.add_argument("--local-devices", type=int, default=2)
    args = parser.parse_args(argv)
    report = run_process(args.coordinator, args.num_processes, args.process_id, args.local_devices)
    sys.stdout.write(REPORT_PREFIX + json.dumps(report) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

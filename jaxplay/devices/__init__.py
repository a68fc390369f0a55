"""The devices page: devices, placement, sharding, collectives, scaling and many processes.

The inventory, the article's placement code and honest transfer timings (``_devices``); a mesh and a
``PartitionSpec`` drawn, and data-parallel scaling (``_sharding``); the article's ``pmap`` code,
collectives under ``shard_map`` and those XLA inserts (``_collectives``); a real multi-process run
on localhost (``_multiprocess``, each process running ``_multiprocess_worker``), held to a Code
Lab run's limits; explicit sharding: axis types, shardings in the types, ``reshard``,
``set_mesh``, ``shard_map`` on Explicit axes (``_explicit``). The article's functions come from
:mod:`jaxplay.article`.
"""

from jaxplay.sandbox import Refused as Refused

from ._collectives import AXIS as AXIS
from ._collectives import COLLECTIVES as COLLECTIVES
from ._collectives import XLA_EXAMPLES as XLA_EXAMPLES
from ._collectives import CollectiveRun as CollectiveRun
from ._collectives import CompiledCollectives as CompiledCollectives
from ._collectives import article_examples as article_examples
from ._collectives import compiled_collectives as compiled_collectives
from ._collectives import run_collective as run_collective
from ._devices import MAX_PLACE_ELEMENTS as MAX_PLACE_ELEMENTS
from ._devices import MAX_TRANSFER_BYTES as MAX_TRANSFER_BYTES
from ._devices import article_placement as article_placement
from ._devices import devices_count as devices_count
from ._devices import devices_of as devices_of
from ._devices import inventory as inventory
from ._devices import inventory_rows as inventory_rows
from ._devices import place as place
from ._devices import platforms as platforms
from ._devices import reports_memory as reports_memory
from ._devices import silent_platforms as silent_platforms
from ._devices import transfer_calls as transfer_calls
from ._devices import transfer_figure as transfer_figure
from ._devices import transfer_point as transfer_point
from ._explicit import StepRun as StepRun
from ._explicit import describe_step as describe_step
from ._explicit import explicit_script as explicit_script
from ._explicit import read_type as read_type
from ._explicit import run_explicit_steps as run_explicit_steps
from ._multiprocess import ClusterRun as ClusterRun
from ._multiprocess import launch_cluster as launch_cluster
from ._multiprocess import run_local_cluster as run_local_cluster
from ._multiprocess import worker_command as worker_command
from ._multiprocess_worker import run_process as run_process
from ._sharding import SCALING_BATCH as SCALING_BATCH
from ._sharding import ShardingProblem as ShardingProblem
from ._sharding import ShardLayout as ShardLayout
from ._sharding import data_parallel_step as data_parallel_step
from ._sharding import device_counts as device_counts
from ._sharding import layout_figure as layout_figure
from ._sharding import mlp_loss as mlp_loss
from ._sharding import parse_ints as parse_ints
from ._sharding import parse_names as parse_names
from ._sharding import parse_spec as parse_spec
from ._sharding import scaling_figure as scaling_figure
from ._sharding import scaling_point as scaling_point
from ._sharding import scaling_sentence as scaling_sentence
from ._sharding import shard_layout as shard_layout

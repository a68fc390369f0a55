"""The shared machinery every topic stands on; it imports no other jaxplay subpackage.

Why a layer of its own: a number on one page must mean the same as on another, so there is one of
each: :mod:`~jaxplay.core.timing` (the harness), :mod:`~jaxplay.core.measure_lock` (the measurement
lock, the throttle, the progress a measurement reports), :mod:`~jaxplay.core.roofline` (this
device's roofs), :mod:`~jaxplay.core.capture` (running code and keeping what it printed, returned or
raised), :mod:`~jaxplay.core.figures` (one helper per kind of chart), :mod:`~jaxplay.core.hlo` (the
HLO text parser), :mod:`~jaxplay.core.jax_private` (every use of JAX internals, guarded),
:mod:`~jaxplay.core.compilation` (the compile path and JAX's compile log), :mod:`~jaxplay.core.expr`
(the safe formula language), and what two topics share: :mod:`~jaxplay.core.errors`,
:mod:`~jaxplay.core.inputs`, :mod:`~jaxplay.core.jaxprs`, :mod:`~jaxplay.core.words` (counts in
words), :mod:`~jaxplay.core.mlp` (the tiny model two pages use).

The modules are the public names (``from jaxplay.core import timing``); this ``__init__`` imports
none of them, so importing one does not load the others (plotly, JAX).
"""

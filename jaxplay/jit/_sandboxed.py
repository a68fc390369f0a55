"""The jit page's demos that run in a sandboxed worker, as one table the page looks them up in.

Why a module of its own: each demo beyond the article (buffer donation, the persistent
compilation cache, a profiler trace) runs in a fresh, single-use worker through
``jaxplay.sandbox.call``, which needs the function, the dataclasses it may return and a
deadline. Keeping them in one table keeps the page to one way of running them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jaxplay.core.i18n import N_
from jaxplay.jit._compile_cache import CacheDemo, CacheProcess, persistent_cache_demo
from jaxplay.jit._donation import DonationResult, DonationRun, donation_demo
from jaxplay.jit._trace import KernelTime, TraceDemo, trace_demo

#: demo -> (function, dataclasses it returns, seconds it may take). The deadlines are the
#: server's, not the visitor's: the work is bounded by the workload's budget before it starts.
SANDBOXED: dict[str, tuple[Callable[..., Any], tuple[type, ...], float]] = {
    "donation": (donation_demo, (DonationResult, DonationRun), 60.0),
    "compile_cache": (persistent_cache_demo, (CacheDemo, CacheProcess), 150.0),
    "trace": (trace_demo, (TraceDemo, KernelTime), 60.0),
}

#: What each demo does, in one line (the part before the colon titles its status box); English,
#: translated where shown.
SANDBOXED_NOTES: dict[str, str] = {
    "donation": N_("Donation: compiles and calls the function twice, then reuses the donated x."),
    "compile_cache": N_(
        "Persistent cache: starts two fresh Python processes per round, each compiling the "
        "function with the same cache directory."
    ),
    "trace": N_("Profiler trace: runs the function under jax.profiler.trace and reads the trace."),
}

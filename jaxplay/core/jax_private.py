"""Every use of JAX's private API in jaxplay, each guarded, in one place.

Why: some of what the pages show is only reachable through JAX internals: how many programs a
jitted function holds, the saved residuals as data, the user's frame of an equation's traceback.
Private API changes without notice, so each use here returns ``None`` (or does nothing) when JAX
moved or changed it, and its caller falls back to a public route or says the figure is unknown.
No other module of jaxplay may touch ``jax._src``; a test checks it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def cache_size(jitted: Any) -> int | None:
    """How many compiled versions a ``jax.jit`` function holds, or ``None`` if JAX won't say.

    ``_cache_size`` counts the entries of the jitted function's own C++ dispatch cache (one per
    distinct static-argument value, shape or dtype it was called with).
    """
    method = getattr(jitted, "_cache_size", None)
    if method is None:
        return None
    try:
        return int(method())
    except Exception:  # private API: any failure means "unknown", never a crash
        return None


def saved_residuals(
    f: Callable[..., Any], *args: Any, argnums: int | None = None
) -> list[tuple[str, str]] | None:
    """What ``jax.grad(f)`` (``jax.grad(f, argnums)`` when given) saves for its backward pass,
    as ``(short aval, description)`` pairs.

    The structured form of the list ``jax.ad_checkpoint.print_saved_residuals`` prints, which
    plans a backward pass for every argument; with ``argnums``, for that argument only, the
    others staying arguments of the traced program (so a residual that is one of them is named
    as the argument it is), the same steps as JAX's own function otherwise. ``None`` when
    ``jax._src.ad_checkpoint`` moved or changed (parse the printed text instead).
    """
    try:
        from jax._src import api_util
        from jax._src.ad_checkpoint import _saved_residuals
        from jax._src.ad_checkpoint import saved_residuals as private

        if argnums is None:
            return [(a.str_short(short_dtypes=True), str(d)) for a, d in private(f, *args)]
        import jax

        leaves, tree = jax.tree_util.tree_flatten(args)

        def planned(*flat: Any) -> Any:
            values = jax.tree_util.tree_unflatten(tree, flat)

            def of_wrt(wrt: Any) -> Any:
                return f(*[wrt if i == argnums else v for i, v in enumerate(values)])

            return jax.vjp(of_wrt, values[argnums])

        closed, shapes = jax.make_jaxpr(planned, return_shape=True)(*leaves)
        jaxpr = closed.jaxpr
        count = jax.tree_util.tree_structure(shapes[1]).num_leaves
        jaxpr = jaxpr.replace(outvars=jaxpr.outvars[len(jaxpr.outvars) - count :])
        names = api_util.debug_info("saved_residuals", f, args, {}).arg_names
        names = names or ("",) * len(jaxpr.invars)
        return [(a.str_short(short_dtypes=True), str(d)) for a, d in _saved_residuals(jaxpr, names)]
    except (ImportError, AttributeError, TypeError, ValueError, AssertionError):
        return None


def user_frame(eqn: Any) -> Any:
    """The innermost frame of user code that made a jaxpr equation (``file_name``,
    ``start_line``, ``function_name``), or ``None`` when JAX will not say."""
    try:
        from jax._src import source_info_util

        return source_info_util.user_frame(eqn.source_info.traceback)
    except Exception:  # private API: no frame means no source line for this equation
        return None


def hide_frames_of(path: str) -> None:
    """Leave the frames of the file ``path`` out of the source locations JAX records.

    JAX keeps every non-JAX frame of the call stack in its locations; a module that traces on
    behalf of a page would otherwise be listed in every StableHLO and HLO text next to the
    visitor's own lines. Without the private API the texts only carry a few extra frames.
    """
    try:
        from jax._src import source_info_util

        if path not in getattr(source_info_util, "_exclude_paths", ()):
            source_info_util.register_exclusion(path)
    except Exception:  # private API: see the docstring
        pass


def prng_impl_names() -> tuple[str, ...] | None:
    """The PRNG implementations this JAX registers, by the name ``jax.random.key(impl=...)``
    takes, or ``None`` if JAX will not say (then try known names with the public API)."""
    try:
        from jax._src.random import prng

        return tuple(str(name) for name in prng.prngs)
    except Exception:  # private API: unknown, never a crash
        return None


def check_static_indices(on: bool = True) -> Any:
    """The thread-local ``jax_check_static_indices`` context manager (``with ...:``), or ``None``.

    JAX has no public context manager for this flag; the config state itself is one, scoped to
    the calling thread like ``jax.debug_nans``, so the server's global setting is never touched.
    """
    try:
        from jax._src import config

        return config.check_static_indices(on)
    except Exception:  # private API: no context means the claim cannot be checked here
        return None


def cache_key_needs_lowered_module() -> bool | None:
    """Whether the persistent compilation cache's key is computed from the lowered module (so
    tracing and lowering run before any lookup, hit or miss), or ``None`` if JAX won't say."""
    import inspect

    try:
        from jax._src import compilation_cache

        return "module" in inspect.signature(compilation_cache.get_cache_key).parameters
    except Exception:  # private API: any failure means "unknown", never a crash
        return None


def backend_state() -> tuple[list[str], bool]:
    """The JAX backends this process has started, and whether JAX installed its at-fork
    handler (it does with the first backend): what a process that forks must find empty.

    Read from ``sys.modules`` only: asking never imports JAX's backend code, let alone starts it.
    """
    import sys

    bridge = sys.modules.get("jax._src.xla_bridge")
    if bridge is None:
        return [], False
    backends = getattr(bridge, "_backends", None) or {}
    return sorted(backends), bool(getattr(bridge, "_at_fork_handler_installed", False))

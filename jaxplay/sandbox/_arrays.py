"""What a Code Lab run left behind: the arrays it named, summarised for the page, and waited
for before the run's clock stops (JAX returns from a call before its work is done).

Runs in the sandboxed worker (:mod:`jaxplay.sandbox._worker`), on the visitor's own objects:
each step is bounded and skips what it cannot read, so an odd object of the code's is never
the run's error.
"""

from __future__ import annotations

from typing import Any

from jaxplay.sandbox._results import MAX_STATS_ELEMENTS, PREVIEW_ROWS, PREVIEW_VALUES

#: The most values :func:`wait_for_arrays` looks at (names, and items of lists, tuples and
#: dicts): a list of ten million numbers took it 1 s to walk, counted in the run's time.
WAIT_SCAN_ITEMS = 100_000


def wait_for_arrays(value: Any, namespace: dict[str, Any]) -> BaseException | None:
    """Block on every JAX array the code left (its last value, and its top-level names, in
    lists, tuples and dicts, up to :data:`WAIT_SCAN_ITEMS` values): JAX returns from a call
    before the work is done, so a run timed without waiting said "Ran in 0.9 s" for work that
    took 2 s more. Returns the failure of that work, the run's error (``None`` when all
    finished); an odd object of the code's (a mock claiming to be an array, a ``__class__`` that
    raises) is skipped, never the run's error."""
    import itertools

    import jax
    import jax.core

    from jaxplay.core import timing

    arrays: list[Any] = []
    stack: list[Any] = [value, *namespace.values()]
    budget = WAIT_SCAN_ITEMS
    while stack and budget > 0:
        held = stack.pop()
        budget -= 1
        try:
            kind = type(held)  # not isinstance: it asks the object's own __class__
            if kind in (list, tuple):
                stack.extend(itertools.islice(held, budget))
            elif kind is dict:
                stack.extend(itertools.islice(held.values(), budget))
            elif (
                isinstance(held, jax.Array)
                # a tracer the code leaked is no array to wait for; a donated one is gone
                and not isinstance(held, jax.core.Tracer)
                and not held.is_deleted()
            ):
                arrays.append(held)
        except Exception:
            continue
    try:
        timing.block(arrays)
    except BaseException as exc:
        return exc
    return None


def summarize_array(name: str, value: Any) -> dict[str, Any] | None:
    """Shape, dtype, min/max/mean and a small corner of an array (``None`` if not an array)."""
    import jax
    import jax.core
    import numpy as np

    if not isinstance(value, jax.Array | np.ndarray) or isinstance(value, jax.core.Tracer):
        return None
    shape = [int(s) for s in value.shape]
    summary: dict[str, Any] = {
        "name": name,
        "shape": shape,
        "dtype": str(value.dtype),
        "min": None,
        "max": None,
        "mean": None,
        "preview": None,
    }
    try:
        size = int(np.prod(shape)) if shape else 1
        corner = value
        while corner.ndim > 2:
            corner = corner[0]
        if corner.ndim == 2:
            corner = corner[:PREVIEW_ROWS, :PREVIEW_ROWS]
        elif corner.ndim:
            corner = corner[:PREVIEW_VALUES]
        corner = np.asarray(corner)
        kind = corner.dtype.kind
        if kind in "biu" or kind == "f" or (kind == "V" and corner.dtype.itemsize <= 8):
            as_float = corner.astype(np.float64) if kind in "fV" else corner
            summary["preview"] = as_float.tolist()
            if 0 < size <= MAX_STATS_ELEMENTS:
                full = np.asarray(value)
                full = full.astype(np.float64) if full.dtype.kind in "fVb" else full
                summary["min"] = float(full.min())
                summary["max"] = float(full.max())
                summary["mean"] = float(full.mean())
        elif kind == "c":
            summary["preview"] = np.vectorize(str)(corner).tolist() if corner.ndim else str(corner)
    except Exception:
        pass
    return summary


def summarize_namespace(namespace: dict[str, Any], limit: int = 32) -> list[dict[str, Any]]:
    out = []
    for name, value in list(namespace.items()):
        if name.startswith("_") or len(out) >= limit:
            continue
        try:
            summary = summarize_array(name, value)
        except Exception:
            summary = None
        if summary is not None:
            out.append(summary)
    return out

"""What may be sent to a worker: a task or an inspection checked before any process sees it.

Why a module of its own: these checks are the server's side of the job a worker gets (a
function of jaxplay by its dotted name, plain-JSON arguments of bounded size, example
arguments of known dtypes and bounded shapes, registered inspectors only), apart from the
pool's scheduling.
"""

from __future__ import annotations

import json
import re

from jaxplay.core.i18n import _
from jaxplay.sandbox._inspectors import INSPECTORS
from jaxplay.sandbox._results import InspectRequest, Task

_ALLOWED_DTYPES = {
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint32",
    "bool",
    "complex64",
}


_TASK_TARGET = re.compile(r"jaxplay(\.[a-z_][a-z0-9_]*)+:[a-z_][a-z0-9_]*")
MAX_TASK_BYTES = 64 * 1024


def validate_task(task: Task) -> str | None:
    """Why ``task`` cannot be run, or ``None`` if it can."""
    if not _TASK_TARGET.fullmatch(task.target):
        return _("{target} is not one of jaxplay's functions.").format(target=repr(task.target))
    try:
        size = len(json.dumps(task.kwargs))
    except (TypeError, ValueError):
        return _("A task's arguments must be plain JSON values.")
    if size > MAX_TASK_BYTES:
        return _("A task's arguments are {size} bytes; the limit is {limit}.").format(
            size=f"{size:,}", limit=f"{MAX_TASK_BYTES:,}"
        )
    return None


def validate_inspect(request: InspectRequest) -> str | None:
    """Why ``request`` cannot be run, or ``None`` if it can."""
    if not request.function.isidentifier():
        return _("{name} is not a Python name.").format(name=repr(request.function))
    if len(request.args) > 8:
        return _("At most 8 example arguments.")
    for arg in request.args:
        if arg.dtype not in _ALLOWED_DTYPES:
            allowed = ", ".join(sorted(_ALLOWED_DTYPES))
            return _("Unsupported dtype {dtype} (use one of {allowed}).").format(
                dtype=repr(arg.dtype), allowed=allowed
            )
        if len(arg.shape) > 6 or any(not isinstance(s, int) or s < 0 for s in arg.shape):
            return _("Bad shape {shape}: up to 6 non-negative sizes.").format(shape=repr(arg.shape))
        size = 1
        for s in arg.shape:
            size *= s
        if size > 10_000_000:
            return _("Example argument of {size} elements is over the 10,000,000 limit.").format(
                size=f"{size:,}"
            )
    unknown = [n for n in request.inspectors if n not in INSPECTORS]
    if unknown:
        return _("Unknown inspector(s): {names}.").format(names=", ".join(unknown))
    return None

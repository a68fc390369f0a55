"""A visitor's own function, staged in the code sandbox, never in the server; and a preset,
staged in the compute worker.

Why: the tracing page stages functions from the Code Lab too. Their code is untrusted, so it runs
in a sandboxed worker (:mod:`jaxplay.sandbox`), which stages it with the ``stages`` inspector and
sends back a :class:`StagedVariants`, through :mod:`jaxplay.core.codec`; the server only decodes it.

What comes back is the visitor's: the inspector is bound before their code runs, but the helpers
it calls share the worker with that code, so its content can be forged (and is shown, escaped, as
the output of their own code, to them or to whoever opens their link). Its size and cost cannot:
every text, line and list is capped again here after decoding (:meth:`Variant.capped`), and the
views that parse or diff it are linear or bounded.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from jaxplay import sandbox
from jaxplay.core import claims
from jaxplay.core.i18n import N_, _
from jaxplay.tracing import _staging, _variants
from jaxplay.tracing._inputs import InputSpec
from jaxplay.tracing._jaxpr_tree import SourceRef
from jaxplay.tracing._presets import find_preset, preset_ref
from jaxplay.tracing._staging import MAX_TEXT, STAGES, Staged, stage_label
from jaxplay.tracing._variants import VARIANTS, Variant, stage_variant

# --- a visitor's function, staged in the code sandbox ---------------------------------------------

#: Longest stage text sent back from the sandbox (longer ones are cut, with a note; the server
#: cuts again what it decodes, see :meth:`Staged.capped`).
MAX_SANDBOX_TEXT = MAX_TEXT
#: Sandbox runs get longer than a plain run: four variants are traced and compiled.
SANDBOX_TIMEOUT_S = 30.0
#: The note on a text the worker cut (data, in English, like the other notes: see NOTES).
CUT_IN_SANDBOX = N_("the {stage} text is cut at {chars} characters")
#: Every note a :class:`Staged` or a :class:`Variant` may carry, as the template it was filled in
#: from. Notes are data in English: the worker writes them, and staged results are cached for
#: every visitor. :func:`note_text` shows one in the visitor's language.
NOTES: tuple[str, ...] = (
    _staging.NO_LOCATIONS,
    _staging.CUT_ON_SERVER,
    CUT_IN_SANDBOX,
    _variants.AS_WRITTEN,
    _variants.JITTED,
    _variants.GRADIENT,
    _variants.GRADIENT_OF_SUM,
    _variants.BATCHED,
)


@functools.cache
def _note_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Each of :data:`NOTES` with the pattern of the sentences filled in from it."""
    out = []
    for template in NOTES:
        parts = re.split(r"\{(\w+)\}", template)  # literal, field, literal, field, ...
        pattern = "".join(
            re.escape(part) if i % 2 == 0 else f"(?P<{part}>.+?)" for i, part in enumerate(parts)
        )
        out.append((template, re.compile(pattern, re.S)))
    return tuple(out)


def note_text(note: str) -> str:
    """A note of a staged function or variant (English data, see :data:`NOTES`) in the visitor's
    language: the template it was filled in from, translated and filled in again. A note that
    fits no template (a forged one, from the sandbox) is shown as it is."""
    for template, pattern in _note_patterns():
        found = pattern.fullmatch(note)
        if found:
            fields = found.groupdict()
            if "stage" in fields:
                fields["stage"] = stage_label(fields["stage"])
            return _(template).format(**fields)
    return note


def _cut(staged: Staged) -> Staged:
    """``staged`` with texts over :data:`MAX_SANDBOX_TEXT` cut (and their line maps with them)."""
    changes: dict[str, Any] = {}
    notes = list(staged.notes)
    for label, attr in STAGES:
        text = getattr(staged, attr)
        if len(text) > MAX_SANDBOX_TEXT:
            kept = text[:MAX_SANDBOX_TEXT].rsplit("\n", 1)[0]
            lines_attr = attr.replace("_text", "_lines")
            changes[attr] = kept
            changes[lines_attr] = getattr(staged, lines_attr)[: len(kept.splitlines())]
            notes.append(CUT_IN_SANDBOX.format(stage=label, chars=f"{MAX_SANDBOX_TEXT:,}"))
    return dataclasses.replace(staged, **changes, notes=tuple(notes)) if changes else staged


@dataclass(frozen=True)
class StagedVariants:
    """What the ``stages`` inspector returns: every variant of a visitor's function, staged."""

    variants: tuple[Variant, ...]


def inspect_stages(fn: Callable[..., Any], args: tuple[Any, ...]) -> StagedVariants:
    """The ``stages`` inspector: every variant of a visitor's function, staged.

    Runs inside the sandboxed worker (registered in :data:`jaxplay.sandbox._inspectors.INSPECTORS`).
    The function's own file (the worker's name for the visitor's code) is the shown source, whole.
    """
    import inspect as pyinspect

    specs = tuple(InputSpec(tuple(int(d) for d in a.shape), str(a.dtype)) for a in args)
    code = getattr(pyinspect.unwrap(fn), "__code__", None)
    source = SourceRef(code.co_filename, 1, 10**9) if code is not None else None
    variants = []
    for name in VARIANTS:
        variant = stage_variant(fn, specs, name, source=source)
        if variant.staged is not None:
            variant = dataclasses.replace(variant, staged=_cut(variant.staged))
        variants.append(variant)
    return StagedVariants(tuple(variants))


@dataclass(frozen=True)
class SandboxStages:
    """What a worker returned for a function: its variants, or why there are none (the sandbox
    for a visitor's function, the compute worker for a preset)."""

    variants: tuple[Variant, ...]
    error: str | None

    def variant(self, name: str) -> Variant | None:
        """The variant called ``name`` (one of :data:`VARIANTS`), if the sandbox sent it."""
        return next((v for v in self.variants if v.name == name), None)


@claims.states_nothing("where this server runs visitors' code, not JAX's behaviour")
def lab_caption(isolated: bool) -> str:
    """Where a Code Lab function is run and staged: a sandbox only where the server has one."""
    if isolated:
        return _("Your code runs in the sandbox, never in this server; JAX stages it there.")
    return _(
        "Your code runs in a separate Python process, not in this server's, but this server has "
        "no sandbox; JAX stages it there."
    )


def sandbox_stages(
    source: str, function: str, args: Sequence[InputSpec], *, visitor: str | None = None
) -> SandboxStages:
    """Run ``source`` in the code sandbox and stage its ``function`` there (see ``runner``).

    The visitor's code never runs in this process; what the worker sends is decoded by type
    and capped again (it is untrusted once user code ran in it): anything malformed becomes an
    error message.
    """
    request = sandbox.InspectRequest(
        function=function,
        args=tuple(sandbox.ArgSpec(a.shape, a.dtype) for a in args),
        inspectors=("stages",),
    )
    result = sandbox.run_code(source, inspect=request, timeout_s=SANDBOX_TIMEOUT_S, visitor=visitor)
    err = result.error
    if err is not None:
        where = f" (line {err.line})" if err.line else ""
        return SandboxStages((), f"{err.exc_type or err.kind}{where}: {err.message}")
    data = result.inspections.get("stages")
    if not isinstance(data, StagedVariants):
        message = data.error if isinstance(data, sandbox.InspectionFailed) else None
        return SandboxStages((), str(message or _("the sandbox returned no stages")))
    try:
        variants = tuple(v.capped() for v in data.variants[: len(VARIANTS)])
    except (ValueError, RecursionError) as err:
        failed = _("the sandbox returned malformed stage data ({error})")
        return SandboxStages((), failed.format(error=err))
    return SandboxStages(variants, None)


def preset_stages(key: str, args: tuple[tuple[tuple[int, ...], str], ...]) -> SandboxStages:
    """Every variant of the preset ``key`` on ``args`` (a shape and a dtype each), staged.

    Each new shape compiles programs (about 1.6 MB) that JAX keeps as long as the preset's
    function lives, the whole process: a server runs this in its compute worker
    (``sandbox.timed``), which is recycled, as the Code Lab's functions are staged in theirs.
    All variants at once (0.2 to 0.4 s for the presets): one job, one wait, where each tab
    asked for its own.
    """
    preset = find_preset(key)
    specs = [InputSpec(shape, dtype) for shape, dtype in args]
    ref = preset_ref(preset)
    staged = (stage_variant(preset.fn, specs, v, source=ref, path_alias=ref.name) for v in VARIANTS)
    return SandboxStages(tuple(staged), None)

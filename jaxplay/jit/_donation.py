"""Buffer donation: what ``donate_argnums`` saves, and what happens to the donated array.

Why a module of its own: ``jax.jit(f, donate_argnums=0)`` lets XLA write the result into the
argument's buffer. The page shows what that changes, measured, not asserted: the compiled
program's own accounting (``memory_analysis()``: argument, output, temp and *alias* bytes, and
XLA's peak estimate ``peak_memory_in_bytes``), the
bytes held by live arrays after a call, the device allocator's bytes in use where the backend
reports them (GPUs do, the CPU backend does not), and the real error JAX raises when the
donated array is used again.

:func:`donation_demo` runs in a sandboxed worker (``jaxplay.sandbox.call``): a fresh process, so
"every live array" means this demo's arrays only, and a visitor's formula cannot hold the
server's memory.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from jaxplay.core import capture, claims, timing
from jaxplay.core.i18n import N_, _
from jaxplay.jit._program import human_bytes
from jaxplay.jit._workloads import Workload, check, function_of, inputs

#: What the page shows as the code of the reuse, and runs.
REUSE_CODE = "x + 1  # x was donated to the call before"


@dataclass(frozen=True)
class DonationRun:
    """One compiled call, with or without donating its first argument.

    Attributes:
        donated: ``donate_argnums=(0,)`` or not.
        argument_bytes, output_bytes, temp_bytes, alias_bytes: ``memory_analysis()`` of the
            compiled program (-1 where the backend does not report it). Alias bytes are output
            bytes written into a donated argument's buffer.
        peak_bytes: XLA's own peak estimate, ``memory_analysis().peak_memory_in_bytes`` (-1
            where not reported). Not our sum of the figures above: XLA counts an aliased
            buffer once, the sum cannot tell.
        live_before: bytes of every live ``jax.Array`` before the call (the inputs).
        live_after: the same after the call, its result held.
        device_before, device_after: the device allocator's ``bytes_in_use`` around the call,
            or -1 where ``memory_stats()`` reports nothing (the CPU backend).
        argument_deleted: the first argument was deleted by the call.
        warnings: warnings JAX emitted compiling and calling (an unusable donation says so).
    """

    donated: bool
    argument_bytes: int
    output_bytes: int
    temp_bytes: int
    alias_bytes: int
    peak_bytes: int
    live_before: int
    live_after: int
    device_before: int
    device_after: int
    argument_deleted: bool
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class DonationResult:
    """The two calls and what reusing the donated argument did.

    Attributes:
        plain, donated: the call without and with donation.
        reuse_error: the exception's class name, or "" if reusing the array worked.
        reuse_message: its message.
        reuse_code: the code that reused it.
        device: the device, e.g. ``"cpu (cpu)"``.
    """

    plain: DonationRun
    donated: DonationRun
    reuse_error: str
    reuse_message: str
    reuse_code: str
    device: str


def _live_bytes() -> int:
    import jax

    return int(sum(a.nbytes for a in jax.live_arrays() if not a.is_deleted()))


def _device_bytes() -> int:
    import jax

    stats = jax.devices()[0].memory_stats()
    return int(stats.get("bytes_in_use", -1)) if stats else -1


def _one_call(fn: Any, args: tuple[Any, ...], donate: bool) -> tuple[DonationRun, Any]:
    import jax

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = jax.jit(fn, donate_argnums=(0,) if donate else ()).lower(*args).compile()
        stats = compiled.memory_analysis()
        live_before, device_before = _live_bytes(), _device_bytes()
        result = timing.block(compiled(*args))
        live_after, device_after = _live_bytes(), _device_bytes()

    def size(name: str) -> int:
        return int(getattr(stats, name, -1)) if stats is not None else -1

    run = DonationRun(
        donated=donate,
        argument_bytes=size("argument_size_in_bytes"),
        output_bytes=size("output_size_in_bytes"),
        temp_bytes=size("temp_size_in_bytes"),
        alias_bytes=size("alias_size_in_bytes"),
        peak_bytes=size("peak_memory_in_bytes"),
        live_before=live_before,
        live_after=live_after,
        device_before=device_before,
        device_after=device_after,
        argument_deleted=bool(args[0].is_deleted()),
        warnings=tuple(f"{w.category.__name__}: {w.message}" for w in caught),
    )
    return run, result


def donation_demo(preset: str, rows: int, cols: int, dtype: str, formula: str) -> DonationResult:
    """Call the workload's function compiled without and with ``donate_argnums=(0,)``, then
    use the donated argument again. Meant for a sandboxed worker (see the module docstring)."""
    from jaxplay.core import roofline

    workload = Workload(preset, rows, cols, dtype, formula)
    check(workload)
    fn = function_of(workload)
    args = inputs(workload)
    plain, result = _one_call(fn, args, donate=False)
    del result
    args = inputs(workload)  # fresh arrays: the donated call may delete its first argument
    donated, result = _one_call(fn, args, donate=True)
    x = args[0]
    outcome = capture.run(lambda: x + 1, code=REUSE_CODE)
    return DonationResult(
        plain=plain,
        donated=donated,
        reuse_error=outcome.error_type or "",
        reuse_message=outcome.message,
        reuse_code=REUSE_CODE,
        device=roofline.device_label(),
    )


def _change(before: int, after: int) -> str:
    """``drops from A to B``, ``rises from A to B`` or ``stays at A``: never "drops" between equal
    figures (compared in bytes, and in the words shown)."""
    a, b = human_bytes(before), human_bytes(after)
    if after == before or a == b:
        return _("stays at {size}").format(size=a)
    if after < before:
        return _("drops from {before} to {after}").format(before=a, after=b)
    return _("rises from {before} to {after}").format(before=a, after=b)


@claims.states("jit.donation_peak_is_xlas", "jit.donation_aliases_same_size")
def donation_sentence(result: DonationResult) -> str:
    """What donation changed, in Markdown, every figure from ``result``."""
    p, d, format_bytes = result.plain, result.donated, human_bytes
    if d.alias_bytes > 0:
        if p.peak_bytes >= 0 and d.peak_bytes >= 0:
            text = _(
                "With `donate_argnums=0` XLA writes {aliased} of the result into `x`'s buffer: "
                "XLA's own peak estimate for the program (`memory_analysis()."
                "peak_memory_in_bytes`) {change}."
            ).format(
                aliased=format_bytes(d.alias_bytes), change=_change(p.peak_bytes, d.peak_bytes)
            )
        else:
            text = _(
                "With `donate_argnums=0` XLA writes {aliased} of the result into `x`'s buffer."
            ).format(aliased=format_bytes(d.alias_bytes))
        text = claims.qualify("jit.donation_peak_is_xlas", text)
    elif d.alias_bytes < 0:  # -1: this backend's memory_analysis() did not say
        text = _(
            "This backend does not report what XLA aliased (`memory_analysis()` gave no "
            "figure), so this run cannot say whether the donation was used."
        )
    else:
        text = claims.qualify(
            "jit.donation_aliases_same_size",
            _(
                "XLA aliased nothing here: no output has as many elements as `x`, each as wide "
                "(such an output can reuse its buffer whatever its shape or dtype), so the "
                "donation could not be used."
            ),
        )
        if any("donated" in w.lower() for w in d.warnings):
            text += _(" JAX's warning below says so.")
        elif not d.warnings:
            text += _(" JAX gave no warning this time.")
    live = {"plain": format_bytes(p.live_after), "donated": format_bytes(d.live_after)}
    if d.argument_deleted:
        text += _(
            " After the call, live arrays hold {plain} without donation and {donated} with it "
            "(`x` was deleted)."
        ).format(**live)
    else:
        text += _(
            " After the call, live arrays hold {plain} without donation and {donated} with it."
        ).format(**live)
    if d.device_after >= 0 and p.device_after >= 0:
        text += _(
            " The device's allocator held {plain} after the plain call and {donated} after the "
            "donating one."
        ).format(plain=format_bytes(p.device_after), donated=format_bytes(d.device_after))
    else:
        text += _(" This backend reports no allocator statistics (`memory_stats()` is None).")
    return text


@claims.states_nothing("figures XLA and JAX reported, with their labels")
def donation_table(result: DonationResult) -> list[dict[str, str]]:
    """The two calls side by side, one row per figure, each with its unit and a footnote mark
    for its source (:data:`DONATION_SOURCES`); in the visitor's language (the keys stay)."""

    def shown(n: int) -> str:
        return human_bytes(n) if n >= 0 else _("not reported")

    p, d = result.plain, result.donated
    rows = [
        (N_("arguments¹"), p.argument_bytes, d.argument_bytes),
        (N_("result¹"), p.output_bytes, d.output_bytes),
        (N_("temporaries¹"), p.temp_bytes, d.temp_bytes),
        (N_("aliased: result in a donated buffer¹"), p.alias_bytes, d.alias_bytes),
        (N_("peak (XLA's estimate, peak_memory_in_bytes)¹"), p.peak_bytes, d.peak_bytes),
        (N_("live arrays before the call²"), p.live_before, d.live_before),
        (N_("live arrays after the call²"), p.live_after, d.live_after),
        (N_("device allocator after the call³"), p.device_after, d.device_after),
    ]
    return [
        {"figure": _(name), "without donation": shown(a), "donate_argnums=0": shown(b)}
        for name, a, b in rows
    ]


#: Where the figures of :func:`donation_table` come from, by footnote mark (English, marked;
#: translated where shown).
DONATION_SOURCES = (
    N_("¹ the compiled program's memory_analysis()"),
    N_("² the bytes of every live jax.Array (jax.live_arrays())"),
    N_("³ the device's memory_stats()['bytes_in_use']"),
)


@claims.states("jit.donation_aliases_same_size")
def reuse_sentence(result: DonationResult) -> str:
    """What using ``x`` again after the donated call did, when it worked (Markdown)."""
    if result.donated.alias_bytes == 0:
        return _("Using `x` again worked: JAX did not delete it, as its donation was not used.")
    return _("Using `x` again worked: JAX did not delete it.")

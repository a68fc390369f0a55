"""Static and dynamic fields of a pytree, and what each does to ``jax.jit``'s cache.

Why a module of its own: a registered dataclass splits its fields in two. Data fields are leaves:
``jit`` traces them, so a new value reuses the compiled program. Meta (static) fields are part of
the tree's structure, which is part of jit's cache key, so each new value compiles again, and the
value must hash and compare like a plain Python value (an array cannot). A leaf's type counts too:
a Python float is weakly typed, a ``jnp.float32`` is not, and each gets a program of its own. The
lab calls a fresh jitted function with a sequence of layers and reads the number of compiled
programs after each call (:func:`jaxplay.core.jax_private.cache_size`). An array in a meta field
is accepted while nothing is cached to compare it with (the first call in a fresh process); every
later call raises ``ValueError`` when ``jit`` compares the meta fields with the cached ones. The
lab's function for that change never reads the field, so the error shown is JAX's own, not a
dict lookup's (claim ``pytrees.array_meta_field``).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from jaxplay.article import code
from jaxplay.core import capture, claims, compilation, jax_private
from jaxplay.core.i18n import N_, _, ngettext

#: Most calls in one run of the lab.
MAX_CALLS = 8

ACTIVATIONS = {
    "tanh": jnp.tanh,
    "relu": jax.nn.relu,
    "gelu": jax.nn.gelu,
    "sigmoid": jax.nn.sigmoid,
}


@functools.partial(
    jax.tree_util.register_dataclass, data_fields=["scale"], meta_fields=["activation"]
)
@dataclasses.dataclass(frozen=True)
class Scaled:
    scale: Any  # dynamic (a leaf): traced, a new value reuses the program
    activation: Any  # static (structure): hashed into jit's cache key


def apply(layer, x):
    return ACTIVATIONS[layer.activation](layer.scale * x)


def apply_tanh(layer, x):
    return jnp.tanh(layer.scale * x)  # the meta field is never read: only jit looks at it


def dynamic_changes(n, distinct):
    return [Scaled(jnp.float32(i + 1), "tanh") for i in range(n)]


def static_changes(n, distinct):
    names = list(ACTIVATIONS)[:distinct]
    return [Scaled(jnp.float32(1.0), names[i % distinct]) for i in range(n)]


def weak_type_changes(n, distinct):
    return [Scaled(float(i + 1) if i % 2 else jnp.float32(i + 1), "tanh") for i in range(n)]


def array_in_static(n, distinct):
    return [Scaled(jnp.float32(1.0), jnp.ones(2)) for _i in range(n)]


@dataclass(frozen=True)
class Change:
    """What changes from one call to the next."""

    key: str
    title: str
    build: Any
    #: The function the lab jits and calls with each layer.
    fn: Any = apply


CHANGES: tuple[Change, ...] = (
    Change("dynamic", N_("the dynamic field's value"), dynamic_changes),
    Change("static", N_("the static field's value"), static_changes),
    Change("weak", N_("the dynamic field: Python float vs jnp.float32"), weak_type_changes),
    Change("array", N_("an array in the static field"), array_in_static, apply_tanh),
)


def find_change(key: str) -> Change:
    for change in CHANGES:
        if change.key == key:
            return change
    raise KeyError(key)


@dataclass(frozen=True)
class CallRow:
    """One call of the lab's jitted function.

    Attributes:
        scale: the dynamic field, as passed (its value, and its type when that matters).
        activation: the static field, as passed.
        programs: compiled programs the jitted function holds after the call (``None``: unknown).
        compiled: whether this call added a program.
        error: ``Type: message`` when the call raised.
    """

    scale: str
    activation: str
    programs: int | None
    compiled: bool | None
    error: str | None = None


@dataclass(frozen=True)
class StaticLab:
    """A run of the lab: the calls and what they did to jit's cache."""

    change: str
    rows: tuple[CallRow, ...]

    @property
    def calls(self) -> int:
        return len(self.rows)

    @property
    def compilations(self) -> int | None:
        """Programs compiled over the run (``None`` when JAX will not say)."""
        known = [r.programs for r in self.rows if r.programs is not None]
        if len(known) != len(self.rows):
            return None
        return known[-1] if known else 0

    @property
    def failed(self) -> CallRow | None:
        return next((r for r in self.rows if r.error), None)

    @property
    def distinct_static(self) -> int:
        return len({r.activation for r in self.rows})

    @property
    def distinct_dynamic(self) -> int:
        return len({r.scale.split(" (")[0] for r in self.rows})

    @property
    def distinct_types(self) -> int:
        """Distinct types of the data field's leaf (``float32``, Python float)."""
        return len({r.scale.split(" (")[1] for r in self.rows})


def _scale_text(scale: Any) -> str:
    if isinstance(scale, float):
        return f"{scale:g} (Python float)"
    return f"{float(scale):g} ({jnp.dtype(scale.dtype).name})"


def _static_text(value: Any) -> str:
    return repr(value) if isinstance(value, str) else f"an array {tuple(value.shape)}"


def static_lab(change: str, n: int, distinct: int = 2) -> StaticLab:
    """Call a fresh ``jax.jit(apply)`` with the layers ``change`` builds, counting its programs.

    Arguments:
        change: a :class:`Change` key.
        n: calls, 1 to :data:`MAX_CALLS`.
        distinct: distinct static values the ``static`` change cycles through (1 to 4).
    """
    if not 1 <= n <= MAX_CALLS:
        raise ValueError(f"calls must be between 1 and {MAX_CALLS}")
    if not 1 <= distinct <= len(ACTIVATIONS):
        raise ValueError(f"distinct static values must be between 1 and {len(ACTIVATIONS)}")
    chosen = find_change(change)
    layers = chosen.build(n, distinct)
    jitted = jax.jit(compilation.fresh_function(chosen.fn))
    x = jnp.linspace(-1.0, 1.0, 4)
    rows = []
    before = 0
    for layer in layers:
        outcome = capture.run(jitted, layer, x)
        after = jax_private.cache_size(jitted)
        rows.append(
            CallRow(
                scale=_scale_text(layer.scale),
                activation=_static_text(layer.activation),
                programs=after,
                compiled=None if after is None or before is None else after > before,
                error=None if outcome.ok else f"{outcome.error_type}: {outcome.message}",
            )
        )
        before = after
    return StaticLab(change=change, rows=tuple(rows))


@claims.states("pytrees.array_meta_field")
def explain_failure(lab: StaticLab) -> str:
    """What the calls that raised did, for a lab with a failed call (Markdown)."""
    raised = [r for r in lab.rows if r.error]
    kinds = sorted({r.error.split(":")[0] for r in raised if r.error})
    first = lab.rows.index(raised[0]) + 1
    text = ngettext(
        "{n} call of {total} raised ({kinds}), from call {first} on",
        "{n} calls of {total} raised ({kinds}), from call {first} on",
        len(raised),
    ).format(n=f"{len(raised):,}", total=lab.calls, kinds=", ".join(kinds), first=first)
    if lab.change == "array":
        if first > 1:
            text = ngettext(
                "{text}: `jit` accepted the first {n} call (nothing cached to compare with), then "
                "raised when `jit` compared the meta fields with the cached ones.",
                "{text}: `jit` accepted the first {n} calls (nothing cached to compare with), "
                "then raised when `jit` compared the meta fields with the cached ones.",
                first - 1,
            ).format(text=text, n=f"{first - 1:,}")
        else:
            text = _(
                "{text}: this server had already cached a call with such a layer (an earlier "
                "run), so even the first call raised when `jit` compared the meta fields with the "
                "cached ones."
            ).format(text=text)
        text = _(
            "{text} A meta field must be hashable and compare like a plain Python value; an array "
            "does neither. The function never reads the field: the error is JAX's own."
        ).format(text=text)
        return claims.qualify("pytrees.array_meta_field", text)
    return _("{text}.").format(text=text)


@claims.states("pytrees.one_program_per_meta_and_leaf_type")
def explain_compiles(lab: StaticLab) -> str:
    """How many programs the calls compiled, and the rule (Markdown)."""
    programs = lab.compilations or 0
    return claims.qualify(
        "pytrees.one_program_per_meta_and_leaf_type",
        _("{calls}, {data} ({types}), {meta}: **jit compiled {programs}**.").format(
            calls=ngettext("{n} call", "{n} calls", lab.calls).format(n=f"{lab.calls:,}"),
            data=ngettext(
                "{n} distinct data value", "{n} distinct data values", lab.distinct_dynamic
            ).format(n=f"{lab.distinct_dynamic:,}"),
            types=ngettext("{n} leaf type", "{n} leaf types", lab.distinct_types).format(
                n=f"{lab.distinct_types:,}"
            ),
            meta=ngettext(
                "{n} distinct meta value", "{n} distinct meta values", lab.distinct_static
            ).format(n=f"{lab.distinct_static:,}"),
            programs=ngettext("{n} program", "{n} programs", programs).format(n=f"{programs:,}"),
        ),
    )


def static_snippet(change: str, n: int, distinct: int) -> str:
    """A Code Lab cell running the same calls, counting traces (one per compiled program here)."""
    chosen = find_change(change)
    build, fn = chosen.build, chosen.fn
    return code(
        "import dataclasses\nimport functools\nfrom typing import Any\n\n"
        "import jax\nimport jax.numpy as jnp\n\n"
        'ACTIVATIONS = {"tanh": jnp.tanh, "relu": jax.nn.relu, "gelu": jax.nn.gelu, '
        '"sigmoid": jax.nn.sigmoid}\n\n',
        Scaled,
        "",
        "",
        fn,
        "",
        "",
        build,
        "",
        "",
        "traces = []",
        "jitted = jax.jit(lambda layer, x: (traces.append(layer.activation), "
        f"{fn.__name__}(layer, x))[1])",
        f"for layer in {build.__name__}({n}, {distinct}):",
        "    jitted(layer, jnp.linspace(-1.0, 1.0, 4))",
        '    print("scale", layer.scale, "activation", layer.activation, "-> traces so far:", '
        "len(traces))",
    )

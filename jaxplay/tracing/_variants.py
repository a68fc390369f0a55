"""``f`` under ``jit``, ``grad`` and ``vmap``, staged like ``f`` itself, for the diff view.

Why: comparing ``f`` with ``grad(f)`` stage by stage shows what a transform adds. A name is mapped
to its transform by a table (:data:`TRANSFORMS`), not an if-chain.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from jaxplay.core import jax_private, untrusted
from jaxplay.core.i18n import N_
from jaxplay.tracing._inputs import InputSpec, shape_structs
from jaxplay.tracing._jaxpr_tree import SourceRef
from jaxplay.tracing._staging import Staged, stage, stage_label

#: Batch size of the new leading axis ``vmap(f)`` maps over.
VMAP_BATCH = 4

#: What a variant is: ``fn`` transformed, the arguments it takes, and a note on what was done.
Transformed = tuple[Callable[..., Any], tuple[InputSpec, ...], str]

#: The notes on what a variant is. They are data, in English (a worker in the sandbox writes
#: them too, and results are cached for every visitor); the page shows them in the visitor's
#: language (``note_text``).
AS_WRITTEN = N_("f as written.")
JITTED = N_("f wrapped in jax.jit: its jaxpr is one jit equation.")
GRADIENT = N_("gradient with respect to the first argument.")
GRADIENT_OF_SUM = N_(
    "f returns {shapes}, not one scalar, so this is grad of the sum of its outputs, with respect "
    "to the first argument."
)
BATCHED = N_("vmap over a new leading axis of size {size} on every argument.")


@dataclass(frozen=True)
class Variant:
    """``f`` under one transform, staged, or the error JAX raised for it."""

    name: str
    note: str
    staged: Staged | None
    error: str | None

    def capped(self) -> Variant:
        """This :class:`Variant` with every text capped again, as it came from a worker that ran
        a visitor's code (see :meth:`Staged.capped`)."""
        return Variant(
            untrusted.text(self.name, 64),
            untrusted.text(self.note, 2_000),
            None if self.staged is None else self.staged.capped(),
            None if self.error is None else untrusted.text(self.error, 20_000),
        )


def _as_written(fn: Callable[..., Any], args: tuple[InputSpec, ...]) -> Transformed:
    return fn, args, AS_WRITTEN


def _jitted(fn: Callable[..., Any], args: tuple[InputSpec, ...]) -> Transformed:
    import jax

    return jax.jit(fn), args, JITTED


def _gradient(fn: Callable[..., Any], args: tuple[InputSpec, ...]) -> Transformed:
    """With respect to the first argument; an output that is not one scalar is summed first."""
    import jax
    import jax.numpy as jnp

    out = jax.eval_shape(fn, *shape_structs(args))
    leaves = jax.tree_util.tree_leaves(out)
    if len(leaves) == 1 and leaves[0].shape == ():
        return jax.grad(fn), args, GRADIENT

    def summed(*a: Any) -> Any:
        return sum(jnp.sum(leaf) for leaf in jax.tree_util.tree_leaves(fn(*a)))

    shapes = ", ".join(f"{leaf.dtype}{list(leaf.shape)}" for leaf in leaves)
    return jax.grad(summed), args, GRADIENT_OF_SUM.format(shapes=shapes)


def _batched(fn: Callable[..., Any], args: tuple[InputSpec, ...]) -> Transformed:
    import jax

    batched = tuple(InputSpec((VMAP_BATCH, *a.shape), a.dtype) for a in args)
    return jax.vmap(fn), batched, BATCHED.format(size=VMAP_BATCH)


#: The variants of ``f`` that can be staged and compared, by name, in the order the page lists them.
TRANSFORMS: dict[str, Callable[[Callable[..., Any], tuple[InputSpec, ...]], Transformed]] = {
    "f": _as_written,
    "jit(f)": _jitted,
    "grad(f)": _gradient,
    "vmap(f)": _batched,
}
VARIANTS: tuple[str, ...] = tuple(TRANSFORMS)


def choice_label(choice: str) -> str:
    """A diff side, ``"<variant> · <stage>"`` (an option value), with the stage in the visitor's
    language."""
    variant, sep, stage = choice.partition(" · ")
    return f"{variant}{sep}{stage_label(stage)}" if sep else choice


def variant_function(fn: Callable[..., Any], args: Sequence[InputSpec], name: str) -> Transformed:
    """``fn`` transformed as ``name`` (a key of :data:`TRANSFORMS`) says, the arguments it takes,
    and a note on what was done (``grad(f)`` of a function whose output is not one scalar is the
    gradient of the sum of its outputs; ``vmap(f)`` maps a new leading axis of size
    :data:`VMAP_BATCH` on every argument)."""
    if name not in TRANSFORMS:
        raise ValueError(f"unknown variant {name!r}; one of {VARIANTS}")
    # This module's own frames (``summed``) stay out of the locations JAX records.
    jax_private.hide_frames_of(__file__)
    return TRANSFORMS[name](fn, tuple(args))


def stage_variant(
    fn: Callable[..., Any],
    args: Sequence[InputSpec],
    name: str,
    *,
    source: SourceRef | None = None,
    path_alias: str | None = None,
) -> Variant:
    """:func:`stage` of :func:`variant_function`; JAX's error, if it raises one, kept as text."""
    note = ""
    try:
        target, target_args, note = variant_function(fn, args, name)
        staged = stage(target, target_args, source=source, path_alias=path_alias)
    except Exception as err:  # JAX's own message is the lesson: keep it, type included
        return Variant(name, note, None, f"{type(err).__name__}: {err}")
    return Variant(name, note, staged, None)

"""The page's settings as data: what each box sets, its label, its options or limits, its help.

Why a module: the largest size the page analyses, runs or chains depends on the platform, and a
box's help must name the same limit the code enforces (:func:`~jaxplay.memory._remat.check_size`,
:func:`~jaxplay.memory._fusion.check_chain`); the options are the registries' keys (in links and
caches, English) shown by their labels in the visitor's language. Building both here keeps them
equal to what the code does, and leaves the page one way to draw each kind of box.
"""

from __future__ import annotations

from dataclasses import dataclass

from jaxplay.core.i18n import _
from jaxplay.memory._fusion import chain_limit
from jaxplay.memory._remat import (
    DEFAULT_VARIANTS,
    LOOPS,
    MAX_DEPTH,
    MAX_SIZE,
    MODELS,
    VARIANTS,
    run_limit,
)


@dataclass(frozen=True)
class Choice:
    """A setting picked among named options.

    Attributes:
        name: what it sets (``"model"``, ``"loop"``); the page keys the box, and so the
            address, by it.
        label: the box's label, in the visitor's language.
        options: each option's key (English: links, caches) and its label, in the visitor's
            language, in the order shown.
        default: the key picked when the page opens.
        help: the box's help, in the visitor's language, or None.
    """

    name: str
    label: str
    options: dict[str, str]
    default: str
    help: str | None = None


@dataclass(frozen=True)
class Choices:
    """A setting picking several of named options (``"variants"``): as :class:`Choice`, with
    ``default`` the keys picked when the page opens."""

    name: str
    label: str
    options: dict[str, str]
    default: tuple[str, ...]


def checkpoint_choices() -> tuple[Choice, Choice]:
    """The checkpointing panel's model and loop."""
    return (
        Choice("model", _("Model"), {k: _(m.title) for k, m in MODELS.items()}, "seed"),
        Choice(
            "loop",
            _("Loop"),
            {k: _(label) for k, label in LOOPS.items()},
            "scan",
            help=_(
                "The article's code loops in Python, which jit unrolls at trace time into one "
                "long program; `lax.scan` compiles one loop body and runs it once per round."
            ),
        ),
    )


def variants_choice() -> Choices:
    """The checkpointing variants to compare; no checkpoint is not among them, though it always
    runs (its gradient is the reference, see :func:`~jaxplay.memory._remat_run.plan_run`)."""
    return Choices(
        "variants",
        _(
            "Variants (a block is one round, or one layer; no checkpoint is always shown: "
            "it is the reference gradient)"
        ),
        {k: _(v.label) for k, v in VARIANTS.items()},
        DEFAULT_VARIANTS,
    )


@dataclass(frozen=True)
class NumberBox:
    """A setting given as a whole number, from 1 to ``most``.

    Attributes:
        name: what it sets (``"size"``, ``"depth"``, ``"chain_size"``); the page keys the box,
            and so the address, by it.
        label: its label, in the visitor's language.
        most: the largest value it accepts.
        default: its value when the page opens.
        help: its help, in the visitor's language, naming the limits.
    """

    name: str
    label: str
    most: int
    default: int
    help: str


def checkpoint_boxes(model_key: str, platform: str) -> tuple[NumberBox, NumberBox]:
    """The checkpointing panel's size and depth (rounds or layers, as the model calls them)."""
    size_help = _(
        "1 to {most}. Up to {limit} the gradients are run and timed on {platform}; "
        "above, they are compiled and analysed only (nothing that size is allocated)."
    ).format(most=MAX_SIZE, limit=run_limit(platform), platform=platform)
    depth_help = _("1 to {most}.").format(most=MAX_DEPTH)
    return (
        NumberBox("size", _("size n"), MAX_SIZE, 128, size_help),
        NumberBox("depth", _(MODELS[model_key].depth_label), MAX_DEPTH, 10, depth_help),
    )


def chain_size_box(platform: str) -> NumberBox:
    """The fusion panel's matrix side, up to what the chain runs at on ``platform``."""
    limit = chain_limit(platform)
    chain_help = _(
        "1 to {limit} on {platform} (an n×n float32 array, every op's result too)."
    ).format(limit=limit, platform=platform)
    return NumberBox("chain_size", _("size n"), limit, 512, chain_help)

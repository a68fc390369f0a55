"""One function at every stage JAX takes it through: Python → jaxpr → StableHLO → optimized HLO.

Why this module: the model is Compiler Explorer. The same program is shown at each stage side by
side, and every equation, op and instruction is tied back to the Python line that produced it
(:mod:`jaxplay.tracing._locations` reads the lines JAX records in each text). :func:`stage` traces,
lowers and compiles a function for abstract arguments and returns a :class:`Staged`: the texts, the
equations as a tree (for the graph) and as rows, the XLA fusions, and the source line of every text
line. It is plain data that round-trips through :mod:`jaxplay.core.codec`, so the same
:class:`Staged` can be built inside the code sandbox for a visitor's function and shown by the
server, which never runs that function itself.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from jaxplay.core import claims, hlo, jax_private, markdown, untrusted
from jaxplay.core.i18n import N_, _, ngettext
from jaxplay.tracing._inputs import InputSpec, shape_structs
from jaxplay.tracing._jaxpr_tree import (
    Atom,
    Block,
    Eqn,
    EquationRow,
    FusionRow,
    Names,
    SourceRef,
    Sub,
    build_block,
    equation_rows,
)
from jaxplay.tracing._locations import hlo_line_sources, jaxpr_line_sources, stablehlo_line_sources

# --- staging --------------------------------------------------------------------------------------

#: The stages of a :class:`Staged`, as ``(label, attribute)``; the labels are option values
#: (links carry them), shown in the visitor's language with :func:`stage_label`.
STAGES: tuple[tuple[str, str], ...] = (
    ("jaxpr", "jaxpr_text"),
    ("StableHLO", "stablehlo_text"),
    (N_("optimized HLO"), "hlo_text"),
)

#: The notes a :class:`Staged` may carry. They are data, in English (a worker in the sandbox
#: writes them too); the page shows them in the visitor's language (``note_text``).
NO_LOCATIONS = N_("this JAX prints StableHLO without locations")
CUT_ON_SERVER = N_(
    "the {stage} text was cut on the server (at most {chars} characters, {lines} lines of "
    "{line_chars} characters)"
)


def stage_label(stage: str) -> str:
    """A stage's label (one of :data:`STAGES`) in the visitor's language."""
    return _(stage) if stage in dict(STAGES) else stage


@dataclass(frozen=True)
class Staged:
    """A function at each stage, with structured views and the source line of every text line.

    Attributes:
        jaxpr_text: ``make_jaxpr``'s jaxpr, each equation followed by ``# file:line (function)``.
        stablehlo_text: ``jit(f).lower(...).as_text(debug_info=True)`` (with ``loc`` locations).
        hlo_text: ``.compile().as_text()``: the optimized HLO XLA runs (fusions visible).
        jaxpr: the jaxpr as a :class:`Block` tree (for the graph and the rows).
        arg_names: the function's argument names, as JAX recorded them.
        jaxpr_lines, stablehlo_lines, hlo_lines: one entry per text line: the line of the shown
            source it came from, or ``None``.
        fusions: the XLA fusions of the optimized HLO.
        notes: what could not be done (a stage a backend would not print).
    """

    jaxpr_text: str
    stablehlo_text: str
    hlo_text: str
    jaxpr: Block
    arg_names: tuple[str, ...]
    jaxpr_lines: tuple[int | None, ...]
    stablehlo_lines: tuple[int | None, ...]
    hlo_lines: tuple[int | None, ...]
    fusions: tuple[FusionRow, ...]
    notes: tuple[str, ...] = ()

    @property
    def equations(self) -> tuple[EquationRow, ...]:
        """The equations as rows (see :func:`equation_rows`)."""
        return equation_rows(self.jaxpr)

    def lines_of(self, stage: str) -> tuple[int | None, ...]:
        """The per-line source map of a stage named as in :data:`STAGES`."""
        attr = dict(STAGES)[stage]
        return getattr(self, attr.replace("_text", "_lines"))

    def text_of(self, stage: str) -> str:
        """The text of a stage named as in :data:`STAGES`."""
        return getattr(self, dict(STAGES)[stage])

    def capped(self) -> Staged:
        """This :class:`Staged` cut to what the server shows, as it came from a worker.

        It was decoded by :mod:`jaxplay.core.codec` (every field of its declared type) from a
        worker that ran a visitor's code, which may have forged it: every text is capped again
        here (:data:`MAX_TEXT`, :data:`MAX_TEXT_LINES`, :data:`MAX_LINE_CHARS`; a note says which
        was cut), every list and name too, and the jaxpr tree to :data:`MAX_BLOCK_DEPTH` levels
        and :data:`MAX_EQUATIONS` equations (more is a ``ValueError``).
        """
        texts: dict[str, Any] = {}
        notes = [untrusted.text(n, 1_000) for n in self.notes[:32]]
        for label, attr in STAGES:
            text, cut = untrusted.lines(
                getattr(self, attr),
                chars=MAX_TEXT,
                max_lines=MAX_TEXT_LINES,
                line_chars=MAX_LINE_CHARS,
            )
            lines_attr = attr.replace("_text", "_lines")
            texts[attr] = text
            texts[lines_attr] = getattr(self, lines_attr)[: len(text.splitlines())]
            if cut:
                notes.append(
                    CUT_ON_SERVER.format(
                        stage=label,
                        chars=f"{MAX_TEXT:,}",
                        lines=f"{MAX_TEXT_LINES:,}",
                        line_chars=f"{MAX_LINE_CHARS:,}",
                    )
                )
        return Staged(
            **texts,
            jaxpr=_capped_block(self.jaxpr, [MAX_EQUATIONS], 0),
            arg_names=tuple(_short(n) for n in self.arg_names[:256]),
            fusions=tuple(_capped_fusion(f) for f in self.fusions[:MAX_EQUATIONS]),
            notes=tuple(notes),
        )


#: Longest stage text shown (a worker cuts its texts there; the server cuts again).
MAX_TEXT = 200_000
#: Most lines, and longest line, of a stage text from a worker.
MAX_TEXT_LINES = 20_000
MAX_LINE_CHARS = 4_000
#: Deepest nesting of sub-jaxprs, and most equations in all, accepted from a worker.
MAX_BLOCK_DEPTH = 32
MAX_EQUATIONS = 20_000
_NAME_CHARS = 200
_FIELD_CHARS = 4_000


#: What a primitive's name may hold (``dot_general``, ``custom_jvp_call``, ``pjit``): a forged
#: one with Markdown in it is shown as ``?``.
_PRIMITIVE = re.compile(r"[\w.\-]{1,200}")


def _short(value: str) -> str:
    """A name (a variable, a primitive, a fusion), capped."""
    return untrusted.text(value, _NAME_CHARS)


def _field(value: str) -> str:
    """A longer text field (parameters, a type), capped."""
    return untrusted.text(value, _FIELD_CHARS)


def _capped_fusion(f: FusionRow) -> FusionRow:
    return FusionRow(
        name=_short(f.name),
        kind=_short(f.kind),
        ops=tuple(_short(op) for op in f.ops[:1_000]),
        shape=_field(f.shape),
        source_lines=f.source_lines[:1_000],
    )


def _atoms(items: tuple[Atom, ...]) -> tuple[Atom, ...]:
    return tuple(Atom(_short(a.name), _field(a.type), a.literal) for a in items[:10_000])


def _capped_block(block: Block, budget: list[int], depth: int) -> Block:
    """``block`` with its names and fields capped; ``budget`` holds how many more equations
    may be kept (more, or sub-jaxprs nested deeper than :data:`MAX_BLOCK_DEPTH`, is a
    ``ValueError``)."""
    if depth > MAX_BLOCK_DEPTH:
        raise ValueError(f"sub-jaxprs nested more than {MAX_BLOCK_DEPTH} deep")

    def eqn(e: Eqn) -> Eqn:
        budget[0] -= 1
        if budget[0] < 0:
            raise ValueError(f"more than {MAX_EQUATIONS:,} equations")
        return Eqn(
            path=_short(e.path),
            primitive=_short(e.primitive) if _PRIMITIVE.fullmatch(e.primitive) else "?",
            params=_field(e.params),
            inputs=_atoms(e.inputs),
            outputs=_atoms(e.outputs),
            source_line=e.source_line,
            where=_field(e.where),
            subs=tuple(
                Sub(_short(s.param), s.bind[:10_000], _capped_block(s.block, budget, depth + 1))
                for s in e.subs[:1_000]
            ),
        )

    return Block(
        constvars=_atoms(block.constvars),
        invars=_atoms(block.invars),
        outvars=_atoms(block.outvars),
        eqns=tuple(eqn(e) for e in block.eqns[:MAX_EQUATIONS]),
    )


def _on_fresh_stack(fn: Callable[[], Any]) -> Any:
    """``fn()`` run in a new thread, so the call stack JAX records starts there.

    Traced from a page, the stack would hold the web server's frames (Streamlit's script runner,
    its caches), and JAX writes all of them into the StableHLO locations and the HLO's file and
    function tables. A new thread's stack holds only ``fn``'s own frames. (JAX's thread-local
    settings, such as an ``enable_x64`` context, are not carried into the thread.)
    """
    jax_private.hide_frames_of(__file__)
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as err:  # re-raised in the caller's thread
            outcome["error"] = err

    thread = threading.Thread(target=target, name="jaxplay-stage", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _trace_and_lower(jitted: Any, structs: Sequence[Any]) -> tuple[Any, Any]:
    traced = jitted.trace(*structs)
    return traced, traced.lower()


def _jaxpr_text(closed: Any) -> str:
    try:
        return str(closed.pretty_print(source_info=True))
    except Exception:  # an older/newer printer without source_info: the plain text still helps
        return str(closed)


@claims.states_nothing("JAX's own text, and a note when it has no locations")
def _stablehlo_text(lowered: Any, notes: list[str]) -> str:
    try:
        return str(lowered.as_text(debug_info=True))
    except TypeError:
        notes.append(NO_LOCATIONS)
        return str(lowered.as_text())


def stage(
    fn: Callable[..., Any],
    args: Sequence[InputSpec],
    *,
    source: SourceRef | None = None,
    path_alias: str | None = None,
) -> Staged:
    """Trace, lower and compile ``fn`` for arguments of the given shapes and dtypes.

    Arguments:
        fn: the function (a plain Python function, or one already wrapped in ``jax.jit``).
        args: shape and dtype of each positional argument (no data is allocated).
        source: the source shown beside the stages; locations outside it map to no line.
        path_alias: a short name written in place of ``source.file`` in the texts (the page shows
            ``_presets.py`` rather than a long absolute path).

    Returns:
        A :class:`Staged`. JAX's own errors (a shape mismatch, a Python ``if`` on a tracer)
        propagate unchanged so the caller can show their real type and message.
    """
    import jax

    structs = shape_structs(args)
    notes: list[str] = []
    traced, lowered = _on_fresh_stack(lambda: _trace_and_lower(jax.jit(fn), structs))
    closed = traced.jaxpr
    jaxpr_text = _jaxpr_text(closed)
    stablehlo_text = _stablehlo_text(lowered, notes)
    hlo_text = str(lowered.compile().as_text())
    try:
        arg_names = tuple(closed.jaxpr.debug_info.arg_names)
    except Exception:  # debug info is best effort in JAX
        arg_names = ()
    fusions = tuple(
        FusionRow(
            name=f.name,
            kind=f.kind,
            ops=f.ops,
            shape=f.shape,
            source_lines=tuple(
                dict.fromkeys(
                    n
                    for n in (source.line(s.file, s.line) if source else None for s in f.sources)
                    if n is not None
                )
            ),
        )
        for f in hlo.parse_fusions(hlo_text)
    )
    staged = Staged(
        jaxpr_text=jaxpr_text,
        stablehlo_text=stablehlo_text,
        hlo_text=hlo_text,
        jaxpr=build_block(closed, source, Names()),
        arg_names=arg_names,
        jaxpr_lines=jaxpr_line_sources(jaxpr_text, source),
        stablehlo_lines=stablehlo_line_sources(stablehlo_text, source),
        hlo_lines=hlo_line_sources(hlo_text, source),
        fusions=fusions,
        notes=tuple(notes),
    )
    if source and path_alias:
        staged = dataclasses.replace(
            staged,
            jaxpr_text=jaxpr_text.replace(source.file, path_alias),
            stablehlo_text=stablehlo_text.replace(source.file, path_alias),
            hlo_text=hlo_text.replace(source.file, path_alias),
        )
    return staged


def _meets_an_operand(eqns: Sequence[Eqn], conversion: Eqn) -> bool:
    """Whether the converted value meets another operand of its new dtype in one equation: the
    mark of a promotion (``x * y`` converts one side to the other's type), which a cast
    (``x.astype(jnp.int8)``) or an op that needs another type (``jnp.sin`` of integers) is not."""
    if not conversion.outputs:
        return False
    out = conversion.outputs[0]
    dtype = out.type.partition("[")[0]
    return any(
        out.name in {a.name for a in eqn.inputs}
        and any(a.name != out.name and a.type.partition("[")[0] == dtype for a in eqn.inputs)
        for eqn in eqns
    )


@claims.states("tracing.story_names_the_conversions", "tracing.story_tells_a_cast_from_a_promotion")
def jaxpr_story(staged: Staged, args: Sequence[InputSpec], names: Sequence[str]) -> str:
    """The top level of the staged jaxpr counted from it, and each argument JAX converted before
    using it, with why: a weakly typed argument (a Python float) takes the other operand's dtype;
    a strongly typed one is promoted, to the other operand's type or to one neither has
    (Markdown, in the visitor's language)."""

    top = staged.jaxpr.eqns
    # A worker's names are a visitor's code's to forge: each one a code span it cannot close.
    listed = _(", ").join(markdown.code(eqn.primitive) for eqn in top)
    text = (
        ngettext(
            "The jaxpr has {n} equation at the top level: {listed}.",
            "The jaxpr has {n} equations at the top level: {listed}.",
            len(top),
        ).format(n=f"{len(top):,}", listed=listed)
        if top
        else _("The jaxpr has no equation: its outputs are its inputs or constants.")
    )
    inputs = {atom.name: i for i, atom in enumerate(staged.jaxpr.invars)}
    for eqn in top:
        if eqn.primitive != "convert_element_type" or not eqn.inputs:
            continue
        i = inputs.get(eqn.inputs[0].name)
        if i is None or i >= len(args):
            continue
        known = i < len(names) and names[i].isidentifier()  # a worker's names: identifiers only
        name = names[i] if known else _("arg {i}").format(i=i)
        found = re.search(r"new_dtype=(\w+)", eqn.params)
        new = found.group(1) if found else _("another dtype")
        weak_out = "weak_type=True" in eqn.params
        if args[i].weak:
            # A Python float is a scalar; a weak array of another shape is only typed like one.
            weak = (
                _(
                    "`{name}` is weakly typed (a Python float: float32, but the other operand's "
                    "dtype wins), so JAX converts it to a strongly typed {dtype} first: the "
                    "`convert_element_type`."
                )
                if args[i].shape == ()
                else _(
                    "`{name}` is weakly typed (as a Python float is: float32, but the other "
                    "operand's dtype wins), so JAX converts it to a strongly typed {dtype} "
                    "first: the `convert_element_type`."
                )
            )
            said = [weak.format(name=name, dtype=new)]
            if new == "float32":
                said.append(_("Staged as a float32 array it needs no conversion."))
        elif not _meets_an_operand(top, eqn):  # a cast, or an op that needs another type
            said = [
                _(
                    "`{name}` ({dtype}) is converted to {new} first: a conversion of this "
                    "argument alone (a cast, or an operation that takes {new}), not a promotion "
                    "between operands."
                ).format(name=name, dtype=args[i].dtype, new=new)
            ]
        elif weak_out:
            said = [
                _(
                    "`{name}` ({dtype}) is converted to {new} (weakly typed) first: JAX promotes "
                    "it to the other operand's type."
                ).format(name=name, dtype=args[i].dtype, new=new)
            ]
        elif any(a.dtype == new for j, a in enumerate(args) if j != i):
            said = [
                _(
                    "`{name}` ({dtype}) is converted to {new} first: JAX promotes it to the other "
                    "operand's type."
                ).format(name=name, dtype=args[i].dtype, new=new)
            ]
        else:  # bfloat16 with float16, int8 with uint8: both go up to a type neither has
            said = [
                _(
                    "`{name}` ({dtype}) is converted to {new} first: no argument has that type; "
                    "JAX promotes the operands to the smallest type on its promotion lattice "
                    "that holds them all."
                ).format(name=name, dtype=args[i].dtype, new=new)
            ]
        for sentence in said:  # sentences follow with a space in English, none in Chinese
            text = _("{text} {sentence}").format(text=text, sentence=sentence)
    return text

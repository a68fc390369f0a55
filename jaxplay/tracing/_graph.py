"""A jaxpr as a dataflow graph: equations are nodes, the variables between them are edges.

Why a graph beside the text: a jaxpr is a flat list of equations that name their inputs; which
equation feeds which, what runs independently and where a value fans out is only visible once
the names are followed. Control flow and calls (``pjit``, ``cond``, ``while``, ``scan``,
``custom_vjp_call``, ``remat``) hold whole jaxprs in their parameters: each such equation is one
box, and can be expanded into a cluster that shows its inner equations wired to the values outside.

The graph is Graphviz DOT text (Streamlit's ``st.graphviz_chart`` draws it in the browser, no system
Graphviz needed), built from the :class:`~jaxplay.tracing._jaxpr_tree.Block` tree, so it works the
same for a function staged in the server or in the code sandbox. It is capped: a jaxpr of thousands
of equations (an unrolled Python loop) would take the browser minutes to lay out; past the cap the
graph stops with a note saying how much was left out."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from jaxplay.core.i18n import _, ngettext
from jaxplay.tracing._jaxpr_tree import Atom, Block, Eqn, walk

#: Largest number of equation nodes drawn.
DEFAULT_MAX_NODES = 150
_FILL = "#e8f0fe"
_FILL_CALL = "#ede7f6"
_FILL_MARK = "#ffd54f"


@dataclass(frozen=True)
class JaxprGraph:
    """A drawn jaxpr.

    Attributes:
        dot: Graphviz DOT text.
        nodes: equation nodes drawn.
        total: equation nodes the chosen expansion needs (more than ``nodes`` when capped).
        edges: the edges drawn, as ``(from, to)`` node ids (``in:x``, ``eqn:3``, ``out:0``).
        truncated: whether the cap stopped the drawing.
        message: what the cap left out, for the page to show; ``None`` when nothing was.

    Its words (node labels, the message) are in the visitor's language: build it per run.
    """

    dot: str
    nodes: int
    total: int
    edges: tuple[tuple[str, str], ...]
    truncated: bool
    message: str | None


def expandable(block: Block) -> tuple[tuple[str, str], ...]:
    """Every equation that holds sub-jaxprs, as ``(path, label)`` (nested ones included; the
    label in the visitor's language)."""
    out = []
    for depth, eqn in walk(block):
        if eqn.subs:
            inner = sum(1 for _eqn in walk(Block((), (), (), (eqn,)))) - 1
            if eqn.source_line:
                label = _("{primitive} (eqn {path}, line {line}, {inner} inside)")
            else:
                label = _("{primitive} (eqn {path}, {inner} inside)")
            label = label.format(
                primitive=eqn.primitive, path=eqn.path, line=eqn.source_line, inner=inner
            )
            out.append((eqn.path, "› " * depth + label))
    return tuple(out)


def node_count(block: Block, expand: Collection[str] | bool = ()) -> int:
    """How many equation nodes drawing ``block`` with ``expand`` needs."""
    total = 0
    for eqn in block.eqns:
        total += 1
        if _expanded(eqn, expand):
            total += sum(node_count(sub.block, expand) for sub in eqn.subs)
    return total


def _expanded(eqn: Eqn, expand: Collection[str] | bool) -> bool:
    if not eqn.subs:
        return False
    return expand if isinstance(expand, bool) else eqn.path in expand


def _q(text: str) -> str:
    """A DOT double-quoted string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class _Drawer:
    def __init__(self, expand: Collection[str] | bool, max_nodes: int, mark: int | None) -> None:
        self.expand = expand
        self.budget = max_nodes
        self.mark = mark
        self.lines: list[str] = []
        self.edges: list[tuple[str, str]] = []
        self._edge_keys: set[tuple[str, str, str]] = set()
        self.producer: dict[str, str] = {}
        self.drawn = 0
        self.truncated = False

    def edge(self, src: str, dst: str, label: str, style: str = "solid") -> None:
        key = (src, dst, label)
        if key in self._edge_keys:
            return
        self._edge_keys.add(key)
        self.edges.append((src, dst))
        self.lines.append(f"{_q(src)} -> {_q(dst)} [label={_q(label)}, style={style}];")

    def node(self, node_id: str, label: str, fill: str, shape: str = "box") -> None:
        self.lines.append(
            f"{_q(node_id)} [label={_q(label)}, shape={shape}, fillcolor={_q(fill)}];"
        )

    def feed(self, inputs: tuple[Atom, ...], node_id: str, style: str = "solid") -> None:
        for atom in inputs:
            src = None if atom.literal else self.producer.get(atom.name)
            if src is not None:
                self.edge(src, node_id, atom.type, style)

    def block(self, block: Block, scope: str) -> None:
        for k, const in enumerate(block.constvars):
            node_id = f"const:{scope}{k}"
            self.node(node_id, _("const") + f"\n{const.type}", "#f5f5f5", shape="note")
            self.producer[const.name] = node_id
        for eqn in block.eqns:
            if self.budget <= 0:
                self.truncated = True
                return
            self.equation(eqn)

    def equation(self, eqn: Eqn) -> None:
        node_id = f"eqn:{eqn.path}"
        self.budget -= 1
        self.drawn += 1
        literals = [a.name for a in eqn.inputs if a.literal]
        label = eqn.primitive
        if eqn.params:
            label += f"\n{eqn.params}"
        if literals:
            label += "\n" + _("with {literals}").format(literals=", ".join(literals))
        if eqn.source_line is not None:
            label += "\n" + _("line {line}").format(line=eqn.source_line)
        fill = _FILL_MARK if self.mark is not None and eqn.source_line == self.mark else _FILL
        if _expanded(eqn, self.expand):
            fed: set[int] = set()
            for k, sub in enumerate(eqn.subs):
                for j, atom in enumerate(sub.block.invars):
                    b = sub.bind[j] if j < len(sub.bind) else None
                    if b is None or b >= len(eqn.inputs) or eqn.inputs[b].literal:
                        continue
                    src = self.producer.get(eqn.inputs[b].name)
                    if src is not None:
                        self.producer[atom.name] = src
                        fed.add(b)
                title = _q(f"{eqn.primitive} · {sub.param}")
                self.lines.append(
                    f"subgraph {_q(f'cluster:{eqn.path}:{k}')} {{ label={title}; "
                    'style="dashed,rounded"; color="#7e57c2"; fontsize=10;'
                )
                self.block(sub.block, f"{eqn.path}:{k}:")
                self.lines.append("}")
            results = label + "\n" + _("(results)")
            self.node(node_id, results, fill if fill == _FILL_MARK else _FILL_CALL)
            for sub in eqn.subs:
                self.feed(sub.block.outvars, node_id, "dashed")
            unfed = tuple(a for i, a in enumerate(eqn.inputs) if i not in fed)
            self.feed(unfed, node_id)
        else:
            if eqn.subs:
                inner = node_count(Block((), (), (), (eqn,)), True) - 1
                label += "\n⊞ " + ngettext(
                    "{n} equation inside", "{n} equations inside", inner
                ).format(n=inner)
                fill = fill if fill == _FILL_MARK else _FILL_CALL
            self.node(node_id, label, fill)
            self.feed(eqn.inputs, node_id)
        for atom in eqn.outputs:
            if atom.name != "_":
                self.producer[atom.name] = node_id


def build_graph(
    block: Block,
    *,
    expand: Collection[str] | bool = (),
    max_nodes: int = DEFAULT_MAX_NODES,
    arg_names: tuple[str, ...] = (),
    mark_line: int | None = None,
) -> JaxprGraph:
    """The DOT graph of ``block``.

    Arguments:
        block: the jaxpr (``Staged.jaxpr``).
        expand: paths of the equations whose sub-jaxprs are drawn as clusters (see
            :func:`expandable`), ``True`` for all, ``False``/empty for none.
        max_nodes: the cap on equation nodes; past it the drawing stops with a note.
        arg_names: names for the input nodes (``Staged.arg_names``); positions otherwise.
        mark_line: equations from this source line are filled in yellow.

    Returns:
        A :class:`JaxprGraph`.
    """
    drawer = _Drawer(expand, max_nodes, mark_line)
    total = node_count(block, expand)
    for i, atom in enumerate(block.invars):
        name = arg_names[i] if i < len(arg_names) and arg_names[i] else _("arg {i}").format(i=i)
        node_id = f"in:{i}"
        drawer.node(node_id, f"{name}\n{atom.type}", "#e0f2f1", shape="ellipse")
        drawer.producer[atom.name] = node_id
    drawer.block(block, "")
    for i, atom in enumerate(block.outvars):
        node_id = f"out:{i}"
        label = _("output {i}").format(i=i) + f"\n{atom.type}"
        label += f"\n= {atom.name}" if atom.literal else ""
        drawer.node(node_id, label, "#fce4ec", shape="ellipse")
        drawer.feed((atom,), node_id)
    message = None
    if drawer.truncated:
        left = total - drawer.drawn
        message = ngettext(
            "The graph is capped at {cap} equations: {left} of {total} is not drawn. "
            "Collapse sub-jaxprs or use smaller loop counts to see all of it.",
            "The graph is capped at {cap} equations: {left} of {total} are not drawn. "
            "Collapse sub-jaxprs or use smaller loop counts to see all of it.",
            left,
        ).format(cap=max_nodes, left=left, total=total)
        more = ngettext(
            "… {n} more equation not drawn", "… {n} more equations not drawn", left
        ).format(n=left)
        drawer.node("truncated", more, "#fff8e1", shape="note")
    header = [
        "digraph jaxpr {",
        "rankdir=TB;",
        'node [style="rounded,filled", fontname="Helvetica", fontsize=10, color="#9e9e9e"];',
        'edge [fontname="Helvetica", fontsize=8, color="#757575"];',
    ]
    dot = "\n".join([*header, *drawer.lines, "}"])
    return JaxprGraph(
        dot=dot,
        nodes=drawer.drawn,
        total=total,
        edges=tuple(drawer.edges),
        truncated=drawer.truncated,
        message=message,
    )

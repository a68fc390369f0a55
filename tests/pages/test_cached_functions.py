"""Cached functions return data: none calls a Streamlit element or something that could draw.

Streamlit replays a cached function's elements for the next caller; an element the function
wrote into a block created outside it (a progress bar, a status box) cannot be replayed and
crashes that next visitor's page (``CacheReplayClosureError``). So in ``app.py`` and every file of
``pages/`` (globbed, so a new page is checked too), a function decorated with ``st.cache_data``
or ``st.cache_resource`` may not call:

* anything from ``streamlit`` or ``pages`` (``st.progress``, ``_ui.measuring``, ...);
* a function of its own file that does (found transitively);
* one of its parameters, or a variable of an enclosing function (a closure), nor pass a
  parameter on as a callback (``on_progress=_progress``) or take a ``Callable`` parameter.

Progress is drawn by the page around the call. A measurement box's queue note and throttle
notice are the one exception: the box's turn is taken inside the cached function that needs the
lock (only a computation waits for it), so the box draws them there, unrecorded
(``_ui.not_replayed``); the last tests here check a second visitor's replay and that a cached
view never waits for another visitor's measurement.
"""

from __future__ import annotations

import ast
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from jaxplay.core import measure_lock, timing
from jaxplay.hosting import catalog
from tests.support.apptest import assert_clean, open_page

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted([ROOT / "app.py", *(ROOT / "pages").glob("*.py")])
DRAWING_PACKAGES = ("streamlit", "pages")
CACHES = ("cache_data", "cache_resource", "cached")  # _ui.cached: st.cache_data and the store
CALLBACK_KEYWORDS = ("callback", "progress", "status")


def _root(node: ast.AST) -> str | None:
    """The leftmost name of ``a.b.c`` or ``a().b``; ``None`` for anything else."""
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def drawing_imports(tree: ast.Module) -> set[str]:
    """Names the module binds to Streamlit or to the app's page helpers."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in DRAWING_PACKAGES:
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
            DRAWING_PACKAGES
        ):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def _calls(node: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Call)]


def drawing_functions(tree: ast.Module, drawing: set[str]) -> set[str]:
    """The module's own functions that call something that draws (transitively)."""
    functions = {
        n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    found: set[str] = set()
    while True:
        more = {
            name
            for name, fn in functions.items()
            if name not in found and any(_root(c.func) in drawing | found for c in _calls(fn))
        }
        if not more:
            return found
        found |= more


def _is_cache(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return isinstance(target, ast.Attribute) and target.attr in CACHES


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.arg]:
    a = fn.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg))]


def _enclosing_names(tree: ast.Module, target: ast.AST) -> set[str]:
    """Names bound in the functions around ``target`` (its closure's variables)."""
    names: set[str] = set()

    def visit(node: ast.AST, inside: list[ast.AST]) -> bool:
        if node is target:
            for fn in inside:
                names.update(p.arg for p in _parameters(fn))
                for n in ast.walk(fn):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                        names.add(n.id)
            return True
        scope = [*inside, node] if isinstance(node, (ast.FunctionDef, ast.Lambda)) else inside
        return any(visit(child, scope) for child in ast.iter_child_nodes(node))

    visit(tree, [])
    return names


def problems(source: str) -> list[str]:
    """What each cached function of ``source`` does that could draw, as readable lines."""
    tree = ast.parse(source)
    drawing = drawing_imports(tree)
    drawers = drawing_functions(tree, drawing)
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if not any(_is_cache(d) for d in fn.decorator_list):
            continue
        params = {p.arg for p in _parameters(fn)}
        closure = _enclosing_names(tree, fn) - params
        where = f"{fn.name} (line {fn.lineno})"
        for p in _parameters(fn):
            if p.annotation is not None and "Callable" in ast.unparse(p.annotation):
                found.append(f"{where} takes a callable parameter {p.arg}")
        for call in _calls(ast.Module(body=fn.body, type_ignores=[])):
            root, text = _root(call.func), ast.unparse(call.func)
            if root in drawing:
                found.append(f"{where} calls {text}, which draws")
            elif root in drawers:
                found.append(f"{where} calls {text}, a function of this page that draws")
            elif isinstance(call.func, ast.Name) and root in params:
                found.append(f"{where} calls its parameter {text}")
            elif root in closure:
                found.append(f"{where} calls {text} from the function around it (a closure)")
            for kw in call.keywords:
                passed = kw.value.id if isinstance(kw.value, ast.Name) else None
                callback = kw.arg and (kw.arg.startswith("on_") or kw.arg in CALLBACK_KEYWORDS)
                if passed in params | closure and callback:
                    found.append(f"{where} passes {passed} on as {kw.arg}, a callback")
    return found


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_cached_functions_draw_nothing(path: Path) -> None:
    found = problems(path.read_text(encoding="utf-8"))
    assert not found, "\n".join(found)


HEADER = "import streamlit as st\nfrom pages import _ui\nfrom jaxplay import vmap as vz\n"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (  # the crash of issue 17: a progress callback handed through the cache
            "@st.cache_data(max_entries=8)\n"
            "def batching(sizes, _progress=None):\n"
            "    return vz.time_batching(sizes, on_progress=_progress)\n",
            "passes _progress on as on_progress",
        ),
        (
            "@st.cache_data\ndef f(x):\n    st.progress(0.5)\n    return x\n",
            "calls st.progress, which draws",
        ),
        (
            "@st.cache_resource(max_entries=2)\n"
            "def f(x):\n    with _ui.measuring('x'):\n        return x\n",
            "calls _ui.measuring",
        ),
        ("@st.cache_data\ndef f(x, report):\n    report(x)\n    return x\n", "calls its parameter"),
        (
            "def note(text):\n    st.caption(text)\n\n"
            "def helper(x):\n    note(x)\n    return x\n\n"
            "@st.cache_data\ndef f(x):\n    return helper(x)\n",
            "calls helper, a function of this page that draws",
        ),
        (
            "def page():\n    bar = st.progress(0)\n\n"
            "    @st.cache_data\n    def f(x):\n        bar.progress(x)\n        return x\n",
            "calls bar.progress from the function around it",
        ),
        (
            "from collections.abc import Callable\n"
            "@st.cache_data\ndef f(x, done: Callable[[int], None]):\n    return x\n",
            "takes a callable parameter done",
        ),
    ],
)
def test_the_check_finds_what_could_draw(body: str, expected: str) -> None:
    found = problems(HEADER + body)
    assert any(expected in line for line in found), found


def test_the_check_passes_data_functions() -> None:
    source = HEADER + (
        "def label(x):\n    return f'{x}'\n\n"
        "@st.cache_data(max_entries=4, show_spinner='Working…')\n"
        "def f(sizes: tuple[int, ...], _visitor: str | None = None):\n"
        "    return vz.time_batching(sizes, visitor=_visitor, name=label(sizes))\n"
    )
    assert problems(source) == []


SLOW_STATE = {"state_seed": "4242", "state_steps": 20}  # settings no other test trains


@contextmanager
def another_measurement() -> Iterator[threading.Event]:
    """Another visitor measuring while the block runs: a thread holding the measurement lock
    until a caller queues behind it (the event it yields is then set) or the block ends."""
    held, done, queued = threading.Event(), threading.Event(), threading.Event()

    def hold() -> None:
        with measure_lock.exclusive():
            held.set()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not done.is_set():
                if measure_lock.waiting_count():
                    queued.set()
                    return
                time.sleep(0.01)

    thread = threading.Thread(target=hold)
    thread.start()
    assert held.wait(10)
    try:
        yield queued
    finally:
        done.set()
        thread.join(10)


def test_a_view_that_waited_its_turn_replays_cleanly_for_the_next_visitor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first visitor's training waits behind another measurement: their box says so from
    inside the cached function that took the turn. The next visitor with the same settings gets
    the cached result replayed, without that note (recorded, it crashed their page)."""
    from pages import _ui

    notes: list[int] = []
    original = _ui.queue_note
    monkeypatch.setattr(
        _ui, "queue_note", lambda slot, ahead: (notes.append(ahead), original(slot, ahead))
    )
    spec = catalog.find("state")
    with another_measurement():
        first = open_page(spec, **SLOW_STATE)
    assert_clean(first)
    assert notes == [1], "the first visitor never waited: the test checks nothing"
    second = open_page(spec, **SLOW_STATE)
    assert_clean(second)
    assert not [e for e in second.info if "in the queue" in str(e.value)]


@pytest.mark.parametrize(("address", "settings"), [("state", SLOW_STATE), ("memory", {})])
def test_a_cached_view_never_waits_for_another_visitors_measurement(
    address: str, settings: dict[str, object]
) -> None:
    """A view whose results are cached takes no turn: it renders while another visitor's
    measurement holds the lock (it waited for it, seconds in a room, and spent its throttle)."""
    spec = catalog.find(address)
    assert_clean(open_page(spec, **settings))  # computed (or cached already)
    with another_measurement() as queued:
        at = open_page(spec, **settings)
    assert_clean(at)
    assert not queued.is_set(), "the cached view queued behind another visitor's measurement"


def test_a_rerun_s_cached_function_resolves_its_return_type_once(monkeypatch) -> None:
    """A page defines its cached functions again on every rerun, from the same code: their
    return type (what the shared store may read back) is resolved the first time only."""
    from pages import _ui

    import types
    import typing

    def measured(n: int) -> timing.Timing:
        raise AssertionError("not called")

    resolved: list[object] = []
    real = typing.get_type_hints

    def counting(obj, *args, **kwargs):
        resolved.append(obj)
        return real(obj, *args, **kwargs)

    monkeypatch.setattr(typing, "get_type_hints", counting)
    monkeypatch.setattr(_ui, "_RETURNS", {})
    again = types.FunctionType(measured.__code__, measured.__globals__, "measured")
    again.__annotations__ = dict(measured.__annotations__)  # as the rerun's `def` sets them
    assert _ui._returns(measured) is timing.Timing
    assert _ui._returns(again) is timing.Timing
    assert resolved == [measured]


def test_equal_code_with_another_return_type_resolves_its_own(monkeypatch) -> None:
    """Code objects compare by their bytecode: two pages' functions of one body (or a return
    type edited while served) still get their own return types."""
    from pages import _ui

    monkeypatch.setattr(_ui, "_RETURNS", {})
    made = []
    for file, returns in (("a.py", "timing.Timing"), ("b.py", "timing.JitComparison")):
        scope: dict = {"timing": timing}
        exec(compile(f"def measured(n) -> {returns}:\n    return n\n", file, "exec"), scope)
        made.append(scope["measured"])
    assert _ui._returns(made[0]) is timing.Timing
    assert _ui._returns(made[1]) is timing.JitComparison

"""The vmap, tracing, PRNG, memory and devices pages: their cached functions return data and draw
nothing (Streamlit replays a cached call for the next visitor and crashes on an element drawn in
a block made outside it: the vmap page's Measure did, for every visitor after the first)."""

from __future__ import annotations

import ast

import pytest

from jaxplay.hosting import catalog

PAGES = ("vmap", "tracing", "prng", "memory", "devices")


def _cached_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                target = deco.func if isinstance(deco, ast.Call) else deco
                if ast.unparse(target) in ("st.cache_data", "st.cache_resource"):
                    found.append(node)
    return found


@pytest.mark.parametrize("name", PAGES)
def test_cached_functions_call_no_streamlit_element_and_take_no_callback(name: str) -> None:
    tree = ast.parse(catalog.find(name).file.read_text())
    cached = _cached_functions(tree)
    assert cached, f"{name}: no cached function found (the check would be empty)"
    for fn in cached:
        body = ast.Module(body=fn.body, type_ignores=[])  # the decorators are not the body
        for node in ast.walk(body):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                assert node.value.id != "st", f"{name}.{fn.name} calls st.{node.attr}"
        for arg in [*fn.args.args, *fn.args.kwonlyargs]:
            # Streamlit does not hash parameters named with a leading underscore: the way a
            # drawing callback sneaks in (the old vmap page's ``_progress``).
            assert not arg.arg.startswith("_") or arg.arg == "_visitor", (fn.name, arg.arg)

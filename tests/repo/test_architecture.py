"""The package's shape holds: layers import downwards only, topics stand alone, pages stay UI.

Layers, lowest first: ``core`` (the shared machinery) < ``hosting`` (settings, public mode, the
page registry) < ``sandbox`` (the runner) < ``article`` (the article's code) < the topics (one per
page: ``jit``, ``grad``, ..., ``code_lab``). A module imports its own package and lower layers,
never a higher one, and never another topic.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from jaxplay.hosting import catalog

JAXPLAY = catalog.ROOT / "jaxplay"
LAYERS = {"core": 0, "hosting": 1, "sandbox": 2, "article": 3}
TOPIC = 4
UI_FILES = [catalog.ROOT / "app.py", *sorted((catalog.ROOT / "pages").glob("*.py"))]


def _package(module: str) -> str:
    """``jaxplay.jit._lab`` -> ``jit``; ``jaxplay.code_lab`` -> ``code_lab``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer(package: str) -> int:
    return LAYERS.get(package, TOPIC)


def _module_name(path: Path) -> str:
    parts = path.relative_to(catalog.ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """``(module, imported names)`` of every import in the file, relative ones resolved."""
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join([*base, module] if module else base)
            found.append((module, [alias.name for alias in node.names]))
    return found


def _jaxplay_files() -> list[Path]:
    return sorted(JAXPLAY.rglob("*.py"))


def test_the_layers_are_what_the_tree_holds() -> None:
    """Every subpackage is a known layer or a page's topic (a new one is placed on purpose)."""
    topics = {spec.url_path.replace("-", "_") for spec in catalog.TOPICS} - {"article"}
    packages = {p.name for p in JAXPLAY.iterdir() if (p / "__init__.py").exists()}
    packages |= {p.stem for p in JAXPLAY.glob("*.py") if p.stem != "__init__"}
    assert packages == set(LAYERS) | topics


@pytest.mark.parametrize("path", _jaxplay_files(), ids=lambda p: str(p.relative_to(JAXPLAY)))
def test_imports_go_down_the_layers_and_topics_stand_alone(path: Path) -> None:
    here = _package(_module_name(path))
    for module, _ in _imports(path):
        if not module.startswith("jaxplay.") or module == "jaxplay":
            continue
        there = _package(module)
        if there == here:
            continue
        assert _layer(there) < _layer(here), f"{path.name} ({here}) imports {module}"


def test_core_imports_no_other_subpackage() -> None:
    for path in sorted((JAXPLAY / "core").rglob("*.py")):
        for module, _ in _imports(path):
            if module.startswith("jaxplay."):
                assert _package(module) == "core", f"{path.name} imports {module}"


def test_the_checks_above_can_fail() -> None:
    """A topic importing another topic, and a layer importing upwards, are both caught."""
    assert _layer(_package("jaxplay.grad._curves")) == _layer(_package("jaxplay.compose"))
    assert not _layer(_package("jaxplay.sandbox")) < _layer(_package("jaxplay.hosting.settings"))


def test_package_never_imports_streamlit() -> None:
    for path in _jaxplay_files():
        for module, _ in _imports(path):
            assert module.split(".")[0] != "streamlit", path


@pytest.mark.parametrize("path", UI_FILES, ids=lambda p: p.name)
def test_pages_import_no_jax_and_only_public_jaxplay(path: Path) -> None:
    """Pages are UI: no ``jax``/``jaxlib`` import, and jaxplay only by public names (gettext's
    ``_``, the translation of a message, is public by convention)."""
    for module, names in _imports(path):
        assert module.split(".")[0] not in {"jax", "jaxlib"}, f"{path.name} imports {module}"
        if module.split(".")[0] == "jaxplay":
            parts = [*module.split("."), *names]
            private = [p for p in parts if p.startswith("_") and p != "_"]
            assert not private, f"{path.name} imports {module} {names}"


@pytest.mark.parametrize("path", UI_FILES, ids=lambda p: p.name)
def test_pages_run_no_code_of_their_own(path: Path) -> None:
    """Visitors' code runs in the sandbox; pages never call ``exec`` or ``eval``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in {"eval", "exec"}, path.name


def test_no_module_is_long_without_a_reason() -> None:
    """A module over 600 lines says why at its top (a line starting ``Long:``)."""
    for path in _jaxplay_files():
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > 600:
            assert "\nLong: " in text[:3000], (
                f"{path.relative_to(JAXPLAY)} is long without a reason"
            )


@pytest.mark.parametrize("path", UI_FILES, ids=lambda p: p.name)
def test_pages_end_early_through_the_ui_helper(path: Path) -> None:
    """``st.stop()`` would drop ``app.py``'s note on a link's ignored parts: pages call
    ``_ui.stop()``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr == "stop":
            assert not (isinstance(node.value, ast.Name) and node.value.id == "st"), path.name


@pytest.mark.parametrize("path", UI_FILES, ids=lambda p: p.name)
def test_pages_name_what_they_import_from_jaxplay_as_it_is_named(path: Path) -> None:
    """``grad.curves`` on every page, never ``ad.curves`` on one: no alias for a jaxplay
    module, so a reader finds a name by searching for it."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jaxplay"):
            aliased = [a.name for a in node.names if a.asname and a.asname != a.name]
            assert not aliased, f"{path.name} renames {aliased} from {node.module}"


@pytest.mark.parametrize("path", UI_FILES, ids=lambda p: p.name)
def test_pages_switch_views_and_show_progress_one_way(path: Path) -> None:
    """Tabs come from ``_ui.lazy_tabs`` (views by label, only the open one runs), progress bars
    from ``_ui``'s measurement boxes and a sandbox run's box from ``_ui.sandbox_run``: no page
    calls ``st.tabs``, ``st.progress`` or ``st.status``, or reads a tab's ``.open`` itself (a
    file that draws nothing, such as the protocol client and the warm-up, is not checked)."""
    text = path.read_text(encoding="utf-8")
    if path.name == "_ui.py" or "import streamlit as st" not in text:
        return
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Attribute):
            on_st = isinstance(node.value, ast.Name) and node.value.id == "st"
            assert not (on_st and node.attr == "tabs"), f"{path.name} calls st.tabs"
            # Progress the one way too: _ui.measuring / measure_points / staged.
            assert not (on_st and node.attr == "progress"), f"{path.name} draws st.progress"
            assert not (on_st and node.attr == "status"), f"{path.name} draws st.status"
            assert node.attr != "open", f"{path.name} reads a tab's .open"


def test_benchmarks_import_nothing_from_the_tests() -> None:
    """Benchmarks stand on ``jaxplay``, their own helpers (``benchmarks/_browser.py``) and the
    app's protocol client (``pages/_visitor.py``); tests may use those, never the other way
    round."""
    for path in sorted((catalog.ROOT / "benchmarks").glob("*.py")):
        for module, _ in _imports(path):
            assert module.split(".")[0] != "tests", f"{path.name} imports {module}"


@pytest.mark.parametrize("path", UI_FILES, ids=lambda p: p.name)
def test_a_page_function_tells_one_story(path: Path) -> None:
    """A page function is one view or one step of one (about 60 lines at most): a longer one is
    several stories, or shapes data that belongs in ``jaxplay``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            assert lines <= 65, f"{path.name}: {node.name} is {lines} lines"


def _names_used(path: Path, package: str) -> set[str]:
    """The names of ``jaxplay.<package>`` a file uses: ``from jaxplay.<package> import X``,
    ``<package>.X`` (after ``from jaxplay import <package>``) and ``jaxplay.<package>.X``."""
    imported, packages, attributes, strings = _usage(path)
    aliases = {package} | {alias for name, alias in packages if name == package}
    used = set(imported.get(f"jaxplay.{package}", ()))
    used |= {attr for name, attr in attributes if name in aliases}
    return used | strings  # a name looked up by string (pages/prng.py's cached("..."))


@functools.cache
def _usage(
    path: Path,
) -> tuple[dict[str, set[str]], set[tuple[str, str]], set[tuple[str, str]], set[str]]:
    """What :func:`_names_used` reads of a file, parsed once for every package's test: names
    imported per module, ``from jaxplay import`` (name, alias) pairs, ``name.attr`` pairs, and
    string constants."""
    imported: dict[str, set[str]] = {}
    packages: set[tuple[str, str]] = set()
    attributes: set[tuple[str, str]] = set()
    strings: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.setdefault(node.module, set()).update(a.name for a in node.names)
            if node.module == "jaxplay":
                packages |= {(a.name, a.asname or a.name) for a in node.names}
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            attributes.add((node.value.id, node.attr))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.add(node.value)
    return imported, packages, attributes, strings


@pytest.mark.parametrize(
    "package",
    sorted(
        p.parent.name
        for p in JAXPLAY.glob("*/__init__.py")
        if p.parent.name not in {"core", "hosting"}
    ),
)
def test_a_packages_api_lists_only_names_someone_uses(package: str) -> None:
    """Each re-export of a package's ``__init__`` is used by a page, another package, a
    benchmark or a test: the API reads as what its users need, not every public name inside."""
    init = JAXPLAY / package / "__init__.py"
    exported = {
        alias.asname
        for node in ast.walk(ast.parse(init.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname
    }
    users = [
        *UI_FILES,
        *(p for p in _jaxplay_files() if p.parent.name != package),
        *(catalog.ROOT / "benchmarks").rglob("*.py"),
        *(catalog.ROOT / "tests").rglob("*.py"),
    ]
    used = set().union(*(_names_used(path, package) for path in users))
    used |= {  # and what the __init__ itself calls (sharp_bits' run, through run_variant)
        node.id
        for node in ast.walk(ast.parse(init.read_text(encoding="utf-8")))
        if isinstance(node, ast.Name)
    }
    assert sorted(exported - used) == []


def test_pages_are_short_stories() -> None:
    """The median page file is at most 200 lines (the hello demos are ~60; ``sharp-bits.py`` is
    the model): what a page lays out beyond its story goes in a ``pages/_*.py`` view helper, and
    what shapes data goes in ``jaxplay``."""
    lengths = sorted(
        len(page.file.read_text(encoding="utf-8").splitlines()) for page in catalog.PAGES
    )
    middle = len(lengths) // 2
    median = lengths[middle] if len(lengths) % 2 else (lengths[middle - 1] + lengths[middle]) / 2
    assert len(lengths) == len(list((catalog.ROOT / "pages").glob("[!_]*.py")))
    assert median <= 200, f"median page is {median} lines: {lengths}"

"""The Code Lab's editor (pages/_editor.py): the committed bundle matches its sources, and what
the page sends the editor (the code, when to replace it, the error line).

The editor itself (typing, Tab, Ctrl+Enter) is JavaScript: tests/browser/test_editor.py drives
it in chromium.
"""

from __future__ import annotations

from pages import _editor

import hashlib
import re
from pathlib import Path

import pytest

from jaxplay import article
from jaxplay.hosting import catalog
from tests.support.apptest import assert_clean, editor, open_page

SPEC = catalog.find("code-lab")
FRONTEND = catalog.ROOT / "frontend" / "code_editor"
HEADER = re.compile(
    r"/\*! jaxplay code editor, built by frontend/code_editor/build\.mjs; "
    r"sources-sha256: (?P<hash>[0-9a-f]{64}); bundles (?P<packages>[^*]+)\*/\n"
)


def sources_hash(root: Path = FRONTEND) -> str:
    """build.mjs's recipe: for each source file, sorted by its path relative to ``root``, the
    path, a NUL byte, the file's bytes with CRLF read as LF, a NUL byte."""
    paths = [root / "build.mjs", root / "package.json", root / "package-lock.json"]
    paths += [p for p in (root / "src").rglob("*") if p.is_file()]
    digest = hashlib.sha256()
    for rel in sorted(p.relative_to(root).as_posix() for p in paths):
        digest.update(rel.encode() + b"\0")
        digest.update((root / rel).read_bytes().replace(b"\r\n", b"\n"))
        digest.update(b"\0")
    return digest.hexdigest()


def test_committed_bundle_is_built_from_the_committed_sources() -> None:
    bundle = _editor.BUNDLE.read_text(encoding="utf-8")
    header = HEADER.match(bundle)
    assert header, f"{_editor.BUNDLE} has no build header: {bundle[:200]!r}"
    assert header["hash"] == sources_hash(), (
        "frontend/code_editor's sources changed without a rebuild: run "
        "`cd frontend/code_editor && npm ci && npm run build` and commit dist/"
    )
    # An ES module whose default export Streamlit calls, with the CodeMirror parts it needs.
    assert re.search(r"export\s*\{\s*\w+ as default\s*\}\s*;?\s*$", bundle)
    for package in ("@codemirror/view", "@codemirror/lang-python", "@codemirror/commands"):
        assert package in header["packages"]


def test_the_hash_sees_a_source_edit(tmp_path: Path) -> None:
    """The check above can fail: an edited source gives another hash."""
    copy = tmp_path / "code_editor"
    for rel in ("build.mjs", "package.json", "package-lock.json", "src/index.js", "src/theme.js"):
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_bytes((FRONTEND / rel).read_bytes())
    assert sources_hash(copy) == sources_hash()
    (copy / "src" / "theme.js").write_text((copy / "src" / "theme.js").read_text() + "\n// x\n")
    assert sources_hash(copy) != sources_hash()


def _run(at, source: str):  # type: ignore[no-untyped-def]
    at.session_state["code_lab_source"] = source
    at.run()
    at.button(key="code_lab_run").click().run()
    assert_clean(at)
    return at


def test_a_failed_run_marks_its_line_until_the_code_changes() -> None:
    at = open_page(SPEC)
    _run(at, "x = 1\ny = 2\nraise ValueError('boom')\n")
    assert editor(at)["error_line"] == 3
    at.run()
    assert editor(at)["error_line"] == 3, "the mark stays while the code is the code that ran"
    at.session_state["code_lab_source"] = "x = 1\n"
    at.run()
    assert editor(at)["error_line"] is None
    _run(at, "x = 1\n")
    assert editor(at)["error_line"] is None


def test_the_editor_is_refilled_only_when_the_page_changes_the_code() -> None:
    at = open_page(SPEC, code_lab_source="a = 1")
    first = editor(at)
    at.run()
    # Unchanged code: the same message, so the browser keeps its editor (and Streamlit can send
    # a reference instead of the bundle again).
    assert editor(at) == first
    at.button(key="code_lab_reset").click().run()
    reset = editor(at)
    assert reset["doc"] == article.by_id(article.DEFAULT_ID).source
    assert reset["revision"] == first["revision"] + 1


def test_without_the_bundle_a_text_area_stands_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_editor, "BUNDLE", _editor.BUNDLE.with_name("missing.js"))
    _editor._component.cache_clear()
    try:
        at = open_page(SPEC, code_lab_source="print('plain', 6 * 7)")
        assert_clean(at)
        assert not at.get("bidi_component")
        area = at.text_area(key="code_lab_editor")
        assert area.value == "print('plain', 6 * 7)"
        area.set_value("print('edited', 6 * 7)").run()
        assert at.session_state["code_lab_source"] == "print('edited', 6 * 7)"
        at.button(key="code_lab_run").click().run()
        assert "edited 42" in [c.value.strip() for c in at.code]
    finally:
        _editor._component.cache_clear()

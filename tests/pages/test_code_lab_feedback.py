"""The Code Lab says what happened: an edited snippet leaves its link, an empty Function box and a
refused Ctrl+Enter are explained, and the limits line says what this host enforces."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from jaxplay import code_lab
from jaxplay import sandbox as runner
from jaxplay.hosting import catalog, snippets
from jaxplay.sandbox import Limits, _process
from tests.sandbox.test_cgroups import fake_v2
from tests.support.apptest import APP_TIMEOUT_S, assert_clean, editor_text, open_page

LAB = catalog.find("code-lab")


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A snippet in a fresh SQLite store: (its id, its code)."""
    location = str(tmp_path / "snippets.sqlite3")
    monkeypatch.setenv("JAXPLAY_SNIPPET_DB", location)
    code = "import jax.numpy as jnp\nshared = jnp.arange(3)\n"
    store = snippets.SnippetStore(location)
    snippet_id = store.save(code, visitor="tester").snippet.id
    store.close()
    return snippet_id, code


def param(at: AppTest, name: str) -> str | None:
    """A query parameter's value (AppTest keeps a link's as lists, the script's as strings)."""
    value = at.query_params.get(name)
    return value[-1] if isinstance(value, list) else value


def _open_link(params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(catalog.ROOT / "app.py"), default_timeout=APP_TIMEOUT_S)
    at.run()
    at.query_params.update(params)
    at.switch_page(LAB.path)
    at.run()
    return at


def test_editing_a_loaded_snippet_drops_it_from_the_address(shared: tuple[str, str]) -> None:
    snippet_id, code = shared
    at = _open_link({"snippet": snippet_id})
    assert_clean(at)
    assert editor_text(at) == code
    assert param(at, "snippet") == snippet_id
    at.run()  # another run without an edit keeps the link
    assert param(at, "snippet") == snippet_id

    # What the editor's on_change does when the visitor's edits reach Python.
    at.session_state["code_lab_source"] = code + "shared * 2\n"
    at.run()
    assert_clean(at)
    assert "snippet" not in at.query_params
    assert editor_text(at) == code + "shared * 2\n"  # the edits stay in the session


def test_an_empty_function_box_says_why_and_what_to_pick() -> None:
    at = open_page(LAB, code_lab_source="x = 1 + 1\n", code_lab_inspectors=["jaxpr"])
    assert_clean(at)
    assert at.selectbox(key="code_lab_function").value is None
    captions = " ".join(c.value for c in at.caption)
    assert "defines no function at its top level" in captions
    warnings = [w.value for w in at.warning]
    assert any("the Function box is empty because the code defines" in w for w in warnings)

    # A def at the top, and a missing ")" below: the code does not parse, which is why.
    broken = "def f(x):\n    return x\n\ny = f(1\n"
    at = open_page(LAB, code_lab_source=broken, code_lab_inspectors=["jaxpr"])
    assert_clean(at)
    captions = " ".join(c.value for c in at.caption)
    assert "the code does not parse (line" in captions and "defines no function" not in captions
    assert any("does not parse" in w.value for w in at.warning)

    at = open_page(LAB, code_lab_source="def f(x):\n    return x\n", code_lab_inspectors=["jaxpr"])
    assert at.selectbox(key="code_lab_function").value == "f"
    assert not any("Function box" in w.value for w in at.warning)
    assert "defines no function" not in " ".join(c.value for c in at.caption)


def test_ctrl_enter_on_a_server_that_refuses_runs_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner.shutdown()
    monkeypatch.setenv("JAXPLAY_PUBLIC", "1")
    monkeypatch.setenv("JAXPLAY_SANDBOX", "process")
    try:
        at = open_page(LAB)
        assert not any("did not run" in w.value for w in at.warning)
        # What the editor sends on Ctrl/Cmd+Enter: the trigger ``run`` with its text.
        at.session_state["code_lab_editor"] = {"run": "print(1)"}
        at.run()
        assert_clean(at)
        said = [w.value for w in at.warning if "Ctrl/⌘+Enter did not run" in w.value]
        assert said and "JAXPLAY_PUBLIC" in said[0], [w.value for w in at.warning]
        assert "code_lab_result" not in at.session_state
    finally:
        runner.shutdown()


def _pool(isolated: bool, cgroups: _process.Cgroups, scratch_mb: int = 64) -> SimpleNamespace:
    limits = Limits(scratch_mb=scratch_mb)
    return SimpleNamespace(
        config=SimpleNamespace(limits=limits),
        isolated=isolated,
        cgroups=cgroups,
        worker_kind=lambda: "a fresh interpreter per run",
    )


def test_the_limits_line_says_what_the_kernel_enforces_here(tmp_path: Path) -> None:
    root, proc = fake_v2(tmp_path)
    v2 = _process.Cgroups(fs_root=root, proc_cgroup=proc)
    none = _process.Cgroups(fs_root=tmp_path / "no-cgroups", proc_cgroup=proc)
    assert v2.available and not none.available

    line = code_lab.describe_limits(_pool(True, v2, scratch_mb=64))
    assert "64 MB each for the in-memory /tmp and /dev/shm" in line
    assert "enforced by: cgroup v2: memory" in line
    assert "bubblewrap sandbox" in line
    assert "bubblewrap sandbox · a fresh interpreter per run · " in line

    line = code_lab.describe_limits(_pool(True, none, scratch_mb=128))
    assert "128 MB each for the in-memory /tmp and /dev/shm" in line
    assert "enforced by: no cgroups here: address-space and process rlimits" in line
    assert "cgroup v" not in line

    line = code_lab.describe_limits(_pool(False, none))
    assert "/dev/shm" not in line  # no sized file systems without bubblewrap
    assert line.endswith("no cgroups here: address-space and process rlimits")
    assert "no network" not in line


def test_the_page_shows_the_limits_line_of_its_pool() -> None:
    at = open_page(LAB)
    shown = [c.value for c in at.caption if "Each run:" in c.value]
    assert shown and code_lab.describe_limits() in shown[0]
    assert "enforced by:" in shown[0]


def test_the_intro_says_what_a_run_can_reach_with_this_servers_sandbox() -> None:
    """A server outside public mode may run code as a plain process: the page's first sentence
    must not promise a sandbox there. Checked against a real run: a plain process reads the
    server's files."""
    none = _process.Cgroups(fs_root=Path("/nonexistent"), proc_cgroup=Path("/nonexistent"))
    assert "can read the server's files" in code_lab.intro(_pool(False, none))
    assert "nothing you run can reach" in code_lab.intro(_pool(True, none))
    app = catalog.ROOT / "app.py"
    pool = runner.WorkerPool(runner.RunnerConfig(sandbox="process", spares=0))
    try:
        assert not pool.isolated
        r = pool.run(f"print(open({str(app)!r}).readline())")
        assert r.ok and r.stdout.strip(), (r.error, r.stderr[-300:])
    finally:
        pool.shutdown()


def test_the_page_opens_with_the_intro_of_its_pool() -> None:
    at = open_page(LAB)
    assert code_lab.intro() in [c.value for c in at.caption]

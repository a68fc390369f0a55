"""The bwrap command mounts the private /tmp before the interpreter and package binds.

A CI checkout (and its .venv) can live under /tmp: mounted after them, the tmpfs would hide
the interpreter and no worker could start.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from jaxplay.sandbox import _process as sandbox


def test_python_and_package_binds_come_after_the_tmpfs(monkeypatch: pytest.MonkeyPatch) -> None:
    venv = "/tmp/ci-clone/project/.venv"
    monkeypatch.setattr(sandbox, "_python_paths", lambda: [venv])
    monkeypatch.setattr(sandbox, "ROOT", Path("/tmp/ci-clone/project"))
    cmd = sandbox.BwrapSandbox()._command(["python", "-c", "pass"], {}, None)
    tmpfs = cmd.index("--tmpfs")
    assert cmd[tmpfs + 1] == "/tmp"
    binds = [i for i, a in enumerate(cmd) if a == "--ro-bind" and cmd[i + 1].startswith("/tmp/")]
    assert {cmd[i + 1] for i in binds} == {venv, "/tmp/ci-clone/project/jaxplay"}
    assert all(i > tmpfs for i in binds)
    # The run works in its own empty folder, not beside those mount points.
    assert cmd[cmd.index("--chdir") + 1] == sandbox.SANDBOX_WORKDIR != "/tmp"
    assert cmd[cmd.index("--dir") + 1] == sandbox.SANDBOX_WORKDIR

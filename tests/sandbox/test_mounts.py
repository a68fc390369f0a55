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


#: Two user namespaces deep, as a run is (bubblewrap's, then the run's own): a ``noexec`` mount
#: made in the outer one has that flag locked in the inner one, where a read-only remount that
#: dropped it would be refused.
NESTED_BIND = """
import errno, json, os, tempfile
from jaxplay.sandbox import _namespaces as ns
if ns.probe() is not None:
    print(json.dumps({"skip": ns.probe()}))
    raise SystemExit
def new_user_and_mounts():
    uid, gid = os.geteuid(), os.getegid()
    ns.unshare(0x10000000 | 0x00020000)  # CLONE_NEWUSER | CLONE_NEWNS
    ns._write("/proc/self/setgroups", "deny")
    ns._write("/proc/self/uid_map", f"{uid} {uid} 1")
    ns._write("/proc/self/gid_map", f"{gid} {gid} 1")
    ns.private_mounts()
new_user_and_mounts()
base = tempfile.mkdtemp()
ns.mount("tmpfs", base, "tmpfs", ns.MS_NOSUID | ns.MS_NODEV | ns.MS_NOEXEC, "size=1m")
source, target = os.path.join(base, "cache"), os.path.join(base, "seen")
os.makedirs(source)
open(os.path.join(source, "entry"), "w").write("compiled")
new_user_and_mounts()
ns.bind_read_only(source, target)
seen = {"read": open(os.path.join(target, "entry")).read()}
try:
    open(os.path.join(target, "planted"), "w")
    seen["write"] = "written"
except OSError as exc:
    seen["write"] = errno.errorcode[exc.errno]
seen["noexec"] = bool(os.statvfs(target).f_flag & os.ST_NOEXEC)
print(json.dumps(seen))
"""


def test_a_read_only_bind_keeps_the_flags_a_user_namespace_cannot_drop() -> None:
    """The fork server binds its warm-up cache read-only into each run; where /tmp is mounted
    ``noexec`` (locked for the run's user namespace) the remount keeps that flag, or the
    kernel would refuse it and no run would start."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(sandbox.ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", NESTED_BIND], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    if "skip" in seen:
        pytest.skip(f"no user namespaces here: {seen['skip']}")
    assert seen == {"read": "compiled", "write": "EROFS", "noexec": True}


def test_only_a_zygotes_own_warm_up_cache_in_tmp_is_removed(tmp_path: Path) -> None:
    """Without bubblewrap the server removes the zygote's cache directory with the zygote; it
    removes nothing that is not one: elsewhere, a link, another name."""
    import os
    import tempfile

    from jaxplay.sandbox._forkserver import _our_warm_up_cache

    real = tempfile.mkdtemp(prefix="jaxplay-warm-up-", dir="/tmp")
    link = f"/tmp/jaxplay-warm-up-link-{os.getpid()}"
    os.symlink(tmp_path, link)
    try:
        assert _our_warm_up_cache(real)
        assert not _our_warm_up_cache(link)
        assert not _our_warm_up_cache(str(tmp_path / "jaxplay-warm-up-x"))
        assert not _our_warm_up_cache(tempfile.mkdtemp(prefix="other-", dir=tmp_path))
        assert not _our_warm_up_cache("/tmp/jaxplay-warm-up-missing")
    finally:
        os.rmdir(real)
        os.unlink(link)

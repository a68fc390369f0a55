"""Linux namespaces, mounts and capabilities through ``libc`` (Python 3.11 has no ``os.unshare``).

Why: the fork server (:mod:`jaxplay.sandbox._zygote`) gives every forked run the isolation
bubblewrap gives an exec'd worker — its own user, PID, mount, IPC, UTS and network namespaces, a
fresh ``/proc``, sized in-memory ``/tmp`` and ``/dev/shm`` — without a new interpreter. This
module only wraps the system calls; it imports nothing of JAX, so the probe that checks whether a
host allows all this (:func:`probe`) costs a few milliseconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import socket
import struct
from functools import cache

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
#: Every namespace a run gets of its own.
RUN_NAMESPACES = (
    CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWUTS
)

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_RELATIME = 1 << 21
#: ``statvfs`` flags a remount must keep (a user namespace may not drop them: they are locked),
#: with the mount flag of each, as bubblewrap carries them over.
_KEPT_FLAGS = (
    (os.ST_NOSUID, MS_NOSUID),
    (os.ST_NODEV, MS_NODEV),
    (os.ST_NOEXEC, MS_NOEXEC),
    (os.ST_NOATIME, MS_NOATIME),
    (os.ST_NODIRATIME, MS_NODIRATIME),
    (os.ST_RELATIME, MS_RELATIME),
)

CAP_SYS_ADMIN = 21
CAP_SETFCAP = 31
_LAST_CAP = 63
_PR_SET_PDEATHSIG = 1
_MNT_DETACH = 2
_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_CAP_VERSION_3 = 0x20080522

#: Subdirectories of a fresh ``/proc`` made read-only, as bubblewrap does (writing some of them
#: as host root would reach the host: ``sysrq-trigger``, ``sys/kernel/core_pattern``).
COVERED_PROC = ("sys", "sysrq-trigger", "irq", "bus")


@cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def unshare(flags: int) -> None:
    """``unshare(2)``: move this process into new namespaces."""
    _check(_libc().unshare(flags), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    """``mount(2)``; raises ``OSError`` naming the target."""
    enc = [None if s is None else s.encode() for s in (source, target, fstype)]
    _check(_libc().mount(enc[0], enc[1], enc[2], flags, data.encode() or None), f"mount {target}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def enter_run_namespaces() -> None:
    """New namespaces for one run, this process's own ids mapped to themselves inside.

    The next child this process forks is PID 1 of the new PID namespace.
    """
    uid, gid = os.geteuid(), os.getegid()
    unshare(RUN_NAMESPACES)
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def mount_tmpfs(target: str, size_bytes: int, mode: str = "1777") -> None:
    os.makedirs(target, exist_ok=True)
    mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size_bytes},mode={mode}")


def mount_proc() -> None:
    """A fresh ``/proc`` of this PID namespace, with :data:`COVERED_PROC` made read-only."""
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for name in COVERED_PROC:
        path = f"/proc/{name}"
        if os.path.exists(path):
            mount(path, path, None, MS_BIND | MS_REC)
            mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def private_mounts() -> None:
    """Stop mount events propagating between this mount namespace and its parent."""
    mount("none", "/", None, MS_REC | MS_PRIVATE)


def bind_fd(fd: int, target: str) -> None:
    """Bind the directory open as ``fd`` (``O_PATH``) onto ``target`` (keeps its read-only-ness)."""
    os.makedirs(target, exist_ok=True)
    mount(f"/proc/self/fd/{fd}", target, None, MS_BIND)


def bind_read_only(source: str, target: str) -> None:
    """Bind ``source`` (a path, or ``/proc/self/fd/N`` of an ``O_PATH`` handle) onto ``target``
    read-only: what runs here can read it and, without capabilities, never remount it."""
    os.makedirs(target, exist_ok=True)
    mount(source, target, None, MS_BIND | MS_REC)
    try:
        have = os.statvfs(target).f_flag
        kept = sum(flag for st, flag in _KEPT_FLAGS if have & st)
        mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | kept)
    except OSError:
        # Never leave it bound writable.
        _check(_libc().umount2(target.encode(), _MNT_DETACH), "umount2")
        raise


def loopback_up() -> None:
    """Bring ``lo`` up in this network namespace (bubblewrap does too); no other interface."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
        req = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, siocgifflags, req))[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))


def set_hostname(name: str) -> None:
    data = name.encode()
    _check(_libc().sethostname(data, len(data)), "sethostname")


def die_with_parent(signum: int = 9) -> None:
    """``PR_SET_PDEATHSIG``: the kernel sends ``signum`` when the parent thread ends."""
    _check(_libc().prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0), "prctl(PDEATHSIG)")


def not_dumpable() -> None:
    """``PR_SET_DUMPABLE 0``: processes without ``CAP_SYS_PTRACE`` cannot ptrace this one or
    read its ``/proc`` files."""
    _check(_libc().prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(DUMPABLE)")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def set_capabilities(keep: tuple[int, ...] = (), bounding: bool = True) -> None:
    """Keep only ``keep`` (effective and permitted), nothing inheritable or ambient.

    ``bounding``: also empty the bounding set where allowed (it needs ``CAP_SETPCAP``), so
    that no later ``exec`` of a set-user-ID file gains a capability; ``no_new_privs`` is set
    either way.
    """
    libc = _libc()
    if bounding:
        for cap in range(_LAST_CAP + 1):
            if cap not in keep:
                libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # EPERM without CAP_SETPCAP: fine
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    for cap in keep:
        word, bit = divmod(cap, 32)
        data[word].effective |= 1 << bit
        data[word].permitted |= 1 << bit
    _check(libc.capset(ctypes.byref(header), data), "capset")
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")


def prepare_zygote() -> None:
    """Make a zygote able to give each run a fresh ``/proc``, then drop what made it able.

    A fresh ``/proc`` may be mounted in a nested user namespace only if the parent mount
    namespace has one that nothing covers, and bubblewrap (run by root) covers four of its
    directories. So a zygote started with ``CAP_SYS_ADMIN`` stacks an uncovered ``/proc`` over
    bubblewrap's (its runs each mount their own, covered, over it) and gives the capability up
    before it imports anything. Mapping uid 0 into a run's user namespace needs ``CAP_SETFCAP``
    at the ``unshare``, so a zygote running as root keeps that one (it never runs visitor code;
    every run drops all of its own). Without the capabilities (no bubblewrap, or one that
    covered nothing) this does nothing.
    """
    with contextlib.suppress(OSError):
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    keep = (CAP_SETFCAP,) if os.geteuid() == 0 and _has_capability(CAP_SETFCAP) else ()
    with contextlib.suppress(OSError):
        set_capabilities(keep, bounding=False)


def _has_capability(cap: int) -> bool:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> cap & 1)
    except (OSError, ValueError):
        pass
    return False


def probe() -> str | None:
    """Whether a run's namespaces can be made here: ``None`` if so, else the reason.

    Forks a child that does what a run's first two processes do (new namespaces, a fresh
    ``/proc``, sized tmpfs) and exits.
    """
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        message = b""
        try:
            enter_run_namespaces()
            inner = os.fork()
            if inner == 0:
                try:
                    private_mounts()
                    mount_proc()
                    mount_tmpfs("/dev/shm", 1 << 20)
                    os._exit(0 if os.getpid() == 1 else 3)
                except OSError as exc:
                    os.write(write, str(exc).encode()[:500])
                    os._exit(2)
            _, status = os.waitpid(inner, 0)
            os._exit(os.waitstatus_to_exitcode(status))
        except OSError as exc:
            message = str(exc).encode()[:500]
        os.write(write, message or b"failed")
        os._exit(1)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as f:
        said = f.read().decode("utf-8", "replace")
    if os.waitstatus_to_exitcode(status) == 0:
        return None
    return said or f"exit status {os.waitstatus_to_exitcode(status)}"

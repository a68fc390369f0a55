"""A quiet machine for the few tests that time a bystander: no other xdist worker runs a test
while one of them does.

Every test holds a shared lock on one file for its duration; a ``quiet`` test holds it
exclusively. A turnstile lock taken first by both kinds keeps the exclusive one from starving
(``flock`` is not fair: the other worker would take its shared lock again between two tests).

Quiet tests that follow one another on a worker (a parametrized test's cases) keep the machine
between them: each wait for the other worker's current test to end leaves a core idle, and
releasing between two quiet cases bought that wait again for every case (about 25 s of setup
over six cases, one core idle meanwhile).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class MachineShare:
    """This worker's hold on the machine: none, shared with the other workers, or alone."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.held: tuple[int, int] | None = None
        self.alone = False

    def take(self, exclusive: bool) -> None:
        """Hold the machine with the other workers, or (``exclusive``) alone; a worker already
        alone that asks to be alone again keeps its hold without waiting."""
        if self.held is not None and exclusive and self.alone:
            return
        self.release()
        turnstile = os.open(self.folder / "quiet.turnstile", os.O_CREAT | os.O_RDWR, 0o600)
        share = os.open(self.folder / "quiet.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(turnstile, fcntl.LOCK_EX)
            try:
                fcntl.flock(share, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            finally:
                if not exclusive:
                    fcntl.flock(turnstile, fcntl.LOCK_UN)
        except BaseException:
            os.close(share)
            os.close(turnstile)
            raise
        self.held, self.alone = (turnstile, share), exclusive

    def release(self) -> None:
        """Let the other workers go on (closing the files releases both locks)."""
        if self.held is not None:
            for fd in self.held:
                os.close(fd)
            self.held, self.alone = None, False

"""A quiet machine for the few tests that time a bystander: no other xdist worker runs a test
while one of them does.

Every test holds a shared lock on one file for its duration; a ``quiet`` test holds it
exclusively. A turnstile lock taken first by both kinds keeps the exclusive one from starving
(``flock`` is not fair: the other worker would take its shared lock again between two tests).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def machine_share(folder: Path, exclusive: bool) -> Iterator[None]:
    """Hold the machine with the other workers (``exclusive``: alone) while the block runs."""
    turnstile = os.open(folder / "quiet.turnstile", os.O_CREAT | os.O_RDWR, 0o600)
    share = os.open(folder / "quiet.lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(share, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            if not exclusive:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
        yield
    finally:
        os.close(share)  # closing releases both locks
        os.close(turnstile)

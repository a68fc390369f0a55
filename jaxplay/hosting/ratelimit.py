"""Per-visitor rate limits for a server that a whole room shares.

In public mode one visitor pressing "Run" or "Benchmark" in a loop must not starve the others.
A token bucket per visitor allows short bursts (``capacity``) and a steady rate
(``capacity / per_seconds``); it refuses with the time to wait rather than queueing, so the page
can say "try again in 4 s". Buckets of visitors not seen for a while are dropped so the table
stays bounded however many people pass through.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """A thread-safe token bucket per visitor id.

    Arguments:
        capacity: the largest burst allowed.
        per_seconds: the time in which a full bucket refills.
        clock: a monotonic clock (tests pass a fake one).
        max_visitors: buckets kept; the least recently used are dropped beyond it.
    """

    def __init__(
        self,
        capacity: int,
        per_seconds: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_visitors: int = 10_000,
    ) -> None:
        if capacity < 1 or per_seconds <= 0:
            raise ValueError("capacity must be >= 1 and per_seconds > 0")
        self.capacity = capacity
        self.rate = capacity / per_seconds
        self.clock = clock
        self.max_visitors = max_visitors
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def try_acquire(self, visitor: str) -> float:
        """Take one token for ``visitor``: 0.0 if allowed, else the seconds until one is free."""
        now = self.clock()
        with self._lock:
            bucket = self._buckets.pop(visitor, None) or _Bucket(float(self.capacity), now)
            bucket.tokens = min(self.capacity, bucket.tokens + (now - bucket.updated) * self.rate)
            bucket.updated = now
            self._buckets[visitor] = bucket  # re-inserted: dict order is recency order
            if len(self._buckets) > self.max_visitors:
                del self._buckets[next(iter(self._buckets))]
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return 0.0
            return (1.0 - bucket.tokens) / self.rate

    def refund(self, visitor: str) -> None:
        """Give back a token taken by :meth:`try_acquire` for work that did not start."""
        with self._lock:
            bucket = self._buckets.get(visitor)
            if bucket is not None:
                bucket.tokens = min(float(self.capacity), bucket.tokens + 1.0)

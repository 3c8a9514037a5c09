"""Per-token request rate limits: a token bucket for each cluster token.

A bucket holds up to `burst` requests and refills at `per_second`; a request that finds it empty
is refused `rate-limited` (429) with the seconds until one fits as `Retry-After`. Buckets live in
memory, one per cluster that has made a request (so their number is bounded by the clusters),
and count wall-clock time whatever the market clock does.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from burstmarket.errors import RateLimited


class RateLimits:
    def __init__(
        self, per_second: float, burst: int, now: Callable[[], float] = time.monotonic
    ) -> None:
        self.per_second = per_second
        self.burst = burst
        self._now = now
        self._buckets: dict[str, tuple[float, float]] = {}
        """key -> (requests left, when that was counted)."""
        self._lock = threading.Lock()  # handlers run on the event loop and in worker threads

    def take(self, key: str) -> None:
        """Count one request of `key`; RateLimited when its bucket is empty."""
        if self.per_second <= 0:
            return
        with self._lock:
            now = self._now()
            left, then = self._buckets.get(key, (float(self.burst), now))
            left = min(float(self.burst), left + (now - then) * self.per_second)
            if left < 1:
                self._buckets[key] = (left, now)
                wait = max(1, math.ceil((1 - left) / self.per_second))
                raise RateLimited(wait, limit_per_second=self.per_second, burst=self.burst)
            self._buckets[key] = (left - 1, now)

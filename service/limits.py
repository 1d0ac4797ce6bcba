"""A per-client rate limit: a sliding window of query times per client address."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable


class RateLimit:
    """At most ``per_minute`` queries per client in any 60 seconds."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self.clock = clock
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def allow(self, client: str) -> bool:
        """Count a query of ``client``; False when it is over the limit (not counted then)."""
        now = self.clock()
        with self._lock:
            times = self._seen.setdefault(client, deque())
            while times and now - times[0] >= 60.0:
                times.popleft()
            if len(times) >= self.per_minute:
                return False
            times.append(now)
            return True

"""The last hour of searches and calls, minute by minute: what the dashboard's activity page charts.

    recent = RecentActivity()
    recent.called("weather", "ok", 0.120)         # counted where /metrics counts it (GatewayMetrics)
    recent.minutes("weather")                     # 60 Minute values, oldest first, empty ones included

Prometheus counters only grow; a chart of the last hour needs what happened in each minute. The
buckets are kept in memory, at most `window` minutes per server, so the cost is bounded whatever
the traffic.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Minute", "REFUSED", "RecentActivity", "SEARCHES"]

# The rows of searches and of calls refused before an upstream beside the servers' rows (not
# valid server names: they have spaces).
SEARCHES = "all searches"
REFUSED = "refused calls"
_WINDOW = 60


@dataclass(frozen=True)
class Minute:
    """One minute of one server (or of searches): how many calls, how many did not end well
    (`error` or `failed`, as /metrics labels them), and their total seconds."""

    start: float
    calls: int = 0
    errors: int = 0
    seconds: float = 0.0

    @property
    def mean_ms(self) -> float:
        return self.seconds / self.calls * 1000 if self.calls else 0.0


class RecentActivity:
    def __init__(self, window: int = _WINDOW, clock: Callable[[], float] = time.time) -> None:
        self.window = window
        self._clock = clock
        # server -> {minute number: [calls, errors, seconds]}, oldest minute first.
        self._buckets: dict[str, OrderedDict[int, list[float]]] = {}

    def called(self, server: str, outcome: str, seconds: float) -> None:
        self._add(server, outcome != "ok", seconds)

    def searched(self, seconds: float) -> None:
        self._add(SEARCHES, False, seconds)

    def refused(self) -> None:
        """A call refused before it reached an upstream (`toolscout.serving.call_policies`): each is
        one that did not end well."""
        self._add(REFUSED, True, 0.0)

    def _add(self, row: str, failed: bool, seconds: float) -> None:
        minute = int(self._clock() // 60)
        buckets = self._buckets.setdefault(row, OrderedDict())
        bucket = buckets.setdefault(minute, [0, 0, 0.0])
        bucket[0] += 1
        bucket[1] += 1 if failed else 0
        bucket[2] += seconds
        while buckets and next(iter(buckets)) <= minute - self.window:
            buckets.popitem(last=False)

    def rows(self) -> list[str]:
        """Servers with a call in the window (searches first when there were any)."""
        now = int(self._clock() // 60)
        active = [row for row, buckets in self._buckets.items() if any(m > now - self.window for m in buckets)]
        return sorted(active, key=lambda row: (row != SEARCHES, row))

    def minutes(self, row: str) -> list[Minute]:
        """The last `window` minutes of `row`, oldest first (minutes without calls included)."""
        now = int(self._clock() // 60)
        buckets = self._buckets.get(row, {})
        return [
            Minute(minute * 60.0, int(b[0]), int(b[1]), b[2]) if (b := buckets.get(minute)) else Minute(minute * 60.0)
            for minute in range(now - self.window + 1, now + 1)
        ]

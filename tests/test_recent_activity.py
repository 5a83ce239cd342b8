"""The last hour of calls, minute by minute, that the dashboard's activity page charts."""

from __future__ import annotations

from toolscout.serving.recent import SEARCHES, RecentActivity


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000 * 60.0

    def __call__(self) -> float:
        return self.now


def test_calls_are_counted_per_minute_for_the_last_hour_and_older_ones_drop_out() -> None:
    clock = Clock()
    recent = RecentActivity(clock=clock)
    recent.called("weather", "ok", 0.2)
    recent.called("weather", "error", 0.4)
    recent.searched(0.01)
    clock.now += 120
    recent.called("weather", "failed", 1.0)
    minutes = recent.minutes("weather")
    assert len(minutes) == 60
    assert (minutes[-3].calls, minutes[-3].errors, round(minutes[-3].mean_ms)) == (2, 1, 300)
    assert (minutes[-1].calls, minutes[-1].errors) == (1, 1)
    assert sum(m.calls for m in minutes[:-3]) == 0
    assert recent.rows() == [SEARCHES, "weather"]
    clock.now += 59 * 60
    assert sum(m.calls for m in recent.minutes("weather")) == 1
    assert recent.rows() == ["weather"]
    clock.now += 60
    assert recent.rows() == [] and sum(m.calls for m in recent.minutes("weather")) == 0

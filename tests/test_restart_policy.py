"""When a supervised upstream is started again, and when the supervisor gives up on it.

The gateway tests prove restarts and give-ups happen to real processes
(test_gateway_supervision.py, test_gateway_lifecycle.py); these prove the schedule itself, which
would take minutes of real failures to observe.
"""

from __future__ import annotations

from toolscout.upstream.pool import (
    QUICK_RESTART_DELAY,
    RESTART_BASE_DELAY,
    RESTART_MAX_DELAY,
    STABLE_UPTIME,
    RestartPolicy,
)

NEVER_CAME_UP = None


def test_failed_starts_back_off_exponentially_up_to_the_cap() -> None:
    policy = RestartPolicy(max_restarts=20)
    delays = [policy.after(NEVER_CAME_UP) for _ in range(10)]
    assert delays[:4] == [RESTART_BASE_DELAY, 2 * RESTART_BASE_DELAY, 4 * RESTART_BASE_DELAY, 8 * RESTART_BASE_DELAY]
    assert all(later >= earlier for earlier, later in zip(delays, delays[1:]))
    assert max(delays) == RESTART_MAX_DELAY and delays[-1] == RESTART_MAX_DELAY


def test_after_max_restarts_failures_in_a_row_the_upstream_is_tried_at_the_retry_interval() -> None:
    policy = RestartPolicy(max_restarts=3, retry_interval=60.0)
    assert [policy.after(NEVER_CAME_UP) for _ in range(6)] == [1.0, 2.0, 4.0, 60.0, 60.0, 60.0]
    assert policy.slow and policy.failures == 6
    # It came back: the fast schedule again for its next failure.
    assert policy.after(0.5) == RESTART_BASE_DELAY and not policy.slow


def test_without_a_retry_interval_the_supervisor_gives_up_after_max_restarts_failures_in_a_row() -> None:
    policy = RestartPolicy(max_restarts=3, retry_interval=None)
    assert [policy.after(NEVER_CAME_UP) for _ in range(4)] == [1.0, 2.0, 4.0, None]
    assert policy.failures == 4


def test_a_failure_not_worth_retrying_is_given_up_on_once_the_fast_restarts_are_spent() -> None:
    policy = RestartPolicy(max_restarts=2, retry_interval=60.0)
    assert [policy.after(NEVER_CAME_UP, retryable=False) for _ in range(3)] == [1.0, 2.0, None]


def test_a_session_that_came_up_resets_the_backoff_and_the_count_towards_giving_up() -> None:
    policy = RestartPolicy(max_restarts=3)
    for _ in range(5):
        assert policy.after(NEVER_CAME_UP) is not None
        assert policy.after(NEVER_CAME_UP) is not None
        # Up for a moment, then gone: a fresh start of the schedule, not a step towards giving up.
        assert policy.after(0.5) == RESTART_BASE_DELAY
    assert policy.after(NEVER_CAME_UP) == RESTART_BASE_DELAY


def test_a_session_that_was_up_for_long_is_restarted_at_once() -> None:
    policy = RestartPolicy()
    policy.after(NEVER_CAME_UP)
    assert policy.after(STABLE_UPTIME) == QUICK_RESTART_DELAY
    assert policy.after(STABLE_UPTIME - 1) == RESTART_BASE_DELAY

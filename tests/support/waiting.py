"""Bounded waits for a condition that no event announces (a file appears, a process dies)."""

from __future__ import annotations

from collections.abc import Callable

import anyio

__all__ = ["wait_until"]


async def wait_until(condition: Callable[[], object], *, timeout: float, interval: float = 0.05) -> None:
    """Return once `condition()` is true; TimeoutError if it is still false after `timeout` seconds."""
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(interval)

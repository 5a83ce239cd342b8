"""Noticing that a registry file changed while the gateway runs, so its servers follow the edit.

Polling, not file-system events: a registry is one small file that changes rarely, editors replace
it in several ways (rename over, truncate and write), and polling its size and modification time
every couple of seconds costs nothing and works the same on every platform.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio

__all__ = ["POLL_INTERVAL", "follow_changes"]

POLL_INTERVAL = 2.0


def _stamp(paths: Sequence[Path]) -> list[tuple[int, int] | None]:
    stamps: list[tuple[int, int] | None] = []
    for path in paths:
        try:
            stat = path.stat()
        except OSError:
            stamps.append(None)
            continue
        stamps.append((stat.st_mtime_ns, stat.st_size))
    return stamps


async def follow_changes(
    paths: Sequence[Path], on_change: Callable[[], Awaitable[None]], *, interval: float = POLL_INTERVAL
) -> None:
    """Until cancelled: await `on_change()` after any of `paths` is written, replaced or removed."""
    last = _stamp(paths)
    while True:
        await anyio.sleep(interval)
        now = _stamp(paths)
        if now != last:
            last = now
            await on_change()

"""Whether test processes are still running (zombies count as gone: only reaping is left)."""

from __future__ import annotations

import psutil

__all__ = ["alive"]


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False

"""How `toolscout serve` stops: every way of being told to ends in one shutdown, within a bound.

The ways: the host closes stdin (stdio), SIGTERM, SIGINT or SIGHUP (either transport), and the
parent process dying (noticed by the parent pid changing; the gateway is then a child of init or
of a subreaper). The first one starts the ordered shutdown: upstreams get MCP's (stdin closed, a
grace period, then their process group is ended), the status file is removed. Any later one, or
the ordered shutdown still running after `SHUTDOWN_BOUND` seconds, ends it at once: every
upstream process group gets SIGTERM, then SIGKILL after `KILL_GRACE`, the status file is removed
and the process exits.

Why the bound matters: a host built on the MCP SDK closes our stdin, waits 2 s, sends SIGTERM to
our process group (which does not reach the upstreams: each runs in a session of its own), and
SIGKILLs us 2 s later. Whatever we are doing when SIGTERM arrives, the upstreams must be ended
before that SIGKILL, or a wedged one outlives us.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

import anyio

__all__ = ["KILL_GRACE", "SHUTDOWN_BOUND", "Shutdown"]

logger = logging.getLogger(__name__)

# The ordered shutdown may take this long (stdin closed, 2 s for the upstream to exit on its own, then
# its group); past it, the upstreams are ended at once.
SHUTDOWN_BOUND = 5.0
# When ending at once: between SIGTERM and SIGKILL to the upstreams' process groups.
KILL_GRACE = 1.0
# How often the parent's pid is looked at.
_PARENT_POLL = 0.5
_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name))


class Shutdown:
    """The one shutdown of a serving gateway (see the module's description).

    `end_upstreams_now(grace)` ends the upstreams without the event loop (set once the gateway is
    open); `status_file` is removed on the way out. `on_first_signal` is set by the transport
    while it serves: it starts the ordered shutdown (until then a signal ends everything at once).
    """

    def __init__(self, status_file: Path) -> None:
        self.end_upstreams_now: Callable[[float], None] = lambda grace: None
        self._status_file = status_file
        self.on_first_signal: Callable[[int], None] = self._at_once
        self._started = False
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._parent = os.getppid()

    def begin(self, why: str) -> None:
        """The ordered shutdown has started (stdin closed, a signal): bound it from here on."""
        with self._lock:
            if self._started:
                return
            self._started = True
            logger.info("%s; stopping upstreams", why)
            # A thread, not the event loop: it must fire even if the loop is stuck.
            self._timer = threading.Timer(SHUTDOWN_BOUND, self.now, kwargs={"why": f"still stopping after {SHUTDOWN_BOUND:g} s"})
            self._timer.daemon = True
            self._timer.start()

    def finished(self) -> None:
        """The ordered shutdown is done; nothing is left to bound."""
        if self._timer is not None:
            self._timer.cancel()

    def now(self, why: str, code: int = 1) -> None:
        """End every upstream at once, remove the status file and exit (from any thread)."""
        logger.warning("%s; ending upstream processes now", why)
        try:
            self.end_upstreams_now(KILL_GRACE)
        finally:
            self._status_file.unlink(missing_ok=True)
            logging.shutdown()
            os._exit(code)

    def _at_once(self, signum: int) -> None:
        self.now("not serving yet", 128 + signum)

    async def follow_signals(self) -> None:
        """Until cancelled: the first signal (or the parent's death) starts the ordered shutdown,
        any signal after it ends everything at once."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._watch_parent)
            with anyio.open_signal_receiver(*_SIGNALS) as signals:
                async for signum in signals:
                    name = signal.Signals(signum).name
                    if self._started:
                        self.now(f"received {name} while stopping", 128 + signum)
                    self.begin(f"received {name}")
                    self.on_first_signal(signum)

    async def _watch_parent(self) -> None:
        while os.getppid() == self._parent:
            await anyio.sleep(_PARENT_POLL)
        logger.info("the parent process (pid %d) has gone", self._parent)
        if hasattr(signal, "SIGTERM"):
            os.kill(os.getpid(), signal.SIGTERM)  # the same path as being told to stop

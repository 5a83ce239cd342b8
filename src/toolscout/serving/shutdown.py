"""How `toolscout serve` stops: every way of being told to ends in one shutdown, within a bound.

The ways, by transport:

    stop path                        stdio                         http
    SIGTERM, SIGINT, SIGHUP          yes (exit 128 + signal)       yes (exit 0)
    SIGHUP ignored when we start     stays ignored                 stays ignored (nohup: survives
                                                                   the terminal hanging up)
    the host closes our stdin        yes (the MCP channel ends)    only when stdin is a pipe or socket
                                                                   (a host started us); not /dev/null
                                                                   or a terminal (nohup, systemd, a shell)
    the parent process dies          yes (the host is gone)        no: a service outlives the shell
                                                                   that started it

The parent's death is noticed by the parent pid changing (the gateway is then a child of init or of
a subreaper). The first way starts the ordered shutdown: upstreams get MCP's (stdin closed, a
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
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Literal

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


def _signals_to_follow() -> tuple[int, ...]:
    """`_SIGNALS`, less SIGHUP where whoever started us ignores it: `nohup` does, so that the
    process outlives the terminal; a handler of ours would undo that."""
    hangup = getattr(signal, "SIGHUP", None)
    if hangup is not None and signal.getsignal(hangup) == signal.SIG_IGN:
        return tuple(signum for signum in _SIGNALS if signum != hangup)
    return _SIGNALS


class Shutdown:
    """The one shutdown of a gateway serving over `transport` (see the module's description).

    `end_upstreams_now(grace)` ends the upstreams without the event loop (set once the gateway is
    open); `status_file` is removed on the way out. `on_stop` is set by the transport while it
    serves: it starts the ordered stop (until then being told to stop ends everything at once).
    `exit_code` is what the process exits with, once a way to stop has been taken.
    """

    def __init__(self, status_file: Path, transport: Literal["stdio", "http"] = "stdio") -> None:
        self.end_upstreams_now: Callable[[float], None] = lambda grace: None
        self._status_file = status_file
        self._transport = transport
        self.on_stop: Callable[[], None] = self._at_once
        self.exit_code = 0
        self._started = False
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._parent = os.getppid()

    def begin(self, why: str, code: int = 0) -> None:
        """The ordered shutdown has started (stdin closed, a signal): bound it from here on; the
        process exits with `code`, whether the ordered shutdown ends it or the bound does."""
        with self._lock:
            if self._started:
                return
            self._started = True
            self.exit_code = code
            logger.info("%s; stopping upstreams", why)
            # A thread, not the event loop: it must fire even if the loop is stuck.
            self._timer = threading.Timer(
                SHUTDOWN_BOUND, self.now, kwargs={"why": f"still stopping after {SHUTDOWN_BOUND:g} s", "code": code}
            )
            self._timer.daemon = True
            self._timer.start()

    def finished(self) -> None:
        """The ordered shutdown is done; nothing is left to bound."""
        if self._timer is not None:
            self._timer.cancel()

    def now(self, why: str, code: int) -> None:
        """End every upstream at once, remove the status file and exit (from any thread)."""
        logger.warning("%s; ending upstream processes now", why)
        try:
            self.end_upstreams_now(KILL_GRACE)
        finally:
            self._status_file.unlink(missing_ok=True)
            logging.shutdown()
            os._exit(code)

    def _at_once(self) -> None:
        self.now("not serving yet", self.exit_code)

    def _stop(self, why: str, code: int) -> None:
        self.begin(why, code)
        self.on_stop()

    async def follow_signals(self) -> None:
        """Until cancelled: the first way to stop this transport has (a signal; over stdio the
        parent's death; over HTTP a host's pipe on stdin closing) starts the ordered shutdown, any
        signal after it ends everything at once."""
        async with anyio.create_task_group() as tg:
            if self._transport == "stdio":
                tg.start_soon(self._watch_parent)
            elif _stdin_is_from_a_host():
                tg.start_soon(self._watch_stdin)
            with anyio.open_signal_receiver(*_signals_to_follow()) as signals:
                async for signum in signals:
                    name = signal.Signals(signum).name
                    code = 128 + signum if self._transport == "stdio" else 0
                    if self._started:
                        self.now(f"received {name} while stopping", code)
                    self._stop(f"received {name}", code)

    async def _watch_parent(self) -> None:
        while os.getppid() == self._parent:
            await anyio.sleep(_PARENT_POLL)
        self._stop(f"the parent process (pid {self._parent}) has gone", 0)

    async def _watch_stdin(self) -> None:
        # Waited on by the event loop, not read in a thread: a thread blocked in read() would keep
        # the process from exiting when serving ends another way.
        fd = sys.stdin.fileno()
        while True:
            await anyio.wait_readable(fd)
            try:
                if not os.read(fd, 65536):  # what a host writes there is not ours to read: dropped
                    break
            except BlockingIOError:
                continue
            except OSError:
                break
        self._stop("the host closed stdin", 0)


def _stdin_is_from_a_host() -> bool:
    """Whether stdin is a pipe or socket, as a host that started us gives (its end closing means
    it is gone); /dev/null, a terminal or no stdin at all (nohup, systemd, a shell) is not."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (AttributeError, OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)

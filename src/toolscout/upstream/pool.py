"""All upstreams together: started concurrently, supervised, and seen as one catalog.

    async with UpstreamPool(specs, on_change=...) as pool:
        await pool.wait_settled(10)          # every upstream connected or failed (bounded)
        catalog = pool.catalog()             # ToolRecords with exposed ids over every upstream
        result = await pool.call(tool_id_record, arguments)

A slow or dead upstream never blocks the others: each start is bounded by its own timeout and runs
in its own task. An upstream that had been up for a while and then ends is restarted at once, one
that dies soon after starting after a second; one that fails to start is retried with capped
exponential backoff and given up on after `max_restarts` consecutive failed attempts (visible in
its status).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
import mcp_types as types

from toolscout.catalog import Catalog, ToolRecord
from toolscout.errors import UpstreamError
from toolscout.registry.loading import ServerSpec
from toolscout.upstream.connection import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_START_TIMEOUT,
    InputRound,
    NoticeFn,
    ProgressFn,
    State,
    Upstream,
    UpstreamStatus,
)
from toolscout.upstream.defaults import DEFAULT_MAX_RESTARTS, STABLE_UPTIME
from toolscout.upstream.limits import Limits
from toolscout.upstream.offerings import Offerings
from toolscout.upstream.records import build_catalog

__all__ = [
    "DEFAULT_MAX_RESTARTS",
    "QUICK_RESTART_DELAY",
    "RESTART_BASE_DELAY",
    "RESTART_MAX_DELAY",
    "STABLE_UPTIME",
    "RestartPolicy",
    "UpstreamPool",
]

logger = logging.getLogger(__name__)

RESTART_BASE_DELAY = 1.0
RESTART_MAX_DELAY = 60.0
QUICK_RESTART_DELAY = 0.1
# On shutdown, how long upstreams get to close (stdio: stdin closed, then the process tree killed).
_SHUTDOWN_GRACE = 8.0


@dataclass
class RestartPolicy:
    """When to start an upstream again after a session ends, and when to stop trying.

    `after(uptime)` is told how long the session that just ended was up (None: it never came up)
    and returns the delay before the next attempt, or None to give up. Attempts that fail in a row
    back off exponentially (1 s, 2 s, 4 s ... capped); a session that came up resets the count, so
    only `max_restarts` consecutive failures end in a give-up.
    """

    max_restarts: int = DEFAULT_MAX_RESTARTS
    failures: int = 0
    # A session up at least this long ended as an incident, not a crash loop: restart it at once.
    stable_uptime: float = STABLE_UPTIME

    def after(self, uptime: float | None) -> float | None:
        self.failures = 0 if uptime is not None else self.failures + 1
        if self.failures > self.max_restarts:
            return None
        if uptime is not None and uptime >= self.stable_uptime:
            return QUICK_RESTART_DELAY
        return min(RESTART_BASE_DELAY * 2 ** max(self.failures - 1, 0), RESTART_MAX_DELAY)


class UpstreamPool:
    def __init__(
        self,
        specs: Sequence[ServerSpec],
        *,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        max_restarts: int = DEFAULT_MAX_RESTARTS,
        stable_uptime: float = STABLE_UPTIME,
        limits: Limits = Limits(),
        on_change: Callable[[], None] = lambda: None,
        on_notice: NoticeFn = lambda server, notification: None,
    ) -> None:
        self.max_restarts = max_restarts
        self.stable_uptime = stable_uptime
        self.limits = limits
        self.upstreams: dict[str, Upstream] = {
            spec.name: Upstream(
                spec, start_timeout=start_timeout, call_timeout=call_timeout, limits=limits, on_change=on_change,
                on_notice=on_notice,
            )
            for spec in specs
        }
        self._stopping = False
        self._stopped = anyio.Event()
        self._task_group: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> UpstreamPool:
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        for upstream in self.upstreams.values():
            self._task_group.start_soon(self._supervise, upstream, name=f"upstream {upstream.name}")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._task_group is not None
        await self.stop()
        self._task_group.cancel_scope.cancel()
        return await self._task_group.__aexit__(exc_type, exc, tb)

    async def stop(self) -> None:
        """Stop every upstream (no restarts) and wait, bounded, until they have shut down."""
        self._stopping = True
        self._stopped.set()
        for upstream in self.upstreams.values():
            upstream.stop()
        # Upstream shutdowns are bounded and shielded inside the SDK; this is only a backstop.
        with anyio.CancelScope(shield=True), anyio.move_on_after(_SHUTDOWN_GRACE):
            for upstream in self.upstreams.values():
                await upstream.finished.wait()

    async def _supervise(self, upstream: Upstream) -> None:
        policy = RestartPolicy(self.max_restarts, stable_uptime=self.stable_uptime)
        try:
            while not self._stopping:
                uptime = await upstream.run()
                if self._stopping or upstream.spec.error:
                    return
                if upstream.needs_sign_in:
                    # Not a crash to back off from: the next attempt is worth making once a person
                    # has signed in, and not before.
                    await upstream.wait_for_sign_in(self._stopped)
                    continue
                delay = policy.after(uptime)
                if delay is None:
                    if self.max_restarts:
                        upstream.give_up(policy.failures)
                    return
                if upstream.reconnect_now:
                    delay = 0.0  # a session the upstream forgot, not a crash: nothing to back off from
                logger.info("upstream '%s': restarting in %g s", upstream.name, delay)
                with anyio.move_on_after(delay):
                    await self._stopped.wait()
                if not self._stopping:
                    upstream.restarts += 1
                    upstream.last_restart_reason = upstream.reason
        finally:
            upstream.finished.set()

    async def wait_settled(self, timeout: float) -> bool:
        """Wait until every upstream has connected or failed once; False if `timeout` ran out first."""
        with anyio.move_on_after(timeout):
            for upstream in self.upstreams.values():
                await upstream.settled.wait()
            return True
        return False

    def statuses(self) -> list[UpstreamStatus]:
        return [self.upstreams[name].status() for name in sorted(self.upstreams)]

    def catalog(self) -> Catalog:
        """Records of the tools of every upstream that is up, with ids assigned over all of them."""
        live = {name: up.tools for name, up in self.upstreams.items() if up.state is State.UP}
        return Catalog.of(build_catalog(live))

    def offerings(self) -> Offerings:
        """The resources, templates and prompts of every upstream that is up, named for clients."""
        return Offerings.of({name: up.offer for name, up in self.upstreams.items() if up.state is State.UP})

    async def call(
        self, tool: ToolRecord, arguments: Mapping[str, Any], progress: ProgressFn | None = None,
        round_: InputRound | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Call `tool` on the upstream that owns it (never on another one with a same-named tool)."""
        upstream = self.upstreams.get(tool.server)
        if upstream is None:
            raise UpstreamError(tool.server, "is not configured")
        return await upstream.call(tool.name, arguments, progress, round_)

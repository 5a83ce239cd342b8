"""All upstreams together: started concurrently, supervised, and seen as one catalog.

    async with UpstreamPool(specs, on_change=...) as pool:
        await pool.wait_settled(10)          # every upstream connected or failed (bounded)
        catalog = pool.catalog()             # ToolRecords with exposed ids over every upstream
        result = await pool.call(tool_id_record, arguments)

A slow or dead upstream never blocks the others: each start is bounded by its own timeout and runs
in its own task. An upstream that had been up for a while and then ends is restarted at once, one
that dies soon after starting after a second; one that fails to start is retried with capped
exponential backoff, and after `max_restarts` consecutive failed attempts once every
`retry_interval` for as long as the gateway runs, or at once when a search or call needs it
(`want`). Its status says when the next attempt is. A call to an upstream that is not up
(`bring_up`) waits only for a start under way (or beginning within a second), at most
`STARTING_WAIT`; one that is down, waits for a sign-in or is misconfigured is answered at once. One that fails for a configuration error
(`toolscout.upstream.failures`: a missing command, rejected credentials, a wrong URL, an entry
that starts toolscout itself) is not retried at all: only a changed entry can help.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
import mcp_types as types

from toolscout.catalog import Catalog, ToolRecord
from toolscout.errors import UpstreamError
from toolscout.registry.spec import ServerSpec
from toolscout.upstream.connection import DEFAULT_CALL_TIMEOUT, DEFAULT_START_TIMEOUT, SignInFor, Upstream
from toolscout.upstream.session import Caller, InputRound, NoticeFn, ProgressFn
from toolscout.upstream.status import State, UpstreamStatus
from toolscout.upstream.defaults import DEFAULT_MAX_RESTARTS, DEFAULT_RETRY_INTERVAL, STABLE_UPTIME
from toolscout.upstream.limits import Limits
from toolscout.upstream.offerings import Offerings
from toolscout.upstream.records import build_catalog
from toolscout.upstream.transports import InMemory
from toolscout.upstream.failures import is_configuration_error

__all__ = [
    "DEFAULT_MAX_RESTARTS",
    "DEFAULT_RETRY_INTERVAL",
    "MIN_WANTED_GAP",
    "QUICK_RESTART_DELAY",
    "RESTART_BASE_DELAY",
    "RESTART_MAX_DELAY",
    "STABLE_UPTIME",
    "STARTING_WAIT",
    "RestartPolicy",
    "UpstreamPool",
]

logger = logging.getLogger(__name__)

RESTART_BASE_DELAY = 1.0
RESTART_MAX_DELAY = 60.0
QUICK_RESTART_DELAY = 0.1
# A search or call that needs a down upstream starts its next attempt early, but never sooner than
# this after the last one ended: a storm of searches must not turn into a storm of process starts.
MIN_WANTED_GAP = 2.0
# How long a call waits for a start of its upstream that is under way (a few seconds: a call is
# answered promptly; the supervisor goes on starting it in the background) ...
STARTING_WAIT = 5.0
# ... and for one that a call asked for to begin (an earlier attempt ended under MIN_WANTED_GAP ago).
_BEGIN_WAIT = 1.0
# On shutdown, how long upstreams get to close (stdio: stdin closed, then the process tree killed).
_SHUTDOWN_GRACE = 8.0


@dataclass
class RestartPolicy:
    """When to start an upstream again after a session ends, and when to stop trying.

    `after(uptime)` is told how long the session that just ended was up (None: it never came up)
    and whether its failure is worth retrying (not a configuration error,
    `failures.is_configuration_error`), and returns the delay before the next attempt, or None to give up. Attempts that fail in a row back off
    exponentially (1 s, 2 s, 4 s ... capped); after `max_restarts` of them the upstream is tried
    every `retry_interval` seconds (None: given up on). A session that came up resets the count.
    A failure not worth retrying is given up on once the fast restarts are spent.
    """

    max_restarts: int = DEFAULT_MAX_RESTARTS
    failures: int = 0
    # A session up at least this long ended as an incident, not a crash loop: restart it at once.
    stable_uptime: float = STABLE_UPTIME
    retry_interval: float | None = DEFAULT_RETRY_INTERVAL

    @property
    def slow(self) -> bool:
        """The fast restarts are spent: attempts come every `retry_interval`."""
        return self.failures > self.max_restarts

    def after(self, uptime: float | None, *, retryable: bool = True) -> float | None:
        self.failures = 0 if uptime is not None else self.failures + 1
        if self.slow:
            return self.retry_interval if retryable and self.retry_interval else None
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
        retry_interval: float | None = DEFAULT_RETRY_INTERVAL,
        limits: Limits = Limits(),
        on_change: Callable[[], None] = lambda: None,
        on_notice: NoticeFn = lambda server, notification: None,
        sign_in: SignInFor = lambda spec: None,
        in_process: Mapping[str, Any] | None = None,
    ) -> None:
        """`in_process`: server name -> an MCP server object of this process, reached in memory
        instead of as its entry says (`transports.InMemory`)."""
        self.max_restarts = max_restarts
        self.retry_interval = retry_interval
        self.stable_uptime = stable_uptime
        self.limits = limits
        self._on_change = on_change

        def make(spec: ServerSpec) -> Upstream:
            return Upstream(
                spec, start_timeout=start_timeout, call_timeout=call_timeout, limits=limits, on_change=on_change,
                on_notice=on_notice, sign_in=sign_in,
                transport=InMemory(in_process[spec.name]) if in_process and spec.name in in_process else None,
            )

        self._make = make
        self.upstreams: dict[str, Upstream] = {spec.name: make(spec) for spec in specs}
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
            upstream.wanted.set()  # ends a supervisor's wait for the next attempt
        # Upstream shutdowns are bounded and shielded inside the SDK; this is only a backstop.
        with anyio.CancelScope(shield=True), anyio.move_on_after(_SHUTDOWN_GRACE):
            for upstream in self.upstreams.values():
                await upstream.finished.wait()

    async def _supervise(self, upstream: Upstream) -> None:
        policy = RestartPolicy(self.max_restarts, stable_uptime=self.stable_uptime, retry_interval=self.retry_interval)
        try:
            while not self._stopping and not upstream.stopped:
                uptime = await upstream.run()
                if self._stopping or upstream.stopped or upstream.configuration_error:
                    return  # configuration errors are not retried: only a changed entry can help
                if upstream.needs_sign_in:
                    # Not a crash to back off from: the next attempt is worth making once a person
                    # has signed in, and not before.
                    await upstream.wait_for_sign_in(self._stopped)
                    continue
                # A session that was up and then ended for a configuration error: the fast restarts, then a give-up.
                retryable = upstream.failure is None or not is_configuration_error(upstream.failure)
                delay = policy.after(uptime, retryable=retryable)
                if delay is None:
                    if self.max_restarts or policy.retry_interval:
                        upstream.give_up(policy.failures)
                    return
                if upstream.reconnect_now:
                    delay = 0.0  # a session the upstream forgot, not a crash: nothing to back off from
                if policy.slow:
                    upstream.retry_later(policy.failures, delay)
                else:
                    logger.info("upstream '%s': restarting in %g s", upstream.name, delay)
                await self._wait_for_next_attempt(upstream, delay)
                if not self._stopping and not upstream.stopped:
                    upstream.restarts += 1
                    upstream.last_restart_reason = upstream.reason
        finally:
            upstream.next_attempt = None
            upstream.finished.set()

    async def _wait_for_next_attempt(self, upstream: Upstream, delay: float) -> None:
        """Wait `delay`, or less when a search or call wants the upstream (not under MIN_WANTED_GAP)."""
        ended = anyio.current_time()
        upstream.next_attempt = time.time() + delay
        with anyio.move_on_after(delay):
            await upstream.wanted.wait()
            if not self._stopping:
                gap = max(0.0, ended + min(MIN_WANTED_GAP, delay) - anyio.current_time())
                upstream.next_attempt = time.time() + gap  # sooner now: its status says when
                await anyio.sleep(gap)
        upstream.next_attempt = None
        if not self._stopping:
            upstream.wanted = anyio.Event()

    async def reconfigure(self, specs: Sequence[ServerSpec]) -> list[str]:
        """Follow a changed registry: upstreams whose entry changed or went are stopped (bounded),
        changed and new ones started; the others go on untouched. Returns the names affected."""
        assert self._task_group is not None
        wanted = {spec.name: spec for spec in specs}
        affected = [name for name, up in self.upstreams.items() if wanted.get(name) != up.spec]
        affected += [name for name in wanted if name not in self.upstreams]
        gone = [self.upstreams.pop(name) for name in affected if name in self.upstreams]
        for upstream in gone:
            upstream.stop()
            upstream.wanted.set()
        with anyio.CancelScope(shield=True), anyio.move_on_after(_SHUTDOWN_GRACE):
            for upstream in gone:
                await upstream.finished.wait()
        for name in affected:
            if name in wanted:
                upstream = self.upstreams[name] = self._make(wanted[name])
                self._task_group.start_soon(self._supervise, upstream, name=f"upstream {name}")
        if affected:
            self._on_change()
        return affected

    def want(self, servers: Collection[str] | None = None) -> None:
        """Searches and calls need `servers` (None: any): those waiting for their next attempt try now."""
        for name, upstream in self.upstreams.items():
            if servers is None or name in servers:
                upstream.want()

    async def bring_up(self, name: str, wait: float = STARTING_WAIT) -> bool:
        """Whether upstream `name` is up, after waiting (at most `wait` seconds) for a start of it
        that is under way, or that a call's need makes begin within `_BEGIN_WAIT`. One that is down
        for longer, waits for a sign-in, is misconfigured or given up on is not waited for: its
        status says why (`failures.unavailable`)."""
        upstream = self.upstreams.get(name)
        if upstream is None:
            return False
        with anyio.move_on_after(wait):
            if upstream.state is State.DOWN:
                if upstream.configuration_error or upstream.needs_sign_in or upstream.gave_up:
                    return False
                upstream.want()
                with anyio.move_on_after(_BEGIN_WAIT):
                    await upstream.changed()
            # A start under way (one the call asked for, or already running): waited for once.
            while upstream.state is State.STARTING and not upstream.finished.is_set():
                await upstream.changed()
        return upstream.state is State.UP

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
        round_: InputRound | None = None, *, caller: Caller | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Call `tool` on the upstream that owns it (never on another one with a same-named tool)."""
        upstream = self.upstreams.get(tool.server)
        if upstream is None:
            raise UpstreamError(tool.server, "is not configured", transient=False)
        return await upstream.session.call(tool.call_name, arguments, progress, round_, caller=caller)

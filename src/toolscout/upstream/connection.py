"""One upstream MCP server's lifecycle: connect, list its tools, follow changes, proxy calls.

`Upstream.run()` is a single connection attempt: it connects (bounded by the start timeout),
lists every page of tools, then serves until the upstream goes away or `stop()` is called, and
returns with the upstream marked down and the reason recorded. It never raises on an upstream's
failure, so a supervisor can simply call it again to restart (see `pool.py`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client, MCPError
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from pydantic import ValidationError

from toolscout import __version__
from toolscout.errors import UpstreamConfigurationError, UpstreamError
from toolscout.registry.loading import ServerSpec, redact, resolve_command, upstream_environment
from toolscout.upstream.defaults import DEFAULT_CALL_TIMEOUT, DEFAULT_START_TIMEOUT
from toolscout.upstream.error_text import upstream_error_text
from toolscout.upstream.failures import (
    CONFIGURATION_NOTE,
    StartFailure,
    classify_start_failure,
)
from toolscout.upstream.limits import Limits, bound_result
from toolscout.upstream.self_reference import GATEWAY_MARKER, local_gateway, refused_as_nested, self_reference
from toolscout.upstream.status import SKIPPED, State, UpstreamStatus, describe_failure, summarize
from toolscout.upstream.stderr import StderrTail
from toolscout.upstream.stdio import stdio_transport
from toolscout.upstream.streams import EndWatchingStream
from toolscout.wording import plural

__all__ = ["DEFAULT_CALL_TIMEOUT", "DEFAULT_START_TIMEOUT", "ProgressFn", "State", "Upstream", "UpstreamStatus"]

logger = logging.getLogger(__name__)

# (progress, total, message) of a call in flight, as the SDK reports it.
ProgressFn = Callable[[float, "float | None", "str | None"], Awaitable[None]]

# A server that pages forever (or repeats a cursor) must not hang the gateway.
MAX_TOOL_PAGES = 500
# After a stdio upstream stops, how long to wait for the last lines of its stderr.
_STDERR_GRACE = 2.0
# After a call times out, how long the upstream has to answer a ping. One that does not is wedged
# (alive, but no longer reading or answering) and is restarted like one that crashed.
DEFAULT_PING_TIMEOUT = 5.0
# Pause before opening another listen stream after one ended, doubling while they keep ending.
_RELISTEN_BASE_DELAY = 1.0
_RELISTEN_MAX_DELAY = 60.0
# An HTTP upstream's client: the MCP transports' own defaults. Other operations are bounded at 30 s;
# a read may wait 5 minutes, since a server holds a response stream open between events. Redirects
# are not followed by the client: the transports follow them within the endpoint's origin only.
_HTTP_TIMEOUT = 30.0
_HTTP_READ_TIMEOUT = 300.0
# The last lines of a stdio upstream's stderr kept in its reason (which an agent may read).
_MAX_STDERR_IN_REASON = 2000


def _http_client(
    headers: Mapping[str, str], on_response: Callable[[httpx2.Response], Awaitable[None]]
) -> httpx2.AsyncClient:
    """The client an HTTP upstream is reached through (to be entered as a context manager)."""
    return httpx2.AsyncClient(
        headers=dict(headers),
        timeout=httpx2.Timeout(_HTTP_TIMEOUT, read=_HTTP_READ_TIMEOUT),
        event_hooks={"response": [on_response]},
    )


class Upstream:
    """One upstream server; the pool owns one per registry entry."""

    def __init__(
        self,
        spec: ServerSpec,
        *,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        limits: Limits = Limits(),
        on_change: Callable[[], None] = lambda: None,
        ping_timeout: float = DEFAULT_PING_TIMEOUT,
    ) -> None:
        self.spec = spec
        self.start_timeout = start_timeout
        self.call_timeout = spec.timeout or call_timeout
        self.ping_timeout = ping_timeout
        # Calls that time out together share one ping: the first pings, the others learn its verdict.
        self._probing = anyio.Lock()
        self.limits = limits
        # Calls beyond the cap wait here, in order; the wait counts toward each call's timeout.
        self._slots = anyio.Semaphore(limits.max_concurrent_calls)
        # Why the transport ended the current session, when it knows better than "closed".
        self._fault: str | None = None
        # The current session's end signal, and an event set whenever `_client` changes (so a call
        # can wait for a new session after asking for one).
        self._ended: anyio.Event | None = None
        self._client_changed = anyio.Event()
        # Set when the session ended because the upstream lost it: the supervisor reconnects at once.
        self.reconnect_now = False
        self._on_change = on_change
        self.state = State.STARTING
        self.reason: str | None = None
        # True once a start failed for a configuration error: starting again cannot help
        # (`toolscout.upstream.failures`); the supervisor does not retry it.
        self.configuration_error = False
        # The last HTTP error status this upstream answered while starting (the SDK reports it
        # as a generic error; the status says whether the URL or the credentials are wrong).
        self._http_error_status: int | None = None
        self.tools: tuple[types.Tool, ...] = ()
        self._instructions: str | None = None
        self._info: types.Implementation | None = None
        self._client: Client | None = None
        self._stop = anyio.Event()
        self._session_scope: anyio.CancelScope | None = None
        self._tools_changed = anyio.Event()
        self._was_up = False
        self._up_at = 0.0
        self.restarts = 0  # counted by the supervisor
        # Why the session before the latest restart ended (shown while it is up again).
        self.last_restart_reason: str | None = None
        self.gave_up = False
        # Set once the first attempt has either connected or failed.
        self.settled = anyio.Event()
        # Set by the supervisor when it will not run this upstream again.
        self.finished = anyio.Event()

    @property
    def name(self) -> str:
        return self.spec.name

    def status(self) -> UpstreamStatus:
        return UpstreamStatus(
            name=self.name,
            transport=self.spec.transport,
            state=self.state,
            reason=self.reason,
            tool_count=len(self.tools) if self.state is State.UP else 0,
            summary=summarize(self._instructions, self._info, self.tools),
            restarts=self.restarts,
            gave_up=self.gave_up,
            last_restart_reason=self.last_restart_reason,
            configuration_error=self.configuration_error,
        )

    def stop(self) -> None:
        self._stop.set()
        if self._session_scope is not None:
            self._session_scope.cancel()

    async def run(self) -> float | None:
        """One connection attempt, served until it ends; records why it ended.

        Returns how many seconds the upstream stayed up, or None if it never came up (the
        supervisor's backoff depends on it).
        """
        if self.spec.error:
            self.configuration_error = True
            self._mark_down(self.spec.error)
            return None
        skipped = self._self_reference()
        if skipped is not None:
            self._mark_configuration_error(StartFailure(skipped, configuration=True))
            return None
        self.state, self.reason, self._was_up, self._fault = State.STARTING, None, False, None
        self.reconnect_now, self._http_error_status = False, None
        tail = StderrTail(self.name, redact=self._redact) if self.spec.transport == "stdio" else None
        failure: StartFailure | None = None
        async with anyio.create_task_group() as tg:
            if tail is not None:
                tg.start_soon(tail.pump)
            try:
                reason = await self._connect_and_serve(tail)
            except Exception as exc:  # noqa: BLE001 - any failure of one upstream is contained here
                if self._was_up:
                    reason = describe_failure(exc)
                else:
                    failure = classify_start_failure(exc, self.spec, http_status=self._http_error_status)
                    reason = f"failed to start: {upstream_error_text(failure.reason)}"
            if tail is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(_STDERR_GRACE):
                    await tail.closed.wait()
                stderr = tail.tail()
                nested = None if self._was_up else refused_as_nested(self.spec, stderr)
                if nested is not None:
                    failure = StartFailure(nested, configuration=True)
                elif reason and stderr:
                    reason = f"{reason}; stderr: {stderr[-_MAX_STDERR_IN_REASON:]}"
            tg.cancel_scope.cancel()
        if tail is not None:
            tail.close()
        if failure is not None and failure.configuration:
            self._mark_configuration_error(failure)
            return None
        self._mark_down(reason)
        return anyio.current_time() - self._up_at if self._was_up else None

    def _self_reference(self) -> str | None:
        """Why this stdio entry is skipped because it starts toolscout itself, or None."""
        if self.spec.transport != "stdio":
            return None
        try:
            program = resolve_command(self.spec)
        except Exception:  # noqa: BLE001 - a missing command is reported by the start attempt
            return None
        return self_reference(self.spec, program)

    def _mark_configuration_error(self, failure: StartFailure) -> None:
        """Down for good: no start attempt can succeed until the entry changes."""
        self.configuration_error = True
        skipped = failure.reason.startswith(SKIPPED)  # never started: nothing "failed to start"
        reason = failure.reason if skipped else f"failed to start: {failure.reason}"
        self._mark_down(f"{reason} ({CONFIGURATION_NOTE})")

    async def _record_http_status(self, response: httpx2.Response) -> None:
        if response.status_code >= 400 and self.state is State.STARTING:
            self._http_error_status = response.status_code

    def give_up(self, attempts: int) -> None:
        """Called by the supervisor: no more restarts; the status says so."""
        self.reason = f"{self.reason} (gave up after {attempts} failed attempt{'s' if attempts > 1 else ''})"
        self.gave_up = True
        logger.error("upstream '%s': %s", self.name, self.reason)

    async def _connect_and_serve(self, tail: StderrTail | None) -> str | None:
        ended, connected = anyio.Event(), anyio.Event()
        # One scope spans the whole session, so the start watchdog and stop() can end it from
        # outside without breaking the nesting of the SDK's own task groups.
        session_scope = anyio.CancelScope()
        self._session_scope = session_scope
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._start_watchdog, session_scope, connected)
            with session_scope:
                async with AsyncExitStack() as stack:
                    # "auto": the newest protocol the upstream speaks (2026-07-28, else the handshake).
                    client = Client(
                        self._transport(tail, ended),
                        mode="auto",
                        cache=None,
                        message_handler=self._on_message,
                        client_info=types.Implementation(name="toolscout", version=__version__),
                    )
                    await stack.enter_async_context(client)
                    self._instructions = client.instructions
                    self._info = client.server_info
                    skipped = local_gateway(self.spec, self._info.name if self._info else None)
                    if skipped is not None:
                        raise UpstreamConfigurationError(self.name, skipped)
                    self.tools = await self._list_tools(client)
                    connected.set()
                    await self._serve(client, ended)
            tg.cancel_scope.cancel()
        if self._stop.is_set():
            return None
        if not connected.is_set() and not self._fault:
            return f"did not start within {self.start_timeout:g} s"
        return self._fault or "the upstream closed the connection (it exited or crashed)"

    async def _start_watchdog(self, session_scope: anyio.CancelScope, connected: anyio.Event) -> None:
        with anyio.move_on_after(self.start_timeout):
            await connected.wait()
        if not connected.is_set():
            session_scope.cancel()

    def _set_client(self, client: Client | None, ended: anyio.Event | None) -> None:
        self._client, self._ended = client, ended
        changed, self._client_changed = self._client_changed, anyio.Event()
        changed.set()

    async def _serve(self, client: Client, ended: anyio.Event) -> None:
        self._set_client(client, ended)
        self.state, self._was_up, self._up_at = State.UP, True, anyio.current_time()
        self.settled.set()
        logger.info("upstream '%s' connected: %s", self.name, plural(len(self.tools), "tool"))
        self._on_change()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._follow_tool_changes, client)
                tg.start_soon(self._listen_for_tool_changes, client)
                await ended.wait()
                tg.cancel_scope.cancel()
        finally:
            self._set_client(None, None)

    @asynccontextmanager
    async def _transport(self, tail: StderrTail | None, ended: anyio.Event) -> AsyncIterator[Any]:
        spec = self.spec
        async with AsyncExitStack() as stack:
            if spec.transport == "stdio":
                assert tail is not None
                transport = stdio_transport(
                    resolve_command(spec),
                    spec.args,
                    # The marker tells a toolscout started by any route that a gateway started it.
                    env={**upstream_environment(spec), GATEWAY_MARKER: str(os.getpid())},
                    cwd=spec.cwd,
                    stderr=tail.writer(),
                    max_line_bytes=self.limits.max_line_bytes,
                    on_fault=self._on_fault,
                )
                try:
                    read, write = await stack.enter_async_context(transport)
                finally:
                    # The child holds its own copy now (or was never spawned); ours would hide EOF.
                    tail.release_writer()
            elif spec.transport == "http":
                http = await stack.enter_async_context(_http_client(spec.headers, self._record_http_status))
                read, write = await stack.enter_async_context(
                    streamable_http_client(spec.url or "", http_client=http)
                )
            else:
                read, write = await stack.enter_async_context(
                    sse_client(spec.url or "", headers=dict(spec.headers))
                )
            yield EndWatchingStream(read, ended), write

    def _on_fault(self, reason: str) -> None:
        if self._fault is None:
            self._fault = reason

    async def _list_tools(self, client: Client) -> tuple[types.Tool, ...]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        seen_cursors: set[str] = set()
        for _ in range(MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor or cursor in seen_cursors:
                break
            seen_cursors.add(cursor)
        else:
            logger.warning("upstream '%s' listed more than %d pages of tools; kept those", self.name, MAX_TOOL_PAGES)
        return tuple(tools)

    async def _on_message(self, message: Any) -> None:
        # Runs inside the session's receive path: never await a request here, only signal.
        if isinstance(message, types.ToolListChangedNotification):
            self._tools_changed.set()
        elif isinstance(message, Exception):
            logger.debug("upstream '%s' transport error: %s", self.name, self._redact(str(message)))

    async def _listen_for_tool_changes(self, client: Client) -> None:
        """On 2026-07-28 an upstream announces tool changes only on a `subscriptions/listen` stream.

        Such a stream has no replay, so the tools are listed again each time one opens: a change
        made while none was open is not missed. A stream that ends, on purpose or not, is opened
        again after a pause that doubles while streams keep ending without a change: over HTTP
        nothing else tells that the upstream restarted (a proxy may also cut idle streams).
        On the handshake era the announcements come on the session itself (`_on_message`).
        """
        tools = client.server_capabilities.tools
        if tools is None or not tools.list_changed:
            return
        ended = 0  # streams in a row that ended without announcing a change
        while True:
            try:
                async with client.listen(tools_list_changed=True) as subscription:
                    self._tools_changed.set()
                    async for _change in subscription:
                        ended = 0
                        self._tools_changed.set()
                logger.debug("upstream '%s' closed its listen stream", self.name)
            except ListenNotSupportedError:
                return
            except SubscriptionLost as exc:
                logger.debug("upstream '%s': listen stream lost: %s", self.name, self._redact(str(exc)))
            except MCPError as exc:
                log = logger.warning if ended == 0 else logger.debug
                log("upstream '%s': cannot open a listen stream for its tool changes: %s",
                    self.name, self._redact(exc.message))
            await anyio.sleep(min(_RELISTEN_BASE_DELAY * 2**ended, _RELISTEN_MAX_DELAY))
            ended += 1

    async def _follow_tool_changes(self, client: Client) -> None:
        """Re-list after each tools/list_changed; a burst of notifications costs one re-list."""
        while True:
            await self._tools_changed.wait()
            self._tools_changed = anyio.Event()
            try:
                with anyio.fail_after(self.call_timeout):
                    tools = await self._list_tools(client)
            except Exception as exc:  # noqa: BLE001 - keep serving the previous list
                logger.warning("upstream '%s': re-listing tools failed: %s", self.name, self._redact(describe_failure(exc)))
                continue
            if tools == self.tools:
                continue  # a storm of list_changed with nothing changed costs no re-index
            self.tools = tools
            logger.info("upstream '%s' changed its tools: now %d", self.name, len(tools))
            self._on_change()

    async def call(
        self, tool: str, arguments: Mapping[str, Any], progress: ProgressFn | None = None
    ) -> types.CallToolResult:
        """Proxy one tools/call; every failure becomes an UpstreamError naming this upstream.

        The timeout runs from the last sign of life: each progress notification of the upstream
        (forwarded to `progress`) restarts it, so long jobs that report progress are not cut off.
        Waiting for a free slot (`max_concurrent_calls`) counts toward it.
        """
        if self._client is None or self.state is not State.UP:
            if self.configuration_error:
                raise UpstreamConfigurationError(self.name, f"is not available ({self.reason})")
            raise UpstreamError(self.name, f"is not available ({self.reason or 'not connected right now'})")
        timeout = self.call_timeout
        sent = False
        with anyio.CancelScope(deadline=anyio.current_time() + timeout) as deadline:

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                deadline.deadline = anyio.current_time() + timeout
                if progress is not None:
                    await progress(value, total, message)

            async with self._slots:
                for attempt in (1, 2):
                    client = self._client
                    if client is None:
                        raise UpstreamError(self.name, f"went down before '{tool}' could be sent ({self.reason})")
                    sent = True
                    try:
                        # Cancelling the call (our deadline, or the agent's cancellation) makes the
                        # SDK send the upstream notifications/cancelled.
                        result = await client.call_tool(tool, dict(arguments), progress_callback=on_progress)
                        break
                    except MCPError as exc:
                        if attempt == 1 and self._session_gone(exc):
                            # The upstream rejected the session, so it never ran the call: safe to resend.
                            await self._reconnect(client)
                            continue
                        raise self._call_error(tool, exc) from exc
                    except (RuntimeError, ValidationError) as exc:
                        raise UpstreamError(
                            self.name,
                            f"returned an invalid result for '{tool}': {upstream_error_text(self._redact(str(exc)))}",
                            transient=False,
                        ) from exc
            return self._bounded(tool, result)
        if not sent:
            cap = self.limits.max_concurrent_calls
            raise UpstreamError(
                self.name,
                f"'{tool}' waited {timeout:g} s for one of the {cap} call slots of this upstream "
                "(max_concurrent_calls); the calls ahead of it are still running",
            )
        verdict = await self._probe_after_timeout()
        raise UpstreamError(self.name, f"did not answer '{tool}' within {timeout:g} s{verdict}")

    async def _probe_after_timeout(self) -> str:
        """After a call timed out: ping; an upstream that does not answer that either is restarted.

        A slow tool leaves the upstream answering pings; a deadlock or a blocking sleep in its only
        thread does not, and would time out every later call. Returns what the call's error adds.
        """
        client, ended = self._client, self._ended
        if client is None or ended is None:
            return ""
        async with self._probing:
            if self._client is not client:
                return "; it had stopped answering and is being restarted"
            with anyio.move_on_after(self.ping_timeout):
                try:
                    # The session's ping: the protocol of 2026-07-28 dropped it, and an upstream on
                    # it answers with an error, which shows just as well that it still reads.
                    await client.session.send_ping()
                except MCPError as exc:
                    if exc.code == types.CONNECTION_CLOSED:
                        return ""  # it went down on its own; the reason is recorded
                except Exception:  # noqa: BLE001 - the session ended on its own; its reason is recorded
                    return ""
                return "; it still answers pings, so the tool itself is slow or stuck"
            self._fault = f"stopped answering (a call timed out, then a ping had no answer within {self.ping_timeout:g} s)"
            logger.warning("upstream '%s' %s; restarting it", self.name, self._fault)
            ended.set()
        return f"; it did not answer a ping within {self.ping_timeout:g} s either, so it is being restarted"

    def _session_gone(self, exc: MCPError) -> bool:
        """An HTTP upstream that restarted answers our old session id with 404 (spec: start anew)."""
        message = exc.message.lower()
        return self.spec.transport == "http" and exc.code == types.INVALID_REQUEST and (
            "session not found" in message or "session terminated" in message
        )

    async def _reconnect(self, old: Client) -> None:
        """End the current session and wait (within the caller's deadline) for the next one."""
        logger.info("upstream '%s' no longer knows our session (it restarted); reconnecting", self.name)
        self._fault = "the upstream lost our session (it restarted); reconnecting"
        self.reconnect_now = True
        if self._ended is not None:
            self._ended.set()
        while self._client is None or self._client is old:
            await self._client_changed.wait()

    def _call_error(self, tool: str, exc: MCPError) -> UpstreamError:
        if exc.code == types.CONNECTION_CLOSED:
            why = self._fault or "it may have crashed"
            return UpstreamError(self.name, f"closed the connection during '{tool}' ({self._redact(why)})")
        # The upstream answered: the same call would be refused again.
        return UpstreamError(
            self.name, f"rejected '{tool}': {upstream_error_text(self._redact(exc.message))}", transient=False
        )

    def _bounded(self, tool: str, result: types.CallToolResult) -> types.CallToolResult:
        """Cut an oversized result to the limit; hide registry secrets an upstream echoes in an error."""
        if result.is_error:
            # An error is read by the agent as a message: secrets hidden, paths shortened, capped.
            content = [
                types.TextContent(text=upstream_error_text(self._redact(block.text)))
                if isinstance(block, types.TextContent) else block
                for block in result.content
            ]
            result = result.model_copy(update={"content": content})
        return bound_result(result, self.limits.max_result_bytes, server=self.name, tool=tool)

    def _mark_down(self, reason: str | None) -> None:
        was_up = self.state is State.UP
        self.state = State.DOWN
        self.reason = self._redact(reason or "stopped")
        self.settled.set()
        if reason and not self._stop.is_set():
            logger.warning("upstream '%s' is down: %s", self.name, self.reason)
        if was_up and not self._stop.is_set():
            self._on_change()

    def _redact(self, text: str) -> str:
        return redact(text, self.spec.secrets)

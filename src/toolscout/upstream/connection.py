"""One upstream MCP server's lifecycle: connect, list what it offers, follow changes, proxy requests.

`Upstream.run()` is a single connection attempt: it connects (bounded by the start timeout),
lists every page of tools (and of resources, resource templates and prompts when it offers
them), then serves until the upstream goes away or `stop()` is called, and
returns with the upstream marked down and the reason recorded. It never raises on an upstream's
failure, so a supervisor can simply call it again to restart (see `pool.py`).
"""

from __future__ import annotations

import logging
import warnings
from contextvars import ContextVar
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import anyio
import httpx2
import anyio.abc
import mcp_types as types
from mcp import Client, MCPError
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.jsonrpc import MISSING_REQUIRED_CLIENT_CAPABILITY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from mcp.client.subscriptions import ListenNotSupportedError, ResourceUpdated, SubscriptionLost, ToolsListChanged
from pydantic import BaseModel, ValidationError

from toolscout import __version__
from toolscout.errors import SignInRequired, UpstreamConfigurationError, UpstreamError
from toolscout.oauth.provider import upstream_auth
from toolscout.registry.loading import ServerSpec, redact, resolve_command
from toolscout.tasks import TASKS_EXTENSION, needs_tasks
from toolscout.upstream.defaults import DEFAULT_CALL_TIMEOUT, DEFAULT_START_TIMEOUT
from toolscout.upstream.error_text import upstream_error_text
from toolscout.upstream.failures import CONFIGURATION_NOTE, StartFailure, classify_start_failure
from toolscout.upstream.limits import Limits, bound_read, bound_result
from toolscout.upstream.offerings import UpstreamOffer
from toolscout.upstream.self_reference import local_gateway, refused_as_nested, self_reference
from toolscout.upstream.status import SKIPPED, State, UpstreamStatus, describe_failure, summarize
from toolscout.upstream.stderr import StderrTail
from toolscout.upstream.streams import EndWatchingStream
from toolscout.upstream.transports import open_transport
from toolscout.wording import plural

__all__ = [
    "CURRENT_CALLER",
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_START_TIMEOUT",
    "Caller",
    "InputRound",
    "NoticeFn",
    "ProgressFn",
    "State",
    "Upstream",
    "UpstreamStatus",
]

logger = logging.getLogger(__name__)

# (progress, total, message) of a call in flight, as the SDK reports it.
ProgressFn = Callable[[float, "float | None", "str | None"], Awaitable[None]]
# Told of what an upstream announces for clients (a log message, a subscribed resource updated):
# (server, the notification). Runs in the session's receive path: must not block.
NoticeFn = Callable[[str, Any], None]
_Result = TypeVar("_Result")
_Message = TypeVar("_Message")


class Caller(Protocol):
    """The client whose request toolscout is relaying: where an upstream's own requests made during
    it (sampling, elicitation) are sent, with the upstream named. Answers an ErrorData when that
    client cannot answer.

    `asks_back`: the client takes requests while its call runs (the handshake era). A 2026-07-28
    client does not: an upstream's "input required" result goes back to it as its own, and it
    retries with the answers (`InputRound`)."""

    asks_back: bool

    async def sample(self, server: str, params: types.CreateMessageRequestParams) -> Any: ...

    async def elicit(self, server: str, params: types.ElicitRequestParams) -> Any: ...


# Set by the MCP face around each client request it relays. On 2026-07-28 an upstream's questions
# come back inside the call's own result ("input required"), in the calling task, so this tells
# whose they are; on the handshake era they arrive on the session, and the calls in flight tell.
CURRENT_CALLER: ContextVar[Caller | None] = ContextVar("toolscout_caller", default=None)


@dataclass(frozen=True)
class InputRound:
    """A retried call of a 2026-07-28 client: the answers to the upstream's input requests, and the
    upstream's own request state."""

    responses: types.InputResponses | None = None
    state: str | None = None

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
# How often an upstream waiting for a sign-in looks whether its token file changed.
_SIGN_IN_POLL = 2.0

# The last lines of a stdio upstream's stderr kept in its reason (which an agent may read).
_MAX_STDERR_IN_REASON = 2000


async def _cancel_when(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


def _is_sign_in_required(exc: BaseException) -> bool:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return isinstance(exc, SignInRequired)


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
        on_notice: NoticeFn = lambda server, notification: None,
        ping_timeout: float = DEFAULT_PING_TIMEOUT,
    ) -> None:
        self.spec = spec
        self._on_notice = on_notice
        # The OAuth sign-in of a remote upstream, made again for each connection so that it reads
        # the stored tokens afresh (a `toolscout login` since the last attempt).
        self._auth = upstream_auth(spec)
        self.start_timeout = start_timeout
        self.call_timeout = spec.timeout or call_timeout
        self.ping_timeout = ping_timeout
        # Calls that time out together share one ping, run in the background of the session.
        self._probing = False
        self._session_tasks: anyio.abc.TaskGroup | None = None
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
        # Set when the upstream needs a person to sign in (OAuth): retrying is pointless until then.
        self.needs_sign_in = False
        self._stamp_at_start: int | None = None
        self._on_change = on_change
        self._state_changed = anyio.Event()
        self._state = State.STARTING
        self.reason: str | None = None
        # True once a start failed for a configuration error: starting again cannot help
        # (`toolscout.upstream.failures`); the supervisor does not retry it.
        self.configuration_error = False
        # The last HTTP error status this upstream answered while starting (the SDK reports it
        # as a generic error; the status says whether the URL or the credentials are wrong).
        self._http_error_status: int | None = None
        self.tools: tuple[types.Tool, ...] = ()
        self.offer = UpstreamOffer()
        # The level of log messages clients asked for (None: none asked; nothing is relayed).
        self.log_level: types.LoggingLevel | None = None
        self._instructions: str | None = None
        self._info: types.Implementation | None = None
        self._client: Client | None = None
        self._stop = anyio.Event()
        self._session_scope: anyio.CancelScope | None = None
        self._tools_changed = anyio.Event()
        self._offer_changed = anyio.Event()
        # Resources clients subscribed to (the upstream's URIs), and the signal to open a listen
        # stream for a changed set (2026-07-28).
        self._subscribed: set[str] = set()
        self._relisten = anyio.Event()
        # The clients whose requests are in flight here (for the upstream's sampling and elicitation).
        self._callers: list[Caller] = []
        self._was_up = False
        self._up_at = 0.0
        self.restarts = 0  # counted by the supervisor
        # Why the session before the latest restart ended (shown while it is up again).
        self.last_restart_reason: str | None = None
        self.gave_up = False
        # What ended the latest attempt, if it raised (the supervisor asks whether it is worth retrying).
        self.failure: BaseException | None = None
        # When the supervisor tries again (seconds since the epoch) while it waits to, else None.
        self.next_attempt: float | None = None
        # Set when a search or call needs this upstream while it is down: the supervisor's wait ends.
        self.wanted = anyio.Event()
        # Set once the first attempt has either connected or failed.
        self.settled = anyio.Event()
        # Set by the supervisor when it will not run this upstream again.
        self.finished = anyio.Event()

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def state(self) -> State:
        return self._state

    @state.setter
    def state(self, state: State) -> None:
        self._state = state
        changed, self._state_changed = self._state_changed, anyio.Event()
        changed.set()

    async def changed(self) -> None:
        """Wait until the state changes (starting, up, down) or the supervisor stops running it."""
        async with anyio.create_task_group() as tg:
            async def on_finished() -> None:
                await self.finished.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(on_finished)
            await self._state_changed.wait()
            tg.cancel_scope.cancel()

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
            next_attempt=self.next_attempt,
            needs_sign_in=self.needs_sign_in,
        )

    def want(self) -> None:
        """A search or call needs this upstream: if it is waiting to be tried again, try now."""
        if self.state is State.DOWN:
            self.wanted.set()

    @property
    def stopped(self) -> bool:
        """Told to stop for good (the gateway closes, or its registry entry changed or went)."""
        return self._stop.is_set()

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
        self.failure, self.next_attempt = None, None
        self.needs_sign_in = False
        self._stamp_at_start = self._sign_in_stamp()
        tail = StderrTail(self.name, redact=self._redact) if self.spec.transport == "stdio" else None
        failure: StartFailure | None = None
        async with anyio.create_task_group() as tg:
            if tail is not None:
                tg.start_soon(tail.pump)
            try:
                reason = await self._connect_and_serve(tail)
            except Exception as exc:  # noqa: BLE001 - any failure of one upstream is contained here
                self.failure = exc
                # A missing sign-in is checked first: its HTTP 401 is not a wrong entry, and the
                # supervisor waits for `toolscout login` instead of retrying.
                self.needs_sign_in = _is_sign_in_required(exc)
                if self._was_up:
                    reason = describe_failure(exc)
                elif self.needs_sign_in:
                    reason = f"failed to start: {describe_failure(exc)}"
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

    def _sign_in_stamp(self) -> int | None:
        """When the stored sign-in last changed (None: there is none, or no OAuth)."""
        try:
            return self._auth.storage.path.stat().st_mtime_ns if self._auth is not None else None
        except OSError:
            return None

    async def wait_for_sign_in(self, stop: anyio.Event) -> None:
        """Return once the stored sign-in changed since the last attempt began (`toolscout login`
        ran, or a refused token was marked for refreshing), or `stop` is set."""
        while self._sign_in_stamp() == self._stamp_at_start and not stop.is_set():
            with anyio.move_on_after(_SIGN_IN_POLL):
                await stop.wait()

    def give_up(self, attempts: int) -> None:
        """Called by the supervisor: no more restarts; the status says so."""
        self.reason = f"{self.reason} (gave up after {plural(attempts, 'failed attempt')})"
        self.gave_up = True
        logger.error("upstream '%s': %s", self.name, self.reason)

    def retry_later(self, attempts: int, interval: float) -> None:
        """Called by the supervisor once the fast restarts are spent: it keeps trying every `interval`."""
        self.reason = f"{self.reason} ({plural(attempts, 'failed attempt')}; trying again every {interval:g} s)"
        logger.warning("upstream '%s': %s", self.name, self.reason)

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
                        # Declared so that upstreams may ask; relayed to the client whose call it is.
                        sampling_callback=self._relay_sampling,
                        elicitation_callback=self._relay_elicitation,
                        client_info=types.Implementation(name="toolscout", version=__version__),
                    )
                    await stack.enter_async_context(client)
                    self._instructions = client.instructions
                    self._info = client.server_info
                    skipped = local_gateway(self.spec, self._info.name if self._info else None)
                    if skipped is not None:
                        raise UpstreamConfigurationError(self.name, skipped)
                    self.tools = await self._list_tools(client)
                    self.offer = await self._first_offer(client)
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
                self._session_tasks = tg
                tg.start_soon(self._follow_tool_changes, client)
                tg.start_soon(self._follow_offer_changes, client)
                tg.start_soon(self._restore_log_level, client)
                tg.start_soon(self._listen_for_changes, client)
                await ended.wait()
                tg.cancel_scope.cancel()
        finally:
            self._session_tasks = None
            self._set_client(None, None)

    @asynccontextmanager
    async def _transport(self, tail: StderrTail | None, ended: anyio.Event) -> AsyncIterator[Any]:
        # The OAuth sign-in of a remote upstream, made again for each connection so that it reads
        # the stored tokens afresh (a `toolscout login` since the last attempt).
        self._auth = upstream_auth(self.spec)
        async with open_transport(
            self.spec, tail=tail, max_line_bytes=self.limits.max_line_bytes,
            max_result_bytes=self.limits.max_result_bytes, on_fault=self._on_fault,
            on_http_response=self._record_http_status, auth=self._auth, on_gone=self._on_gone,
        ) as (read, write):
            yield EndWatchingStream(read, ended), write

    def _on_fault(self, reason: str) -> None:
        if self._fault is None:
            self._fault = reason

    def _on_gone(self, reason: str) -> None:
        """The HTTP upstream went away mid-response: end its session now, so the calls in flight
        fail at once with `reason` rather than after the SDK's attempts to resume."""
        if self.state is State.UP and self._ended is not None:
            self._on_fault(reason)
            self._ended.set()

    async def _list_tools(self, client: Client) -> tuple[types.Tool, ...]:
        return await self._list_all("tools", lambda cursor: client.list_tools(cursor=cursor))

    async def _list_offer(self, client: Client) -> UpstreamOffer:
        """Its resources, resource templates and prompts, each only if it declares them."""
        capabilities = client.server_capabilities
        resources: Sequence[types.Resource] = ()
        templates: Sequence[types.ResourceTemplate] = ()
        prompts: Sequence[types.Prompt] = ()
        if capabilities.resources is not None:
            resources = await self._list_all("resources", lambda cursor: client.list_resources(cursor=cursor))
            templates = await self._list_all(
                "resource_templates", lambda cursor: client.list_resource_templates(cursor=cursor), optional=True
            )
        if capabilities.prompts is not None:
            prompts = await self._list_all("prompts", lambda cursor: client.list_prompts(cursor=cursor))
        return UpstreamOffer(tuple(resources), tuple(templates), tuple(prompts))

    async def _first_offer(self, client: Client) -> UpstreamOffer:
        """What it offers besides tools, at connection; a failure there costs only those, not its tools."""
        try:
            with anyio.fail_after(self.call_timeout):
                return await self._list_offer(client)
        except Exception as exc:  # noqa: BLE001 - its tools are served all the same
            logger.warning("upstream '%s': listing its resources and prompts failed: %s; its tools are served",
                           self.name, self._redact(describe_failure(exc)))
            return UpstreamOffer()

    async def _list_all(
        self, field: str, fetch: Callable[[str | None], Awaitable[Any]], *, optional: bool = False
    ) -> tuple[Any, ...]:
        """Every page of one listing. `optional`: a server that does not implement it lists nothing."""
        items: list[Any] = []
        cursor: str | None = None
        seen_cursors: set[str] = set()
        for _ in range(MAX_TOOL_PAGES):
            try:
                page = await fetch(cursor)
            except MCPError as exc:
                if optional and exc.code == types.METHOD_NOT_FOUND:
                    return ()
                raise
            # A definition an upstream words with a registry secret in it reaches no client with it.
            items.extend(self._redacted(item) for item in getattr(page, field))
            cursor = page.next_cursor
            if not cursor or cursor in seen_cursors:
                break
            seen_cursors.add(cursor)
        else:
            logger.warning("upstream '%s' listed more than %d pages of %s; kept those", self.name, MAX_TOOL_PAGES,
                           field.replace("_", " "))
        return tuple(items)

    async def _on_message(self, message: Any) -> None:
        # Runs inside the session's receive path: never await a request here, only signal.
        if isinstance(message, types.ToolListChangedNotification):
            self._tools_changed.set()
        elif isinstance(message, (types.ResourceListChangedNotification, types.PromptListChangedNotification)):
            self._offer_changed.set()
        elif isinstance(message, types.ResourceUpdatedNotification):
            self._on_notice(self.name, message)
        elif isinstance(message, types.LoggingMessageNotification):
            self._on_notice(self.name, self._redacted(message))
        elif isinstance(message, Exception):
            logger.debug("upstream '%s' transport error: %s", self.name, self._redact(str(message)))

    async def _listen_for_changes(self, client: Client) -> None:
        """On 2026-07-28 an upstream announces list changes (tools, and resources and prompts when it
        offers them) only on a `subscriptions/listen` stream.

        Such a stream has no replay, so everything is listed again each time one opens: a change
        made while none was open is not missed. A stream that ends, on purpose or not, is opened
        again after a pause that doubles while streams keep ending without a change: over HTTP
        nothing else tells that the upstream restarted (a proxy may also cut idle streams).
        On the handshake era the announcements come on the session itself (`_on_message`).
        """
        capabilities = client.server_capabilities
        tools = bool(capabilities.tools is not None and capabilities.tools.list_changed)
        resources = bool(capabilities.resources is not None and capabilities.resources.list_changed)
        prompts = bool(capabilities.prompts is not None and capabilities.prompts.list_changed)
        if not (tools or resources or prompts):
            return
        ended = 0  # streams in a row that ended without announcing a change
        while True:
            try:
                self._relisten = anyio.Event()
                with anyio.CancelScope() as stream_scope:
                    async with client.listen(
                        tools_list_changed=tools, resources_list_changed=resources, prompts_list_changed=prompts,
                        resource_subscriptions=sorted(self._subscribed),
                    ) as subscription:
                        self._tools_changed.set()
                        self._offer_changed.set()
                        async with anyio.create_task_group() as tg:
                            tg.start_soon(_cancel_when, self._relisten, stream_scope)
                            async for change in subscription:
                                ended = 0
                                self._on_listen_event(change)
                            tg.cancel_scope.cancel()
                if stream_scope.cancelled_caught:
                    ended = 0
                    continue  # the resources subscribed to changed: open a stream for the new set
                logger.debug("upstream '%s' closed its listen stream", self.name)
            except ListenNotSupportedError:
                return
            except SubscriptionLost as exc:
                logger.debug("upstream '%s': listen stream lost: %s", self.name, self._redact(str(exc)))
            except MCPError as exc:
                log = logger.warning if ended == 0 else logger.debug
                log("upstream '%s': cannot open a listen stream for its list changes: %s",
                    self.name, self._redact(exc.message))
            await anyio.sleep(min(_RELISTEN_BASE_DELAY * 2**ended, _RELISTEN_MAX_DELAY))
            ended += 1

    def _on_listen_event(self, change: Any) -> None:
        if isinstance(change, ToolsListChanged):
            self._tools_changed.set()
        elif isinstance(change, ResourceUpdated):
            # Relayed as the handshake era's notification: one shape for the gateway's listeners.
            self._on_notice(self.name, types.ResourceUpdatedNotification(
                params=types.ResourceUpdatedNotificationParams(uri=change.uri)
            ))
        else:
            self._offer_changed.set()

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

    async def _follow_offer_changes(self, client: Client) -> None:
        """Re-list resources, templates and prompts after each of their list_changed notifications."""
        while True:
            await self._offer_changed.wait()
            self._offer_changed = anyio.Event()
            try:
                with anyio.fail_after(self.call_timeout):
                    offer = await self._list_offer(client)
            except Exception as exc:  # noqa: BLE001 - keep serving the previous lists
                logger.warning("upstream '%s': re-listing resources and prompts failed: %s", self.name,
                               self._redact(describe_failure(exc)))
                continue
            if offer != self.offer:
                self.offer = offer
                logger.info("upstream '%s' changed its resources or prompts", self.name)
                self._on_change()

    async def call(
        self, tool: str, arguments: Mapping[str, Any], progress: ProgressFn | None = None,
        round_: InputRound | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Proxy one tools/call; every failure becomes an UpstreamError naming this upstream.

        The timeout runs from the last sign of life: each progress notification of the upstream
        (forwarded to `progress`) restarts it, so long jobs that report progress are not cut off.
        Waiting for a free slot (`max_concurrent_calls`) counts toward it. For a client that
        cannot be asked back (2026-07-28), the upstream's "input required" is returned as it is,
        and `round_` carries the client's answers when it retries.
        """
        caller = CURRENT_CALLER.get()
        inline = caller is not None and not caller.asks_back
        round_ = round_ or InputRound()

        async def send(client: Client, on_progress: Any) -> Any:
            # Cancelling the call (our deadline, or the agent's cancellation) makes the SDK send
            # the upstream notifications/cancelled.
            if inline:
                return await client.session.call_tool(
                    tool, dict(arguments), progress_callback=on_progress, meta=self._meta(),
                    input_responses=round_.responses, request_state=round_.state, allow_input_required=True,
                )
            return await client.call_tool(tool, dict(arguments), progress_callback=on_progress, meta=self._meta())

        result = await self.request(f"'{tool}'", send, progress)
        return result if isinstance(result, types.InputRequiredResult) else self._bounded(tool, result)

    async def read_resource(
        self, uri: str, round_: InputRound | None = None
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        """Proxy resources/read of the upstream's own `uri`, cut to the result size limit; "input
        required" is returned as it is to a client that cannot be asked back."""
        result = await self._interactive(
            f"resource '{uri}'", round_,
            lambda client, round_, raw: client.session.read_resource(
                uri, meta=self._meta(), input_responses=round_.responses, request_state=round_.state,
                allow_input_required=True,
            ) if raw else client.read_resource(uri, meta=self._meta()),
        )
        if isinstance(result, types.InputRequiredResult):
            return result
        return bound_read(result, self.limits.max_result_bytes, server=self.name, uri=uri)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str], round_: InputRound | None = None
    ) -> types.GetPromptResult | types.InputRequiredResult:
        """Proxy prompts/get; "input required" is returned as it is to a client that cannot be asked back."""
        return await self._interactive(
            f"prompt '{name}'", round_,
            lambda client, round_, raw: client.session.get_prompt(
                name, dict(arguments), meta=self._meta(), input_responses=round_.responses,
                request_state=round_.state, allow_input_required=True,
            ) if raw else client.get_prompt(name, dict(arguments), meta=self._meta()),
        )

    async def _interactive(
        self, what: str, round_: InputRound | None, send: Callable[[Client, InputRound, bool], Awaitable[Any]]
    ) -> Any:
        """A request that may need the client's input: `send(client, round_, raw)`, raw (the
        upstream's "input required" kept) when the client cannot be asked back."""
        caller = CURRENT_CALLER.get()
        raw = caller is not None and not caller.asks_back
        return await self.request(what, lambda client, _: send(client, round_ or InputRound(), raw))

    async def complete(
        self, ref: types.PromptReference | types.ResourceTemplateReference, argument: dict[str, str],
        context: dict[str, str] | None,
    ) -> types.CompleteResult:
        return await self.request("a completion", lambda client, _: client.complete(ref, argument, context))

    async def subscribe(self, uri: str, subscribe: bool) -> None:
        """Subscribe to (or unsubscribe from) updates of the upstream's own `uri`: resources/subscribe
        on the handshake era, the listen stream's resource subscriptions on 2026-07-28."""
        (self._subscribed.add if subscribe else self._subscribed.discard)(uri)
        client = self._client
        if client is not None and client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            self._relisten.set()
            return
        verb = "subscribe to" if subscribe else "unsubscribe from"
        await self.request(
            f"a request to {verb} '{uri}'",
            lambda client, _: client.subscribe_resource(uri) if subscribe else client.unsubscribe_resource(uri),
        )

    async def set_logging_level(self, level: types.LoggingLevel) -> None:
        """The level of log messages clients want from this upstream, kept for its next sessions too.

        On the handshake era it is sent as logging/setLevel (if the upstream declares logging); on
        2026-07-28, where logging is an opt-in of each request, our requests carry it (`_meta`).
        """
        self.log_level = level
        if self._client is not None:
            await self._send_log_level(self._client)

    async def _send_log_level(self, client: Client) -> None:
        level = self.log_level
        if level is None or client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        if client.server_capabilities.logging is None:
            return
        with warnings.catch_warnings():
            # Deprecated in 2026-07-28, yet the way to ask a handshake-era server for its logs.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await self.request("logging/setLevel", lambda client, _: client.set_logging_level(level))

    async def _restore_log_level(self, client: Client) -> None:
        """A new session of an upstream that clients asked for log messages is asked again."""
        try:
            await self._send_log_level(client)
        except UpstreamError as exc:
            logger.info("%s", exc)

    def _meta(self) -> dict[str, Any] | None:
        """What each request carries: on 2026-07-28, the opt-in to log messages clients asked for."""
        return {types.LOG_LEVEL_META_KEY: self.log_level} if self.log_level is not None else None

    async def request(
        self,
        what: str,
        send: Callable[[Client, Callable[[float, float | None, str | None], Awaitable[None]]], Awaitable[_Result]],
        progress: ProgressFn | None = None,
    ) -> _Result:
        """Send one request of a client (`what` names it in errors) within the call timeout and the
        call slots; every failure becomes an UpstreamError naming this upstream. `send(client,
        on_progress)` makes the request; each progress report restarts the timeout."""
        if self._client is None or self.state is not State.UP:
            if self.configuration_error:
                raise UpstreamConfigurationError(self.name, f"not available ({self.reason})")
            raise UpstreamError(self.name, f"not available ({self.reason or 'not connected right now'})")
        caller = CURRENT_CALLER.get()
        if caller is not None:
            self._callers.append(caller)
        try:
            return self._redacted(await self._send_request(what, send, progress))
        finally:
            if caller is not None:
                self._callers.remove(caller)

    async def _send_request(
        self,
        what: str,
        send: Callable[[Client, Callable[[float, float | None, str | None], Awaitable[None]]], Awaitable[_Result]],
        progress: ProgressFn | None,
    ) -> _Result:
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
                        raise UpstreamError(self.name, f"went down before {what} could be sent ({self.reason})")
                    sent = True
                    try:
                        return await send(client, on_progress)
                    except MCPError as exc:
                        if attempt == 1 and self._session_gone(exc):
                            # The upstream rejected the session, so it never ran the request: safe to resend.
                            await self._reconnect(client)
                            continue
                        raise self._call_error(what, exc) from exc
                    except (RuntimeError, ValidationError) as exc:
                        raise UpstreamError(
                            self.name,
                            f"returned an invalid result for {what}: {upstream_error_text(self._redact(str(exc)))}",
                            transient=False,
                        ) from exc
        if not sent:
            cap = self.limits.max_concurrent_calls
            raise UpstreamError(
                self.name,
                f"{what} waited {timeout:g} s for one of the {cap} call slots of this upstream "
                "(max_concurrent_calls); the calls ahead of it are still running",
            )
        raise UpstreamError(self.name, f"did not answer {what} within {timeout:g} s{self._probe_after_timeout()}")

    async def _relay_sampling(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        caller = self._caller_asking("sample with the client's model (sampling/createMessage)")
        return caller if isinstance(caller, types.ErrorData) else await caller.sample(self.name, self._redacted(params))

    async def _relay_elicitation(self, context: Any, params: types.ElicitRequestParams) -> Any:
        caller = self._caller_asking("ask the user (elicitation/create)")
        return caller if isinstance(caller, types.ErrorData) else await caller.elicit(self.name, self._redacted(params))

    def _caller_asking(self, what: str) -> Caller | types.ErrorData:
        """The client an upstream's request made during a call goes to: the one whose call it is,
        and never another (ErrorData when that cannot be told)."""
        caller = CURRENT_CALLER.get()
        if caller is not None:
            return caller
        callers = list(dict.fromkeys(self._callers))
        if len(callers) == 1:
            return callers[0]
        why = (
            "no client request is in flight on this upstream" if not callers else
            "requests of several clients are in flight on this upstream, and toolscout does not relay "
            "it to a client it cannot tell is the one asking"
        )
        logger.warning("upstream '%s' wanted to %s, but %s", self.name, what, why)
        return types.ErrorData(code=types.INVALID_REQUEST, message=f"toolscout cannot {what}: {why}")

    def _probe_after_timeout(self) -> str:
        """After a call timed out: ping in the background; an upstream that does not answer that
        either is restarted. Returns what the call's error adds (the call does not wait for it).

        A slow tool leaves the upstream answering pings; a deadlock or a blocking sleep in its only
        thread does not, and would time out every later call.
        """
        client, ended, tasks = self._client, self._ended, self._session_tasks
        if client is None or ended is None or tasks is None:
            return "; it had stopped answering and is being restarted"
        if not self._probing:
            self._probing = True
            tasks.start_soon(self._ping_or_restart, client, ended)
        return f"; it is being pinged now, and is restarted if it does not answer within {self.ping_timeout:g} s"

    async def _ping_or_restart(self, client: Client, ended: anyio.Event) -> None:
        try:
            with anyio.move_on_after(self.ping_timeout):
                try:
                    # The session's ping: the protocol of 2026-07-28 dropped it, and an upstream on
                    # it answers with an error, which shows just as well that it still reads.
                    await client.session.send_ping()
                except MCPError as exc:
                    if exc.code == types.CONNECTION_CLOSED:
                        return  # it went down on its own; the reason is recorded
                except Exception:  # noqa: BLE001 - the session ended on its own; its reason is recorded
                    return
                logger.info("upstream '%s' still answers pings after a call timed out: the tool itself is slow or stuck",
                            self.name)
                return
            self._fault = f"stopped answering (a call timed out, then a ping had no answer within {self.ping_timeout:g} s)"
            logger.warning("upstream '%s' %s; restarting it", self.name, self._fault)
            ended.set()
        finally:
            self._probing = False

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

    def _call_error(self, what: str, exc: MCPError) -> UpstreamError:
        if exc.code == types.CONNECTION_CLOSED:
            why = self._fault or "it may have crashed"
            return UpstreamError(self.name, f"closed the connection during {what} ({self._redact(why)})")
        if exc.code == MISSING_REQUIRED_CLIENT_CAPABILITY and needs_tasks(exc.data):
            return UpstreamError(
                self.name, f"runs {what} only as a task ({TASKS_EXTENSION}), and toolscout does not pass tasks "
                "through; use search_tools to find another tool for the task", transient=False,
            )
        # The upstream answered: the same request would be refused again.
        return UpstreamError(
            self.name, f"rejected {what}: {upstream_error_text(self._redact(exc.message))}", transient=False
        )

    def _bounded(self, tool: str, result: types.CallToolResult) -> types.CallToolResult:
        """Cut an oversized result (its secrets already hidden, `request`) to the limit. An error's
        text is read by the agent as a message: paths shortened, capped as well."""
        if result.is_error:
            content = [
                block.model_copy(update={"text": upstream_error_text(block.text)})
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

    def _redacted(self, message: _Message) -> _Message:
        """Whatever this upstream sends that is relayed (a result, a log message, a request for the
        client), with the registry's secrets for this upstream hidden in every string of it."""
        if not self.spec.secrets or not isinstance(message, BaseModel):
            return message
        dumped = message.model_dump(mode="json", by_alias=True, exclude_none=True)
        redacted = _redacted_json(dumped, self._redact)
        return message if redacted == dumped else type(message).model_validate(redacted)


def _redacted_json(value: Any, redact_text: Callable[[str], str]) -> Any:
    """`value` (parsed JSON) with `redact_text` applied to every string in it, keys included."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        return [_redacted_json(item, redact_text) for item in value]
    if isinstance(value, dict):
        return {redact_text(key): _redacted_json(item, redact_text) for key, item in value.items()}
    return value

"""The requests of one upstream over its connected session: each client request relayed to it with
a call slot and a deadline, resent once when an HTTP upstream lost our session, its failures
turned into an UpstreamError naming the upstream (the one seam for them), and the upstream's own
requests (sampling, elicitation) relayed to the client whose request it is.

    session = UpstreamSession(name, transport="stdio", redaction=Redaction(spec.secrets), limits=limits,
                              call_timeout=30.0, ping_timeout=5.0, subscriptions=subscriptions,
                              connection=upstream, on_notice=...)
    session.attach(client, ended, tasks)        # by the connection, while a session is up
    result = await session.call("search", {"q": "x"}, progress, caller=caller)

The session is handed its name, redaction and limits as values, and asks the connection it runs
over (`Connection`, the upstream's lifecycle) only whether it is up and why not. What clients asked
of the upstream (a log level, subscriptions) outlives each connected session and is asked again of
the next one.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client, MCPError
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.jsonrpc import MISSING_REQUIRED_CLIENT_CAPABILITY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from toolscout.errors import UpstreamError
from toolscout.printable import controls_shown
from toolscout.secrets import Redaction
from toolscout.upstream.agent_text import prompt_changed, read_changed, texts_changed
from toolscout.upstream.tasks import TASKS_EXTENSION, needs_tasks
from toolscout.upstream.error_text import upstream_error_text
from toolscout.upstream.limits import Limits, bound_read, bound_result
from toolscout.upstream.oversized import unwrap_salvaged
from toolscout.upstream.listing import Subscriptions

__all__ = ["Caller", "Connection", "InputRound", "NoticeFn", "ProgressFn", "UpstreamSession"]

logger = logging.getLogger(__name__)

# (progress, total, message) of a call in flight, as the SDK reports it.
ProgressFn = Callable[[float, "float | None", "str | None"], Awaitable[None]]
# Told of what an upstream announces for clients (a log message, a subscribed resource updated):
# (server, the notification). Runs in the session's receive path: must not block.
NoticeFn = Callable[[str, Any], None]
_Result = TypeVar("_Result")
_Send = Callable[[Client, Callable[[float, "float | None", "str | None"], Awaitable[None]]], Awaitable[_Result]]


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


@dataclass(frozen=True)
class InputRound:
    """A retried call of a 2026-07-28 client: the answers to the upstream's input requests, and the
    upstream's own request state."""

    responses: types.InputResponses | None = None
    state: str | None = None


class Connection(Protocol):
    """What a session asks of the connection it runs over (`toolscout.upstream.connection.Upstream`)."""

    @property
    def reason(self) -> str | None: ...

    @property
    def fault(self) -> str | None: ...

    def unavailable(self) -> UpstreamError | None:
        """The error of a request that finds it not up, else None."""

    def lost(self, why: str, *, reconnect: bool) -> None:
        """The session is being ended for `why`; `reconnect`: connect again at once."""


# The caller of the request being sent, for the sampling and elicitation callbacks the SDK calls
# in that request's own task (2026-07-28 input rounds it drives); set only inside `request`.
_SENDING_FOR: ContextVar[Caller | None] = ContextVar("toolscout_sending_for", default=None)


class UpstreamSession:
    """One upstream's requests, over whichever session of it is connected."""

    def __init__(
        self,
        name: str,
        *,
        transport: str,
        redaction: Redaction,
        limits: Limits,
        call_timeout: float,
        ping_timeout: float,
        subscriptions: Subscriptions,
        connection: Connection,
        on_notice: NoticeFn,
    ) -> None:
        self.name = name
        self._transport = transport
        self._redaction = redaction
        self.limits = limits
        self.call_timeout = call_timeout
        self.ping_timeout = ping_timeout
        self._subscriptions = subscriptions
        self._connection = connection
        self._on_notice = on_notice
        # Calls beyond the cap wait here, in order; the wait counts toward each call's timeout.
        self._slots = anyio.Semaphore(limits.max_concurrent_calls)
        # The level of log messages clients asked for (None: none asked; nothing is relayed).
        self.log_level: types.LoggingLevel | None = None
        # The clients whose requests are in flight here (for the upstream's sampling and elicitation).
        self._callers: list[Caller] = []
        # The connected client, its end signal and its task group; an event set whenever the client
        # changes (so a call can wait for a new session after asking for one).
        self._client: Client | None = None
        self._ended: anyio.Event | None = None
        self._tasks: anyio.abc.TaskGroup | None = None
        self._client_changed = anyio.Event()
        # Calls that time out together share one ping, run in the background of the session.
        self._probing = False

    @property
    def client(self) -> Client | None:
        return self._client

    def attach(self, client: Client | None, ended: anyio.Event | None, tasks: anyio.abc.TaskGroup | None = None) -> None:
        """The session requests go over from now on (None: none is connected)."""
        self._client, self._ended, self._tasks = client, ended, tasks
        changed, self._client_changed = self._client_changed, anyio.Event()
        changed.set()

    def end(self) -> None:
        """End the connected session, if one is (the connection records why)."""
        if self._ended is not None:
            self._ended.set()

    def on_message(self, message: Any) -> None:
        """What the upstream announces for clients, and transport errors. Runs inside the session's
        receive path: never awaits a request, only signals."""
        if isinstance(message, types.ResourceUpdatedNotification):
            self._on_notice(self.name, message)
        elif isinstance(message, types.LoggingMessageNotification):
            self._on_notice(self.name, self._redaction.message(message))
        elif isinstance(message, Exception):
            logger.debug("upstream '%s' transport error: %s", self.name, self._redaction.text(str(message)))

    # --- the requests of clients ---------------------------------------------------------------

    async def call(
        self, tool: str, arguments: Mapping[str, Any], progress: ProgressFn | None = None,
        round_: InputRound | None = None, *, caller: Caller | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Proxy one tools/call; every failure becomes an UpstreamError naming this upstream.

        The timeout runs from the last sign of life: each progress notification of the upstream
        (forwarded to `progress`) restarts it, so long jobs that report progress are not cut off.
        Waiting for a free slot (`max_concurrent_calls`) counts toward it. For a client that
        cannot be asked back (2026-07-28), the upstream's "input required" is returned as it is,
        and `round_` carries the client's answers when it retries.
        """
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

        result = await self.request(f"'{tool}'", send, progress, caller=caller)
        return result if isinstance(result, types.InputRequiredResult) else self._bounded(tool, result)

    async def read_resource(
        self, uri: str, round_: InputRound | None = None, *, caller: Caller | None = None
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        """Proxy resources/read of the upstream's own `uri`, cut to the result size limit; "input
        required" is returned as it is to a client that cannot be asked back."""
        result = await self._interactive(
            f"resource '{uri}'", round_, caller,
            lambda client, round_, raw: client.session.read_resource(
                uri, meta=self._meta(), input_responses=round_.responses, request_state=round_.state,
                allow_input_required=True,
            ) if raw else client.read_resource(uri, meta=self._meta()),
        )
        if isinstance(result, types.InputRequiredResult):
            return result
        return read_changed(bound_read(result, self.limits.max_result_bytes, server=self.name, uri=uri), controls_shown)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str], round_: InputRound | None = None, *,
        caller: Caller | None = None,
    ) -> types.GetPromptResult | types.InputRequiredResult:
        """Proxy prompts/get; "input required" is returned as it is to a client that cannot be asked back."""
        result = await self._interactive(
            f"prompt '{name}'", round_, caller,
            lambda client, round_, raw: client.session.get_prompt(
                name, dict(arguments), meta=self._meta(), input_responses=round_.responses,
                request_state=round_.state, allow_input_required=True,
            ) if raw else client.get_prompt(name, dict(arguments), meta=self._meta()),
        )
        return result if isinstance(result, types.InputRequiredResult) else prompt_changed(result, controls_shown)

    async def _interactive(
        self, what: str, round_: InputRound | None, caller: Caller | None,
        send: Callable[[Client, InputRound, bool], Awaitable[Any]],
    ) -> Any:
        """A request that may need the client's input: `send(client, round_, raw)`, raw (the
        upstream's "input required" kept) when the client cannot be asked back."""
        raw = caller is not None and not caller.asks_back
        return await self.request(what, lambda client, _: send(client, round_ or InputRound(), raw), caller=caller)

    async def complete(
        self, ref: types.PromptReference | types.ResourceTemplateReference, argument: dict[str, str],
        context: dict[str, str] | None,
    ) -> types.CompleteResult:
        return await self.request("a completion", lambda client, _: client.complete(ref, argument, context))

    async def subscribe(self, uri: str, subscribe: bool) -> None:
        """Subscribe to (or unsubscribe from) updates of the upstream's own `uri`: resources/subscribe
        on the handshake era, the listen stream's resource subscriptions on 2026-07-28."""
        (self._subscriptions.uris.add if subscribe else self._subscriptions.uris.discard)(uri)
        client = self._client
        if client is not None and client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            self._subscriptions.relisten.set()
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

    async def restore_log_level(self, client: Client) -> None:
        """A new session of an upstream that clients asked for log messages is asked again."""
        try:
            await self._send_log_level(client)
        except UpstreamError as exc:
            logger.info("%s", exc)

    def _meta(self) -> dict[str, Any] | None:
        """What each request carries: on 2026-07-28, the opt-in to log messages clients asked for."""
        return {types.LOG_LEVEL_META_KEY: self.log_level} if self.log_level is not None else None

    # --- sending, with slots, deadlines and one resend -------------------------------------------

    async def request(
        self, what: str, send: _Send[_Result], progress: ProgressFn | None = None, *, caller: Caller | None = None,
    ) -> _Result:
        """Send one request of a client (`what` names it in errors) within the call timeout and the
        call slots; every failure becomes an UpstreamError naming this upstream. `send(client,
        on_progress)` makes the request; each progress report restarts the timeout. `caller`: the
        client whose request it is, where the upstream's questions made during it go."""
        if (unavailable := self._connection.unavailable()) is not None:
            raise unavailable
        if self._client is None:
            raise UpstreamError(self.name, f"not available ({self._connection.reason or 'not connected right now'})")
        if caller is not None:
            self._callers.append(caller)
        token = _SENDING_FOR.set(caller)
        try:
            return self._redaction.message(await self._send_request(what, send, progress))
        finally:
            _SENDING_FOR.reset(token)
            if caller is not None:
                self._callers.remove(caller)

    async def _send_request(self, what: str, send: _Send[_Result], progress: ProgressFn | None) -> _Result:
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
                        raise UpstreamError(self.name, f"went down before {what} could be sent ({self._connection.reason})")
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
                            f"returned an invalid result for {what}: {upstream_error_text(self._redaction.text(str(exc)))}",
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

    def _session_gone(self, exc: MCPError) -> bool:
        """An HTTP upstream that restarted answers our old session id with 404 (spec: start anew)."""
        message = exc.message.lower()
        return self._transport == "http" and exc.code == types.INVALID_REQUEST and (
            "session not found" in message or "session terminated" in message
        )

    async def _reconnect(self, old: Client) -> None:
        """End the current session and wait (within the caller's deadline) for the next one."""
        logger.info("upstream '%s' no longer knows our session (it restarted); reconnecting", self.name)
        self._connection.lost("the upstream lost our session (it restarted); reconnecting", reconnect=True)
        if self._ended is not None:
            self._ended.set()
        while self._client is None or self._client is old:
            await self._client_changed.wait()

    def _call_error(self, what: str, exc: MCPError) -> UpstreamError:
        if exc.code == types.CONNECTION_CLOSED:
            why = self._connection.fault or "it may have crashed"
            return UpstreamError(self.name, f"closed the connection during {what} ({self._redaction.text(why)})")
        if exc.code == MISSING_REQUIRED_CLIENT_CAPABILITY and needs_tasks(exc.data):
            return UpstreamError(
                self.name, f"runs {what} only as a task ({TASKS_EXTENSION}), and toolscout does not pass tasks "
                "through; use search_tools to find another tool for the task", transient=False,
            )
        # The upstream answered: the same request would be refused again.
        return UpstreamError(
            self.name, f"rejected {what}: {upstream_error_text(self._redaction.text(exc.message))}", transient=False
        )

    def _bounded(self, tool: str, result: types.CallToolResult) -> types.CallToolResult:
        """Cut an oversized result (its secrets already hidden, `request`) to the limit, one read only
        in part (`oversized.py`) alike. An error's text is read by the agent as a message: paths
        shortened, capped as well. No text reaches the agent with what drives a terminal."""
        salvaged = unwrap_salvaged(result)
        result = salvaged.result if salvaged is not None else result
        if result.is_error:
            result = texts_changed(result, upstream_error_text)
        result = bound_result(result, self.limits.max_result_bytes, server=self.name, tool=tool,
                              wire_bytes=salvaged.wire_bytes if salvaged is not None else None)
        return texts_changed(result, controls_shown)

    # --- a call that timed out: slow, or wedged? -------------------------------------------------

    def _probe_after_timeout(self) -> str:
        """After a call timed out: ping in the background; an upstream that does not answer that
        either is restarted. Returns what the call's error adds (the call does not wait for it).

        A slow tool leaves the upstream answering pings; a deadlock or a blocking sleep in its only
        thread does not, and would time out every later call.
        """
        client, ended, tasks = self._client, self._ended, self._tasks
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
            why = f"stopped answering (a call timed out, then a ping had no answer within {self.ping_timeout:g} s)"
            self._connection.lost(why, reconnect=False)
            logger.warning("upstream '%s' %s; restarting it", self.name, why)
            ended.set()
        finally:
            self._probing = False

    # --- the upstream's own requests, relayed to the client whose request it is --------------------

    async def relay_sampling(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        caller = self._caller_asking("sample with the client's model (sampling/createMessage)")
        return caller if isinstance(caller, types.ErrorData) else await caller.sample(self.name, self._redaction.message(params))

    async def relay_elicitation(self, context: Any, params: types.ElicitRequestParams) -> Any:
        caller = self._caller_asking("ask the user (elicitation/create)")
        return caller if isinstance(caller, types.ErrorData) else await caller.elicit(self.name, self._redaction.message(params))

    def _caller_asking(self, what: str) -> Caller | types.ErrorData:
        """The client an upstream's request made during a call goes to: the one whose call it is,
        and never another (ErrorData when that cannot be told).

        On 2026-07-28 an upstream's questions come back inside the call's own result, and the SDK
        asks them in the calling task, so the request being sent there tells whose they are; on
        the handshake era they arrive on the session, and the calls in flight tell."""
        caller = _SENDING_FOR.get()
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

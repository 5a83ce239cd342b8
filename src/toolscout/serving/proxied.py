"""What the gateway relays besides its two tools: resources, resource templates, prompts,
completions and logging, each under the names `toolscout.naming` gives them.

    proxied = Proxied(gateway, sessions, publish, bus, view=meta.view)
    proxied.install(server)                   # registers the handlers on the SDK server

A client served with a profile (`view(ctx)`, a `GatewayView`, has one) lists, reads, gets, completes,
subscribes to and hears the log messages of its profile's servers only; to it the others'
resources and prompts do not exist.

- `resources/list`, `resources/templates/list`, `prompts/list`: what the upstreams that are up
  list, screened like tools (`Gateway.offerings`).
- `resources/read`, `prompts/get`, `completion/complete`: to the upstream that owns the name, as a
  JSON-RPC error with a message saying what to do when it cannot be served.
- `resources/subscribe` / `unsubscribe` (handshake era) and the resource subscriptions of a
  `subscriptions/listen` stream while it is open (2026-07-28, `ForwardingListen`): forwarded to
  the owner once per URI however many clients hold it; updates reach those clients.
- `logging/setLevel`: remembered per client session and forwarded to every upstream that
  declares logging; upstream log messages reach the sessions that asked for them at or above
  their level, tagged with the server (`logger` is `server` or `server/their logger`) and
  bounded in rate per upstream.
- list_changed for resources and prompts is forwarded when what clients would list changes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp import MCPError
from mcp_types.jsonrpc import METHOD_NOT_FOUND
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    SubscriptionBus,
)

from toolscout.errors import NotOfferedError, RequestError, ToolCallError, UpstreamError
from toolscout.gateway import Gateway, GatewayView, ServerFilter
from toolscout.naming import namespaced_uri
from toolscout.serving.relay import ClientCaller, asking_client, input_round
from toolscout.upstream.tasks import TASK_METHOD_REFUSAL, TASK_METHODS

__all__ = ["LOG_BURST", "LOG_RATE", "ForwardingListen", "LogRate", "Proxied", "RESOURCE_NOT_FOUND"]

logger = logging.getLogger(__name__)

# The spec's error code for a resource that does not exist.
RESOURCE_NOT_FOUND = -32002
# Upstream log messages relayed per upstream: a burst of this many, then this many a second.
LOG_BURST = 50
LOG_RATE = 10.0
# How long a closed listen stream's unsubscriptions may take at the upstreams.
_RELEASE_TIMEOUT = 5.0
_LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
)


class LogRate:
    """A token bucket per upstream: a chatty (or hostile) upstream cannot flood the clients."""

    def __init__(self, burst: int = LOG_BURST, rate: float = LOG_RATE, clock: Callable[[], float] = anyio.current_time) -> None:
        self._burst, self._rate, self._clock = burst, rate, clock
        self._tokens: dict[str, tuple[float, float]] = {}
        self.dropped: dict[str, int] = {}

    def allow(self, server: str) -> bool:
        now = self._clock()
        tokens, then = self._tokens.get(server, (float(self._burst), now))
        tokens = min(float(self._burst), tokens + (now - then) * self._rate)
        if tokens < 1:
            self._tokens[server] = (tokens, now)
            self.dropped[server] = self.dropped.get(server, 0) + 1
            return False
        self._tokens[server] = (tokens - 1, now)
        return True


class Proxied:
    """Handlers for what is relayed, over one gateway; `sessions()` are the handshake-era clients
    to notify, `publish(event)` reaches the 2026-07-28 listen streams."""

    def __init__(
        self,
        gateway: Gateway,
        sessions: Callable[[], list[ServerSession]],
        publish: Callable[[Any], Any],
        bus: SubscriptionBus,
        *,
        rate: LogRate | None = None,
        view: Callable[[ServerRequestContext[Any] | None], GatewayView] | None = None,
    ) -> None:
        self.gateway = gateway
        # The gateway as the client of a request may see it (`MetaTools.view`): a profile's part.
        self._view = view or (lambda ctx: gateway)
        self._sessions = sessions
        self._publish = publish
        self._rate = rate or LogRate()
        # Per client session: the level it asked for (only sessions that asked get log messages),
        # and the servers it may hear from (None: all).
        self._levels: dict[ServerSession, types.LoggingLevel] = {}
        self._hears: dict[ServerSession, ServerFilter | None] = {}
        # Namespaced URI -> who holds a subscription to it: handshake-era sessions, listen streams.
        self._subscribers: dict[str, list[object]] = {}
        self.listen = ForwardingListen(bus, self)
        gateway.add_offerings_listener(self._offerings_changed)
        gateway.add_notice_listener(self._notice)

    def view(self, ctx: ServerRequestContext[Any, Any] | None) -> GatewayView:
        """The gateway as the client of `ctx` may see it."""
        return self._view(ctx)

    def install(self, server: Server[Any]) -> None:
        for method, params, handler in (
            ("resources/list", types.PaginatedRequestParams, self.list_resources),
            ("resources/templates/list", types.PaginatedRequestParams, self.list_resource_templates),
            ("resources/read", types.ReadResourceRequestParams, self.read_resource),
            ("resources/subscribe", types.SubscribeRequestParams, self.subscribe),
            ("resources/unsubscribe", types.UnsubscribeRequestParams, self.unsubscribe),
            ("prompts/list", types.PaginatedRequestParams, self.list_prompts),
            ("prompts/get", types.GetPromptRequestParams, self.get_prompt),
            ("completion/complete", types.CompleteRequestParams, self.complete),
            # Registered directly: the SDK's constructor argument warns that logging is deprecated
            # in 2026-07-28, yet clients of the handshake era still use it.
            ("logging/setLevel", types.SetLevelRequestParams, self.set_level),
        ):
            server.add_request_handler(method, params, handler)  # type: ignore[arg-type]
        for method in TASK_METHODS:
            # Unknown methods all the same (-32601), with words saying why (`toolscout.upstream.tasks`).
            server.add_request_handler(method, types.RequestParams, _refuse_task_method)  # type: ignore[arg-type]

    # --- lists ------------------------------------------------------------------------------

    async def list_resources(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=self._view(ctx).offerings.listed_resources())

    async def list_resource_templates(
        self, ctx: ServerRequestContext[Any], params: Any
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=self._view(ctx).offerings.listed_templates())

    async def list_prompts(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=self._view(ctx).offerings.listed_prompts())

    # --- requests routed to the owner -------------------------------------------------------

    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        return await self._answered(
            ctx, params, f"resource:{params.uri}",
            lambda round_, caller: _relayed(
                self._view(ctx).read_resource(params.uri, round_, caller=caller), not_found=RESOURCE_NOT_FOUND
            ),
        )

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        return await self._answered(
            ctx, params, f"prompt:{params.name}",
            lambda round_, caller: _relayed(
                self._view(ctx).get_prompt(params.name, params.arguments or {}, round_, caller=caller)
            ),
        )

    async def _answered(self, ctx: ServerRequestContext[Any], params: Any, key: str, request: Any) -> Any:
        """A request whose upstream may need the client's input (`relay.py`): asked back on the
        handshake era; on 2026-07-28 its "input required" becomes ours, and the retry goes back."""
        caller = ClientCaller(ctx)
        try:
            round_ = input_round(key, params.input_responses, params.request_state)
        except ToolCallError as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc)) from exc
        server, result = await request(round_, caller)
        if isinstance(result, types.InputRequiredResult):
            asked = asking_client(caller, server, key, result)
            if isinstance(asked, str):
                raise MCPError(types.INVALID_REQUEST, asked)
            return asked
        return result

    async def complete(self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams) -> types.CompleteResult:
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = params.context.arguments if params.context is not None else None
        return await _relayed(self._view(ctx).complete(params.ref, argument, context))

    async def subscribe(self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams) -> types.EmptyResult:
        await self.hold(params.uri, ctx.session, self._view(ctx))
        return types.EmptyResult()

    async def unsubscribe(self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        await self.release(params.uri, ctx.session)
        return types.EmptyResult()

    async def hold(self, uri: str, holder: object, view: GatewayView | None = None) -> None:
        """`holder` subscribes to `uri` (one `view` may reach); the first one subscribes at the upstream."""
        if view is not None and view.profile is not None:
            try:
                view.resource_owner(uri)  # a resource outside the profile is unknown to its client
            except NotOfferedError as exc:
                raise MCPError(RESOURCE_NOT_FOUND, str(exc)) from exc
        holders = self._subscribers.setdefault(uri, [])
        if not holders:
            try:
                await _relayed(self.gateway.subscribe(uri), not_found=RESOURCE_NOT_FOUND)
            except MCPError:
                self._subscribers.pop(uri, None)
                raise
        if holder not in holders:
            holders.append(holder)

    async def release(self, uri: str, holder: object) -> None:
        """`holder` unsubscribes from `uri`; the last one unsubscribes at the upstream."""
        holders = self._subscribers.get(uri, [])
        if holder in holders:
            holders.remove(holder)
        if not holders and self._subscribers.pop(uri, None) is not None:
            await _relayed(self.gateway.subscribe(uri, False), not_found=RESOURCE_NOT_FOUND)

    async def set_level(self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams) -> types.EmptyResult:
        self._levels[ctx.session] = params.level
        view = self._view(ctx)
        self._hears[ctx.session] = view.allows_server if view.profile is not None else None
        # Upstreams send what the most talkative client asked for; each client gets its own share.
        await self.gateway.set_logging_level(min(self._levels.values(), key=_LEVELS.index))
        return types.EmptyResult()

    # --- what upstreams announce ------------------------------------------------------------

    async def _notice(self, server: str, notification: Any) -> None:
        if isinstance(notification, types.ResourceUpdatedNotification):
            await self._resource_updated(namespaced_uri(server, notification.params.uri))
        elif isinstance(notification, types.LoggingMessageNotification):
            await self._log(server, notification.params)

    async def _resource_updated(self, uri: str) -> None:
        for holder in list(self._subscribers.get(uri, ())):
            # Listen streams are told through the bus below.
            if isinstance(holder, ServerSession) and not await _told(holder.send_resource_updated(uri)):
                self._subscribers[uri].remove(holder)
        await self._publish(ResourceUpdated(uri=uri))

    async def _log(self, server: str, params: types.LoggingMessageNotificationParams) -> None:
        if not self._levels or not self._rate.allow(server):
            return
        dropped = self._rate.dropped.pop(server, 0)
        tagged = params.model_copy(update={"logger": f"{server}/{params.logger}" if params.logger else server})
        messages = [tagged]
        if dropped:
            messages.insert(0, types.LoggingMessageNotificationParams(
                level="warning", logger="toolscout",
                data=f"{dropped} log message(s) of upstream '{server}' were dropped (over {LOG_RATE:g} a second)",
            ))
        for session, level in list(self._levels.items()):
            hears = self._hears.get(session)
            if hears is not None and not hears(server):
                continue
            for message in messages:
                if _LEVELS.index(message.level) >= _LEVELS.index(level):
                    if not await _told(session.send_notification(types.LoggingMessageNotification(params=message))):
                        self._levels.pop(session, None)
                        self._hears.pop(session, None)
                        break

    async def _offerings_changed(self, resources: bool, prompts: bool) -> None:
        for session in self._sessions():
            if resources:
                await _told(session.send_resource_list_changed())
            if prompts:
                await _told(session.send_prompt_list_changed())
        if resources:
            await self._publish(ResourcesListChanged())
        if prompts:
            await self._publish(PromptsListChanged())


class ForwardingListen(ListenHandler):
    """The SDK's `subscriptions/listen` streams (2026-07-28), whose resource subscriptions are held
    at the owning upstreams while the stream is open."""

    def __init__(self, bus: SubscriptionBus, proxied: Proxied) -> None:
        super().__init__(bus)
        self._proxied = proxied

    async def __call__(self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams) -> Any:
        wanted = params.notifications.resource_subscriptions if params.notifications is not None else None
        stream, held = object(), []
        try:
            for uri in wanted or ():
                try:
                    await self._proxied.hold(uri, stream, self._proxied.view(ctx))
                    held.append(uri)
                except MCPError as exc:
                    logger.info("listen stream: not following '%s': %s", uri, exc.error.message)
            return await super().__call__(ctx, params)
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(_RELEASE_TIMEOUT):
                for uri in held:
                    try:
                        await self._proxied.release(uri, stream)
                    except MCPError as exc:
                        logger.info("listen stream: unsubscribing from '%s' failed: %s", uri, exc.error.message)


async def _told(sending: Any) -> bool:
    """Await a notification to one client; False when that client went away."""
    try:
        await sending
    except Exception:  # noqa: BLE001 - a client that went away is simply forgotten
        return False
    return True


async def _relayed(request: Any, *, not_found: int = types.INVALID_PARAMS) -> Any:
    """Await a gateway request; what cannot be served becomes a JSON-RPC error saying why."""
    try:
        return await request
    except NotOfferedError as exc:
        raise MCPError(not_found, str(exc)) from exc
    except RequestError as exc:
        raise MCPError(types.INVALID_PARAMS, str(exc)) from exc
    except UpstreamError as exc:
        raise MCPError(types.INTERNAL_ERROR, f"{exc}. Try again later.") from exc


async def _refuse_task_method(ctx: ServerRequestContext[Any], params: Any) -> Any:
    raise MCPError(METHOD_NOT_FOUND, TASK_METHOD_REFUSAL, data=ctx.method)

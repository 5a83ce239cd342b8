"""The MCP server an agent talks to: two tools, `search_tools` and `execute_tool` (and `run_code`
with code mode, `code_mode.py`), and the upstreams' resources, prompts, completions and logging relayed (`proxied.py`).

Built on the SDK's low-level `Server` because the instructions are generated from the live catalog
(`describe.py`) and change while the server runs. The two tools' definitions (`meta_tools.py`) never change, whatever
upstreams are connected: the servers are named in the instructions and in each search answer.
Every failure reaches the agent as an `isError` result with actionable text; never as a traceback.
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from contextlib import nullcontext
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ToolsListChanged

from toolscout import __version__
from toolscout.catalog import Catalog, ToolRecord
from toolscout.errors import CallRefused, ToolCallError, UnknownToolError, UpstreamConfigurationError, UpstreamError
from toolscout.gateway import Gateway, GatewayView, view_of
from toolscout.naming import MAX_ID_LENGTH, qualified_forms
from toolscout.printable import controls_shown
from toolscout.serving.request_ids import HEADER as REQUEST_ID_HEADER
from toolscout.serving.request_ids import serving_request
from toolscout.serving import describe
from toolscout.serving.answer import search_answer
from toolscout.serving.describe import search_entry
from toolscout.serving.meta_tools import EXECUTE_TOOL, META_TOOLS, RUN_CODE, SEARCH_TOOL
from toolscout.serving.search_arguments import search_arguments
from toolscout.serving.confirmation import carry_confirmation
from toolscout.serving.call_policies import CallPolicies, Origin, origin_of
from toolscout.serving.metrics import CallOutcome, GatewayMetrics
from toolscout.serving.options import CodeModeLimits
from toolscout.serving.proxied import Proxied
from toolscout.serving.relay import ClientCaller, asking_client, input_round
from toolscout.serving.tracing import tracer
from toolscout.serving.scoped import ProfileChooser
from toolscout.upstream.tasks import refused_task
from toolscout.serving.validation import (
    check_argument_size,
    parse_arguments,
    resolve_tool,
    validate_arguments,
)
from toolscout.upstream.failures import unavailable
from toolscout.upstream.session import ProgressFn

__all__ = [
    "CallObserver",
    "MetaTools",
    "build_server",
    "search_entry",
]

logger = logging.getLogger(__name__)

# Longer than any id (MAX_ID_LENGTH) with room for a prefix an agent may have added.
_MAX_NAME_CHARS = 4 * MAX_ID_LENGTH
# Clients we announce catalog changes to; old HTTP sessions fall off the end.
_MAX_TRACKED_SESSIONS = 256


class _GatewayServer(Server[Any]):
    """The SDK server, advertising listChanged for tools (what the meta-tools reach changes),
    resources and prompts (upstreams come and go), with instructions written from the gateway's
    state whenever a client asks for them.

    These options are the handshake's (up to 2025-11-25); on 2026-07-28 the SDK advertises
    listChanged because `subscriptions/listen` is served.
    """

    # Set by `build_server`: the instructions as of now. The SDK reads `instructions` at each
    # `initialize` (HTTP), `server/discover`, and when stdio serving starts (after the ready wait).
    live_instructions: Callable[[], str] | None = None
    _fixed_instructions: str | None = None

    @property  # type: ignore[override]
    def instructions(self) -> str | None:
        return self.live_instructions() if self.live_instructions is not None else self._fixed_instructions

    @instructions.setter
    def instructions(self, value: str | None) -> None:
        self._fixed_instructions = value

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True, prompts_changed=True, resources_changed=True),
            experimental_capabilities,
            extensions,
        )



def _tool_name(arguments: dict[str, Any]) -> str:
    """The tool id `execute_tool` was given; ToolCallError saying what is wrong with it."""
    name = arguments.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ToolCallError("'name' must be the id of a tool, as returned by search_tools.")
    name = name.strip()
    if len(name) > _MAX_NAME_CHARS:
        # Ids are at most 64 characters; a long one is a mistake, and fuzzy matching it is costly.
        raise ToolCallError(
            f"'name' is {len(name):,} characters, but tool ids are at most {MAX_ID_LENGTH}; "
            "pass an id exactly as search_tools returned it."
        )
    return name

def _error(text: str) -> types.CallToolResult:
    # Error texts quote upstreams (their messages, their stderr): nothing that drives a terminal passes.
    return types.CallToolResult(content=[types.TextContent(text=controls_shown(text))], is_error=True)


# Told about every meta-tool call once it has its result: (request context, tool name, the
# arguments as sent, the result). For learning from use; must be quick, must not raise.
CallObserver = Callable[[ServerRequestContext[Any], str, dict[str, Any], types.CallToolResult], None]


class MetaTools:
    """Handlers of the two meta-tools over one gateway."""

    def __init__(
        self,
        gateway: Gateway,
        observers: Sequence[CallObserver] = (),
        metrics: GatewayMetrics | None = None,
        profiles: ProfileChooser | None = None,
        code_mode: CodeModeLimits | None = None,
        policies: CallPolicies | None = None,
    ) -> None:
        self.gateway = gateway
        # run_code (`code_mode.py`), imported only when on: the sandbox stays out of the process otherwise.
        if code_mode is not None:
            from toolscout.serving.code_mode import CodeMode
        self.code_mode = CodeMode(self, code_mode) if code_mode is not None else None
        # Confirmation, rate limits and the audit trail, under `execute` and `search`.
        self.policies = policies or CallPolicies()
        self._observers = tuple(observers)
        self._metrics = metrics
        self._profiles = profiles
        # Two ways of telling clients the tools changed, one per protocol era: clients that did the
        # initialize handshake (up to 2025-11-25) get a notification on their session; clients on
        # 2026-07-28 get it on the `subscriptions/listen` streams they opened, served by the SDK's
        # ListenHandler from this bus.
        self._sessions: deque[ServerSession] = deque(maxlen=_MAX_TRACKED_SESSIONS)
        # Served by `proxied.ForwardingListen`, which also forwards the streams' resource subscriptions.
        self.bus = InMemorySubscriptionBus()

    def view(self, ctx: ServerRequestContext[Any] | None) -> GatewayView:
        """The gateway as the client of this request may see it: its profile's part, or all of it."""
        profile = self._profiles.choose(ctx.request if ctx is not None else None) if self._profiles else None
        return view_of(self.gateway, profile)

    # --- tools/list ------------------------------------------------------------------------

    def tools(self) -> list[types.Tool]:
        """The two meta-tools: the same definitions whatever upstreams are connected."""
        return [*META_TOOLS, self.code_mode.tool] if self.code_mode is not None else list(META_TOOLS)

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools())

    # --- tools/call ------------------------------------------------------------------------

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        arguments = params.arguments or {}
        # The HTTP request's id (its context is not this task's): log lines of this call carry it.
        request = getattr(ctx, "request", None)
        with serving_request(request.headers.get(REQUEST_ID_HEADER) if request is not None else None):
            started = time.perf_counter()
            result = await self._call(ctx, params, arguments)
            if isinstance(result, types.InputRequiredResult):
                return result  # the call is not over: the client retries it with its answers
            logger.info("%s %s in %.0f ms", params.name, "failed" if result.is_error else "answered",
                        (time.perf_counter() - started) * 1000)
        for observe in self._observers:
            try:
                observe(ctx, params.name, arguments, result)
            except Exception:  # noqa: BLE001 - an observer never changes what the agent gets
                logger.exception("call observer failed")
        return result

    async def _call(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams, arguments: dict[str, Any]
    ) -> types.CallToolResult | types.InputRequiredResult:
        name = params.name
        gateway = self.view(ctx)
        try:
            if name == SEARCH_TOOL:
                return await self.search(arguments, gateway, ClientCaller(ctx))
            if name == EXECUTE_TOOL:
                # The upstream's progress reaches the agent (a no-op unless it asked for progress),
                # and its sampling and elicitation requests reach this client (`relay.py`).
                caller = ClientCaller(ctx)
                try:
                    result = await self.execute(
                        arguments, progress=ctx.session.report_progress, caller=caller, gateway=gateway,
                        answers=(params.input_responses, params.request_state),
                    )
                except UpstreamError as exc:
                    if not caller.notes:
                        raise
                    # The upstream failed because its question could not be relayed: say that.
                    return _error("\n".join([f"{exc}.", *caller.notes]))
                return caller.noted(result) if isinstance(result, types.CallToolResult) else result
            if name == RUN_CODE and self.code_mode is not None:
                return await self.code_mode.run(ctx, arguments)
            return _error(f"Unknown tool '{name}'. This server has two tools: {SEARCH_TOOL} and {EXECUTE_TOOL}.")
        except ToolCallError as exc:
            return _error(str(exc))
        except UpstreamError as exc:
            return _error(_upstream_failure(exc))
        except Exception as exc:  # noqa: BLE001 - the agent gets a message, the log gets the traceback
            logger.exception("%s failed", name)
            return _error(f"toolscout failed to handle {name}: {type(exc).__name__}: {exc}")

    async def search(
        self, arguments: dict[str, Any], gateway: GatewayView | None = None, caller: ClientCaller | None = None
    ) -> types.CallToolResult:
        gateway = gateway or self.gateway
        return await self.policies.audited(
            _origin(caller, gateway), SEARCH_TOOL, arguments, lambda: self._search(arguments, gateway)
        )

    async def _search(self, arguments: dict[str, Any], gateway: GatewayView) -> types.CallToolResult:
        query, limit, servers, max_tokens = search_arguments(arguments, gateway)
        with tracer().start_as_current_span("toolscout.search") as span, \
                self._metrics.searching() if self._metrics is not None else nullcontext():
            response = await gateway.search(query, limit=limit, servers=servers)
            span.set_attributes({
                "toolscout.query.chars": len(query), "toolscout.limit": limit,
                "toolscout.hits": len(response.hits), "toolscout.signals": list(response.signals),
            })
        result = search_answer(
            response, gateway.statuses(), gateway.catalog, servers=servers, max_tokens=max_tokens
        )
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(result, ensure_ascii=False))],
            structured_content=result,
        )

    async def execute(
        self,
        arguments: dict[str, Any],
        progress: ProgressFn | None = None,
        *,
        caller: ClientCaller | None = None,
        answers: tuple[types.InputResponses | None, str | None] = (None, None),
        gateway: GatewayView | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Run the tool `arguments` name, once the policies admit it (`call_policies.py`), recorded in the
        audit trail. `caller`: the client, asked to confirm and for an upstream's "input required"
        (2026-07-28); `answers`: the input responses and request state of the client's retry."""
        gateway = gateway or self.gateway
        origin = _origin(caller, gateway)
        name = arguments.get("name")
        return await self.policies.audited(
            origin, name if isinstance(name, str) else "", arguments.get("arguments"),
            lambda: self._execute(arguments, progress, caller, answers, gateway, origin),
        )

    async def _execute(
        self, arguments: dict[str, Any], progress: ProgressFn | None, caller: ClientCaller | None,
        answers: tuple[types.InputResponses | None, str | None], gateway: GatewayView, origin: Origin,
    ) -> types.CallToolResult | types.InputRequiredResult:
        name = _tool_name(arguments)
        catalog = gateway.catalog
        if (reason := catalog.withheld_reason(name)) is not None:
            raise CallRefused("withheld", f"Tool '{name}' is withheld: {reason}")
        try:
            tool = self._resolve(name, gateway)
        except UnknownToolError:
            if name in (SEARCH_TOOL, EXECUTE_TOOL):
                raise ToolCallError(
                    f"'{name}' is one of this server's own two tools, not a tool search_tools finds: call "
                    f"{name} directly, as you called execute_tool, not through execute_tool."
                ) from None
            # Its server may be reconnecting, or up a moment before the catalog caught up with it.
            if not await self._bring_up_server_of(name, gateway):
                raise
            tool = self._resolve(name, gateway)
        if tool.task_support == "required":
            raise ToolCallError(refused_task(tool.id, tool.server))
        raw = arguments.get("arguments")
        extra = {key: value for key, value in arguments.items() if key not in ("name", "arguments")}
        if raw is None and extra:
            # A common slip: the tool's arguments passed beside `name` instead of inside `arguments`.
            raw = extra
        check_argument_size(raw, gateway.limits.max_argument_bytes)
        tool_arguments = parse_arguments(raw)
        notes = validate_arguments(tool, tool_arguments)
        answers_or_question = await self.policies.admit(origin, tool, tool_arguments, caller, answers)
        if isinstance(answers_or_question, types.InputRequiredResult):
            return answers_or_question  # the user's confirmation first (a 2026-07-28 client retries)
        answers = answers_or_question
        with tracer().start_as_current_span("toolscout.execute") as span, \
                self._metrics.calling(tool.server) if self._metrics is not None else nullcontext(CallOutcome()) as outcome:
            # "failed" until the upstream answers (the span records the exception otherwise).
            span.set_attributes({"toolscout.tool": tool.id, "toolscout.server": tool.server, "toolscout.outcome": outcome.value})
            answer = await gateway.call(tool, tool_arguments, progress, input_round(tool.id, *answers), caller=caller)
            if isinstance(answer, types.InputRequiredResult):
                outcome.value = "input_required"
                span.set_attribute("toolscout.outcome", outcome.value)
            else:
                outcome.value = "error" if answer.is_error else "ok"
                span.set_attribute("toolscout.outcome", outcome.value)
        if isinstance(answer, types.InputRequiredResult):
            if caller is None:
                raise ToolCallError(f"'{tool.id}' needs input from the client, and this call cannot take any.")
            asked = asking_client(caller, tool.server, tool.id, answer)
            return _error(asked) if isinstance(asked, str) else carry_confirmation(tool, tool_arguments, asked)
        result = _naming_server(tool, answer)
        if notes:
            # Keys the schema does not name were passed on: the agent learns they may have been ignored.
            result = result.model_copy(update={"content": [*result.content, *(types.TextContent(text=n) for n in notes)]})
        return result

    def _resolve(self, name: str, gateway: GatewayView) -> ToolRecord:
        catalog = gateway.catalog
        withheld = [t for t in gateway.listed().tools if t.id in catalog.withheld] if catalog.withheld else []
        return resolve_tool(name, catalog.tools, withheld)

    async def _bring_up_server_of(self, tool_id: str, gateway: GatewayView) -> bool:
        """An id whose server is down is not unknown: try that server now (bounded), and say that
        the server is the problem if it stays down. True if it is up, so the id is worth resolving
        again; False if no configured server is named."""
        # The id's own server, or the one a qualified name ("git.git_log", "mcp__git__git_log") names.
        servers = [gateway.server_of(tool_id), *(server for server, _ in qualified_forms(tool_id))]
        named = [s for s in dict.fromkeys(servers) if s and gateway.status_of(s) is not None]
        for server in named:
            began = anyio.current_time()
            if not await gateway.bring_up(server):
                upstream = gateway.status_of(server)
                assert upstream is not None
                raise unavailable(upstream, waited=round(anyio.current_time() - began))
        return bool(named)

    # --- telling clients about changes --------------------------------------------------------

    def sessions(self) -> list[ServerSession]:
        """The clients of the handshake era to notify of changes."""
        return list(self._sessions)

    async def publish(self, event: Any) -> None:
        """Tell the 2026-07-28 clients' `subscriptions/listen` streams of a change."""
        await self.bus.publish(event)

    async def track_sessions(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Middleware: remember each client that completed the handshake, to notify it later; a
        client with a profile reads instructions about its profile's servers only."""
        result = await call_next(ctx)
        if ctx.method == "notifications/initialized":
            self._sessions.append(ctx.session)
        elif ctx.method in ("initialize", "server/discover") and isinstance(result, dict) and self._profiles:
            view = self.view(ctx)
            if view.profile is not None:
                result = {**result, "instructions": describe.instructions(view.statuses(), view.catalog)}
        return result

    async def catalog_changed(self) -> None:
        for session in list(self._sessions):
            try:
                await session.send_tool_list_changed()
            except Exception:  # noqa: BLE001 - a client that went away is simply forgotten
                self._sessions.remove(session)
        await self.bus.publish(ToolsListChanged())


def _upstream_failure(exc: UpstreamError) -> str:
    """What the agent reads when an upstream failed its call; "try again later" only when it may help."""
    if isinstance(exc, UpstreamConfigurationError):
        return (f"{exc}. A person must change toolscout's configuration of this server first; "
                "use search_tools to find another tool for the task.")
    if exc.transient:
        return f"{exc}. Try again later, or use search_tools to find another tool for the task."
    return f"{exc}."


def _naming_server(tool: ToolRecord, result: types.CallToolResult) -> types.CallToolResult:
    """An upstream's error result, its text led by which upstream answered and for which tool.

    Upstreams word their errors for a client that called them directly ("Error executing tool
    git_log: ..."); through the gateway the agent must also learn which server that was.
    """
    if not result.is_error:
        return result
    content = list(result.content)
    first = next((i for i, block in enumerate(content) if isinstance(block, types.TextContent)), None)
    origin = f"Upstream server '{tool.server}' answered '{tool.id}' with an error"
    if first is None:
        content.insert(0, types.TextContent(text=origin + "."))
    else:
        block = content[first]
        content[first] = block.model_copy(update={"text": f"{origin}: {block.text}"})
    return result.model_copy(update={"content": content})


def _origin(caller: ClientCaller | None, gateway: GatewayView) -> Origin:
    return origin_of(caller, gateway.profile.name if gateway.profile is not None else None)


def build_server(
    gateway: Gateway,
    observers: Sequence[CallObserver] = (),
    metrics: GatewayMetrics | None = None,
    profiles: ProfileChooser | None = None,
    code_mode: CodeModeLimits | None = None,
    policies: CallPolicies | None = None,
) -> Server[Any]:
    """The MCP server for `gateway`; its descriptions follow the gateway's catalog. With `metrics`,
    searches and calls are counted and timed there; with `profiles`, each request is served with
    its client's profile (`toolscout.serving.scoped`); with `code_mode`, run_code too (`code_mode.py`)."""
    meta = MetaTools(gateway, observers, metrics, profiles, code_mode, policies)
    proxied = Proxied(gateway, meta.sessions, meta.publish, meta.bus, view=meta.view)
    server = _GatewayServer(
        "toolscout",
        version=__version__,
        title="toolscout",
        description="Search and run the tools of many MCP servers through two tools.",
        on_list_tools=meta.list_tools,
        on_call_tool=meta.call_tool,
        on_subscriptions_listen=proxied.listen,
    )
    server.live_instructions = lambda: describe.instructions(gateway.statuses(), gateway.catalog)
    server.middleware.append(meta.track_sessions)
    # The request state of a call that needs the client's input (2026-07-28) is sealed on the wire:
    # a client cannot forge one that steers a retry to another tool.
    server.middleware.append(RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience="toolscout"))
    proxied.install(server)

    async def refresh(catalog: Catalog) -> None:
        await meta.catalog_changed()

    gateway.add_listener(refresh)
    return server

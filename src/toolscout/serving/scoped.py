"""The gateway as one profile sees it, and which profile a request is served with.

    view = ScopedGateway(gateway, profile)      # what the meta-tools of that client work with
    profile = chooser.choose(ctx)               # None: the whole gateway

`ScopedGateway` answers what `MetaTools` asks a gateway (statuses, catalog, search, call, ...)
with only the servers and tools of one profile: search never returns, execute never reaches, and
the descriptions and instructions never name anything outside it. A tool outside the profile is
unknown to that client, as if no server had it; a search limited to a server outside it names
the servers it may use.

The profile of a request (`ProfileChooser`): over HTTP the client's token when the token file
gives it one, else the path (`/mcp/<profile>`, recorded on the request by `profile_paths`), else
the default (`serve --profile`); over stdio the default.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from toolscout.catalog import Catalog, ToolRecord
from toolscout.errors import UnknownToolError
from toolscout.registry.profiles import PROFILE_NAME, Profile, Profiles
from toolscout.serving.clients import client_name
from toolscout.upstream.status import summarize

if TYPE_CHECKING:
    import mcp_types as types
    from starlette.types import ASGIApp, Receive, Scope, Send

    from toolscout.gateway import Gateway
    from toolscout.search import SearchResponse
    from toolscout.upstream import Limits, UpstreamStatus
    from toolscout.upstream.session import Caller, InputRound, ProgressFn
    from toolscout.upstream.offerings import Offerings

__all__ = ["PROFILE_SCOPE_KEY", "ProfileChooser", "ScopedGateway", "profile_chooser", "profile_paths"]

# Where the HTTP layer leaves a request's profile for the MCP handlers (an ASGI scope key).
PROFILE_SCOPE_KEY = "toolscout.profile"
# Sessions whose profile is remembered (the newest); an older one then follows the path again.
_REMEMBERED_SESSIONS = 4096


class ScopedGateway:
    """One profile's view of a gateway."""

    def __init__(self, gateway: Gateway, profile: Profile) -> None:
        self.gateway = gateway
        self.profile = profile

    @property
    def limits(self) -> Limits:
        return self.gateway.limits

    @property
    def catalog(self) -> Catalog:
        return self._scoped(self.gateway.catalog)

    def listed(self) -> Catalog:
        return self._scoped(self.gateway.listed())

    def statuses(self, *, screened: bool = True) -> list[UpstreamStatus]:
        return [
            self._seen(s) for s in self.gateway.statuses(screened=screened) if self.profile.allows_server(s.name)
        ]

    def server_names(self) -> list[str]:
        return [name for name in self.gateway.server_names() if self.profile.allows_server(name)]

    def server_of(self, tool_id: str) -> str | None:
        server = self.gateway.server_of(tool_id)
        return server if server is not None and self.profile.allows_server(server) else None

    def status_of(self, server: str) -> UpstreamStatus | None:
        status = self.gateway.status_of(server) if self.profile.allows_server(server) else None
        return self._seen(status) if status is not None else None

    def _seen(self, status: UpstreamStatus) -> UpstreamStatus:
        """`status` as this profile may see it: when the profile hides some of the server's tools,
        its tool count and its summary are of the tools it shows (a summary in the server's own
        words, or built from all its tools, could name or describe a hidden one)."""
        tools = [tool for tool in self.gateway.catalog.tools if tool.server == status.name]
        shown = [tool for tool in tools if self._allows(tool)]
        if len(shown) == len(tools):
            return status
        return dataclasses.replace(status, tool_count=len(shown), summary=summarize(None, None, shown))

    async def bring_up(self, server: str) -> bool:
        return self.profile.allows_server(server) and await self.gateway.bring_up(server)

    # --- resources, prompts and completions: whole servers in or out (tool patterns do not apply) --

    def allows_server(self, server: str) -> bool:
        return self.profile.allows_server(server)

    @property
    def offerings(self) -> Offerings:
        return self.gateway.offerings.only(self.profile.allows_server)

    def resource_owner(self, uri: str) -> tuple[str, str]:
        return self.gateway.resource_owner(uri, allows=self.profile.allows_server)

    async def read_resource(
        self, uri: str, round_: InputRound | None = None, *, caller: Caller | None = None
    ) -> tuple[str, types.ReadResourceResult | types.InputRequiredResult]:
        return await self.gateway.read_resource(uri, round_, allows=self.profile.allows_server, caller=caller)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str], round_: InputRound | None = None, *,
        caller: Caller | None = None,
    ) -> tuple[str, types.GetPromptResult | types.InputRequiredResult]:
        return await self.gateway.get_prompt(name, arguments, round_, allows=self.profile.allows_server, caller=caller)

    async def complete(
        self, ref: types.PromptReference | types.ResourceTemplateReference, argument: dict[str, str],
        context: dict[str, str] | None,
    ) -> types.CompleteResult:
        return await self.gateway.complete(ref, argument, context, allows=self.profile.allows_server)

    async def search(self, query: str, *, limit: int, servers: Collection[str] | None = None) -> SearchResponse:
        allowed = [s for s in (servers if servers is not None else self.profile.servers) if self.profile.allows_server(s)]
        # Tools of these servers the profile leaves out could take places among the first `limit`:
        # ask for that many more, so the answer still holds `limit` allowed tools when there are.
        left_out = sum(
            1 for tool in self.gateway.catalog.tools
            if tool.server in allowed and not self.profile.allows(tool.id, tool.server)
        )
        response = await self.gateway.search(query, limit=limit + left_out, servers=sorted(allowed))
        hits = tuple(hit for hit in response.hits if self._allows(hit.tool))[:limit]
        return dataclasses.replace(response, hits=hits)

    async def call(
        self, tool: ToolRecord, arguments: Mapping[str, Any], progress: ProgressFn | None = None,
        round_: InputRound | None = None, *, caller: Caller | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        if not self._allows(tool):
            # MetaTools resolves names against this view's catalog, so this is a second lock only;
            # to the client the tool does not exist.
            raise UnknownToolError(f"No tool '{tool.id}'. Use search_tools to find the tool for the task.")
        return await self.gateway.call(tool, arguments, progress, round_, caller=caller)

    def _allows(self, tool: ToolRecord) -> bool:
        return self.profile.allows(tool.id, tool.server)

    def _scoped(self, catalog: Catalog) -> Catalog:
        tools = [tool for tool in catalog.tools if self._allows(tool)]
        withheld = {
            tool_id: reason for tool_id, reason in catalog.withheld.items()
            if (server := self.gateway.server_of(tool_id)) is not None and self.profile.allows(tool_id, server)
        }
        return Catalog.of(tools, withheld)


class ProfileChooser:
    """Which profile a request is served with (None: the whole gateway)."""

    def __init__(
        self,
        profiles: Profiles,
        default: Profile | None = None,
        client_profiles: Mapping[str, Profile] | None = None,
    ) -> None:
        self.profiles = profiles
        self.default = default
        # Client name (the token file's) -> the profile its token is bound to.
        self.client_profiles = dict(client_profiles or {})

    def choose(self, request: Any) -> Profile | None:
        """The profile of `request` (a Starlette request, or None over stdio and in process)."""
        scope = getattr(request, "scope", None)
        if not isinstance(scope, dict):
            return self.default
        chosen = scope.get(PROFILE_SCOPE_KEY)
        return chosen if isinstance(chosen, Profile) else self.default


def profile_paths(
    app: ASGIApp, chooser: ProfileChooser, base: str = "/mcp", operator_paths: Collection[str] = ()
) -> ASGIApp:
    """ASGI middleware: `/mcp/<profile>` is served as `/mcp` with that profile.

    A token bound to a profile (`chooser.client_profiles`) decides by itself: its client may use
    `/mcp` or its own profile's path, and gets 403 on another. A session keeps the profile it was
    opened with: the same session id on another profile's path is refused (404, as an unknown
    session), so a client cannot step out of its profile by changing the URL mid-session.
    `operator_paths` (/metrics: every server's counts) are refused (403) to a token bound to a
    profile. An unknown profile's 404 names no profile.
    """
    sessions: OrderedDict[str, str] = OrderedDict()

    async def routed(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        named: str | None = None
        if path.startswith(base + "/"):
            named = path[len(base) + 1:].strip("/")
            if not PROFILE_NAME.fullmatch(named) or named not in chooser.profiles.by_name:
                # Which profiles exist is the operator's to know, not every token holder's.
                await _refuse(send, 404, f"no profile '{named[:64]}' here; the profiles are named in the "
                                         "registry's \"profiles\" (ask whoever runs this gateway)")
                return
        client = client_name(scope)
        bound = chooser.client_profiles.get(client) if client is not None else None
        if path != base and named is None:
            if bound is not None and path in operator_paths:
                await _refuse(send, 403, f"this client's token is bound to profile '{bound.name}'; {path} covers every "
                                         "server and needs a token that is not bound to a profile")
                return
            await app(scope, receive, send)
            return
        if bound is not None and named is not None and named != bound.name:
            await _refuse(send, 403, f"this client's token is bound to profile '{bound.name}'")
            return
        profile = bound or (chooser.profiles.by_name[named] if named else chooser.default)
        label = profile.name if profile is not None else ""
        session = _header(scope, b"mcp-session-id")
        if session is not None and sessions.get(session, label) != label:
            await _refuse(send, 404, "session not found")
            return
        scope = {**scope, "path": base, "raw_path": base.encode(), PROFILE_SCOPE_KEY: profile}

        async def remembering(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                opened = next((v.decode() for k, v in message.get("headers", ()) if k.lower() == b"mcp-session-id"), None)
                if opened is not None and opened not in sessions:
                    sessions[opened] = label
                    while len(sessions) > _REMEMBERED_SESSIONS:
                        sessions.popitem(last=False)
            await send(message)

        await app(scope, receive, remembering)

    return routed


def _header(scope: Scope, name: bytes) -> str | None:
    return next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k.lower() == name), None)


async def _refuse(send: Send, status: int, message: str) -> None:
    import json

    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def profile_chooser(profiles: Profiles, default_name: str | None, clients: Any) -> ProfileChooser | None:
    """The registries' `profiles`, the default one `default_name` names (serve --profile), and the
    profile each client of the token file (`clients`, a `serving.clients` file or None) is bound to
    (its entry's "profile"); None when there are none; ConfigError when one is wrong or a named one
    does not exist."""
    from toolscout.errors import ConfigError

    default = profiles.get(default_name) if default_name else None
    bound = {}
    for client in clients.clients if clients is not None else ():
        name = client.options.get("profile")
        if name is None:
            continue
        if not isinstance(name, str) or name not in profiles.by_name:
            known = ", ".join(sorted(profiles.by_name)) or "none (add \"profiles\" to a registry file)"
            raise ConfigError(f"client '{client.name}' of the token file names profile {name!r}, which no "
                              f"registry defines; profiles: {known}")
        bound[client.name] = profiles.by_name[name]
    return ProfileChooser(profiles, default, bound) if profiles else None

"""The gateway as one profile sees it (a `toolscout.gateway.view.GatewayView`).

    view = view_of(gateway, profile)            # a ScopedGateway; with profile None, the gateway

`ScopedGateway` answers what the MCP face asks a gateway (statuses, catalog, search, call,
resources, prompts, ...) with only the servers and tools of one profile: search never returns,
execute never reaches, and the descriptions and instructions never name anything outside it. A
tool outside the profile is unknown to that client, as if no server had it; a search limited to a
server outside it names the servers it may use. Resources, prompts and completions follow whole
servers (tool patterns do not apply to them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from toolscout.catalog import Catalog, ToolRecord
from toolscout.errors import UnknownToolError
from toolscout.upstream.status import summarize

if TYPE_CHECKING:
    import mcp_types as types

    from toolscout.gateway.core import Gateway
    from toolscout.gateway.view import GatewayView
    from toolscout.registry.profiles import Profile
    from toolscout.search import SearchResponse
    from toolscout.upstream.limits import Limits
    from toolscout.upstream.offerings import Offerings
    from toolscout.upstream.session import Caller, InputRound, ProgressFn
    from toolscout.upstream.status import UpstreamStatus

__all__ = ["ScopedGateway", "view_of"]


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
        return Catalog.of(tools, withheld, catalog.withheld_as)


def view_of(gateway: Gateway, profile: Profile | None) -> GatewayView:
    """`gateway` as a client with `profile` may see it; None: all of it."""
    return gateway if profile is None else ScopedGateway(gateway, profile)

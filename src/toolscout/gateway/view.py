"""What a client may see of the gateway: one protocol, whoever asks.

    view = view_of(gateway, profile)          # a profile's part; with profile None, the gateway
    response = await view.search("convert a time zone", limit=5)
    await view.call(view.catalog.by_id[tool_id], arguments)

The MCP face (`toolscout.serving`), the dashboard and the commands type against `GatewayView`, so a
policy written once holds for the whole gateway and for every profile: the whole `Gateway` is the
view with no profile (`profile` None, every server allowed), a `ScopedGateway` the view of one
profile. What only the whole gateway does (listeners, reconfiguring, stopping upstreams) is not
part of a view.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import mcp_types as types

    from toolscout.catalog import Catalog, ToolRecord
    from toolscout.registry.profiles import Profile
    from toolscout.search import SearchResponse
    from toolscout.upstream.limits import Limits
    from toolscout.upstream.offerings import Offerings
    from toolscout.upstream.session import Caller, InputRound, ProgressFn
    from toolscout.upstream.status import UpstreamStatus

__all__ = ["GatewayView"]


class GatewayView(Protocol):
    """The gateway as one client may see it: the servers, tools, resources and prompts of its
    profile (all of them where `profile` is None), and calls that reach only those."""

    @property
    def profile(self) -> Profile | None:
        """The profile this view shows; None: the whole gateway."""
        ...

    @property
    def limits(self) -> Limits: ...

    @property
    def catalog(self) -> Catalog: ...

    @property
    def offerings(self) -> Offerings: ...

    def listed(self) -> Catalog: ...

    def statuses(self, *, screened: bool = True) -> list[UpstreamStatus]: ...

    def server_names(self) -> list[str]: ...

    def server_of(self, tool_id: str) -> str | None: ...

    def status_of(self, server: str) -> UpstreamStatus | None: ...

    def allows_server(self, server: str) -> bool: ...

    async def bring_up(self, server: str) -> bool: ...

    async def search(self, query: str, *, limit: int, servers: Collection[str] | None = None) -> SearchResponse: ...

    async def call(
        self, tool: ToolRecord, arguments: Mapping[str, Any], progress: ProgressFn | None = None,
        round_: InputRound | None = None, *, caller: Caller | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult: ...

    def resource_owner(self, uri: str) -> tuple[str, str]: ...

    async def read_resource(
        self, uri: str, round_: InputRound | None = None, *, caller: Caller | None = None
    ) -> tuple[str, types.ReadResourceResult | types.InputRequiredResult]: ...

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str], round_: InputRound | None = None, *,
        caller: Caller | None = None,
    ) -> tuple[str, types.GetPromptResult | types.InputRequiredResult]: ...

    async def complete(
        self, ref: types.PromptReference | types.ResourceTemplateReference, argument: dict[str, str],
        context: dict[str, str] | None,
    ) -> types.CompleteResult: ...

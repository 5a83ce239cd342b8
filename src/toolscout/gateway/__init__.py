"""The gateway: the upstream pool and the search engine, kept in step over one catalog.

    async with Gateway(specs, ToolSearch(settings), GatewayOptions(max_restarts=0)) as gateway:
        await gateway.ready(timeout)              # first starts settled, catalog indexed
        response = await gateway.search("convert a time zone", limit=5)
        result = await gateway.call(gateway.catalog.by_id[tool_id], arguments)

Whenever an upstream connects, goes down or changes its tools, the catalog is rebuilt (ids over
all upstreams), the engine re-indexed in a worker thread, and listeners told (the MCP server
refreshes its descriptions and notifies its clients). The engine's heavy `complete()` step
(embeddings) runs after each re-index in a worker thread in the background; until it is done,
searches answer from what the engine has, with a notice.

What a client may see of it is a `GatewayView` (`view`): the whole `Gateway` is the view with no
profile, `view_of(gateway, profile)` a `ScopedGateway` with only that profile's servers and tools. The
MCP face, the dashboard and the commands type against the view.

The gateway is the one object the MCP server and the commands talk to: it owns the upstream pool
(nobody else touches it) and answers for it (`limits`, `server_names()`, `server_of(tool_id)`,
`status_of(server)`, `listed()`, `stop_upstreams()`, `end_upstreams_now()`). It depends on the engine only through the
`toolscout.search.SearchEngine` protocol, and takes its settings as one `GatewayOptions`.

Besides tools it offers what the upstreams list of resources, resource templates and prompts
(`offerings`, named by `toolscout.naming`, screened by the same screens as tools), proxies
`read_resource`, `get_prompt`, `complete`, `subscribe` and `set_logging_level` to the upstream
that owns each name, and hands what upstreams announce for clients (log messages, updated
resources) to its notice listeners.

What it does at each change, screening, enriching and indexing a catalog, is a `CatalogIndexer`
of its own (`indexing`); `toolscout search` and `tools` over a cached catalog use one alone, with no upstream.
The gateway (`core`) imports the MCP SDK only when a `Gateway` is made (its upstream pool needs it).
"""

from toolscout.gateway.core import (
    CatalogListener,
    Gateway,
    GatewayOptions,
    NoticeListener,
    OfferingsListener,
    ServerFilter,
)
from toolscout.gateway.indexing import CatalogEnricher, CatalogIndexer, SummaryScreen, ToolScreen
from toolscout.gateway.scoped import ScopedGateway, view_of
from toolscout.gateway.view import GatewayView

__all__ = [
    "CatalogEnricher",
    "CatalogIndexer",
    "CatalogListener",
    "Gateway",
    "GatewayOptions",
    "GatewayView",
    "NoticeListener",
    "OfferingsListener",
    "ScopedGateway",
    "ServerFilter",
    "SummaryScreen",
    "ToolScreen",
    "view_of",
]

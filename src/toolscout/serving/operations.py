"""What operators and orchestrators ask the HTTP server besides MCP: liveness, readiness, metrics.

    GET /healthz   200 while the process serves (liveness: restart it when this fails)
    GET /readyz    200 once the upstreams' first starts settled and the catalog is indexed, else
                   503 (readiness: send it traffic only then); the body says what it knows
    GET /metrics   Prometheus text (`toolscout.serving.metrics`)

/healthz and /readyz answer without the bearer token (probes of Kubernetes and load balancers send
none, and they reveal nothing but counts); /metrics needs it when one is set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from toolscout.upstream.status import State

if TYPE_CHECKING:
    from toolscout.gateway import Gateway
    from toolscout.serving.metrics import GatewayMetrics

__all__ = ["LIVENESS_PATH", "METRICS_PATH", "OPEN_PATHS", "READINESS_PATH", "operation_routes", "readiness"]

LIVENESS_PATH = "/healthz"
READINESS_PATH = "/readyz"
METRICS_PATH = "/metrics"
OPEN_PATHS = frozenset({LIVENESS_PATH, READINESS_PATH})


def readiness(gateway: Gateway) -> tuple[bool, dict[str, Any]]:
    """Whether the gateway should get traffic, and the counts that say why."""
    statuses = gateway.statuses(screened=False)
    detail = {
        "ready": gateway.settled,
        "upstreams_up": sum(1 for status in statuses if status.state is State.UP),
        "upstreams": len(statuses),
        "tools": len(gateway.catalog.tools),
        "embedding_backlog": gateway.embedding_backlog,
    }
    return gateway.settled, detail


def operation_routes(gateway: Gateway, metrics: GatewayMetrics | None = None) -> list[Route]:
    """The routes above, over `gateway` (/metrics only with `metrics`)."""

    async def live(request: Request) -> Response:
        return JSONResponse({"live": True})

    async def ready(request: Request) -> Response:
        is_ready, detail = readiness(gateway)
        return JSONResponse(detail, status_code=200 if is_ready else 503)

    routes = [Route(LIVENESS_PATH, live, methods=["GET"]), Route(READINESS_PATH, ready, methods=["GET"])]
    if metrics is not None:
        async def scrape(request: Request) -> Response:
            body, content_type = metrics.exposition()
            return Response(body, media_type=content_type)

        routes.append(Route(METRICS_PATH, scrape, methods=["GET"]))
    return routes

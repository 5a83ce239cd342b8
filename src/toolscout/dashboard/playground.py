"""Search playground: a request, searched as the agent's `search_tools` searches it (the same
gateway search, for a profile as its clients get it), with what `toolscout search --explain`
adds: each signal's rank of each tool, the reranker's score, the confidence and the weak-match
verdict, and the notice the agent would read. Not counted in /metrics: the operator is not an agent."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolscout.dashboard.parts import UI_PATH
from toolscout.dashboard.render import page
from toolscout.gateway import view_of
from toolscout.serving.answer import explain_hit, match_verdict, search_answer

if TYPE_CHECKING:
    from toolscout.dashboard.parts import DashboardParts

__all__ = ["routes"]

_DEFAULT_LIMIT = 10
_MAX_LIMIT = 50
_MAX_QUERY = 2000


def routes(dashboard: DashboardParts) -> list[Route]:
    profiles = sorted(dashboard.profiles.profiles.by_name) if dashboard.profiles is not None else []

    async def playground(request: Request) -> Response:
        query = request.query_params.get("q", "").strip()[:_MAX_QUERY]
        chosen = request.query_params.get("profile", "")
        try:
            limit = min(max(int(request.query_params.get("k", _DEFAULT_LIMIT)), 1), _MAX_LIMIT)
        except ValueError:
            limit = _DEFAULT_LIMIT
        context: dict[str, Any] = {"query": query, "profiles": profiles, "profile": chosen, "limit": limit}
        if query:
            named = dashboard.profiles.profiles.by_name if dashboard.profiles is not None else {}
            view = view_of(dashboard.gateway, named.get(chosen) if chosen else None)
            response = await view.search(query, limit=limit)
            answer = search_answer(response, view.statuses(), view.catalog)
            signals = [*response.signals, "learned"]
            context |= {
                "answer": answer,
                "hits": [
                    {"entry": entry, "hit": hit, **explain_hit(hit)}
                    for entry, hit in zip(answer["tools"], response.hits, strict=True)
                ],
                "signals": [s for s in signals if any(s in hit.ranks for hit in response.hits)],
                "fusion": response.fusion,
                "match": match_verdict(response),
            }
        return page(request, "playground.html", **context)

    return [Route(f"{UI_PATH}/search", playground, methods=["GET"])]

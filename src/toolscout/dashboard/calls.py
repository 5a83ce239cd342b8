"""Calls: the calls waiting for an operator's confirmation (`toolscout.serving.pending_calls`),
each with its tool, server, client and arguments, and Allow and Deny buttons. The page reloads
itself while open, so a new call shows without a script."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolscout.dashboard.parts import UI_PATH, back_to
from toolscout.dashboard.render import page

if TYPE_CHECKING:
    from toolscout.dashboard.parts import DashboardParts

__all__ = ["routes"]


def routes(dashboard: DashboardParts) -> list[Route]:
    async def calls(request: Request) -> Response:
        pending = dashboard.pending
        return page(request, "calls.html", calls=pending.waiting() if pending is not None else None)

    async def decide(request: Request) -> Response:
        form = await request.form()
        verb, key = str(form.get("decision") or ""), str(form.get("key") or "")
        pending = dashboard.pending
        if pending is None or not pending.decide(key, verb, request.state.operator.name):
            return page(request, "refused.html", 409, message=(
                "that call no longer waits: it was answered, or its time ran out (the client was told)"
            ))
        return back_to(f"{UI_PATH}/calls")

    return [
        Route(f"{UI_PATH}/calls", calls, methods=["GET"]),
        Route(f"{UI_PATH}/calls/decide", decide, methods=["POST"]),
    ]

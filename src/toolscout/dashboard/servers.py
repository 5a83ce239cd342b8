"""Servers: each upstream's state, tools served and withheld, last error, next attempt, sign-in
needed, and a button to try a down one now (`Gateway.bring_up`, what a search does for it)."""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolscout.dashboard.parts import UI_PATH, back_to
from toolscout.dashboard.render import page

if TYPE_CHECKING:
    from toolscout.dashboard.parts import DashboardParts

__all__ = ["routes"]

# A reason that asks for `toolscout login NAME ...` (`toolscout.oauth.provider.login_command`).
_LOGIN = re.compile(r"toolscout login \S+(?: --registry \S+)?")
# How long the button waits for the server before showing the page again (it keeps trying after).
_TRY_WAIT = 10.0


def routes(dashboard: DashboardParts) -> list[Route]:
    gateway = dashboard.gateway

    async def servers(request: Request) -> Response:
        catalog = gateway.catalog
        served = Counter(tool.server for tool in catalog.tools)
        withheld = Counter(gateway.server_of(tool_id) for tool_id in catalog.withheld)
        rows = [
            {
                "status": status,
                "served": served[status.name],
                "withheld": withheld[status.name],
                "login": (found.group(0) if (found := _LOGIN.search(status.reason or "")) else None),
            }
            for status in gateway.statuses()
        ]
        return page(request, "servers.html", rows=rows)

    async def try_now(request: Request) -> Response:
        name = request.path_params["name"]
        with anyio.move_on_after(_TRY_WAIT):
            await gateway.bring_up(name)
        return back_to(UI_PATH)

    return [
        Route(UI_PATH, servers, methods=["GET"]),
        Route(f"{UI_PATH}/servers/{{name}}/try", try_now, methods=["POST"]),
    ]

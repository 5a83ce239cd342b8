"""Tools: every tool the upstreams list, searchable, with why one is withheld; and each pending
definition (a changed tool, or a new one under --strict-pins) with its diff, a Reject button
(the tool stays withheld, and every reviewer sees it was rejected) and an Approve button that
does what `toolscout approve` does: `PinStore.approve` on the shared state store, so
every gateway sharing it serves the tool on its next check, this one at once (`Gateway.rescreen`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolscout.dashboard.parts import UI_PATH, back_to
from toolscout.dashboard.render import page
from toolscout.security.pinning import record_from_definition
from toolscout.security.poisoning import scan_tool, summarize

if TYPE_CHECKING:
    from toolscout.dashboard.parts import DashboardParts, Handler
    from toolscout.security.verdicts import PendingChange

__all__ = ["routes"]

# Tools shown at once; a search narrows the list.
_SHOWN = 500


def routes(dashboard: DashboardParts) -> list[Route]:
    gateway = dashboard.gateway

    async def tools(request: Request) -> Response:
        query = request.query_params.get("q", "").strip()
        catalog = gateway.catalog
        needle = query.casefold()
        listed = [
            tool for tool in gateway.listed().tools
            if not needle or needle in tool.id.casefold() or needle in tool.description.casefold()
        ]
        pending = await anyio.to_thread.run_sync(_pending, dashboard)
        return page(
            request, "tools.html", query=query, tools=listed[:_SHOWN], more=max(0, len(listed) - _SHOWN),
            withheld=catalog.withheld, pending=pending, pinning=dashboard.pins is not None,
        )

    def decision(verb: str) -> Handler:
        """What the Approve (or Reject) button of a pending definition does."""

        async def decide(request: Request) -> Response:
            form = await request.form()
            key, name, fingerprint = (str(form.get(field) or "") for field in ("key", "name", "fingerprint"))
            pins, operator = dashboard.pins, request.state.operator
            if pins is None:
                return page(request, "refused.html", 409, message="pinning is off in this gateway: nothing to decide")

            def decide_shown() -> list[PendingChange]:
                # Exactly the definition the page showed (`toolscout approve` accepts what it showed too).
                shown = [
                    change for change in pins.pending(server=key, names=[name])
                    if change.pin_key == key and change.candidate_fingerprint == fingerprint
                ]
                by = f"dashboard ({operator.name})"
                return (pins.approve(shown, approved_by=by) if verb == "approve" else pins.reject(shown, rejected_by=by)) \
                    if shown else []

            if not await anyio.to_thread.run_sync(decide_shown):
                return page(request, "refused.html", 409, message=(
                    f"{key}/{name} changed again since the page was shown, or was approved already; nothing was "
                    f"{verb}d. Look at the new definition first."
                ))
            gateway.rescreen()
            return back_to(f"{UI_PATH}/tools")

        return decide

    return [
        Route(f"{UI_PATH}/tools", tools, methods=["GET"]),
        Route(f"{UI_PATH}/tools/approve", decision("approve"), methods=["POST"]),
        Route(f"{UI_PATH}/tools/reject", decision("reject"), methods=["POST"]),
    ]


def _pending(dashboard: DashboardParts) -> list[dict[str, Any]]:
    """Each pending definition, with what the poisoning scan says of it (as `toolscout approve` shows)."""
    pending = []
    for change in dashboard.pins.pending() if dashboard.pins is not None else ():
        findings = scan_tool(record_from_definition(change.server, change.candidate))
        pending.append({"change": change, "flags": summarize(findings) if findings else None})
    return pending

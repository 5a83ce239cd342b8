"""Activity: calls, errors and mean latency per server over the last hour, minute by minute, as
small bar charts drawn on the server (SVG, no script), from what /metrics counts
(`toolscout.serving.recent`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolscout.dashboard.parts import UI_PATH
from toolscout.dashboard.render import page

if TYPE_CHECKING:
    from toolscout.dashboard.parts import DashboardParts
    from toolscout.serving.recent import Minute

__all__ = ["routes"]

# The charts' drawing box: one bar per minute.
_BAR, _HEIGHT = 4, 40


def _chart(values: list[float]) -> dict[str, Any]:
    """Bars of `values` scaled to the chart's height (the tallest fills it)."""
    top = max(values, default=0) or 1
    bars = []
    for index, value in enumerate(values):
        height = round(value / top * _HEIGHT) if value else 0
        bars.append({"x": index * _BAR, "y": _HEIGHT - height, "height": height, "value": value})
    return {"bars": bars, "width": len(values) * _BAR, "height": _HEIGHT, "top": f"{max(values, default=0):g}"}


def _row(name: str, minutes: list[Minute]) -> dict[str, Any]:
    return {
        "name": name,
        "calls": sum(m.calls for m in minutes),
        "errors": sum(m.errors for m in minutes),
        "charts": {
            "calls": _chart([float(m.calls) for m in minutes]),
            "errors": _chart([float(m.errors) for m in minutes]),
            "mean ms": _chart([round(m.mean_ms, 1) for m in minutes]),
        },
    }


def routes(dashboard: DashboardParts) -> list[Route]:
    async def activity(request: Request) -> Response:
        recent = dashboard.metrics.recent if dashboard.metrics is not None else None
        rows = [_row(name, recent.minutes(name)) for name in recent.rows()] if recent is not None else None
        return page(request, "activity.html", rows=rows)

    return [Route(f"{UI_PATH}/activity", activity, methods=["GET"])]

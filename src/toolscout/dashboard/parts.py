"""What the dashboard's pages read and change, and where they answer: all a page module needs of
its site, so the site (`site.py`, which assembles the pages and checks every request) imports the
pages and no page imports the site."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from toolscout.dashboard.render import SECURITY_HEADERS

if TYPE_CHECKING:
    from toolscout.gateway import Gateway
    from toolscout.learning.expansion_cache import ExpansionCache
    from toolscout.learning.usage import UsageStore
    from toolscout.security.pinning import PinStore
    from toolscout.serving.metrics import GatewayMetrics
    from toolscout.serving.pending_calls import PendingCalls
    from toolscout.serving.scoped import ProfileChooser

__all__ = ["UI_PATH", "DashboardParts", "Handler", "back_to"]

UI_PATH = "/ui"
Handler = Callable[[Request], Awaitable[Response]]


@dataclass
class DashboardParts:
    """The gateway and the stores it runs with (None: that part of the dashboard says it is off)."""

    gateway: Gateway
    metrics: GatewayMetrics | None = None
    profiles: ProfileChooser | None = None
    pins: PinStore | None = None
    usage: UsageStore | None = None
    phrases: ExpansionCache | None = None
    pending: PendingCalls | None = None


def back_to(path: str) -> Response:
    """After a change: see the page again (POST, then redirect, then GET)."""
    return RedirectResponse(path, status_code=303, headers=SECURITY_HEADERS)

"""HTML answers of the dashboard: Jinja2 templates, escaped, under a strict Content-Security-Policy.

Everything an upstream wrote (descriptions, reasons, summaries, diffs) is hostile input. The
templates escape every value (autoescape), and the `visible` filter first shows invisible and
control characters as codes, as `toolscout approve` does in a terminal, so a definition can hide
nothing from the person reading it. The pages run no script at all: the policy allows none.
"""

from __future__ import annotations

import datetime
import time
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from toolscout.security.hidden import terminal_safe

__all__ = ["SECURITY_HEADERS", "page"]

SECURITY_HEADERS = {
    # No script, no plugin, no frame, nothing from elsewhere; forms post only here.
    "content-security-policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    # Not no-referrer: with it a browser sends "Origin: null" on its own form posts.
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def _when(epoch: float | None) -> str:
    if epoch is None:
        return ""
    at = datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%H:%M:%S UTC")
    ahead = round(epoch - time.time())
    return f"{at} (in {ahead} s)" if ahead > 0 else at


def _date(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


_templates = Environment(
    loader=PackageLoader("toolscout.dashboard", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
_templates.filters.update(visible=lambda text: terminal_safe(str(text)), when=_when, date=_date)


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """`template` rendered with `context` (and the request's operator and CSRF token)."""
    body = _templates.get_template(template).render(
        path=request.url.path, operator=request.state.operator if hasattr(request.state, "operator") else None,
        csrf=getattr(request.state, "csrf", ""), **context,
    )
    return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)

"""The dashboard as an ASGI app beside /mcp, and the checks every request passes first.

    dashboard = Dashboard(gateway, metrics=metrics, profiles=profiles, pins=pin_store, usage=usage)
    app = dashboard.mount(app, clients=clients, single_token=False, security=settings)
    dashboard.sign_in_link("http://127.0.0.1:8765")     # what serve logs: /ui?token=<one-time code>

Requests under /ui go to the dashboard, everything else to `app` (the MCP server with its own
token check). Each dashboard request is checked in this order: Host and Origin (the same allowed
values as /mcp: a page on another site cannot drive it, nor a DNS-rebound name), then who it is
(`access.Access`: a Bearer header, the session cookie, or a sign-in link to exchange), then, for a
POST, its CSRF token. A refusal is a small page saying why and what to do.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from toolscout.dashboard.activity import routes as activity_routes
from toolscout.dashboard.calls import routes as calls_routes
from toolscout.dashboard.learning import routes as learning_routes
from toolscout.dashboard.playground import routes as playground_routes
from toolscout.dashboard.servers import routes as servers_routes
from toolscout.dashboard.tools import routes as tools_routes
from toolscout.dashboard.access import COOKIE, SESSION_LIFETIME, Access, Operator
from toolscout.dashboard.parts import UI_PATH, DashboardParts, Handler
from toolscout.dashboard.render import SECURITY_HEADERS, page
from toolscout.errors import AccessRefused

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.types import ASGIApp, Receive, Scope, Send

    from toolscout.serving.clients import ClientTokens

__all__ = ["UI_PATH", "Dashboard", "Handler"]

logger = logging.getLogger(__name__)


@dataclass
class Dashboard(DashboardParts):
    """The pages over what they read and change (`DashboardParts`), and who may use them."""

    # Open the sign-in link in a browser when serving starts (`toolscout ui`).
    open_browser: bool = False
    access: Access = field(default_factory=lambda: Access(None, ()))

    def mount(
        self, app: ASGIApp, *, clients: ClientTokens | None, single_token: bool, security: TransportSecuritySettings,
    ) -> ASGIApp:
        """`app` with the dashboard answering under /ui. Its operators: the one client of a single
        token (`single_token`: `--auth-token`), else the token file's entries marked "operator": true."""
        from mcp.server.transport_security import TransportSecurityMiddleware

        operators = [c.name for c in clients.clients if single_token or c.options.get("operator") is True] if clients else []
        self.access = Access(clients, operators)
        site = self._site(TransportSecurityMiddleware(security))

        async def routed(scope: Scope, receive: Receive, send: Send) -> None:
            path = scope.get("path", "") if scope["type"] == "http" else ""
            await (site if path == UI_PATH or path.startswith(UI_PATH + "/") else app)(scope, receive, send)

        return routed

    def sign_in_link(self, base_url: str) -> str:
        return f"{base_url}{UI_PATH}?{urlencode({'token': self.access.new_link_code()})}"

    def announce(self, base_url: str) -> None:
        """Log a one-time sign-in link on stderr (and open it, with `open_browser`)."""
        link = self.sign_in_link(base_url)
        logger.info("dashboard: open %s to sign in (the link works once)", link)
        if self.open_browser:
            import webbrowser

            if not webbrowser.open(link):
                logger.warning("could not start a browser here; open the link above yourself")

    def _site(self, hosts: Any) -> Starlette:
        async def unsafe(request: Request) -> Response | None:
            """A refusal for a request from elsewhere: a Host or Origin /mcp would refuse, or a
            POST whose Origin is not this very server."""
            refused = await hosts.validate_request(request)
            if refused is None and request.method == "POST" and not _same_origin(request):
                refused = page(request, "refused.html", 403, message="a change sent from another site is refused")
            return refused

        def guarded(handler: Handler) -> Handler:
            async def checked(request: Request) -> Response:
                refused = await unsafe(request)
                if refused is not None:
                    return refused
                try:
                    operator = self._operator(request)
                except AccessRefused as exc:
                    return page(request, "refused.html", exc.status, message=exc.message)
                if isinstance(operator, Response):
                    return operator
                request.state.operator = operator
                if self.pending is not None:
                    self.pending.seen()  # an operator is here to answer a call waiting for confirmation
                request.state.csrf = self.access.csrf_token(operator)
                if request.method == "POST":
                    form = await request.form()
                    if not self.access.csrf_ok(operator, str(form.get("csrf") or "")):
                        return page(request, "refused.html", 403, message=(
                            "this form's CSRF token is missing or stale; nothing was changed. Reload the page and try again."
                        ))
                return await handler(request)

            return checked

        routes = [
            *servers_routes(self), *tools_routes(self), *playground_routes(self),
            *learning_routes(self), *activity_routes(self), *calls_routes(self),
        ]
        guarded_routes = [Route(r.path, guarded(r.endpoint), methods=r.methods) for r in routes]
        return Starlette(routes=[
            Route(f"{UI_PATH}/static/dashboard.css", _stylesheet, methods=["GET"]),
            Route(f"{UI_PATH}/signin", lambda request: self._sign_in_form(request, unsafe), methods=["POST"]),
            Route(f"{UI_PATH}/signout", guarded(self._sign_out), methods=["POST"]),
            *guarded_routes,
        ])

    def _operator(self, request: Request) -> Operator | Response:
        """Who sent `request`, or the redirect that completes a sign-in by link; AccessRefused otherwise."""
        authorization = request.headers.get("authorization")
        if authorization is not None:
            return self.access.bearer(authorization)
        token = request.query_params.get("token")
        if token is not None and request.method == "GET":
            return self._signed_in(request, self.access.sign_in(token))
        operator = self.access.session(request.cookies.get(COOKIE))
        if operator is None:
            raise AccessRefused(401, "sign in with the link toolscout serve (or toolscout ui) printed, or with an operator's token below")
        return operator

    def _signed_in(self, request: Request, operator: Operator) -> Response:
        """The session cookie, and a redirect to where the person was going, without the token."""
        kept = [(key, value) for key, value in request.query_params.multi_items() if key != "token"]
        target = request.url.path + (f"?{urlencode(kept)}" if kept else "")
        response = RedirectResponse(target, status_code=303, headers=SECURITY_HEADERS)
        assert operator.session is not None
        response.set_cookie(
            COOKIE, operator.session, max_age=int(SESSION_LIFETIME), path=UI_PATH, httponly=True, samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    async def _sign_in_form(self, request: Request, unsafe: Callable[[Request], Awaitable[Response | None]]) -> Response:
        refused = await unsafe(request)
        if refused is not None:
            return refused
        form = await request.form()
        try:
            operator = self.access.sign_in(str(form.get("token") or "").strip())
        except AccessRefused as exc:
            return page(request, "refused.html", exc.status, message=exc.message)
        response = self._signed_in(request, operator)
        response.headers["location"] = UI_PATH
        return response

    async def _sign_out(self, request: Request) -> Response:
        self.access.sign_out(request.state.operator)
        response = page(request, "refused.html", 200, message="signed out")
        response.delete_cookie(COOKIE, path=UI_PATH)
        return response


def _same_origin(request: Request) -> bool:
    """Whether a change was sent from a page of this server: its Origin names the host the request
    went to (either scheme: behind a proxy that ends TLS the browser's is https, ours http)."""
    origin = request.headers.get("origin")
    return origin is None or urlsplit(origin).netloc == request.headers.get("host")


async def _stylesheet(request: Request) -> Response:
    css = resources.files("toolscout.dashboard").joinpath("static/dashboard.css").read_text(encoding="utf-8")
    return Response(css, media_type="text/css", headers={**SECURITY_HEADERS, "cache-control": "max-age=3600"})

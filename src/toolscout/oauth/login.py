"""`toolscout login SERVER`: the consent step of OAuth, done once by a person.

    tools = await sign_in(spec, open_url=show_and_open_browser)   # stores the tokens; tool count
    sign_out(spec)                                                # deletes them

The SDK's OAuth client runs the flow (discovery, client ID metadata document or dynamic client
registration, PKCE, the token exchange); this module gives it what only a sign-in has: the page
to open (printed, and opened in a browser where there is one) and a receiver on a loopback port
for the redirect that comes back with the code. The sign-in ends by listing the server's tools
with the new token, so success means the token works.
"""

from __future__ import annotations

import socket
import webbrowser
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import anyio
import httpx2
import mcp_types as types
import uvicorn
from mcp import Client
from mcp.shared.auth import AuthorizationCodeResult
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from toolscout.errors import ConfigError, SignInRequired
from toolscout.oauth.provider import signing_in
from toolscout.oauth.tokens import TokenFile
from toolscout.registry.spec import ServerSpec
from toolscout.upstream.transports import open_transport

__all__ = ["DEFAULT_SIGN_IN_TIMEOUT", "open_in_browser", "sign_in", "sign_out"]

# A person reads the consent page, perhaps signs in to the provider first.
DEFAULT_SIGN_IN_TIMEOUT = 300.0
_CALLBACK_PATH = "/callback"


async def open_in_browser(url: str) -> None:
    """Open `url` in the user's browser, if there is one (False from webbrowser: none)."""
    await anyio.to_thread.run_sync(webbrowser.open, url)


def sign_out(spec: ServerSpec) -> bool:
    """Forget the sign-in of `spec`'s server; False when there was none."""
    assert spec.url
    return TokenFile(spec.name, spec.url, spec.oauth).remove()


async def sign_in(
    spec: ServerSpec,
    *,
    open_url: Callable[[str], Awaitable[None]],
    timeout: float = DEFAULT_SIGN_IN_TIMEOUT,
) -> int:
    """Sign in to `spec`'s server and keep the tokens; returns how many tools it lists.

    SignInRequired when the server has no OAuth entry, the person refused, or no answer came
    within `timeout`."""
    if spec.oauth is None or not spec.url:
        raise SignInRequired(
            f"server '{spec.name}' does not sign in with OAuth (it is not a remote server, or its entry "
            "sends its own Authorization header or says \"oauth\": false)"
        )
    storage = TokenFile(spec.name, spec.url, spec.oauth)
    storage.forget_tokens()
    host, port = _redirect_address(spec)
    with socket.create_server((host, port)) as listener:
        redirect_uri = f"http://{host}:{listener.getsockname()[1]}{_CALLBACK_PATH}"
        stored = await storage.get_client_info()
        if stored is not None and not spec.oauth.client_id and [str(u) for u in stored.redirect_uris or []] != [redirect_uri]:
            # A client registered for another loopback port cannot receive this redirect.
            storage.remove()
        received: list[AuthorizationCodeResult | str] = []
        arrived = anyio.Event()

        async def callback(request: Request) -> HTMLResponse:
            query = request.query_params
            if "error" in query:
                received.append(f"{query['error']}: {query.get('error_description', 'no description')}")
                text = "Sign-in refused. You can close this tab."
            else:
                received.append(AuthorizationCodeResult(code=query.get("code", ""), state=query.get("state"), iss=query.get("iss")))
                text = f"Signed in to {spec.name}. You can close this tab and go back to toolscout."
            arrived.set()
            return HTMLResponse(f"<!doctype html><title>toolscout</title><p>{text}</p>")

        async def receive() -> AuthorizationCodeResult:
            await arrived.wait()
            result = received[0]
            if isinstance(result, str):
                raise SignInRequired(f"the sign-in to server '{spec.name}' was refused ({result})")
            return result

        receiver = uvicorn.Server(uvicorn.Config(
            Starlette(routes=[Route(_CALLBACK_PATH, callback)]), log_level="warning", lifespan="off"))
        provider = signing_in(spec, storage, redirect_uri, open_url, receive)
        with anyio.fail_after(timeout):
            async with anyio.create_task_group() as tg:
                tg.start_soon(receiver.serve, [listener])
                try:
                    tools = await _list_tools(spec, provider)
                finally:
                    receiver.should_exit = True
    return len(tools.tools)


async def _list_tools(spec: ServerSpec, auth: httpx2.Auth) -> types.ListToolsResult:
    """The server's first page of tools, reached with `auth` (which signs in on the way) over the
    transport the gateway uses for it."""
    assert spec.url
    async with Client(open_transport(spec, auth=auth).connect(), mode="auto") as client:
        return await client.list_tools()


def _redirect_address(spec: ServerSpec) -> tuple[str, int]:
    """Where the redirect comes back: the entry's redirectUri, else a free port of 127.0.0.1."""
    assert spec.oauth is not None
    if not spec.oauth.redirect_uri:
        return "127.0.0.1", 0
    parts = urlsplit(spec.oauth.redirect_uri)
    if parts.path != _CALLBACK_PATH:
        raise ConfigError(f"server '{spec.name}' ({spec.source}): oauth.redirectUri must end in {_CALLBACK_PATH} "
                          f"(got {spec.oauth.redirect_uri})")
    return (parts.hostname or "127.0.0.1").strip("[]"), parts.port or 80

"""An OAuth-protected MCP server for the tests: authorization server and resource server in one
app, built from the SDK's server-side auth pieces (auth routes, bearer middleware, protected
resource metadata), with an in-memory provider that consents at once (the consent step of a real
server is a page a person clicks; here the redirect comes straight back).

    app, provider = build("http://127.0.0.1:PORT")       # serve `app` on that port
    provider.expire_access_tokens()                       # the next call is refused with 401
    provider.revoke_refresh_tokens()                      # refreshing fails: sign in again
    provider.seen_tokens, provider.presented              # bearer tokens accepted / presented
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

__all__ = ["SCOPE", "TestAuthProvider", "build"]

SCOPE = "crm.read"


class TestAuthProvider:
    """OAuthAuthorizationServerProvider keeping clients, codes and tokens in memory."""

    def __init__(self, lifetime: int = 3600) -> None:
        self.lifetime = lifetime
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.seen_tokens: list[str] = []
        # Every bearer token presented to the MCP endpoint, valid or not.
        self.presented: list[str] = []
        self.refreshes = 0
        self.registrations = 0
        # URL -> client metadata; when set, the server advertises client ID metadata documents.
        self.metadata_documents: dict[str, dict[str, Any]] | None = None

    def preregister(self, client_id: str, secret: str, redirect_uri: str) -> None:
        self.clients[client_id] = OAuthClientInformationFull(
            client_id=client_id, client_secret=secret, redirect_uris=[redirect_uri],
            token_endpoint_auth_method="client_secret_post", grant_types=["authorization_code", "refresh_token"],
            scope=SCOPE,
        )

    def expire_access_tokens(self) -> None:
        self.access.clear()

    def revoke_refresh_tokens(self) -> None:
        self.refresh.clear()

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if client_id in self.clients or self.metadata_documents is None:
            return self.clients.get(client_id)
        # A client ID metadata document: the client is the document its URL names. (A real server
        # fetches it; the test's documents are given beforehand, keyed by URL.)
        document = self.metadata_documents.get(client_id)
        if document is None:
            return None
        return OAuthClientInformationFull(client_id=client_id, token_endpoint_auth_method="none",
                                          grant_types=["authorization_code", "refresh_token"], **document)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.registrations += 1
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [SCOPE], expires_at=time.time() + 300,
            client_id=client.client_id or "", code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri, redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, code: AuthorizationCode) -> OAuthToken:
        del self.codes[code.code]
        return self._issue(client, code.scopes, code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, token: str) -> RefreshToken | None:
        found = self.refresh.get(token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if token.token not in self.refresh:
            raise TokenError("invalid_grant", "refresh token revoked")
        del self.refresh[token.token]
        self.refreshes += 1
        return self._issue(client, scopes or token.scopes, token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        self.presented.append(token)
        found = self.access.get(token)
        if found is not None:
            self.seen_tokens.append(token)
        return found

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(getattr(token, "token", ""), None)
        self.refresh.pop(getattr(token, "token", ""), None)

    def _issue(self, client: OAuthClientInformationFull, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = f"at-{secrets.token_urlsafe(16)}", f"rt-{secrets.token_urlsafe(16)}"
        client_id = client.client_id or ""
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + self.lifetime, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=access, expires_in=self.lifetime, scope=" ".join(scopes), refresh_token=refresh)


def build(base_url: str, provider: TestAuthProvider | None = None, *, sse: bool = False) -> tuple[Any, TestAuthProvider]:
    """The app to serve at `base_url` (its MCP endpoint at /mcp, or /sse with `sse`) and its provider."""
    provider = provider or TestAuthProvider()
    server = MCPServer(
        "crm",
        instructions="Customer records: look up accounts and their contacts.",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base_url,
            resource_server_url=f"{base_url}/sse" if sse else f"{base_url}/mcp",
            validate_token_resource=False,
            required_scopes=[SCOPE],
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]),
        ),
    )

    @server.tool()
    def find_account(name: str) -> str:
        """Find a customer account by company name and return its owner and status."""
        return f"{name}: owner Dana, status active"

    app = server.sse_app() if sse else server.streamable_http_app()
    return _advertising_metadata_documents(app, provider), provider


def _advertising_metadata_documents(app: Any, provider: TestAuthProvider) -> Any:
    """Adds client_id_metadata_document_supported to the server metadata when the provider has
    documents (the SDK's metadata handler has no setting for it)."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or provider.metadata_documents is None or \
                scope["path"] != "/.well-known/oauth-authorization-server":
            await app(scope, receive, send)
            return
        parts: list[bytes] = []
        start: dict[str, Any] = {}

        async def capture(message: Any) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            else:
                parts.append(message.get("body", b""))

        await app(scope, receive, capture)
        body = json.dumps({**json.loads(b"".join(parts)), "client_id_metadata_document_supported": True}).encode()
        headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
        await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    return wrapped

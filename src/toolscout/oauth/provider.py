"""The SDK's OAuth client (`OAuthClientProvider`) set up for one remote upstream.

    auth = upstream_auth(spec)            # for the gateway: never asks a person anything
    httpx2.AsyncClient(auth=auth, ...)    # discovery, refresh and the bearer header are the SDK's

The gateway uses the stored sign-in: the SDK adds the bearer token, refreshes it when it has
expired (the expiry is restored from the token file, which the SDK alone would forget on a
restart), and follows the server's 401 to its metadata. Where a person would have to consent
(no token yet, or the refresh token no longer works), the gateway stops with `SignInRequired`,
whose message is the exact command to run; the other upstreams are not affected. `toolscout
login` builds the same provider with a browser and a loopback receiver instead (`signing_in`).
"""

from __future__ import annotations

import logging
import shlex
import time
from collections.abc import Awaitable, Callable

from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata
from pydantic import AnyUrl

from toolscout import __version__
from toolscout.errors import SignInRequired
from toolscout.oauth.tokens import PLACEHOLDER_REDIRECT, TokenFile
from toolscout.registry.sources import default_registry_path
from toolscout.registry.spec import ServerSpec

__all__ = ["ToolscoutOAuth", "login_command", "signing_in", "upstream_auth"]


class ToolscoutOAuth(OAuthClientProvider):
    """OAuthClientProvider that knows when a stored token expires, across restarts."""

    def __init__(self, spec: ServerSpec, storage: TokenFile, **handlers: Callable[..., Awaitable[object]]) -> None:
        settings = spec.oauth
        assert settings is not None and spec.url
        self.storage = storage
        redirect = settings.redirect_uri or PLACEHOLDER_REDIRECT
        super().__init__(
            spec.url,
            OAuthClientMetadata(
                client_name="toolscout",
                software_id="toolscout",
                software_version=__version__,
                redirect_uris=[AnyUrl(redirect)],
                grant_types=["authorization_code", "refresh_token"],
                token_endpoint_auth_method="client_secret_post" if settings.client_secret else "none",
                scope=" ".join(settings.scopes) or None,
            ),
            storage,
            client_metadata_url=settings.client_metadata_url,
            **handlers,  # type: ignore[arg-type]
        )

    async def _initialize(self) -> None:
        await super()._initialize()
        # The SDK reads the tokens but not when they expire; without this an expired token is
        # sent, refused, and the flow asks for a new sign-in where a refresh would have done.
        self.context.token_expiry_time = self.storage.expires_at


def login_command(spec: ServerSpec) -> str:
    """The command that signs in to `spec`'s server, with the registry it came from."""
    command = f"toolscout login {shlex.quote(spec.name)}"
    if spec.source and spec.source != str(default_registry_path()):
        command += f" --registry {shlex.quote(spec.source)}"
    return command


class _GatewayStorage(TokenFile):
    """The gateway never registers a client of its own: that belongs to a sign-in."""

    def __init__(self, spec: ServerSpec) -> None:
        assert spec.url
        super().__init__(spec.name, spec.url, spec.oauth)
        self.spec = spec

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        raise self.sign_in_required()

    def sign_in_required(self) -> SignInRequired:
        command = login_command(self.spec)
        if self.refresh_instead():
            return SignInRequired(f"server '{self.server}' refused its access token before it expired; "
                                  f"refreshing it (if that fails too, run `{command}`)")
        if self.signed_in():
            return SignInRequired(f"the sign-in to server '{self.server}' has expired or was revoked; run `{command}`")
        return SignInRequired(f"server '{self.server}' needs you to sign in (OAuth); run `{command}`")

    def refresh_instead(self) -> bool:
        """A server may refuse a token before its stated expiry (revoked, rotated keys). The SDK
        then asks for a new sign-in; a refresh token may still do. Mark the token expired, once:
        the change to the file makes the upstream connect again, and the SDK refreshes."""
        data = self.read()
        tokens = data.get("tokens")
        expires_at = data.get("expires_at")
        if not isinstance(tokens, dict) or not tokens.get("refresh_token"):
            return False
        if isinstance(expires_at, (int, float)) and expires_at <= time.time():
            return False
        # (1.0, not 0: the SDK reads an expiry of 0 as "never expires")
        self._write(expires_at=1.0)
        return True


def upstream_auth(spec: ServerSpec) -> ToolscoutOAuth | None:
    """The OAuth client of a remote upstream for the gateway; None when the entry uses no OAuth."""
    if spec.oauth is None or not spec.url:
        return None
    storage = _GatewayStorage(spec)

    async def needs_person(url: str) -> None:
        raise storage.sign_in_required()

    async def no_callback() -> AuthorizationCodeResult:
        raise storage.sign_in_required()

    return ToolscoutOAuth(spec, storage, redirect_handler=needs_person, callback_handler=no_callback)


def signing_in(
    spec: ServerSpec,
    storage: TokenFile,
    redirect_uri: str,
    open_url: Callable[[str], Awaitable[None]],
    receive: Callable[[], Awaitable[AuthorizationCodeResult]],
) -> ToolscoutOAuth:
    """The OAuth client of `toolscout login`: `open_url` shows the consent page, `receive` waits
    for the redirect back to `redirect_uri`."""
    assert spec.oauth is not None
    provider = ToolscoutOAuth(spec, storage, redirect_handler=open_url, callback_handler=receive)
    provider.context.client_metadata.redirect_uris = [AnyUrl(redirect_uri)]
    return provider


class _QuietSignInRequired(logging.Filter):
    """The SDK logs every failure of its flow with a traceback; a missing sign-in is reported by
    the gateway in one line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, SignInRequired)


logging.getLogger("mcp.client.auth.oauth2").addFilter(_QuietSignInRequired())

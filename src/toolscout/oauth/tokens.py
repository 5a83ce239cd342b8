"""Where the OAuth tokens of a remote upstream are kept: one file per server URL in
`<data dir>/oauth/`, readable by this user only.

`TokenFile` is the `TokenStorage` the SDK's `OAuthClientProvider` reads and writes (tokens and
the registered client), plus what toolscout needs around it: when the access token expires (the
SDK keeps that in memory only, so a restart would present an expired token instead of refreshing
it), sign-out, and a pre-registered client from the registry entry.

A file is named by the server's URL and records it: a token goes back only to the server it was
issued for, never to another entry or another server. A file other users can read is refused
(ConfigError naming the fix) rather than used. Every token read or written is added to what the
logs hide.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import ValidationError

from toolscout.errors import ConfigError
from toolscout.state.files import data_dir
from toolscout.registry.spec import OAuthSettings
from toolscout.secrets import redact_logs
from toolscout.state.files import write_private_json

__all__ = ["TokenFile", "tokens_dir"]

logger = logging.getLogger(__name__)

_VERSION = 1
# What a pre-registered client without a redirectUri is stored with until sign-in picks a port.
PLACEHOLDER_REDIRECT = "http://127.0.0.1/callback"


def tokens_dir() -> Path:
    return data_dir() / "oauth"


class TokenFile:
    """The stored sign-in of one remote server (an SDK `TokenStorage`)."""

    def __init__(self, server: str, url: str, settings: OAuthSettings | None = None, *, directory: Path | None = None) -> None:
        self.server = server
        self.url = url
        self.settings = settings or OAuthSettings()
        self.path = (directory or tokens_dir()) / f"{hashlib.sha256(url.encode()).hexdigest()[:16]}.json"

    # --- the SDK's TokenStorage ----------------------------------------------------------------

    async def get_tokens(self) -> OAuthToken | None:
        stored = self.read().get("tokens")
        if not isinstance(stored, dict):
            return None
        try:
            tokens = OAuthToken.model_validate(stored)
        except ValidationError:
            return None
        redact_logs(t for t in (tokens.access_token, tokens.refresh_token) if t)
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        redact_logs(t for t in (tokens.access_token, tokens.refresh_token) if t)
        expires_at = time.time() + tokens.expires_in if tokens.expires_in else None
        self._write(tokens=tokens.model_dump(mode="json", exclude_none=True), expires_at=expires_at)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.settings.client_id:
            return self.preregistered_client()
        stored = self.read().get("client")
        if not isinstance(stored, dict):
            return None
        try:
            return OAuthClientInformationFull.model_validate(stored)
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if client_info.client_secret:
            redact_logs([client_info.client_secret])
        self._write(client=client_info.model_dump(mode="json", exclude_none=True))

    # --- around it -----------------------------------------------------------------------------

    def preregistered_client(self) -> OAuthClientInformationFull:
        """The client the registry entry names (clientId, clientSecret), as the SDK wants it."""
        settings = self.settings
        if settings.client_secret:
            redact_logs([settings.client_secret])
        return OAuthClientInformationFull(
            client_id=settings.client_id,
            client_secret=settings.client_secret or None,
            redirect_uris=[settings.redirect_uri or PLACEHOLDER_REDIRECT],
            token_endpoint_auth_method="client_secret_post" if settings.client_secret else "none",
            grant_types=["authorization_code", "refresh_token"],
            scope=" ".join(settings.scopes) or None,
        )

    @property
    def expires_at(self) -> float | None:
        """When the stored access token expires (seconds since the epoch); None: unknown or none."""
        value = self.read().get("expires_at")
        return float(value) if isinstance(value, (int, float)) else None

    def signed_in(self) -> bool:
        return isinstance(self.read().get("tokens"), dict)

    def forget_tokens(self) -> None:
        """Drop the tokens (a new sign-in follows); the registered client is kept."""
        data = self.read()
        if "tokens" in data:
            self._replace({k: v for k, v in data.items() if k not in ("tokens", "expires_at")})

    def remove(self) -> bool:
        """Sign out: delete the file. False when there was nothing to delete."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True

    def read(self) -> dict[str, Any]:
        """The file's content ({} when there is none or it belongs to another URL); ConfigError when
        other users can read it."""
        try:
            mode = self.path.stat().st_mode
        except FileNotFoundError:
            return {}
        if os.name == "posix" and mode & 0o077:
            raise ConfigError(
                f"the sign-in of server '{self.server}' is kept in {self.path}, which other users can read "
                f"(mode {mode & 0o777:o}); it is not used. Fix it with `chmod 600 {self.path}`, or run "
                f"`toolscout logout {self.server}` and sign in again"
            )
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            logger.warning("the sign-in of server '%s' in %s cannot be read (%s); sign in again",
                           self.server, self.path, exc)
            return {}
        if not isinstance(data, dict) or data.get("version") != _VERSION or data.get("url") != self.url:
            return {}
        return data

    def _write(self, **changes: Any) -> None:
        self._replace({**self.read(), **changes})

    def _replace(self, data: dict[str, Any]) -> None:
        write_private_json(self.path, {**data, "version": _VERSION, "server": self.server, "url": self.url})

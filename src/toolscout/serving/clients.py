"""Which client is this request: the named credentials `toolscout serve --transport http` accepts.

A token file (`--tokens FILE`, or `TOOLSCOUT_TOKENS_FILE`) lists the clients, each with a name
and its own bearer token, given as the token itself or as its SHA-256 (so the file need not hold
the secret):

    {"clients": [
        {"name": "laptop", "token": "a-long-random-string-of-at-least-16"},
        {"name": "ci", "token_sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
    ]}

Names are 1-64 letters, digits, `.`, `_` or `-`, and unique; so are tokens. Any other key of a
client entry is kept in `ClientCredential.options` for the features that build on clients (a
profile, say) and ignored here. A single `--auth-token` is one client named `default`.

Once `BearerAuth` (serving/http.py) has matched a request's token, the client's name rides on the
request as the SDK's authenticated user: the SDK then binds each HTTP session to the credential
that opened it (another client's requests on it get 404, as if it did not exist), and
`client_name(request)` answers "which client is this" anywhere a request is at hand (an MCP
handler has it as `ctx.request`).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolscout.errors import ConfigError
from toolscout.json_files import read_json_file

__all__ = [
    "DEFAULT_CLIENT",
    "MIN_TOKEN_CHARS",
    "TOKENS_FILE_VARIABLE",
    "ClientCredential",
    "ClientTokens",
    "authenticated_scope",
    "client_name",
    "load_client_tokens",
]

TOKENS_FILE_VARIABLE = "TOOLSCOUT_TOKENS_FILE"
# The client a single --auth-token (or TOOLSCOUT_AUTH_TOKEN) stands for.
DEFAULT_CLIENT = "default"
# A token in a token file is a password for running tools: short ones are refused.
MIN_TOKEN_CHARS = 16
_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
_DIGEST = re.compile(r"[0-9a-fA-F]{64}")
_ADVICE = "The format is in docs/security.md (per-client tokens)."


@dataclass(frozen=True)
class ClientCredential:
    name: str
    # SHA-256 of the token: what is compared, so the token itself need not be kept.
    digest: bytes = field(repr=False)
    # The entry's other keys, for features built on clients; toolscout's checks ignore them.
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ClientTokens:
    clients: tuple[ClientCredential, ...]

    @classmethod
    def single(cls, token: str, name: str = DEFAULT_CLIENT) -> ClientTokens:
        if not token.strip():
            raise ConfigError("the auth token is empty; pass a non-empty --auth-token or unset it")
        return cls((ClientCredential(name, _sha256(token.strip().encode("utf-8"))),))

    def identify(self, presented: bytes) -> ClientCredential | None:
        """The client whose token `presented` is, or None. Every entry is compared, in constant
        time each (`hmac.compare_digest` on digests), so timing tells neither token nor position."""
        digest = _sha256(presented)
        found = None
        for client in self.clients:
            if hmac.compare_digest(digest, client.digest):
                found = client
        return found

    def names(self) -> list[str]:
        return [client.name for client in self.clients]


def load_client_tokens(path: Path) -> ClientTokens:
    """The clients of a token file; ConfigError saying what is wrong and where."""
    document = read_json_file(path, "token file", advice=_ADVICE)
    entries = document.get("clients") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"token file {path}: needs a non-empty list 'clients'. {_ADVICE}")
    clients: list[ClientCredential] = []
    seen_names: set[str] = set()
    seen_digests: set[bytes] = set()
    plain = False
    for number, entry in enumerate(entries, start=1):
        where = f"token file {path}, client {number}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: must be an object with 'name' and 'token' (or 'token_sha256'). {_ADVICE}")
        name = entry.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ConfigError(f"{where}: 'name' must be 1-64 letters, digits, '.', '_' or '-'. {_ADVICE}")
        if name in seen_names:
            raise ConfigError(f"{where}: the name '{name}' is used twice; each client needs its own. {_ADVICE}")
        digest = _entry_digest(entry, f"{where} ('{name}')")
        plain = plain or "token" in entry
        if digest in seen_digests:
            raise ConfigError(f"{where} ('{name}'): the same token as another client; give each client its own.")
        seen_names.add(name)
        seen_digests.add(digest)
        options = {key: value for key, value in entry.items() if key not in ("name", "token", "token_sha256")}
        clients.append(ClientCredential(name, digest, options))
    if plain:
        _refuse_if_others_can_read(path)
    return ClientTokens(tuple(clients))


def _entry_digest(entry: Mapping[str, Any], where: str) -> bytes:
    token, hashed = entry.get("token"), entry.get("token_sha256")
    if (token is None) == (hashed is None):
        raise ConfigError(f"{where}: give exactly one of 'token' and 'token_sha256'. {_ADVICE}")
    if token is not None:
        if not isinstance(token, str) or len(token.strip()) < MIN_TOKEN_CHARS:
            raise ConfigError(
                f"{where}: 'token' must be a string of at least {MIN_TOKEN_CHARS} characters "
                "(e.g. from `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)."
            )
        return _sha256(token.strip().encode("utf-8"))
    if not isinstance(hashed, str) or not _DIGEST.fullmatch(hashed):
        raise ConfigError(f"{where}: 'token_sha256' must be 64 hexadecimal digits (sha256sum of the token).")
    return bytes.fromhex(hashed)


def _refuse_if_others_can_read(path: Path) -> None:
    """A file holding tokens in the clear must be the owner's alone (like ssh refuses a shared key)."""
    if os.name != "posix":
        return
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(
            f"token file {path} holds tokens and other users may read it (mode {stat.S_IMODE(mode):o}); "
            f"run `chmod 600 {path}`, or store 'token_sha256' instead of 'token'."
        )


def _sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def authenticated_scope(scope: Any, client: ClientCredential) -> Any:
    """`scope` (ASGI) marked as `client`'s: the SDK binds sessions to it, `client_name` reads it."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    # The token field holds the name: the secret is not carried further than the check.
    user = AuthenticatedUser(AccessToken(token=client.name, client_id=client.name, scopes=[]))
    return {**scope, "user": user}


def client_name(request: Any) -> str | None:
    """Which client sent `request` (a Starlette request, or an ASGI scope); None without tokens."""
    scope: Mapping[str, Any] | None = getattr(request, "scope", request if isinstance(request, Mapping) else None)
    user = scope.get("user") if scope is not None else None
    access = getattr(user, "access_token", None)
    return getattr(access, "client_id", None)

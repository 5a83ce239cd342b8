"""Which profile a request is served with, and the HTTP paths that name one.

    profile = chooser.choose(ctx)               # None: the whole gateway
    view = view_of(gateway, profile)            # what the meta-tools of that client work with

What a profile's client sees of the gateway is a `toolscout.gateway.ScopedGateway` (re-exported
here): only the servers and tools of that profile.

The profile of a request (`ProfileChooser`): over HTTP the client's token when the token file
gives it one, else the path (`/mcp/<profile>`, recorded on the request by `profile_paths`), else
the default (`serve --profile`); over stdio the default.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from toolscout.gateway.scoped import ScopedGateway
from toolscout.registry.profiles import PROFILE_NAME, Profile, Profiles
from toolscout.serving.clients import client_name

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["PROFILE_SCOPE_KEY", "ProfileChooser", "ScopedGateway", "profile_chooser", "profile_paths"]

# Where the HTTP layer leaves a request's profile for the MCP handlers (an ASGI scope key).
PROFILE_SCOPE_KEY = "toolscout.profile"
# Sessions whose profile is remembered (the newest); an older one then follows the path again.
_REMEMBERED_SESSIONS = 4096


class ProfileChooser:
    """Which profile a request is served with (None: the whole gateway)."""

    def __init__(
        self,
        profiles: Profiles,
        default: Profile | None = None,
        client_profiles: Mapping[str, Profile] | None = None,
    ) -> None:
        self.profiles = profiles
        self.default = default
        # Client name (the token file's) -> the profile its token is bound to.
        self.client_profiles = dict(client_profiles or {})

    def choose(self, request: Any) -> Profile | None:
        """The profile of `request` (a Starlette request, or None over stdio and in process)."""
        scope = getattr(request, "scope", None)
        if not isinstance(scope, dict):
            return self.default
        chosen = scope.get(PROFILE_SCOPE_KEY)
        return chosen if isinstance(chosen, Profile) else self.default


def profile_paths(
    app: ASGIApp, chooser: ProfileChooser, base: str = "/mcp", operator_paths: Collection[str] = ()
) -> ASGIApp:
    """ASGI middleware: `/mcp/<profile>` is served as `/mcp` with that profile.

    A token bound to a profile (`chooser.client_profiles`) decides by itself: its client may use
    `/mcp` or its own profile's path, and gets 403 on another. A session keeps the profile it was
    opened with: the same session id on another profile's path is refused (404, as an unknown
    session), so a client cannot step out of its profile by changing the URL mid-session.
    `operator_paths` (/metrics: every server's counts) are refused (403) to a token bound to a
    profile. An unknown profile's 404 names no profile.
    """
    sessions: OrderedDict[str, str] = OrderedDict()

    async def routed(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        named: str | None = None
        if path.startswith(base + "/"):
            named = path[len(base) + 1:].strip("/")
            if not PROFILE_NAME.fullmatch(named) or named not in chooser.profiles.by_name:
                # Which profiles exist is the operator's to know, not every token holder's.
                await _refuse(send, 404, f"no profile '{named[:64]}' here; the profiles are named in the "
                                         "registry's \"profiles\" (ask whoever runs this gateway)")
                return
        client = client_name(scope)
        bound = chooser.client_profiles.get(client) if client is not None else None
        if path != base and named is None:
            if bound is not None and path in operator_paths:
                await _refuse(send, 403, f"this client's token is bound to profile '{bound.name}'; {path} covers every "
                                         "server and needs a token that is not bound to a profile")
                return
            await app(scope, receive, send)
            return
        if bound is not None and named is not None and named != bound.name:
            await _refuse(send, 403, f"this client's token is bound to profile '{bound.name}'")
            return
        profile = bound or (chooser.profiles.by_name[named] if named else chooser.default)
        label = profile.name if profile is not None else ""
        session = _header(scope, b"mcp-session-id")
        if session is not None and sessions.get(session, label) != label:
            await _refuse(send, 404, "session not found")
            return
        scope = {**scope, "path": base, "raw_path": base.encode(), PROFILE_SCOPE_KEY: profile}

        async def remembering(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                opened = next((v.decode() for k, v in message.get("headers", ()) if k.lower() == b"mcp-session-id"), None)
                if opened is not None and opened not in sessions:
                    sessions[opened] = label
                    while len(sessions) > _REMEMBERED_SESSIONS:
                        sessions.popitem(last=False)
            await send(message)

        await app(scope, receive, remembering)

    return routed


def _header(scope: Scope, name: bytes) -> str | None:
    return next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k.lower() == name), None)


async def _refuse(send: Send, status: int, message: str) -> None:
    import json

    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def profile_chooser(profiles: Profiles, default_name: str | None, clients: Any) -> ProfileChooser | None:
    """The registries' `profiles`, the default one `default_name` names (serve --profile), and the
    profile each client of the token file (`clients`, a `serving.clients` file or None) is bound to
    (its entry's "profile"); None when there are none; ConfigError when one is wrong or a named one
    does not exist."""
    from toolscout.errors import ConfigError

    default = profiles.get(default_name) if default_name else None
    bound = {}
    for client in clients.clients if clients is not None else ():
        name = client.options.get("profile")
        if name is None:
            continue
        if not isinstance(name, str) or name not in profiles.by_name:
            known = ", ".join(sorted(profiles.by_name)) or "none (add \"profiles\" to a registry file)"
            raise ConfigError(f"client '{client.name}' of the token file names profile {name!r}, which no "
                              f"registry defines; profiles: {known}")
        bound[client.name] = profiles.by_name[name]
    return ProfileChooser(profiles, default, bound) if profiles else None

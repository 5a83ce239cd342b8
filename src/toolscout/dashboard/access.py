"""Who may use the dashboard, and how a browser signs in.

Only an operator: the single `--auth-token`, or a token file entry marked `"operator": true`.
A client token (one bound to a profile, or any other entry) is refused with 403: it may run
tools, not approve them.

A browser signs in once, the way Jupyter does: `serve` logs a link carrying a one-time code
(`/ui?token=CODE`, valid for `LINK_LIFETIME` seconds and for one use); opening it exchanges the
code (or an operator's own token, given the same way or in the sign-in form) for a random session
id in an HttpOnly, SameSite=Strict cookie, and redirects to the same page without the token, so it
stays in neither the history nor the address bar. Scripts send `Authorization: Bearer <token>`
instead. Sessions live in this process's memory: a restart signs every browser out.

Every form that changes something carries a CSRF token: an HMAC of the session (or of the bearer
client) under a key made at start, checked in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass

from toolscout.errors import AccessRefused
from toolscout.serving.clients import ClientCredential, ClientTokens

__all__ = ["COOKIE", "LINK_LIFETIME", "Access", "Operator"]

COOKIE = "toolscout_ui"
# How long the printed link works (it works once).
LINK_LIFETIME = 3600.0
# How long a browser stays signed in.
SESSION_LIFETIME = 12 * 3600.0
# Sessions kept at most (the oldest signed out first): a flood of sign-ins cannot fill memory.
_MAX_SESSIONS = 1000
_OPERATOR_ADVICE = (
    "the dashboard takes an operator's token: the one --auth-token names, or a token file entry "
    'marked "operator": true'
)


@dataclass(frozen=True)
class Operator:
    """Who is signed in: the client name of the token, and the browser session (None: a script
    that sent its token in the Authorization header)."""

    name: str
    session: str | None = None


class Access:
    """Sign-in, sessions and CSRF tokens of one serving process.

    `clients`: the tokens the HTTP server knows (None: it takes no token, so only the one-time
    link signs in); `operators`: the names among them that may use the dashboard.
    """

    def __init__(
        self, clients: ClientTokens | None, operators: Collection[str], *, clock: Callable[[], float] = time.time
    ) -> None:
        self._clients = clients
        self._operators = frozenset(operators)
        self._clock = clock
        self._key = secrets.token_bytes(32)
        self._codes: dict[str, float] = {}
        self._sessions: OrderedDict[str, tuple[str, float]] = OrderedDict()

    def new_link_code(self) -> str:
        """A one-time sign-in code for the link `serve` prints."""
        code = secrets.token_urlsafe(24)
        self._codes[code] = self._clock() + LINK_LIFETIME
        return code

    def bearer(self, authorization: str) -> Operator:
        """The operator an `Authorization` header names; AccessRefused otherwise."""
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AccessRefused(401, "send Authorization: Bearer <token>, or sign in with the link toolscout serve printed")
        return Operator(self._operator(self._credential(token.strip())).name)

    def session(self, session_id: str | None) -> Operator | None:
        """The operator a session cookie stands for, or None (unknown or expired)."""
        if not session_id:
            return None
        found = self._sessions.get(session_id)
        if found is None:
            return None
        name, expires = found
        if expires < self._clock():
            del self._sessions[session_id]
            return None
        return Operator(name, session_id)

    def sign_in(self, token: str) -> Operator:
        """Exchange a one-time code, or an operator's token, for a new session; AccessRefused otherwise."""
        now = self._clock()
        expires = self._codes.pop(token, None) if token else None
        if expires is not None and expires >= now:
            name = "signed in by link"
        else:
            name = self._operator(self._credential(token)).name
        session_id = secrets.token_urlsafe(32)
        self._sessions[session_id] = (name, now + SESSION_LIFETIME)
        while len(self._sessions) > _MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return Operator(name, session_id)

    def sign_out(self, operator: Operator) -> None:
        if operator.session is not None:
            self._sessions.pop(operator.session, None)

    def csrf_token(self, operator: Operator) -> str:
        subject = f"session:{operator.session}" if operator.session else f"bearer:{operator.name}"
        return hmac.new(self._key, subject.encode("utf-8"), hashlib.sha256).hexdigest()

    def csrf_ok(self, operator: Operator, presented: str | None) -> bool:
        return bool(presented) and hmac.compare_digest(self.csrf_token(operator), presented or "")

    def _credential(self, token: str) -> ClientCredential:
        found = self._clients.identify(token.encode("utf-8")) if self._clients is not None and token else None
        if found is None:
            raise AccessRefused(401, "that token or sign-in link is not valid (a link works once, for an hour); "
                               "open a new link, or give an operator's token")
        return found

    def _operator(self, credential: ClientCredential) -> ClientCredential:
        if credential.name in self._operators:
            return credential
        profile = credential.options.get("profile")
        if profile is not None:
            raise AccessRefused(403, f"client '{credential.name}' has a token bound to profile '{profile}'; {_OPERATOR_ADVICE}")
        raise AccessRefused(403, f"client '{credential.name}' is not an operator; {_OPERATOR_ADVICE}")

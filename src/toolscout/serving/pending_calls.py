"""Calls waiting for an operator's decision on the dashboard: a call that needs confirmation when
no client is there to ask (a client without elicitation, a call without a client) waits here,
listed on the dashboard's Calls page with its tool, server, client and arguments, until an
operator allows or denies it there, or the confirmation's time runs out.

A call waits only while an operator has the dashboard open (a page of it requested within
`WATCHED_FOR`; the Calls page reloads itself while open): with nobody there to answer, it is
refused at once, as before, rather than held until its time runs out.

    pending = PendingCalls()
    answer, by = await pending.decision(tool, arguments_shown, client="ci", timeout=300)
    pending.waiting()                     # what the page lists, oldest first
    pending.decide(key, "allow", "ops")   # the page's buttons; False if it no longer waits

Held in this gateway's memory, as the call itself is: with replicas, the call waits on the
dashboard of the replica that serves it.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass, field

import anyio

__all__ = ["DECISIONS", "WATCHED_FOR", "PendingCall", "PendingCalls"]

logger = logging.getLogger(__name__)

# What an operator may answer, as the answer an elicitation gives.
DECISIONS = {"allow": "accept", "deny": "decline"}
# An operator who requested a dashboard page this recently is taken to be there to answer.
WATCHED_FOR = 900.0


@dataclass
class PendingCall:
    """One call waiting for an operator: what the page shows, and the decision once taken."""

    key: str
    tool: str
    server: str
    client: str
    arguments: str
    since: float
    answer: str | None = None
    decided_by: str | None = None
    decided: anyio.Event = field(default_factory=anyio.Event)

    @property
    def waited(self) -> int:
        return round(time.time() - self.since)


class PendingCalls:
    """The calls of this gateway waiting for an operator's decision."""

    def __init__(self) -> None:
        self._calls: dict[str, PendingCall] = {}
        self._seen_at = float("-inf")

    def seen(self) -> None:
        """An operator requested a dashboard page now."""
        self._seen_at = time.monotonic()

    def watched(self) -> bool:
        """Whether an operator is there to answer (see the module's docstring)."""
        return time.monotonic() - self._seen_at < WATCHED_FOR

    def waiting(self) -> list[PendingCall]:
        return sorted(self._calls.values(), key=lambda call: call.since)

    async def decision(
        self, tool: str, server: str, arguments: str, *, client: str, timeout: float
    ) -> tuple[str, str | None]:
        """("accept" or "decline", the operator) once an operator decides, or ("timeout", None)."""
        call = PendingCall(secrets.token_urlsafe(12), tool, server, client, arguments, time.time())
        self._calls[call.key] = call
        logger.warning("call of '%s' by client '%s' waits for an operator to allow it on the dashboard "
                       "(/ui/calls) for up to %g s", tool, client, timeout)
        try:
            with anyio.move_on_after(timeout):
                await call.decided.wait()
        finally:
            del self._calls[call.key]
        return (call.answer, call.decided_by) if call.answer is not None else ("timeout", None)

    def decide(self, key: str, verb: str, operator: str) -> bool:
        """Answer the call `key` ("allow" or "deny") as `operator`; False if it no longer waits."""
        call = self._calls.get(key)
        if call is None or call.answer is not None or verb not in DECISIONS:
            return False
        call.answer, call.decided_by = DECISIONS[verb], operator
        call.decided.set()
        logger.info("operator '%s' answered '%s' to the call of '%s' by client '%s'", operator, verb, call.tool, call.client)
        return True

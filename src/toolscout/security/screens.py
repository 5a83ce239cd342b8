"""The gateway's screens: what pinning and the poisoning scan withhold from agents, and why.

A screen takes every tool of the live catalog and returns {tool id: reason} for the tools agents
must not search or run (`toolscout.gateway.ToolScreen`); execute_tool answers with the reason.

    pins = PinScreen(PinStore(path), identities)      # changed (or, strict, new) definitions
    poison = PoisoningScreen()                         # hidden instructions in definitions
    Gateway(specs, engine, screens=[pins, poison], summary_screen=poison.summary_reason)

Reasons reach the agent, so they name what is wrong without quoting the suspicious text: quoting
it would hand the agent the very instructions the screen keeps from it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

import anyio
import anyio.to_thread

from toolscout.catalog import ToolRecord
from toolscout.errors import StateError, StateUnavailable
from toolscout.security.pinning import PinStore
from toolscout.security.poisoning import Finding, scan_tool, summarize
from toolscout.security.server_identity import ServerIdentity

logger = logging.getLogger(__name__)

__all__ = ["PinScreen", "PoisoningScreen", "flagged_tools"]


class PinScreen:
    """Withholds tools whose definition changed since approval (and, strict, unapproved new ones).

    Each call records what it sees in the state store (trust on first use, candidates of changed
    definitions), so `toolscout approve` can show them without connecting. A store that cannot be
    used withholds every tool: without it nothing can be told apart from a rug pull. A store that
    cannot be reached for now (a Postgres restarting) keeps the verdicts of the last check for the
    definitions it saw then, and withholds only definitions it has never judged;
    `follow_approvals` screens again once the store answers.
    """

    def __init__(self, store: PinStore, identities: Mapping[str, ServerIdentity] | None = None) -> None:
        self.store = store
        # Each server's identity by name: pins are kept per identity (`server_identity`).
        self.identities = dict(identities or {})
        # {(server, tool name, fingerprint): reason or None}, from the last check that reached the store.
        self._last: dict[tuple[str, str, str], str | None] = {}

    async def follow_approvals(self, rescreen: Callable[[], None], interval: float = 1.0) -> None:
        """Call `rescreen` whenever pins change (`toolscout approve` ran, here or on another replica
        sharing the store) or the store answers again after an outage, forever.

        A running gateway then releases an approved tool within about `interval` seconds, without a
        restart.
        """
        seen = await anyio.to_thread.run_sync(self._revision)
        while True:
            await anyio.sleep(interval)
            revision = await anyio.to_thread.run_sync(self._revision)
            if revision != seen:
                seen = revision
                rescreen()

    def _revision(self) -> int | None:
        try:
            return self.store.revision()
        except StateError:
            return None

    def __call__(self, tools: Sequence[ToolRecord]) -> dict[str, str]:
        try:
            verdicts = self.store.check(tools, self.identities)
        except StateUnavailable as exc:
            logger.warning("pinning: %s; keeping the last verdicts until it answers", exc)
            reason = f"toolscout cannot verify this tool's definition now: {exc}. Try again shortly."
            return {
                tool.id: blocked
                for tool in tools
                if (blocked := self._last.get((tool.server, tool.name, tool.fingerprint), reason)) is not None
            }
        except StateError as exc:
            logger.error("pinning: %s; every tool is withheld until this is fixed", exc)
            reason = f"toolscout cannot verify tool definitions: {exc}"
            return {tool.id: reason for tool in tools}
        withheld = {}
        self._last = {}
        for tool in tools:
            verdict = verdicts.get(tool.server, tool.name)
            blocked = verdict.message if verdict is not None and verdict.blocked else None
            self._last[(tool.server, tool.name, tool.fingerprint)] = blocked
            if blocked is not None:
                withheld[tool.id] = blocked
        return withheld


def _reason(findings: Sequence[Finding]) -> str:
    return (
        f"the security scan found what looks like hidden instructions in its definition: {summarize(list(findings))}. "
        "It stays unavailable; a person can review it with `toolscout tools --flagged`."
    )


class PoisoningScreen:
    """Withholds tools the poisoning scan flags; also screens the servers' one-line summaries.

    Scans are cached by the tool's fingerprint: a catalog is re-screened on every change, but a
    definition is scanned once.
    """

    def __init__(self) -> None:
        self._findings: dict[str, tuple[Finding, ...]] = {}

    def findings(self, tool: ToolRecord) -> tuple[Finding, ...]:
        key = tool.fingerprint
        if key not in self._findings:
            self._findings[key] = tuple(scan_tool(tool))
        return self._findings[key]

    def __call__(self, tools: Sequence[ToolRecord]) -> dict[str, str]:
        return {tool.id: _reason(found) for tool in tools if (found := self.findings(tool))}

    @staticmethod
    @lru_cache(maxsize=1024)
    def summary_reason(server: str, summary: str) -> str | None:
        """Why a server's summary (from its own instructions) must stay out of toolscout's, or None."""
        found = scan_tool(ToolRecord(id="", name="", server=server, description=summary))
        return f"flagged by the security scan: {summarize(found)}" if found else None


def flagged_tools(tools: Sequence[ToolRecord]) -> list[tuple[ToolRecord, str]]:
    """Every tool the poisoning scan flags, with a one-line reason (for `toolscout tools --flagged`)."""
    return [(tool, summarize(found)) for tool in tools if (found := scan_tool(tool))]

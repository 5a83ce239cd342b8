"""The gateway's screens: what pinning and the poisoning scan withhold from agents, and why.

A screen takes every tool of the live catalog and returns {tool id: reason} for the tools agents
must not search or run (`toolscout.gateway.ToolScreen`); execute_tool answers with the reason.

    pins = PinScreen(PinStore(path), identities)      # changed (or, strict, new) definitions
    poison = PoisoningScreen(OrderClassifier.bundled)  # hidden instructions: rules + learned reader
    Gateway(specs, engine, screens=[pins, poison], summary_screen=poison.summary_reason)

Reasons reach the agent, so they name what is wrong without quoting the suspicious text: quoting
it would hand the agent the very instructions the screen keeps from it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from toolscout.catalog import ToolRecord
from toolscout.errors import StateError, StateUnavailable
from toolscout.security.pinning import PinStore
from toolscout.security.poisoning import Finding, assess_tool, scan_tool, summarize, with_findings
from toolscout.security.server_identity import ServerIdentity

if TYPE_CHECKING:
    from toolscout.security.order_classifier import OrderClassifier

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

    `reader`: makes the learned reader of orders (`toolscout.security.order_classifier`), called
    once, on the first screening (in a worker thread: loading the model takes a moment); None, or a
    reader that cannot be made, leaves the phrase rules alone. Scans are cached by the tool's
    fingerprint: a catalog is re-screened on every change, but a definition is scanned once, and
    the new definitions of one change are read by the learned reader in one batch.
    """

    def __init__(self, reader: Callable[[], OrderClassifier | None] | None = None) -> None:
        self._findings: dict[str, tuple[Finding, ...]] = {}
        self._make_reader = reader
        self._reader: OrderClassifier | None = None
        self._lock = threading.Lock()

    def _learned_reader(self) -> OrderClassifier | None:
        with self._lock:
            if self._make_reader is not None:
                make, self._make_reader = self._make_reader, None
                self._reader = make()
            return self._reader

    def screen(self, tools: Sequence[ToolRecord]) -> None:
        """Scan every tool of `tools` not scanned before (the learned reader in one batch)."""
        fresh = list({tool.fingerprint: tool for tool in tools if tool.fingerprint not in self._findings}.values())
        if not fresh:
            return
        reader = self._learned_reader()
        learned = reader.findings(fresh) if reader is not None else {}
        for tool in fresh:
            assessment = with_findings(assess_tool(tool), learned.get(tool.fingerprint, ()))
            self._findings[tool.fingerprint] = assessment.findings if assessment.flagged else ()

    def findings(self, tool: ToolRecord) -> tuple[Finding, ...]:
        """Why `tool` is withheld, heaviest first; () when it is not."""
        self.screen([tool])
        return self._findings[tool.fingerprint]

    def __call__(self, tools: Sequence[ToolRecord]) -> dict[str, str]:
        self.screen(tools)
        return {tool.id: _reason(found) for tool in tools if (found := self._findings[tool.fingerprint])}

    @staticmethod
    @lru_cache(maxsize=1024)
    def summary_reason(server: str, summary: str) -> str | None:
        """Why a server's summary (from its own instructions) must stay out of toolscout's, or None."""
        found = scan_tool(ToolRecord(id="", name="", server=server, description=summary))
        return f"flagged by the security scan: {summarize(found)}" if found else None


def flagged_tools(
    tools: Sequence[ToolRecord], screen: PoisoningScreen | None = None
) -> list[tuple[ToolRecord, str]]:
    """Every tool the poisoning scan (`screen`'s, else the rules alone) flags, with a one-line
    reason (for `toolscout tools --flagged`)."""
    screen = screen or PoisoningScreen()
    screen.screen(tools)
    return [(tool, summarize(found)) for tool in tools if (found := screen.findings(tool))]

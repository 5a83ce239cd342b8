"""The audit trail of calls: every search_tools and execute_tool call, and every call refused
before it reached an upstream, recorded as it ends.

Each entry (`toolscout.state.audit.AuditEntry`) has the time, the client (its token name; "stdio"
on stdio; "anonymous" over HTTP without tokens), its profile, the tool id, a digest of the
arguments (their names and a hash of their values; the values themselves only when the operator
asks, `serve --audit-arguments`, with the registries' secrets replaced by `***`), the outcome,
the duration and the request id. It is written as one structured log line (logger `toolscout.audit`, JSON) for a
collector, and committed to the state store before the call's answer goes back (a SQLite file
of its own, at once; Postgres, from a worker thread), so a kill -9 loses at most the calls in
flight. A store that cannot take it is logged
and never fails the call.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from typing import Any

import anyio.to_thread

from toolscout.errors import StateError
from toolscout.secrets import Redaction
from toolscout.state.audit import AuditEntry, AuditLog

__all__ = ["DEFAULT_RETENTION_DAYS", "AuditTrail", "argument_digest"]

logger = logging.getLogger("toolscout.audit")

DEFAULT_RETENTION_DAYS = 30.0
# Entries older than the retention are deleted at start and after every this many writes.
_PRUNE_EVERY = 1000


def argument_digest(arguments: Any, values: Redaction | None = None) -> str:
    """The arguments' names and a SHA-256 of their canonical JSON: enough to tell two calls apart
    or match a call to a known input; with `values`, the arguments too, redacted by it."""
    try:
        canonical = json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    except (ValueError, RecursionError):
        canonical = repr(arguments)
    names = sorted(str(key) for key in arguments) if isinstance(arguments, dict) else []
    digest: dict[str, Any] = {"names": names, "sha256": hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]}
    if values is not None:
        digest["values"] = values.text(canonical)
    return json.dumps(digest, ensure_ascii=False)


class AuditTrail:
    """`full_arguments`: keep the arguments' values, with `secrets` (the registries') redacted."""

    def __init__(
        self, log: AuditLog | None, retention_days: float = DEFAULT_RETENTION_DAYS, *,
        full_arguments: bool = False, secrets: frozenset[str] = frozenset(),
    ) -> None:
        self.log = log
        self.retention = retention_days * 86400
        self.full_arguments = full_arguments
        self.secrets = secrets
        self._writes = 0
        if log is not None:
            self._prune()

    async def record(
        self, *, client: str, profile: str | None, tool: str, arguments: Any, outcome: str,
        began: float, duration: float, request_id: str | None, detail: str = "",
    ) -> None:
        entry = AuditEntry(
            at=began, client=client, profile=profile or "", tool=tool,
            arguments=argument_digest(arguments, Redaction(self.secrets) if self.full_arguments else None),
            outcome=outcome, detail=detail[:300], duration_ms=round(duration * 1000, 3), request_id=request_id or "",
        )
        logger.info("%s", json.dumps({"audit": entry.as_json()}, ensure_ascii=False))
        if self.log is None:
            return
        try:
            if self.log.local:
                # A local commit costs less than handing it to a worker thread and back.
                self.log.write(entry)
            else:
                await anyio.to_thread.run_sync(self.log.write, entry)
        except StateError as exc:
            logger.warning("the audit trail could not record a call of '%s': %s", tool, exc)
            return
        self._writes += 1
        if self._writes % _PRUNE_EVERY == 0:
            await anyio.to_thread.run_sync(self._prune)

    def _prune(self) -> None:
        assert self.log is not None
        try:
            self.log.prune(time.time() - self.retention)
        except StateError as exc:
            logger.warning("old audit entries could not be deleted: %s", exc)

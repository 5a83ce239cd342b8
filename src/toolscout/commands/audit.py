"""`toolscout audit`: the audit trail of calls, from the state store `serve` writes it to.

    toolscout audit                               the last day's calls, one line each
    toolscout audit --json --client alpha         one JSON object a line (for a SIEM or jq)
    toolscout audit --tool notes__delete_note --since 2h
    toolscout audit --since 2026-12-01

Reads the same state store as `serve` (--state, else $TOOLSCOUT_STATE, else the default); every
value printed passes through `terminal_safe`, so a tool id cannot send escapes to the terminal.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from datetime import datetime, timezone

from toolscout.commands._gateway import add_state_option, fail
from toolscout.errors import StateError
from toolscout.security.hidden import terminal_safe
from toolscout.state.audit import AuditEntry, AuditLog, audit_location, open_audit_state
from toolscout.state.location import state_exists

__all__ = ["parse_since", "register", "run"]

_AGO = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([smhd])\s*$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "audit",
        help="list the calls agents made through the gateway (the audit trail)",
        description="List the calls recorded in the audit trail: time, client, profile, tool, outcome, duration, "
        "request id and a digest of the arguments, oldest first.",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object a line")
    parser.add_argument("--client", metavar="NAME", help="only this client's calls (a token name, or stdio)")
    parser.add_argument("--tool", metavar="ID", help="only calls of this tool id (or search_tools)")
    parser.add_argument(
        "--since", default="1d", metavar="WHEN",
        help="only calls since then: an age (30m, 2h, 7d) or a date (2026-12-01, 2026-12-01T10:00) (default 1d)",
    )
    parser.add_argument("--limit", type=int, default=10_000, metavar="N", help="at most the last N calls (default 10000)")
    add_state_option(parser)
    parser.set_defaults(handler=run)


def parse_since(text: str, now: float | None = None) -> float:
    """Epoch seconds from an age ("2h") or an ISO date; ValueError saying the forms otherwise."""
    now = time.time() if now is None else now
    if (match := _AGO.match(text)) is not None:
        return now - float(match.group(1)) * _UNIT[match.group(2)]
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"'{text}' is neither an age (30m, 2h, 7d) nor a date (2026-12-01, 2026-12-01T10:00)") from None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


def run(args: argparse.Namespace) -> int:
    try:
        since = parse_since(args.since)
    except ValueError as exc:
        return fail("audit", f"--since: {exc}")
    location = audit_location(args.state)
    if not state_exists(location):
        print(f"No audit trail yet: {location} does not exist.", file=sys.stderr)
        return 0
    try:
        state = open_audit_state(args.state)
        try:
            entries = AuditLog(state).read(client=args.client, tool=args.tool, since=since, limit=args.limit)
        finally:
            state.close()
    except StateError as exc:
        return fail("audit", str(exc))
    for entry in entries:
        print(json.dumps(entry.as_json(), ensure_ascii=True) if args.json else _line(entry))
    return 0


def _line(entry: AuditEntry) -> str:
    when = datetime.fromtimestamp(entry.at, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    profile = f"/{entry.profile}" if entry.profile else ""
    fields = [when, f"{entry.client}{profile}", entry.tool or "-", entry.outcome, f"{entry.duration_ms:.1f} ms"]
    if entry.request_id:
        fields.append(f"request={entry.request_id}")
    return terminal_safe("  ".join(fields))

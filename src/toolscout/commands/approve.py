"""`toolscout approve`: review changed (or, in strict mode, new) tool definitions and accept them.

    toolscout approve                         list what awaits approval, with diffs
    toolscout approve --server S TOOL ...     show those diffs and approve after confirmation
    toolscout approve --all [--server S]      every pending definition (of one server)
    toolscout approve --refresh ...           first connect to the upstreams to record what they list now

Without --refresh it works from the pin state file alone: the gateway records each changed
definition there as a candidate when it sees it, and this command shows and accepts exactly that
candidate. Everything printed passes through `terminal_safe`, so a definition cannot hide text
from the reviewer or send escape codes to the terminal.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from toolscout.commands._gateway import add_registry_options, fail, load_specs, open_gateway
from toolscout.errors import ToolscoutError
from toolscout.security.hidden import terminal_safe
from toolscout.security.pinning import PATH_ENV, PendingChange, PinStore, record_from_definition
from toolscout.security.poisoning import scan_tool, summarize


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("approve", help="review and approve changed tool definitions (pinning)")
    parser.add_argument("tools", nargs="*", metavar="TOOL", help="tool names to approve (with --server if ambiguous)")
    parser.add_argument("--server", help="only tools of this server")
    parser.add_argument("--all", action="store_true", help="approve every pending definition (of --server)")
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    parser.add_argument(
        "--pins", type=Path, metavar="FILE", help=f"pin state file (default: ${PATH_ENV} or the user state directory)"
    )
    parser.add_argument(
        "--strict-pins", action="store_true",
        help="with --refresh: record new tools as awaiting approval, as `serve --strict-pins` does, not trusted on first use",
    )
    parser.add_argument(
        "--refresh", action="store_true",
        help="connect to the upstreams first (implied by --registry) and record their current definitions"
    )
    add_registry_options(parser)
    parser.set_defaults(handler=run, model="none")


def run(args: argparse.Namespace) -> int:
    try:
        store = PinStore(args.pins, strict=args.strict_pins)
        if args.refresh or args.registry:
            _refresh(args, store)
        pending = store.pending(server=args.server)
        selected = _select(args, pending)
    except (ToolscoutError, LookupError) as exc:
        return fail("approve", str(exc))
    if not pending:
        where = f" for server '{args.server}'" if args.server else ""
        print(f"Nothing awaits approval{where} ({store.path}).")
        return 0
    if selected is None:
        for change in pending:
            _show(change)
        print(f"{len(pending)} definition(s) await approval. Approve with "
              "`toolscout approve --server SERVER TOOL ...` or `--all`.")
        return 0
    for change in selected:
        _show(change)
    if not args.yes:
        if not sys.stdin.isatty():
            return fail("approve", "not a terminal to confirm on; pass --yes to approve what is shown above")
        answer = input(f"Approve {len(selected)} definition(s)? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("Nothing approved.")
            return 1
    try:
        accepted = store.approve(selected)
    except ToolscoutError as exc:
        return fail("approve", str(exc))
    for change in accepted:
        print(f"approved {change.server}/{change.name}")
    missed = len(selected) - len(accepted)
    if missed:
        print(f"{missed} definition(s) changed again while shown and were not approved; run approve again.")
        return 1
    return 0


def _select(args: argparse.Namespace, pending: list[PendingChange]) -> list[PendingChange] | None:
    """The changes named on the command line; None when only listing was asked for."""
    if args.all and args.tools:
        raise LookupError("give either TOOL names or --all, not both")
    if args.all:
        return pending
    if not args.tools:
        return None
    selected = []
    for name in args.tools:
        matches = [change for change in pending if change.name == name]
        if not matches:
            known = ", ".join(sorted({f"{c.server}/{c.name}" for c in pending})) or "none"
            raise LookupError(f"no pending definition for tool '{name}'; pending: {known}")
        if len(matches) > 1:
            servers = ", ".join(change.server for change in matches)
            raise LookupError(f"tool '{name}' is pending on several servers ({servers}); add --server")
        selected.append(matches[0])
    return selected


def _show(change: PendingChange) -> None:
    title = "NEW" if change.kind == "new" else "CHANGED"
    print(f"== {title} {terminal_safe(change.server)}/{terminal_safe(change.name)} (seen {change.seen_at})")
    print(terminal_safe(change.diff))
    findings = scan_tool(record_from_definition(change.server, change.candidate))
    if findings:
        print(terminal_safe(f"!! poisoning scan flags the new definition: {summarize(findings)}"))
    print()


def _refresh(args: argparse.Namespace, store: PinStore) -> None:
    import anyio

    async def listing() -> None:
        async with open_gateway(args, load_specs(args), max_restarts=0) as gateway:
            await gateway.ready(args.start_timeout + 5)
            store.check(gateway.catalog.tools)

    anyio.run(listing)

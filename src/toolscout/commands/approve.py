"""`toolscout approve`: review changed (or, in strict mode, new) tool definitions and accept them.

    toolscout approve                         list what awaits approval, with diffs
    toolscout approve --server S TOOL ...     show those diffs and approve after confirmation
    toolscout approve --all [--server S]      every pending definition (of one server)
    toolscout approve --refresh ...           first connect to the upstreams to record what they list now
    toolscout approve --forget [--server S] [TOOL ...]
                                              remove the pins of tools their server no longer lists

Without --refresh it works from the state store alone: the gateway records each changed
definition there as a candidate when it sees it, and this command shows and accepts exactly that
candidate. Everything printed passes through `terminal_safe`, so a definition cannot hide text
from the reviewer or send escape codes to the terminal.

--forget connects and compares each server's pins with what it lists now. A server that is not up
keeps every pin (it may only be down for now); a server no longer in the registry keeps them too,
unless it is named with --server, which is how a person says it was removed on purpose.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict

from toolscout.commands._gateway import add_registry_options, add_state_option, command_options, fail
from toolscout.errors import ToolscoutError
from toolscout.security.hidden import terminal_safe
from toolscout.security.pinning import PinStore, record_from_definition
from toolscout.security.poisoning import scan_tool, summarize
from toolscout.security.verdicts import PendingChange

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "approve",
        help="review and approve changed tool definitions (pinning)",
        description="Review the tool definitions that changed since they were approved (with --strict-pins, new "
        "ones too), with their differences, and approve them so the gateway offers them again.",
    )
    parser.add_argument(
        "tools", nargs="*", metavar="TOOL", help="tool names to approve (with --server if ambiguous), or to forget"
    )
    parser.add_argument(
        "--server", help="only tools of this server: its name, or NAME@DIGEST (as the quarantine warning prints it) "
                         "for one of several servers of that name in different registries",
    )
    parser.add_argument("--all", action="store_true", help="approve every pending definition (of --server)")
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    add_state_option(parser)
    parser.add_argument(
        "--strict-pins", action="store_true",
        help="with --refresh: record new tools as awaiting approval, as `serve --strict-pins` does, not trusted on first use",
    )
    parser.add_argument(
        "--refresh", action="store_true",
        help="connect to the upstreams first (implied by --registry) and record their current definitions"
    )
    parser.add_argument(
        "--forget", action="store_true",
        help="connect and remove the pins of tools their server no longer lists (a server that is down keeps its "
             "pins; one no longer in the registry only when named with --server)",
    )
    add_registry_options(parser)
    parser.set_defaults(handler=run, model="none")


def run(args: argparse.Namespace) -> int:
    if args.forget:
        return _forget(args)
    try:
        store = PinStore(args.state, strict=args.strict_pins)
        if args.refresh or args.registry:
            _refresh(args, store)
        pending = store.pending(server=args.server)
        selected = _select(args, pending)
    except (ToolscoutError, LookupError) as exc:
        return fail("approve", str(exc))
    if not pending:
        where = f" for server '{args.server}'" if args.server else ""
        print(f"Nothing awaits approval{where} ({store.location}).")
        return 0
    if selected is None:
        for change in pending:
            _show(change)
        print(f"{len(pending)} definition(s) await approval. Approve with "
              "`toolscout approve --server SERVER TOOL ...` or `--all`.")
        return 0
    for change in selected:
        _show(change)
    refused = _confirm(args, "approve", f"Approve {len(selected)} definition(s)?")
    if refused is not None:
        return refused
    try:
        accepted = store.approve(selected)
    except ToolscoutError as exc:
        return fail("approve", str(exc))
    for change in accepted:
        print(f"approved {change.pin_key}/{change.name}")
    missed = len(selected) - len(accepted)
    if missed:
        print(f"{missed} definition(s) changed again while shown and were not approved; run approve again.")
        return 1
    return 0


def _confirm(args: argparse.Namespace, verb: str, question: str) -> int | None:
    """None when the person agreed (or passed --yes); else the exit code."""
    if args.yes:
        return None
    if not sys.stdin.isatty():
        return fail("approve", f"not a terminal to confirm on; pass --yes to {verb} what is shown above")
    if input(f"{question} [y/N] ").strip().lower() in ("y", "yes"):
        return None
    print(f"Nothing {'approved' if verb == 'approve' else 'forgotten'}.")
    return 1


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
            servers = ", ".join(f"{change.pin_key} ({change.launch or 'from before server identities'})" for change in matches)
            raise LookupError(f"tool '{name}' is pending on several servers: {servers}; add --server with one of them")
        selected.append(matches[0])
    return selected


def _show(change: PendingChange) -> None:
    title = "NEW" if change.kind == "new" else "CHANGED"
    print(f"== {title} {terminal_safe(change.pin_key)}/{terminal_safe(change.name)} (seen {change.seen_at})")
    if change.launch:
        print(f"   server '{terminal_safe(change.server)}' launched as: {terminal_safe(change.launch)}")
    if change.rejected_at:
        print(f"   rejected by {terminal_safe(change.rejected_by)} at {change.rejected_at}; still withheld")
    print(terminal_safe(change.diff))
    findings = scan_tool(record_from_definition(change.server, change.candidate))
    if findings:
        print(terminal_safe(f"!! poisoning scan flags the new definition: {summarize(findings)}"))
    print()


def _refresh(args: argparse.Namespace, store: PinStore) -> None:
    import anyio

    from toolscout.security.server_identity import server_identity

    async def listing() -> None:
        from toolscout.app import load_specs, open_gateway

        options = command_options(args)
        specs = load_specs(options)
        async with open_gateway(options, specs) as gateway:
            await gateway.ready(options.gateway.start_timeout + 5)
            store.check([*gateway.catalog.tools, *gateway.listed_offerings().records()],
                        {spec.name: server_identity(spec) for spec in specs})

    anyio.run(listing)


def _forget(args: argparse.Namespace) -> int:
    if args.all or args.refresh:
        return fail("approve", "--forget works on its own; it cannot be combined with --all or --refresh")
    try:
        store = PinStore(args.state)
        pinned = store.pinned()
        listed, down = _live_listing(args)
        vanished = _vanished(args, pinned, listed, down)
    except (ToolscoutError, LookupError) as exc:
        return fail("approve", str(exc))
    if not vanished:
        print(f"No pins to forget ({store.location}).")
        return 0
    print("Pins of tools their server no longer lists:")
    for server, name in vanished:
        print(f"  {terminal_safe(server)}/{terminal_safe(name)}")
    refused = _confirm(args, "forget", f"Forget {len(vanished)} pin(s)?")
    if refused is not None:
        return refused
    try:
        removed = store.forget(vanished)
    except ToolscoutError as exc:
        return fail("approve", str(exc))
    for server, name in removed:
        print(f"forgot {terminal_safe(server)}/{terminal_safe(name)}")
    return 0


def _live_listing(args: argparse.Namespace) -> tuple[dict[str, set[str]], dict[str, str]]:
    """Tool names each server that is up lists now, and why each other server is not up, by the
    servers' identity keys (as pins are filed)."""
    import anyio

    from toolscout.security.server_identity import server_identity
    from toolscout.upstream.status import State

    async def listing() -> tuple[dict[str, set[str]], dict[str, str]]:
        from toolscout.app import load_specs, open_gateway

        options = command_options(args)
        specs = load_specs(options)
        keys = {spec.name: server_identity(spec).key for spec in specs}
        async with open_gateway(options, specs) as gateway:
            await gateway.ready(options.gateway.start_timeout + 5)
            # One snapshot: a server coming up between the two would otherwise look empty.
            statuses, catalog = gateway.statuses(screened=False), gateway.listed()
            # Prompts and resources are pinned as well ("prompt:NAME", ...).
            offered = gateway.listed_offerings().records()
        listed: dict[str, set[str]] = defaultdict(set)
        for tool in [*catalog.tools, *offered]:
            listed[tool.server].add(tool.name)
        # Pins from before identities are filed under the bare name: those of a configured name are its own.
        down = {key: s.reason or s.state.value for s in statuses if s.state is not State.UP for key in (keys[s.name], s.name)}
        return {key: listed[s.name] for s in statuses if s.state is State.UP for key in (keys[s.name], s.name)}, down

    return anyio.run(listing)


def _vanished(
    args: argparse.Namespace, pinned: dict[str, list[str]], listed: dict[str, set[str]], down: dict[str, str],
) -> list[tuple[str, str]]:
    """(server key, tool) pins to forget; says which servers keep their pins and why.

    `listed`: the tools of every configured server that is up; `down`: every other configured
    server; both by identity key, as `pinned` is. `--server` names a server or one key.
    """
    from toolscout.security.server_identity import name_of_key

    def named(key: str) -> bool:
        return args.server in (key, name_of_key(key))

    if args.server is not None and not any(named(key) for key in pinned):
        raise LookupError(f"no pins for server '{args.server}'; pinned servers: {', '.join(pinned) or 'none'}")
    vanished = []
    for server, names in pinned.items():
        if args.server is not None and not named(server):
            continue
        shown = terminal_safe(server)
        if server in listed:
            vanished += [(server, name) for name in names if name not in listed[server]]
        elif server in down:
            print(f"server '{shown}' is not up ({terminal_safe(down[server])}): its {len(names)} pin(s) are kept")
        elif args.server is not None:
            vanished += [(server, name) for name in names]  # named by the person: removed on purpose
        else:
            print(f"server '{shown}' is not in the registry: its {len(names)} pin(s) are kept "
                  f"(to forget them: toolscout approve --forget --server {shown})")
    if args.tools:
        unknown = [name for name in args.tools if name not in {n for _, n in vanished}]
        if unknown:
            names = terminal_safe(", ".join(unknown))
            raise LookupError(f"not a pin of a tool its server no longer lists: {names}")
        vanished = [(server, name) for server, name in vanished if name in args.tools]
    return vanished

"""`toolscout tools`: list the upstreams: status, reason, tool counts.

It answers from the catalog a gateway last saw over the same registries (`toolscout serve` keeps it
current), saying how old it is; with `--refresh`, or when none is cached yet, it connects to every
upstream once.

Under each upstream it also shows what every `toolscout serve` running over the same registries
says of it (restarts, give-ups): those gateways publish their statuses for this. With `--running`,
only that, without connecting to anything.

With `--flagged`, list instead the tools the poisoning scan flags, with the reason, for a person
to review (the gateway withholds them unless started with --allow-flagged).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from toolscout.commands._gateway import add_registry_options, add_security_options, command_options, fail
from toolscout.commands._seen import add_refresh_option, cached, screened_statuses
from toolscout.errors import ConfigError
from toolscout.upstream.published import running_gateways
from toolscout.wording import plural

if TYPE_CHECKING:
    from toolscout.app import AppConfig, GatewayHooks
    from toolscout.catalog import Catalog
    from toolscout.upstream.status import UpstreamStatus

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tools",
        help="list the upstream servers, their status and tool counts",
        description="List the upstream servers with their state, tool count and purpose (or why they are down), "
        "from the catalog a gateway last saw; --refresh connects to each once, --running shows what running "
        "gateways report.",
    )
    add_registry_options(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--list", action="store_true", help="also list each tool's id, and why a tool is withheld")
    parser.add_argument(
        "--running", action="store_true",
        help="show only what running gateways (toolscout serve) report of their upstreams; connect to nothing",
    )
    parser.add_argument("--flagged", action="store_true", help="list the tools the poisoning scan flags, with the reason")
    add_refresh_option(parser)
    add_security_options(parser)
    parser.set_defaults(handler=run, model="none")


def run(args: argparse.Namespace) -> int:
    # Imported when the command runs: the engine comes with it, not with the parser.
    from toolscout.app import gateway_hooks, load_specs

    options = command_options(args, security=True)
    try:
        specs = load_specs(options)
        hooks = gateway_hooks(options, specs)
    except ConfigError as exc:
        return fail("tools", str(exc))
    if args.flagged:
        return _print_flagged(anyio.run(_flagged, options, specs), args.json)
    gateways = _running(options)
    if args.running:
        report = [{"name": spec.name, "transport": spec.transport} for spec in specs]
    else:
        report = anyio.run(_collect, args, options, specs, hooks)
    for row in report:
        row["serving"] = [
            {"pid": g.pid, "host": g.host, "transport": g.transport, **g.upstreams[row["name"]]}
            for g in gateways if row["name"] in g.upstreams
        ]
    if args.running and not gateways:
        print("No toolscout serve is running over these registries.", file=sys.stderr)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    from toolscout.security.hidden import terminal_safe

    width = max([len(row["name"]) for row in report] + [6])
    if not args.running:
        # Served: what agents can find and run; withheld: listed, but held back by pins or the scan.
        print(f"{'SERVER':<{width}}  {'STATE':<8}  {'SERVED':>6}  {'WITHHELD':>8}  DETAIL")
    for row in report:
        if not args.running:
            detail = row["reason"] if row["state"] != "up" else row["summary"]
            served = row["tool_count"] - row["withheld_count"]
            # A reason may span lines (an upstream's last stderr lines): the rest go under DETAIL.
            first, *more = (detail or "").splitlines() or [""]
            print(f"{row['name']:<{width}}  {row['state']:<8}  {served:>6}  {row['withheld_count']:>8}  {first}")
            for line in more:
                print(f"{'':<{width}}  {'':<8}  {'':>6}  {'':>8}  {line}")
        for seen in row["serving"]:
            print(f"{row['name'] if args.running else '':<{width}}  {_served_line(seen)}")
        for tool_id in row.get("tools", []):
            print(f"{'':<{width}}  - {tool_id}")
        for tool_id, reason in row.get("withheld", {}).items():
            print(f"{'':<{width}}  - {tool_id} (withheld: {terminal_safe(reason)})")
    return 0


def _running(options: AppConfig) -> list:
    """The running gateways over these registries: this machine's, and the replicas of other hosts
    when the state store is a Postgres they share (if it answers)."""
    from toolscout.app import state_location
    from toolscout.errors import StateError
    from toolscout.state.replicas import replica_board

    board = None
    try:
        board = replica_board(state_location(options))
        return running_gateways(options.registry_sources(), board=board)
    except StateError as exc:
        print(f"toolscout tools: replicas on other hosts are not shown: {exc}", file=sys.stderr)
        return running_gateways(options.registry_sources())
    finally:
        if board is not None:
            board.state.close()


async def _flagged(options: AppConfig, specs: list) -> list[dict]:
    from toolscout.app import learned_reader, open_gateway
    from toolscout.security.screens import PoisoningScreen, flagged_tools

    # Scans every listed tool, resource and prompt, withheld or not: no screens, and nothing is
    # pinned by looking.
    async with open_gateway(options, specs) as gateway:
        await gateway.ready(options.gateway.start_timeout + 5)
        tools = [*gateway.listed().tools, *gateway.listed_offerings().records()]
        summaries = [(s.name, s.summary) for s in gateway.statuses(screened=False) if s.summary]
    screen = PoisoningScreen(learned_reader(options))  # as a gateway with the screens on reads them
    flagged = await anyio.to_thread.run_sync(flagged_tools, tools, screen)
    rows = [{"id": tool.id, "server": tool.server, "reason": reason} for tool, reason in flagged]
    for server, summary in summaries:
        reason = PoisoningScreen.summary_reason(server, summary)
        if reason:
            rows.append({"id": None, "server": server, "reason": f"its instructions: {reason}"})
    return rows


def _print_flagged(rows: list[dict], as_json: bool) -> int:
    from toolscout.security.hidden import terminal_safe

    if as_json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    elif not rows:
        print("The poisoning scan flags no tool.")
    else:
        for row in rows:
            # What an upstream wrote may hide escape codes or invisible text aimed at the reader.
            print(terminal_safe(f"{row['id'] or row['server'] + ' (server)'}: {row['reason']}"))
        print(f"{len(rows)} flagged; they stay out of search and execute_tool unless toolscout runs with --allow-flagged.")
    return 0


async def _collect(args: argparse.Namespace, options: AppConfig, specs: list, hooks: GatewayHooks) -> list[dict]:
    from toolscout.app import catalog_indexer, open_gateway, remember

    seen = cached("tools", args.refresh, options, specs, quiet=bool(args.quiet))
    if seen is not None:
        indexer = catalog_indexer(options, hooks, specs)
        await indexer.update(seen.catalog)  # screens them (what is withheld is counted); no upstream starts
        return _rows(args, screened_statuses(seen.statuses, hooks.summary_screen), indexer.catalog, seen.catalog)
    # One attempt per upstream: this is a snapshot, not a supervisor.
    async with open_gateway(options, specs, hooks=hooks) as gateway:
        await gateway.ready(options.gateway.start_timeout + 5)
        remember(gateway, options, specs)
        return _rows(args, gateway.statuses(), gateway.catalog, gateway.listed())


def _rows(args: argparse.Namespace, statuses: Sequence[UpstreamStatus], catalog: Catalog, listed: Catalog) -> list[dict]:
    rows = []
    for status in statuses:
        withheld = {
            tool.id: catalog.withheld[tool.id]
            for tool in listed.tools
            if tool.server == status.name and tool.id in catalog.withheld
        }
        row = {
            "name": status.name,
            "transport": status.transport,
            # An entry never started on purpose (it would start toolscout itself) is not down.
            "state": "skipped" if status.skipped else status.state.value,
            # Listed by the server; of those, `withheld_count` are held back from agents.
            "tool_count": status.tool_count,
            "withheld_count": len(withheld) if status.state.value == "up" else 0,
            "summary": status.summary,
            "reason": status.reason,
        }
        if args.list:
            row["tools"] = [t.id for t in catalog.tools if t.server == status.name]
            row["withheld"] = withheld
        rows.append(row)
    return rows


def _served_line(seen: dict) -> str:
    """How one running gateway sees an upstream, e.g. 'serving gateway 4711 (http): down, ...'."""
    from toolscout.security.hidden import terminal_safe

    where = f"{seen['host']}:{seen['pid']}" if seen.get("host") else seen["pid"]
    who = f"serving gateway {where} ({seen['transport']}): {seen['state']}"
    if seen["state"] == "up":
        who += f", {plural(seen['tool_count'], 'tool')}"
    if seen.get("restarts"):
        who += f", restarted {seen['restarts']} time{'s' if seen['restarts'] != 1 else ''}"
        if seen["state"] == "up" and seen.get("last_restart_reason"):
            who += f", last after: {seen['last_restart_reason']}"  # when down, its reason says why
    if seen["state"] != "up" and seen.get("reason"):
        who += f": {seen['reason']}"
    if seen["state"] != "up" and isinstance(seen.get("next_attempt"), (int, float)):
        who += f"; next attempt {_when(seen['next_attempt'])}"
    return terminal_safe(who)


def _when(epoch: float) -> str:
    """'at 10:41:02 UTC (in 42 s)' for a moment a few seconds to minutes ahead."""
    import datetime

    at = datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%H:%M:%S UTC")
    return f"at {at} (in {max(0, round(epoch - time.time()))} s)"

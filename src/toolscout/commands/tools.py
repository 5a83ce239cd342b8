"""`toolscout tools`: connect to every upstream once and list them: status, reason, tool counts."""

from __future__ import annotations

import argparse
import json

import anyio

from toolscout.commands._gateway import add_registry_options, fail, load_specs, open_gateway
from toolscout.errors import ConfigError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("tools", help="list the upstream servers, their status and tool counts")
    add_registry_options(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--list", action="store_true", help="also list each tool's id")
    parser.set_defaults(handler=run, model="none")


def run(args: argparse.Namespace) -> int:
    try:
        specs = load_specs(args)
    except ConfigError as exc:
        return fail("tools", str(exc))
    report = anyio.run(_collect, args, specs)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    width = max([len(row["name"]) for row in report] + [6])
    print(f"{'SERVER':<{width}}  {'STATE':<8}  {'TOOLS':>5}  DETAIL")
    for row in report:
        detail = row["reason"] if row["state"] != "up" else row["summary"]
        print(f"{row['name']:<{width}}  {row['state']:<8}  {row['tool_count']:>5}  {detail}")
        for tool_id in row.get("tools", []):
            print(f"{'':<{width}}  - {tool_id}")
    return 0


async def _collect(args: argparse.Namespace, specs: list) -> list[dict]:
    # One attempt per upstream: this is a snapshot, not a supervisor.
    async with open_gateway(args, specs, max_restarts=0) as gateway:
        await gateway.ready(args.start_timeout + 5)
        rows = []
        for status in gateway.statuses():
            row = {
                "name": status.name,
                "transport": status.transport,
                "state": status.state.value,
                "tool_count": status.tool_count,
                "summary": status.summary,
                "reason": status.reason,
            }
            if args.list:
                row["tools"] = [t.id for t in gateway.catalog.tools if t.server == status.name]
            rows.append(row)
        return rows

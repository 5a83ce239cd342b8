"""`toolscout examples`: list, export and prune the example requests learned from use.

They live in the state store, on this machine or in the Postgres replicas share (see docs/learning.md); this command is how a user inspects them,
turns them into an examples file (`export`), or deletes them (`prune`, `clear`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from datetime import datetime

from toolscout.errors import ToolscoutError
from toolscout.learning.examples import Example, write_examples
from toolscout.learning.phrases import phrase_key
from toolscout.commands._gateway import add_state_option
from toolscout.learning.usage import UsageEntry, UsageStore

__all__ = ["register", "run"]

ACTIONS = ("list", "prune", "export", "clear")
_DAY_S = 86_400.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "examples",
        help="list, export or prune the example requests learned from use",
        description="Example requests learned when an agent ran a tool that search_tools had "
        "just returned, kept in the state store (--state).",
    )
    parser.add_argument("action", nargs="?", choices=ACTIONS, default="list",
                        help="list (default), export as an examples file, prune matching ones, clear all")
    parser.add_argument("--older-than", type=float, metavar="DAYS",
                        help="only examples last used more than DAYS days ago")
    parser.add_argument("--tool", metavar="ID", help="only examples of this tool id")
    parser.add_argument("--json", action="store_true", help="list as one JSON array")
    add_state_option(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.older_than is not None and args.older_than < 0:
        return _fail("--older-than must be a number of days >= 0")
    if args.action == "prune" and args.older_than is None and args.tool is None:
        return _fail("prune needs --older-than DAYS and/or --tool ID (use 'clear' to delete all)")
    if args.action == "clear" and (args.older_than is not None or args.tool is not None):
        return _fail("clear deletes everything; to delete some, use 'prune' with these options")
    cutoff = None if args.older_than is None else time.time() - args.older_than * _DAY_S
    try:
        with UsageStore(args.state) as store:
            if args.action == "prune":
                removed = store.prune(tool_id=args.tool, older_than=cutoff)
                print(f"removed {removed} learned example(s) from {store.location}")
            elif args.action == "clear":
                print(f"removed {store.clear()} learned example(s) from {store.location}")
            elif args.action == "export":
                write_examples(_selected_examples(store, args.tool, cutoff), sys.stdout)
            else:
                _print_entries(store.entries(tool_id=args.tool, older_than=cutoff), args.json)
    except ToolscoutError as exc:
        return _fail(str(exc))
    return 0


def _selected_examples(store: UsageStore, tool_id: str | None, cutoff: float | None) -> list[Example]:
    if tool_id is None and cutoff is None:
        return store.examples()
    # A filter selects pairs, so the export keeps only the selected tools of each query.
    entries = store.entries(tool_id=tool_id, older_than=cutoff)
    kept = {(phrase_key(entry.query), entry.tool_id) for entry in entries}
    selected = []
    for example in store.examples():
        key = phrase_key(example.query)
        tools = tuple(tool for tool in example.tool_ids if (key, tool) in kept)
        if tools:
            selected.append(Example(example.query, tools))
    return selected


def _print_entries(entries: list[UsageEntry], as_json: bool) -> None:
    if as_json:
        print(json.dumps([dataclasses.asdict(entry) for entry in entries], indent=2))
        return
    if not entries:
        print("no learned examples")
        return
    print(f"{'count':>5}  {'last used':16}  {'tool':32}  query")
    for entry in entries:
        when = datetime.fromtimestamp(entry.last_seen).strftime("%Y-%m-%d %H:%M")
        print(f"{entry.count:>5}  {when:16}  {entry.tool_id:32}  {entry.query}")


def _fail(message: str) -> int:
    print(f"toolscout examples: error: {message}", file=sys.stderr)
    return 2

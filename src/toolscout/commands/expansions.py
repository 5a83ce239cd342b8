"""`toolscout expansions [TOOL_ID...]`: what each tool's expansion field is made of, by source.

Reads only files and the state store (overlays, example files, learned examples, the cache of
generated phrases); it connects to no upstream, so it shows tools the stores know about, or the
ids given on the command line.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from toolscout.errors import ToolscoutError
from toolscout.learning.examples import Example, load_example_files
from toolscout.learning.expansion import ExpansionPlan
from toolscout.learning.expansion_cache import CachedExpansion, ExpansionCache, default_expansions_path
from toolscout.learning.overlays import Overlay, discover_overlays, load_overlays
from toolscout.learning.usage import UsageStore, default_usage_path
from toolscout.commands._gateway import add_state_option
from toolscout.state.location import state_exists

__all__ = ["register", "run"]

_GLOB = frozenset("*?[")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "expansions",
        help="show the phrases each tool's expansion field gets, by source",
        description="Show, per tool id, the overlay phrases, example requests (from files and "
        "learned from use) and model-generated phrases that fill its expansion field.",
    )
    parser.add_argument("tool_ids", nargs="*", metavar="TOOL_ID",
                        help="tools to show (default: every tool the stores and files mention)")
    parser.add_argument("--registry", action="append", type=Path, default=[], metavar="FILE",
                        help="use the overlay file kept next to this registry (NAME.overlay.json)")
    parser.add_argument("--overlay", action="append", type=Path, default=[], metavar="FILE",
                        help="an overlay file (may repeat)")
    parser.add_argument("--examples", action="append", type=Path, default=[], metavar="FILE",
                        help="an examples file, JSON Lines (may repeat)")
    add_state_option(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON array")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        overlays = load_overlays([*discover_overlays(args.registry), *args.overlay])
        examples = load_example_files(args.examples) + _learned(args.state)
        generated = _generated(args.state)
    except ToolscoutError as exc:
        print(f"toolscout expansions: error: {exc}", file=sys.stderr)
        return 2
    tool_ids = args.tool_ids or _known_ids(overlays, examples, generated)
    plan = ExpansionPlan(overlays, examples, {e.fingerprint: e.phrases for e in generated.values()})
    rows = []
    for tool_id in tool_ids:
        entry = generated.get(tool_id)
        sources = plan.sources(tool_id, entry.fingerprint if entry else None)
        rows.append({
            "tool_id": tool_id,
            "overlay": list(sources.overlay),
            "examples": list(sources.examples),
            "generated": list(sources.generated),
            "generated_by": entry.model if entry else None,
            "generated_at": entry.created if entry else None,
            "fingerprint": entry.fingerprint if entry else None,
        })
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        _print_rows(rows)
    return 0


def _learned(location: str | None) -> list[Example]:
    # A read-only command should not create the store when nothing was ever learned.
    if not (state_exists(location) or default_usage_path().exists()):
        return []
    with UsageStore(location) as store:
        return store.examples()


def _generated(location: str | None) -> dict[str, CachedExpansion]:
    """tool id -> its most recent generated expansion."""
    if not (state_exists(location) or default_expansions_path().exists()):
        return {}
    with ExpansionCache(location) as cache:
        return {entry.tool_id: entry for entry in cache.entries()}


def _known_ids(
    overlays: Sequence[Overlay], examples: Sequence[Example], generated: Mapping[str, CachedExpansion]
) -> list[str]:
    ids = set(generated)
    ids.update(tool_id for example in examples for tool_id in example.tool_ids)
    ids.update(
        entry.pattern for overlay in overlays for entry in overlay.entries
        if not _GLOB.intersection(entry.pattern)
    )
    return sorted(ids)


def _print_rows(rows: list[dict[str, Any]]) -> None:
    if not rows:
        print("no expansions: no overlay, examples or generated phrases found")
        return
    for row in rows:
        print(row["tool_id"])
        for source in ("overlay", "examples", "generated"):
            phrases = row[source]
            label = f"{source} ({len(phrases)})"
            if source == "generated" and row["generated_at"] is not None:
                when = datetime.fromtimestamp(row["generated_at"]).strftime("%Y-%m-%d")
                label = f"generated ({len(phrases)}, {row['generated_by'] or 'unknown model'}, {when})"
            print(f"  {label}: " + ("; ".join(phrases) if phrases else "-"))

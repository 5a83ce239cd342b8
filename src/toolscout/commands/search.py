"""`toolscout search "QUERY"`: print the tools an agent would get for a request.

It answers from the catalog a gateway last saw over the same registries (`toolscout serve` keeps it
current; see `toolscout.commands._seen`), screened and indexed as `serve` does, in about a second.
With `--refresh`, or when no catalog is cached yet, it connects to every upstream first.
"""

from __future__ import annotations

import argparse
import json
import logging
from typing import TYPE_CHECKING

import anyio

from toolscout.commands._gateway import (
    add_learning_options,
    add_registry_options,
    add_search_options,
    add_security_options,
    command_options,
    fail,
)
from toolscout.commands._seen import add_refresh_option, cached, index_seen, screened_statuses
from toolscout.errors import ConfigError

if TYPE_CHECKING:
    from toolscout.app import AppConfig, GatewayHooks

__all__ = ["register", "run"]

logger = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "search",
        help="search the upstream tools from the command line",
        description="Print the tools search_tools would return for a request, from the catalog a gateway last "
        "saw over the same registries (its age is shown); --refresh connects to every upstream first.",
    )
    parser.add_argument("query", help="what you need to do, in plain words")
    add_registry_options(parser)
    add_search_options(parser)
    add_security_options(parser)
    add_learning_options(parser)
    parser.add_argument("-k", type=int, default=5, help="how many tools to show (default 5)")
    parser.add_argument("--server", action="append", dest="servers", metavar="NAME", help="only this server")
    parser.add_argument("--json", action="store_true", help="print JSON (the search_tools result)")
    parser.add_argument(
        "--explain", action="store_true", help="show each signal's rank of each tool, and the reranker's score"
    )
    add_refresh_option(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if not args.query.strip():
        return fail("search", "the query is empty; describe the task in a few words")
    if not 1 <= args.k <= 50:
        return fail("search", "-k must be from 1 to 50")
    # Imported when the command runs: the engine comes with it, not with the parser.
    from toolscout.app import gateway_hooks, load_specs

    options = command_options(args, search=True, security=True, learning=True)
    try:
        specs = load_specs(options)
        hooks = gateway_hooks(options, specs)
    except ConfigError as exc:
        return fail("search", str(exc))
    try:
        return anyio.run(_search, args, options, specs, hooks)
    except ConfigError as exc:  # e.g. an unusable --weights, found when the engine is made
        return fail("search", str(exc))
    finally:
        hooks.close()


async def _search(args: argparse.Namespace, options: AppConfig, specs: list, hooks: GatewayHooks) -> int:
    from toolscout.app import catalog_indexer, open_gateway, remember
    from toolscout.serving.answer import explain_hit, match_verdict, search_answer

    known = {spec.name for spec in specs}
    unknown = sorted(set(args.servers or ()) - known)
    if unknown:
        return fail("search", f"unknown server(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    seen = cached("search", args.refresh, options, specs, quiet=bool(args.quiet))
    if seen is not None:
        statuses = screened_statuses(seen.statuses, hooks.summary_screen)  # as a gateway shows them
        indexer = catalog_indexer(options, hooks, specs)
        await index_seen(indexer, seen)  # no upstream starts, and the MCP SDK is not imported
        engine, catalog = indexer.engine, indexer.catalog
    else:
        gateway = open_gateway(options, specs, hooks=hooks)
        async with gateway:
            await gateway.ready(options.gateway.start_timeout + 5)
            remember(gateway, options, specs)
            statuses = tuple(gateway.statuses())
            await gateway.wait_complete()
        engine, catalog = gateway.engine, gateway.catalog
    for status in statuses:
        if status.reason:
            logger.warning("upstream '%s' is %s: %s", status.name, status.state.value, status.reason)
    response = engine.search(args.query, limit=args.k, servers=args.servers)
    answer = search_answer(response, statuses, catalog, servers=args.servers)
    if args.json:
        if args.explain:
            for entry, hit in zip(answer["tools"], response.hits, strict=True):
                entry.update(explain_hit(hit))
            answer |= {"fusion": response.fusion, "match": match_verdict(response)}
        print(json.dumps(answer, indent=2, ensure_ascii=False))
        return 0
    # Servers that are down were warned about above; the note is for a weak match or a degraded index.
    if answer["weak_match"] or response.notice:
        print(f"note: {answer['notice']}")
    if not response.hits:
        print("no tool matched")
    for rank, hit in enumerate(response.hits, start=1):
        description = " ".join(hit.tool.description.split())
        print(f"{rank:>2}. {hit.tool.id}  (score {hit.score:.4f})")
        if description:
            print(f"    {description[:150]}{'...' if len(description) > 150 else ''}")
        if args.explain:
            ranks = ", ".join(f"{signal}={hit.ranks[signal]}" for signal in (*response.signals, "learned") if signal in hit.ranks)
            print(f"    ranks: {ranks or 'none'}")
            if hit.rerank_score is not None:
                print(f"    reranker: {hit.rerank_score:.4f}")
    if args.explain:
        print(f"fusion: {response.fusion}")
        match = match_verdict(response)
        if match:
            print(f"match: {match}")
    return 0

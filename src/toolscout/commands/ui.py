"""`toolscout ui`: the operator's dashboard for a gateway that serves over stdio.

A stdio gateway belongs to its host (Claude Desktop, an IDE) and has no HTTP face. This command
starts one on this machine: a gateway over the same registries and the same state store (pins,
approvals, learned examples are shared), served over HTTP on a loopback port with the dashboard
at /ui, and opens its one-time sign-in link in a browser. Its MCP endpoint takes a random token
made at start, which nothing else knows: it is there for the dashboard, not for agents. It takes
every option of `serve`; approvals made here reach the host's gateway on its next check.
"""

from __future__ import annotations

import argparse
import secrets

from toolscout.commands.serve import add_serve_options
from toolscout.commands.serve import run as serve

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ui",
        help="open the operator's dashboard for a stdio deployment",
        description="Start a local HTTP face over the same registries and state store as a stdio gateway, and "
        "open the operator's dashboard (servers, tools and approvals, search playground, learning, activity).",
    )
    add_serve_options(parser)
    parser.add_argument("--no-browser", action="store_true", help="only print the sign-in link, open no browser")
    parser.set_defaults(handler=run, port=0)


def run(args: argparse.Namespace) -> int:
    args.transport = "http"
    args.host = "127.0.0.1"
    if not args.tokens:
        # The MCP endpoint is closed to everyone (nobody knows this token); the link signs in.
        args.auth_token = args.auth_token or secrets.token_urlsafe(32)
    args.open_dashboard = not args.no_browser
    return serve(args)

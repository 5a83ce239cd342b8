"""`toolscout login SERVER` and `toolscout logout SERVER`: signing in to an OAuth-protected remote
server of the registry, and forgetting that sign-in.

`login` prints the address of the server's consent page on stderr (and opens it in a browser,
unless --no-browser or there is none), waits for the redirect on a loopback port, keeps the
tokens readable by this user only, and lists the server's tools with them. A running `toolscout
serve` picks the new sign-in up when it next reconnects to that server.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from toolscout.commands._gateway import add_registry_options, command_options, fail

if TYPE_CHECKING:
    from toolscout.registry.spec import ServerSpec

__all__ = ["register", "run_login", "run_logout"]


def register(subparsers: argparse._SubParsersAction) -> None:
    login = subparsers.add_parser(
        "login",
        help="sign in to an OAuth-protected remote server of the registry",
        description="Sign in to a remote server that uses OAuth: open its consent page, receive the answer on a "
        "loopback port, and keep the tokens (readable by you only) for `toolscout serve`.",
    )
    login.add_argument("server", metavar="SERVER", help="the server's name in the registry")
    login.add_argument("--no-browser", action="store_true", help="only print the address to open; do not start a browser")
    login.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                       help="how long to wait for the sign-in to complete (default 300)")
    add_registry_options(login)
    login.set_defaults(handler=run_login)
    logout = subparsers.add_parser(
        "logout",
        help="forget the sign-in to a remote server",
        description="Delete the stored OAuth tokens of a remote server; `toolscout serve` then reports that it "
        "needs a sign-in.",
    )
    logout.add_argument("server", metavar="SERVER", help="the server's name in the registry")
    add_registry_options(logout)
    logout.set_defaults(handler=run_logout)


def _spec(args: argparse.Namespace, command: str) -> ServerSpec | int:
    """The registry entry named on the command line, or the exit status of a clear error."""
    from toolscout.app import load_specs
    from toolscout.errors import ConfigError

    try:
        specs = load_specs(command_options(args))
    except ConfigError as exc:
        return fail(command, str(exc))
    found = next((spec for spec in specs if spec.name == args.server), None)
    if found is None:
        names = ", ".join(spec.name for spec in specs if spec.oauth is not None) or "none"
        return fail(command, f"no server '{args.server}' in the registry (servers that sign in with OAuth: {names})")
    return found


def run_login(args: argparse.Namespace) -> int:
    import anyio

    from toolscout.errors import ToolscoutError
    from toolscout.oauth.login import open_in_browser, sign_in

    spec = _spec(args, "login")
    if isinstance(spec, int):
        return spec

    async def show(url: str) -> None:
        print(f"Open this address to sign in to '{spec.name}':\n\n    {url}\n", file=sys.stderr, flush=True)
        if not args.no_browser:
            await open_in_browser(url)

    try:
        tools = anyio.run(lambda: sign_in(spec, open_url=show, timeout=args.timeout))
    except TimeoutError:
        return fail("login", f"no sign-in arrived within {args.timeout:g} s; run the command again")
    except ToolscoutError as exc:
        return fail("login", str(exc))
    except Exception as exc:  # noqa: BLE001 - the SDK's OAuth and HTTP errors, said in one line
        return fail("login", f"signing in to '{spec.name}' failed: {type(exc).__name__}: {exc}")
    print(f"Signed in to '{spec.name}': it lists {tools} tool{'s' if tools != 1 else ''}.")
    return 0


def run_logout(args: argparse.Namespace) -> int:
    from toolscout.oauth.login import sign_out

    spec = _spec(args, "logout")
    if isinstance(spec, int):
        return spec
    if spec.url is None or not sign_out(spec):
        print(f"Not signed in to '{spec.name}'; nothing to forget.")
        return 0
    print(f"Signed out of '{spec.name}': its tokens are deleted.")
    return 0

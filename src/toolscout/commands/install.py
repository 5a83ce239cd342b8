"""`toolscout install <host>` and `toolscout uninstall <host>`: put toolscout in front of a host's servers.

    toolscout install cursor --dry-run       # show the change, write nothing
    toolscout install cursor                 # keep ~/.cursor/mcp.json.before-toolscout, rewrite the file
    toolscout uninstall cursor               # put the original back

How the file is changed and restored is `toolscout.registry.host_files`. What is printed names the
servers moved, never their entries: their `env` blocks may hold secrets.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from toolscout.commands._gateway import fail
from toolscout.errors import ConfigError
from toolscout.registry.host_files import (
    DEFAULT_LAUNCHER,
    InstallPlan,
    UninstallPlan,
    plan_install,
    plan_uninstall,
    write_install,
    write_uninstall,
)
from toolscout.registry.hosts import HOSTS, Host

__all__ = ["register", "run_install", "run_uninstall"]


def register(subparsers: argparse._SubParsersAction) -> None:
    hosts = ", ".join(HOSTS)
    install = subparsers.add_parser(
        "install",
        help="put toolscout in front of an MCP host's servers (Claude Desktop, Claude Code, Cursor, ...)",
        description="Rewrite the host's MCP configuration so that the host sees toolscout alone, serving the "
        "servers the file held. The original is kept beside it as <file>.before-toolscout; `toolscout "
        f"uninstall` puts it back. Hosts: {hosts}.",
    )
    _add_host_arguments(install)
    install.add_argument("--dry-run", action="store_true", help="show the change and write nothing")
    install.add_argument(
        "--from", dest="from_", metavar="WHEEL|SPEC",
        help="what uvx runs toolscout from (uvx --from ...), e.g. a local wheel until a release is published",
    )
    install.set_defaults(handler=run_install)
    uninstall = subparsers.add_parser(
        "uninstall",
        help="take toolscout out of an MCP host and put its servers back",
        description="Restore the host's MCP configuration that `toolscout install` kept: byte for byte when "
        "the file is as install left it, else its servers only (keeping what the host wrote since).",
    )
    _add_host_arguments(uninstall)
    uninstall.set_defaults(handler=run_uninstall)


def _add_host_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("host", choices=list(HOSTS), help="the MCP host")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="the host's configuration file (default: where the host keeps it on this machine)")


def _host_and_path(args: argparse.Namespace) -> tuple[Host, Path]:
    host = HOSTS[args.host]
    return host, (args.config or host.default_path()).expanduser()


def run_install(args: argparse.Namespace) -> int:
    host, path = _host_and_path(args)
    launcher = DEFAULT_LAUNCHER
    if args.from_:
        # A wheel on this machine is named by its absolute path: the host starts uvx elsewhere.
        source = Path(args.from_).expanduser()
        launcher = ("uvx", "--from", str(source.resolve()) if source.exists() else args.from_, "toolscout")
    try:
        plan = plan_install(host, path, launcher)
    except ConfigError as exc:
        return fail("install", str(exc))
    print(_describe_install(plan, dry_run=args.dry_run))
    if args.dry_run:
        return 0
    try:
        write_install(plan)
    except OSError as exc:
        return fail("install", f"cannot write {path}: {exc.strerror or exc}")
    print(f"Done. Restart {host.title} to use it; `toolscout uninstall {host.name}` undoes it.")
    return 0


def run_uninstall(args: argparse.Namespace) -> int:
    host, path = _host_and_path(args)
    try:
        plan = plan_uninstall(host, path)
        write_uninstall(plan)
    except ConfigError as exc:
        return fail("uninstall", str(exc))
    except OSError as exc:
        return fail("uninstall", f"cannot write {path}: {exc.strerror or exc}")
    print(_describe_uninstall(plan))
    return 0


def _describe_install(plan: InstallPlan, *, dry_run: bool) -> str:
    names = ", ".join(plan.moved) or "none"
    lines = [
        f"{'Would change' if dry_run else 'Changing'} {plan.path} ({plan.host.title}):",
        f"  servers moved behind toolscout ({len(plan.moved)}): {names}",
        f"  kept, untouched, with their env, in {plan.backup}, which toolscout serves",
    ]
    if not plan.moved:
        lines[-1] = "  no servers to move: toolscout serves its bundled registry"
    if plan.kept_keys:
        lines.append(f"  other keys left as they are: {', '.join(plan.kept_keys)}")
    entry = json.dumps({plan.host.key: {"toolscout": plan.entry}}, indent=2)
    lines += ["  the host will see toolscout alone:", *("    " + line for line in entry.splitlines())]
    return "\n".join(lines)


def _describe_uninstall(plan: UninstallPlan) -> str:
    restored = ", ".join(plan.restored) or "none"
    if plan.merged_text is None:
        return f"Restored {plan.path} from {plan.backup}, as it was before install (servers: {restored})."
    added = f"; kept the servers added since: {', '.join(plan.added)}" if plan.added else ""
    return (f"Restored the servers of {plan.path} ({restored}) and removed toolscout; the rest of the file "
            f"changed since install and is kept as it is now{added}.")

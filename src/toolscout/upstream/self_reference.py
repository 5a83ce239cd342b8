"""A gateway never serves itself: entries that would start toolscout are skipped.

Hosts' configuration files (claude_desktop_config.json) list toolscout beside the servers it should
aggregate; given such a file as a registry, toolscout would start itself as an upstream, which
would start itself again, and so on. Two guards stop that:

- before starting a stdio upstream, `self_reference(spec, program)` recognises a command that
  runs toolscout: its own executable (any `toolscout`), `python -m toolscout[.cli]`, or a package
  runner (`uvx toolscout`, `uv run toolscout`, `uv tool run toolscout`, `pipx run toolscout`);
- every stdio upstream gets `GATEWAY_MARKER` in its environment, so a toolscout gateway started
  under a gateway by any other route (a wrapper script) knows it, refuses to serve at once, before
  starting anything, and says so on stderr with `NESTED_REFUSAL`; the gateway above reads that as
  a skipped entry, not a crash to retry;
- at `initialize`, an upstream that introduces itself as toolscout and runs on this machine (a
  `toolscout serve --transport http` reached on a loopback address or this host's name) is
  skipped too (`local_gateway`).
"""

from __future__ import annotations

import ipaddress
import os
import re
import shlex
import socket
import urllib.parse
from collections.abc import Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING

from toolscout.upstream.status import SKIPPED

if TYPE_CHECKING:
    from toolscout.registry.spec import ServerSpec

__all__ = [
    "GATEWAY_MARKER",
    "NESTED_REFUSAL",
    "local_gateway",
    "nested_refusal",
    "refused_as_nested",
    "self_reference",
    "started_by_gateway",
]

# Set in the environment of every process a gateway starts; its value is the gateway's pid.
GATEWAY_MARKER = "TOOLSCOUT_GATEWAY"
# What a gateway started under a gateway writes on stderr before it exits.
NESTED_REFUSAL = "is an upstream of another toolscout gateway"

_PROGRAM = "toolscout"
_PYTHONS = re.compile(r"^(python|pypy)[0-9.]*w?$")
# Options of uv, uvx and pipx that take a value (so that value is not the program to run).
_VALUE_OPTIONS = frozenset({
    "--from", "--with", "--with-editable", "--with-requirements", "--python", "-p", "--directory",
    "--project", "--index", "--default-index", "--index-url", "-i", "--extra-index-url", "--find-links",
    "-f", "--spec", "--env-file", "--package", "--cache-dir", "--config-file", "--pip-args",
})


def started_by_gateway() -> str | None:
    """The pid of the gateway that started this process (from `GATEWAY_MARKER`), or None."""
    return os.environ.get(GATEWAY_MARKER) or None


def nested_refusal(parent: str) -> str:
    """The line a gateway started under gateway `parent` writes before refusing to serve."""
    return (
        f"this toolscout {NESTED_REFUSAL} (pid {parent}), which started it from an entry of its registry; "
        "a gateway never serves itself, so this one stops. Remove that entry from the registry."
    )


def refused_as_nested(spec: ServerSpec, stderr: str) -> str | None:
    """Why an entry whose process wrote `stderr` and ended is skipped: it was a toolscout gateway
    that refused to serve under this one (`nested_refusal`). None otherwise."""
    if NESTED_REFUSAL not in stderr:
        return None
    return (
        f"{SKIPPED}it is a toolscout gateway (it said so when this one started it), and a gateway never "
        f"serves itself; remove server '{spec.name}' from {spec.source}"
    )


def self_reference(spec: ServerSpec, program: str) -> str | None:
    """Why the stdio entry `spec`, whose command resolved to `program`, starts toolscout; None if it does not."""
    if not _launches_toolscout([program, *spec.args]):
        return None
    shown = shlex.join([spec.command or program, *spec.args])
    return (
        f"{SKIPPED}it would start toolscout itself (`{shown}`), and a gateway never serves itself; "
        f"remove server '{spec.name}' from {spec.source} (its other servers are served)"
    )


def local_gateway(spec: ServerSpec, server_name: str | None) -> str | None:
    """Why an upstream that introduced itself as `server_name` at initialize is skipped: it is a
    toolscout gateway of this machine. None for any other server, or a toolscout elsewhere."""
    if server_name != _PROGRAM or not (spec.transport == "stdio" or _on_this_machine(spec.url or "")):
        return None
    where = spec.url or shlex.join([spec.command or "", *spec.args])
    return (
        f"{SKIPPED}it is a toolscout gateway on this machine ({where} introduced itself as toolscout), and a "
        f"gateway never serves a gateway of its own machine; remove server '{spec.name}' from {spec.source}"
    )


def _on_this_machine(url: str) -> bool:
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    if host in ("localhost", socket.gethostname().lower()) or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback or ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def _stem(program: str) -> str:
    name = PurePath(program.replace("\\", "/")).name.lower()
    return name[:-4] if name.endswith(".exe") else name


def _package(token: str) -> str:
    """'toolscout==0.1' / 'toolscout@latest' / 'toolscout[train]' -> 'toolscout'."""
    return re.split(r"[=<>!~@\[;\s]", token, maxsplit=1)[0].lower().replace("_", "-")


def _positional(args: Sequence[str]) -> int:
    """Index of the first argument that is neither an option nor an option's value."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return index + 1
        if not arg.startswith("-"):
            return index
        index += 2 if arg in _VALUE_OPTIONS else 1
    return index


def _launches_toolscout(argv: Sequence[str]) -> bool:
    if not argv:
        return False
    program, rest = _stem(argv[0]), list(argv[1:])
    if program == _PROGRAM:
        return True
    if _PYTHONS.match(program):
        for index, arg in enumerate(rest):
            module = rest[index + 1] if arg == "-m" and index + 1 < len(rest) else arg[2:] if arg.startswith("-m") else None
            if module is not None:
                return module == _PROGRAM or module.startswith(_PROGRAM + ".")
            if arg == "-c" or not arg.startswith("-"):
                return False  # code or a script
        return False
    if program not in ("uv", "uvx", "pipx"):
        return False
    if any(rest[i] == "--from" and _package(rest[i + 1]) == _PROGRAM for i in range(len(rest) - 1)):
        return True
    if program == "uvx":
        start = _positional(rest)
        return start < len(rest) and (_package(rest[start]) == _PROGRAM or _launches_toolscout(rest[start:]))
    # uv run ..., uv tool run ..., pipx run ...: what follows the subcommand is a command line.
    start = _positional(rest)
    words = rest[start:]
    if program == "uv" and words[:2] == ["tool", "run"]:
        words = words[2:]
    elif words[:1] == ["run"]:
        words = words[1:]
    else:
        return False
    command = words[_positional(words):]
    return bool(command) and (_package(command[0]) == _PROGRAM or _launches_toolscout(command))

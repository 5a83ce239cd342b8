"""Moving a host's MCP servers behind toolscout, and putting them back.

    plan = plan_install(HOSTS["cursor"], path)        # what would change; nothing written yet
    write_install(plan)                                # backup kept, then the host file rewritten
    write_uninstall(plan_uninstall(HOSTS["cursor"], path))

Install keeps the host's file, untouched, as `<file>.before-toolscout` beside it, and rewrites the
file so that its servers key holds one server: toolscout, serving that backup as its registry (a
host file is a registry toolscout reads as it is). So the servers' `env` blocks, secrets included,
stay in the one file (a copy of the user's own, same permissions) and are never written elsewhere.
Every other key of the file is kept as it was, in its place.

Uninstall puts the backup back byte for byte when the file is as install left it. A host that
rewrites its own file meanwhile (Claude Code keeps its state in ~/.claude.json) would lose what it
wrote, so then only the servers key is restored into the current file, keeping any server added
next to toolscout since.

Only plain JSON is rewritten: comments and trailing commas (which VS Code and Cursor accept) cannot
be kept by a JSON rewrite, so such a file is refused with what to do instead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolscout.errors import ConfigError
from toolscout.json_files import read_json_file
from toolscout.registry.hosts import Host
from toolscout.registry.loading import build_spec
from toolscout.registry.sources import RegistryFile

__all__ = [
    "BACKUP_SUFFIX",
    "SERVER_NAME",
    "InstallPlan",
    "UninstallPlan",
    "backup_of",
    "plan_install",
    "plan_uninstall",
    "write_install",
    "write_uninstall",
]

BACKUP_SUFFIX = ".before-toolscout"
SERVER_NAME = "toolscout"
# How the host starts toolscout unless told otherwise: the published package, run by uv.
DEFAULT_LAUNCHER = ("uvx", "toolscout")


@dataclass(frozen=True)
class InstallPlan:
    """The host file after install, and what moved: server names only, never their entries."""

    host: Host
    path: Path
    backup: Path
    moved: tuple[str, ...]
    kept_keys: tuple[str, ...]
    entry: dict[str, Any]
    text: str


@dataclass(frozen=True)
class UninstallPlan:
    host: Host
    path: Path
    backup: Path
    restored: tuple[str, ...]
    # Servers added next to toolscout since install, kept.
    added: tuple[str, ...]
    # None: the file is as install left it, and the backup goes back byte for byte.
    merged_text: str | None


def backup_of(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def plan_install(host: Host, path: Path, launcher: Sequence[str] = DEFAULT_LAUNCHER) -> InstallPlan:
    """What `toolscout install` would write; ConfigError when it cannot be done without loss."""
    backup = backup_of(path)
    if backup.exists():
        raise ConfigError(
            f"toolscout is already installed in {path} (its backup {backup} exists); run "
            f"`toolscout uninstall {host.name}` first, or remove the backup if it is stale"
        )
    text, document = _read_host_file(host, path)
    servers = _servers(host, path, document)
    if SERVER_NAME in servers:
        raise ConfigError(f"{path} already has a server named '{SERVER_NAME}'; remove it from {host.key}, "
                          "then run install again")
    for name, entry in servers.items():
        try:
            build_spec(name, entry, RegistryFile(backup))
        except ConfigError as exc:
            raise ConfigError(f"toolscout cannot serve a server of {path} as written ({exc}); fix or "
                              "remove that server, then run install again") from None
    serve = ["serve", "--registry", str(backup.resolve())] if servers else ["serve"]
    entry: dict[str, Any] = {"type": "stdio"} if host.typed_entries else {}
    entry.update(command=launcher[0], args=[*launcher[1:], *serve])
    after = {key: ({SERVER_NAME: entry} if key == host.key else value) for key, value in document.items()}
    after.setdefault(host.key, {SERVER_NAME: entry})
    return InstallPlan(
        host=host, path=path, backup=backup, moved=tuple(servers),
        kept_keys=tuple(key for key in document if key != host.key), entry=entry,
        text=_render(after, text),
    )


def plan_uninstall(host: Host, path: Path) -> UninstallPlan:
    backup = backup_of(path)
    if not backup.exists():
        raise ConfigError(f"toolscout is not installed in {path}: there is no backup {backup} to restore")
    _, original = _read_host_file(host, backup)
    restored = _servers(host, backup, original)
    if not path.exists():
        return UninstallPlan(host, path, backup, tuple(restored), (), None)
    text, current = _read_host_file(host, path)
    now = _servers(host, path, current)
    added = {name: entry for name, entry in now.items() if name != SERVER_NAME}
    untouched = _without(current, host.key) == _without(original, host.key) and not added
    if untouched:
        return UninstallPlan(host, path, backup, tuple(restored), (), None)
    merged = {**current, host.key: {**restored, **added}} if restored or added else _without(current, host.key)
    return UninstallPlan(host, path, backup, tuple(restored), tuple(added), _render(merged, text))


def write_install(plan: InstallPlan) -> None:
    """Keep the backup first (same bytes, same permissions), then replace the host file whole."""
    shutil.copy2(plan.path, plan.backup)
    try:
        _replace(plan.path, plan.text)
    except OSError:
        # The host file is as it was: a backup left behind would say toolscout is installed.
        plan.backup.unlink(missing_ok=True)
        raise


def write_uninstall(plan: UninstallPlan) -> None:
    if plan.merged_text is None:
        os.replace(plan.backup, plan.path)
        return
    _replace(plan.path, plan.merged_text)
    plan.backup.unlink()


def _read_host_file(host: Host, path: Path) -> tuple[str, dict[str, Any]]:
    if not path.exists():
        raise ConfigError(f"{path} does not exist: is {host.title} set up on this machine? Give its "
                          "configuration file with --config FILE")
    comments = f"; {host.title} also accepts comments and trailing commas, which a rewrite would lose" \
        if host.allows_comments else ""
    advice = (f"toolscout rewrites only plain JSON, so that nothing in the file is lost{comments}: make it "
              "plain JSON, or add toolscout by hand as docs/hosts.md shows")
    document = read_json_file(path, f"{host.title} configuration", advice=advice)
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: a {host.title} configuration is a JSON object; this one is not")
    return path.read_text(encoding="utf-8-sig"), document


def _servers(host: Host, path: Path, document: dict[str, Any]) -> dict[str, Any]:
    servers = document.get(host.key, {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: '{host.key}' must be an object of {{name: server}}; fix it, then run "
                          "the command again")
    return servers


def _without(document: dict[str, Any], key: str) -> dict[str, Any]:
    return {name: value for name, value in document.items() if name != key}


def _render(document: dict[str, Any], like: str) -> str:
    """`document` as JSON indented as `like` is, with its final newline if it had one."""
    found = re.search(r"\n([ \t]+)\S", like)
    indent: str | int = 2
    if found:
        indent = "\t" if found.group(1).startswith("\t") else len(found.group(1))
    text = json.dumps(document, indent=indent, ensure_ascii=False)
    return text + "\n" if like.endswith("\n") else text


def _replace(path: Path, text: str) -> None:
    """Write `text` to `path` whole or not at all, with the file's permissions."""
    temporary = path.with_name(path.name + ".toolscout-new")
    temporary.write_text(text, encoding="utf-8")
    if path.exists():
        shutil.copymode(path, temporary)
    os.replace(temporary, path)

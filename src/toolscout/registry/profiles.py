"""Profiles: named subsets of the servers (and optionally tools) one gateway serves, so that each
client (Claude Desktop, an IDE, a CI agent) sees only its own.

A registry file names them beside its servers:

    {"mcpServers": {...},
     "profiles": {
        "desktop": {"servers": ["time", "notes", "crm"]},
        "ide":     {"servers": ["git", "time"], "tools": ["git__git_*", "time__get_current_time"]}
     }}

`servers` lists server names of the registries (a name that is in none is an error: a typo must
not hide a server silently); `tools`, when given, keeps only the tools whose id matches one of
its shell-style patterns (`fnmatch`, e.g. `git__git_*`). Which profile a request is served with
is decided by the MCP face (`toolscout.serving.scoped`): a flag over stdio, the path or the
client's token over HTTP.

    profiles = load_profiles(sources, specs)      # Profiles; ConfigError when one is wrong
    profile = profiles.get("ide")                 # ConfigError naming the profiles there are
    profile.allows("git__git_log", "git")         # True
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from toolscout.errors import ConfigError
from toolscout.json_files import read_json_file
from toolscout.registry.sources import RegistrySource, RegistryUrl, sources_of

__all__ = ["PROFILE_NAME", "Profile", "Profiles", "load_profiles"]

# Profile names appear in URL paths (/mcp/<profile>): letters, digits, '.', '_' and '-'.
PROFILE_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")


@dataclass(frozen=True)
class Profile:
    name: str
    servers: frozenset[str]
    # Shell-style patterns of the tool ids allowed; empty: every tool of `servers`.
    tools: tuple[str, ...] = ()

    def allows_server(self, server: str) -> bool:
        return server in self.servers

    def allows(self, tool_id: str, server: str) -> bool:
        if server not in self.servers:
            return False
        return not self.tools or any(fnmatch.fnmatchcase(tool_id, pattern) for pattern in self.tools)


@dataclass(frozen=True)
class Profiles:
    by_name: Mapping[str, Profile] = field(default_factory=dict)

    def get(self, name: str) -> Profile:
        found = self.by_name.get(name)
        if found is None:
            known = ", ".join(sorted(self.by_name)) or "none (add \"profiles\" to a registry file)"
            raise ConfigError(f"no profile '{name}'; the registries define: {known}")
        return found

    def __bool__(self) -> bool:
        return bool(self.by_name)


def load_profiles(sources: Sequence[RegistrySource | Path | str], server_names: Iterable[str]) -> Profiles:
    """The "profiles" of the registry files among `sources` (URLs define none), checked against
    the servers the registries define."""
    known = set(server_names)
    found: dict[str, Profile] = {}
    origin: dict[str, str] = {}
    for source in sources_of(sources):
        if isinstance(source, RegistryUrl):
            continue
        document = read_json_file(source.path, "registry file")
        if not isinstance(document, dict) or "profiles" not in document:
            continue
        entries = document["profiles"]
        if not isinstance(entries, dict):
            raise ConfigError(f"{source}: 'profiles' must be an object of {{name: {{\"servers\": [...]}}}}")
        for name, entry in entries.items():
            where = f"{source}: profile '{name}'"
            if name in origin:
                raise ConfigError(f"profile '{name}' is defined in both {origin[name]} and {source}; rename one")
            found[name] = _profile(name, entry, known, where)
            origin[name] = str(source)
    return Profiles(found)


def _profile(name: str, entry: object, known: set[str], where: str) -> Profile:
    if not PROFILE_NAME.fullmatch(name):
        raise ConfigError(f"{where}: a profile name is 1-64 letters, digits, '.', '_' or '-' (it goes in a URL)")
    if not isinstance(entry, dict) or set(entry) - {"servers", "tools", "description"}:
        raise ConfigError(f"{where}: must be an object with 'servers' (a list of server names) and "
                          "optionally 'tools' (a list of tool id patterns)")
    servers, tools = entry.get("servers"), entry.get("tools", [])
    if not isinstance(servers, list) or not servers or not all(isinstance(s, str) for s in servers):
        raise ConfigError(f"{where}: 'servers' must be a non-empty list of server names")
    if not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools):
        raise ConfigError(f"{where}: 'tools' must be a list of tool id patterns such as \"git__git_*\"")
    unknown = sorted(set(servers) - known)
    if unknown:
        raise ConfigError(f"{where}: no server named {', '.join(map(repr, unknown))} in the registries "
                          f"(servers: {', '.join(sorted(known)) or 'none'})")
    return Profile(name, frozenset(servers), tuple(tools))

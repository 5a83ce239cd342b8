"""Upstream registries: which MCP servers toolscout connects to, and how.

Contract used by the gateway:

    specs = load_registries([Path("servers.json"), "https://registry.example/v0.1/servers"])

Each entry becomes a `ServerSpec` (`toolscout.registry.spec`); how a stdio one is launched is
`toolscout.upstream.launch`.

Sources are values (`toolscout.registry.sources`: a file, a URL, the bundled default); a path or a
string given instead is read as `source_of` reads it. `read_source` is the one place each kind is
read: a URL is fetched (`toolscout.registry.fetching`) and read under the stricter rules of a URL
registry (`toolscout.registry.formats`, ``from_url``).

`load_registries` raises ConfigError for problems of a whole file (unreadable, bad JSON, unknown
shape, wrong types, the same server name in two files). A problem of one entry that only the
running machine can fix (a missing ${VAR}) does not raise: the spec carries `error`, and the
gateway marks that server down with the reason while the others start.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema

from toolscout.errors import ConfigError
from toolscout.json_files import read_json_file
from toolscout.registry.fetching import DEFAULT_FETCH_TIMEOUT, fetch_registry
from toolscout.registry.formats import Entry, entries_from_document
from toolscout.registry.overrides import OVERRIDES_SCHEMA, parse_overrides
from toolscout.registry.rates import CONFIRM_MODES, RATE_PATTERN
from toolscout.registry.sources import RegistryFile, RegistrySource, RegistryUrl, source_of, sources_of
from toolscout.registry.spec import OAuthSettings, ServerSpec
from toolscout.registry.urls import is_registry_url
from toolscout.secrets import redact

__all__ = ["build_spec", "load_registries", "read_source"]

# --- loading -----------------------------------------------------------------------------------

_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}
_CONFIRM_MODE = {"enum": list(CONFIRM_MODES)}
# Unknown keys are allowed: desktop hosts add their own (autoApprove, alwaysAllow, description).
_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "minLength": 1},
        "args": {"type": "array", "items": {"type": "string"}},
        "env": _STRINGS,
        "cwd": {"type": "string", "minLength": 1},
        "url": {"type": "string", "minLength": 1},
        "headers": _STRINGS,
        "type": {"enum": ["stdio", "http", "streamable-http", "streamableHttp", "sse"]},
        "timeout": {"type": "number", "exclusiveMinimum": 0},
        "disabled": {"type": "boolean"},
        "confirm": {"anyOf": [_CONFIRM_MODE, {"type": "object", "additionalProperties": _CONFIRM_MODE}]},
        "limits": {"type": "object", "additionalProperties": {"type": "string", "pattern": RATE_PATTERN}},
        "oauth": {"anyOf": [{"type": "boolean"}, {
            "type": "object",
            "properties": {
                "clientId": {"type": "string", "minLength": 1},
                "clientSecret": {"type": "string"},
                "scopes": {"type": "array", "items": {"type": "string", "minLength": 1}},
                "clientMetadataUrl": {"type": "string", "pattern": "^https://"},
                "redirectUri": {"type": "string", "pattern": "^http://(127\\.0\\.0\\.1|localhost|\\[::1\\])(:[0-9]+)?/"},
            },
            "additionalProperties": False,
        }]},
        "overrides": OVERRIDES_SCHEMA,
    },
}
_ENTRY_VALIDATOR = jsonschema.Draft202012Validator(_ENTRY_SCHEMA)


# Appended to a file that cannot be read or parsed: which flag names it, where its format is.
_ADVICE = "Registry files are given with --registry; docs/registry.md describes the format."


def load_registries(
    sources: Sequence[RegistrySource | Path | str], *, fetch_timeout: float = DEFAULT_FETCH_TIMEOUT
) -> list[ServerSpec]:
    """Read and merge registries, in order; enabled servers only.

    A source is a file, or a URL (https, or http to this machine) fetched with `fetch_registry`.
    A file's top-level "registries" list names more sources (URLs, or files relative to it), read
    right after it."""
    specs: list[ServerSpec] = []
    origin: dict[str, str] = {}
    pending = [(source, 0) for source in reversed(sources_of(sources))]
    seen: set[str] = set()
    while pending:
        source, depth = pending.pop()
        where = str(source)
        if where in seen:
            continue
        seen.add(where)
        entries, included = read_source(source, depth, fetch_timeout)
        pending.extend((item, depth + 1) for item in reversed(included))
        for name, entry in entries:
            if not isinstance(name, str) or not name.strip():
                raise ConfigError(f"{where}: server names must be non-empty strings")
            if name in origin:
                if origin[name] == where:
                    raise ConfigError(f"{where}: server '{name}' is defined twice; rename one")
                raise ConfigError(
                    f"server '{name}' is defined in both {origin[name]} and {where}; "
                    "rename one of them or drop one file"
                )
            origin[name] = where
            spec = build_spec(name, entry, source)
            if spec is not None:
                specs.append(spec)
    return specs


def read_source(
    source: RegistrySource, depth: int = 0, fetch_timeout: float = DEFAULT_FETCH_TIMEOUT
) -> tuple[list[tuple[str, Entry]], list[RegistrySource]]:
    """The one place each kind of source is read: (its entries, the sources it includes). A URL
    is fetched (its last copy when it cannot be); a file may include more, `depth` deep already."""
    if isinstance(source, RegistryUrl):
        return _url_entries(source.url, fetch_timeout), []
    document = read_json_file(source.path, "registry file", advice=_ADVICE)
    included = _included_sources(document, source.path, depth)
    return ([] if _only_includes(document) else entries_from_document(document, str(source))), included


# A registry file that includes one that includes ... stops somewhere.
_MAX_INCLUDE_DEPTH = 8


def _included_sources(document: object, path: Path, depth: int) -> list[RegistrySource]:
    """The "registries" a file names: URLs as they are, files relative to the including file."""
    if not isinstance(document, dict) or "registries" not in document:
        return []
    items = document["registries"]
    if not isinstance(items, list) or not all(isinstance(item, str) and item for item in items):
        raise ConfigError(f"{path}: 'registries' must be a list of registry URLs or file paths")
    if depth >= _MAX_INCLUDE_DEPTH:
        raise ConfigError(f"{path}: registries include each other more than {_MAX_INCLUDE_DEPTH} deep")
    return [
        RegistryUrl(item) if is_registry_url(item) else RegistryFile(path.parent / Path(item).expanduser())
        for item in items
    ]


def _only_includes(document: object) -> bool:
    """A file of settings only: other registries it includes, profiles (`toolscout.registry.profiles`)."""
    settings = {"registries", "profiles"}
    return isinstance(document, dict) and set(document) <= settings | {"$schema"} and bool(settings & set(document))


def _url_entries(url: str, timeout: float) -> list[tuple[str, Entry]]:
    """The entries of a registry URL, from the network or, when it cannot be had, its last copy."""
    translated: list[list[tuple[str, Entry]]] = []

    def translate(pages: list[Any]) -> list[tuple[str, Entry]]:
        entries = entries_from_document(_joined_pages(pages, url), url, from_url=True)
        translated.append(entries)
        return entries

    fetched = fetch_registry(url, validate=translate, timeout=timeout)
    if fetched.stale is None:
        return translated[-1]
    return translate(list(fetched.pages))


def _joined_pages(pages: list[Any], url: str) -> object:
    """The pages of an API listing as one listing; a single document as it is."""
    if len(pages) == 1:
        return pages[0]
    servers = []
    for number, page in enumerate(pages, 1):
        if not isinstance(page, dict) or not isinstance(page.get("servers"), list):
            raise ConfigError(f"{url}: page {number} of the listing has no 'servers' list")
        servers.extend(page["servers"])
    return {"servers": servers}


def build_spec(name: str, entry: object, source: RegistrySource | Path | str) -> ServerSpec | None:
    """Validate one entry and expand its variables; None when the entry is disabled."""
    source = source_of(source)
    where = f"{source}: server '{name}'"
    errors = sorted(_ENTRY_VALIDATOR.iter_errors(entry), key=lambda e: list(e.absolute_path))
    if errors:
        raise ConfigError(f"{where}: {_describe(errors[0])}")
    assert isinstance(entry, dict)
    if entry.get("disabled", False):
        return None
    command, url, kind = entry.get("command"), entry.get("url"), entry.get("type")
    _check_kind(where, command, url, kind)
    expander = _Expander()
    env = {k: expander.expand(v, f"env.{k}", secret=True) for k, v in entry.get("env", {}).items()}
    headers = {
        k: expander.expand(v, f"headers.{k}", secret=True)
        for k, v in entry.get("headers", {}).items()
    }
    args = tuple(expander.expand(a, f"args[{i}]") for i, a in enumerate(entry.get("args", [])))
    cwd = entry.get("cwd")
    if cwd is not None:
        # Relative working directories are read from the registry file's folder, not from
        # wherever the gateway happens to be started.
        folder = source.path.resolve().parent if isinstance(source, RegistryFile) else Path.cwd()
        cwd = str(folder / os.path.expanduser(expander.expand(cwd, "cwd")))
    command = expander.expand(command, "command") if command else None
    url = expander.expand(url, "url", secret_parts=True) if url else None
    error = None
    if expander.missing:
        names = ", ".join(sorted(expander.missing))
        error = (
            f"server '{name}' in {source}: environment variable(s) {names} not set "
            f"(used in {', '.join(expander.missing_in)}); set them in the environment toolscout "
            "starts in, or write ${VAR:-default} in the registry"
        )
    if error is None and url is not None:
        error = _url_problem(name, source, url, expander.secrets)
    timeout = entry.get("timeout")
    confirm = entry.get("confirm", {})
    oauth = _oauth_settings(entry, url, headers, expander) if url else None
    return ServerSpec(
        name=name,
        transport="stdio" if command else "sse" if kind == "sse" else "http",
        command=command,
        args=args,
        env=env,
        cwd=cwd,
        url=url,
        headers=headers,
        timeout=float(timeout) if timeout is not None else None,
        source=str(source),
        secrets=frozenset(s for s in expander.secrets if len(s) >= MIN_SECRET_LENGTH),
        error=error,
        oauth=oauth,
        overrides=parse_overrides(entry.get("overrides"), where),
        confirm={"*": confirm} if isinstance(confirm, str) else dict(confirm),
        limits=dict(entry.get("limits", {})),
    )


def _check_kind(where: str, command: str | None, url: str | None, kind: str | None) -> None:
    """ConfigError unless the entry is either a local server (a command) or a remote one (a URL)."""
    if command and url:
        raise ConfigError(f"{where}: has both 'command' and 'url'; keep 'command' for a local "
                          "server or 'url' for a remote one")
    if not command and not url:
        raise ConfigError(f"{where}: needs 'command' (a local stdio server) or 'url' (a remote "
                          "server)")
    if command and kind not in (None, "stdio"):
        raise ConfigError(f"{where}: 'type' is '{kind}' but the entry has a 'command'; "
                          "remote servers need a 'url'")
    if url and kind == "stdio":
        raise ConfigError(f"{where}: 'type' is 'stdio' but the entry has a 'url'; use "
                          "'command' for stdio servers")


def _url_problem(name: str, source: RegistrySource, url: str, secrets: set[str]) -> str | None:
    """Why `url` cannot be reached as an MCP endpoint (a configuration error), or None."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme in ("http", "https") and parsed.hostname:
        return None
    shown = redact(url, secrets)
    return (
        f"server '{name}' in {source}: 'url' {shown!r} is not an http:// or https:// URL with a host; "
        "write it as e.g. https://example.com/mcp"
    )


def _oauth_settings(entry: dict[str, Any], url: str, headers: Mapping[str, str], expander: _Expander) -> OAuthSettings | None:
    """A remote entry signs in with OAuth unless it says "oauth": false or sends its own credentials."""
    setting = entry.get("oauth")
    if setting is False or (setting is None and any(k.lower() == "authorization" for k in headers)):
        return None
    given = setting if isinstance(setting, dict) else {}
    secret = given.get("clientSecret")
    return OAuthSettings(
        client_id=given.get("clientId"),
        client_secret=expander.expand(secret, "oauth.clientSecret", secret=True) if secret else None,
        scopes=tuple(given.get("scopes", ())),
        client_metadata_url=given.get("clientMetadataUrl"),
        redirect_uri=given.get("redirectUri"),
    )


def _describe(error: jsonschema.ValidationError) -> str:
    location = "".join(
        f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path
    ).lstrip(".") or "the entry"
    got = json.dumps(error.instance)
    got = got if len(got) <= 40 else got[:37] + "..."
    if location == "timeout":
        return f"'timeout' must be a positive number of seconds (got {got})"
    if error.validator == "type":
        wanted = {"object": "an object", "array": "a list", "number": "a number"}.get(
            str(error.validator_value), f"a {error.validator_value}")
        return f"'{location}' must be {wanted} (got {got})"
    if error.validator == "pattern" and location.startswith("limits"):
        return f"'{location}' must be a rate like \"10/minute\" (N per second, minute, hour or day; got {got})"
    if error.validator == "enum":
        choices = ", ".join(json.dumps(c) for c in error.validator_value)
        return f"'{location}' must be one of {choices} (got {got})"
    if error.validator == "minLength":
        return f"'{location}' must not be empty"
    if location.startswith("overrides.") and error.validator in ("pattern", "additionalProperties", "minProperties"):
        return (f"'{location}': {error.message}; an override takes 'name' (a tool name: letters, digits, "
                "'_', '-', '.'), 'description', 'hide' (argument names) and 'fixed' ({argument: value})")
    return f"'{location}': {error.message}"


# --- ${VAR} expansion ----------------------------------------------------------------------------

# ${NAME} or ${NAME:-default}; the default applies when NAME is unset or empty, as in a shell.
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# Shorter values cannot be meaningful secrets, and redacting them ("1", "on") would garble logs.
MIN_SECRET_LENGTH = 4


class _Expander:
    """Expands ${VAR} from os.environ for one entry, collecting what is missing and secret."""

    def __init__(self) -> None:
        self.missing: set[str] = set()
        self.missing_in: list[str] = []
        self.secrets: set[str] = set()

    def expand(self, text: str, field_name: str, *, secret: bool = False,
               secret_parts: bool = False) -> str:
        def replace(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            value = os.environ.get(name)
            if not value and default is not None:
                value = default
            if value is None:
                self.missing.add(name)
                if field_name not in self.missing_in:
                    self.missing_in.append(field_name)
                return ""
            if secret or secret_parts:
                # A key in "Bearer ${TOKEN}" or "?key=${KEY}" must hide on its own too.
                self.secrets.add(value)
            return value

        expanded = _VARIABLE.sub(replace, text)
        if secret and expanded:
            self.secrets.add(expanded)
        return expanded



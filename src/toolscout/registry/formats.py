"""Registry file shapes, normalised to one entry form before any validation or expansion.

Every accepted shape becomes a list of ``(name, entry)`` pairs where ``entry`` is a dict in the
Claude Desktop / Cursor form (``command``/``args``/``env``/``cwd`` or ``url``/``headers``/``type``,
plus toolscout's ``timeout`` and ``disabled``). Official MCP Registry ``server.json`` documents are
translated here into that form, so :mod:`toolscout.registry.loading` validates and expands one form only.

Accepted shapes:
    {"mcpServers": {name: entry}}          Claude Desktop, Cursor, Windsurf, Cline
    {"servers": {name: entry}}             VS Code (.vscode/mcp.json)
    [server.json, ...]                     official MCP Registry documents
    {"servers": [{"server": server.json}]} a registry API listing
    server.json                            a single document

A ``server.json`` input that needs a value from the user (a required argument, environment
variable or header with no value) becomes a ``${NAME}`` reference, so the user supplies it through
the environment and a missing one is reported for that server only.

A document fetched from a URL (``from_url=True``) is someone else's: only server.json documents are
accepted (never an entry naming a command), a package must pin an exact version and run with its
registry's own runner, and environment variables take their values from the user's environment
only (a registry could otherwise set ``NODE_OPTIONS`` or ``LD_PRELOAD`` on this machine). A listing
of the official registry API keeps the latest version of each server and drops deleted ones; a
document toolscout cannot launch is skipped with a warning instead of failing the whole listing.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

from toolscout.errors import ConfigError
from toolscout.registry.urls import require_secure_url

__all__ = ["Entry", "entries_from_document", "translate_server_json"]

logger = logging.getLogger(__name__)

Entry = dict[str, Any]

# The runners a package from a URL registry may name in runtimeHint, by package registry.
_URL_RUNNERS = {"pypi": {"uvx"}, "npm": {"npx", "bunx", "pnpx"}, "oci": {"docker", "podman"}}
# A version that names a range or a moving tag rather than one release.
_UNPINNED_VERSION = re.compile(r"^(latest|next|stable|\*|x)$|[\s*^~<>=|,]|\.x\b", re.IGNORECASE)
# Where the official registry API keeps its own facts about a listed server.
_OFFICIAL_META = "io.modelcontextprotocol.registry/official"

# `{name}` placeholders of server.json values (the registry's own templating, not `${VAR}`).
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.-]*)\}")


def entries_from_document(data: object, where: str, *, from_url: bool = False) -> list[tuple[str, Entry]]:
    """Recognise the shape of a parsed registry file and return its entries, in file order.

    `from_url`: the document was fetched from a registry URL (see the module's docstring)."""
    if isinstance(data, dict):
        for key in ("mcpServers", "servers"):
            if isinstance(data.get(key), dict):
                if from_url:
                    raise ConfigError(
                        f"{where}: a registry fetched by URL must hold server.json documents (a list, "
                        "or an MCP Registry API listing); toolscout does not run commands that a "
                        f"downloaded '{key}' file names. Save the file and pass its path instead."
                    )
                return [(name, entry) for name, entry in data[key].items()]
        if "mcpServers" in data:
            raise ConfigError(f"{where}: 'mcpServers' must be an object of {{name: entry}}")
        if isinstance(data.get("servers"), list):
            return _server_json_list(data["servers"], where, from_url)
        if "packages" in data or "remotes" in data:
            return _server_json_list([data], where, from_url)
    elif isinstance(data, list):
        return _server_json_list(data, where, from_url)
    raise ConfigError(
        f"{where}: unknown registry shape. Expected {{\"mcpServers\": {{name: {{...}}}}}} "
        "(Claude Desktop / Cursor), {\"servers\": {name: {...}}} (VS Code), or a list of MCP "
        "Registry server.json documents."
    )


def _server_json_list(documents: list[object], where: str, from_url: bool) -> list[tuple[str, Entry]]:
    pairs = []
    for index, document in enumerate(_latest_listed(documents) if from_url else documents):
        # Registry API listings wrap each document as {"server": {...}, "_meta": {...}}.
        if isinstance(document, dict) and isinstance(document.get("server"), dict):
            document = document["server"]
        label = f"{where}: server.json document #{index + 1}"
        if not from_url:
            pairs.append(translate_server_json(document, label))
            continue
        try:
            pairs.append(translate_server_json(document, label, from_url=True))
        except ConfigError as exc:
            # One server a big listing offers in a form toolscout cannot run must not hide the rest.
            logger.warning("skipped: %s", exc)
    return pairs if not from_url else _first_of_each_name(pairs, where)


def _latest_listed(documents: list[object]) -> list[object]:
    """An API listing without a version filter lists every version: keep the latest, drop deleted."""
    kept = []
    for document in documents:
        official = _official_meta(document)
        if official.get("status") == "deleted" or official.get("isLatest") is False:
            continue
        kept.append(document)
    return kept


def _official_meta(document: object) -> dict[str, Any]:
    meta = document.get("_meta") if isinstance(document, dict) else None
    official = meta.get(_OFFICIAL_META) if isinstance(meta, dict) else None
    return official if isinstance(official, dict) else {}


def _first_of_each_name(pairs: list[tuple[str, Entry]], where: str) -> list[tuple[str, Entry]]:
    """Two publishers' servers may share a short name (a/weather, b/weather); the first listed wins."""
    seen: dict[str, Entry] = {}
    for name, entry in pairs:
        if name in seen:
            logger.warning("skipped: %s lists two servers named '%s'; the first one listed is used", where, name)
            continue
        seen[name] = entry
    return list(seen.items())


def translate_server_json(doc: object, where: str, *, from_url: bool = False) -> tuple[str, Entry]:
    """Turn one official server.json document into a (name, launch entry) pair."""
    if not isinstance(doc, dict) or not isinstance(doc.get("name"), str) or not doc["name"]:
        raise ConfigError(f"{where}: a server.json document must be an object with a 'name'")
    # "io.github.owner/weather" -> "weather": the short name is what agents and ids show.
    name = doc["name"].rsplit("/", 1)[-1]
    where = f"{where} ('{doc['name']}')"
    entry: Entry = {}
    packages = _list(doc.get("packages"), "packages", where)
    remotes = _list(doc.get("remotes"), "remotes", where)
    stdio = [p for p in packages if _transport_type(p) == "stdio"]
    if stdio:
        entry = _package_entry(stdio[0], where, from_url)
    elif remotes:
        entry = _remote_entry(remotes[0], where, from_url)
    else:
        raise ConfigError(
            f"{where}: nothing toolscout can launch: it needs a package with stdio transport "
            "or a 'remotes' entry"
        )
    # toolscout's own per-entry settings are accepted on server.json documents too; overrides only
    # in a file the operator wrote (`toolscout.registry.overrides`).
    for key in ("timeout", "disabled", "oauth", *(() if from_url else ("overrides",))):
        if key in doc:
            entry[key] = doc[key]
    if from_url and isinstance(entry.get("oauth"), dict):
        # A client secret is the user's to give, never a downloaded document's.
        entry["oauth"] = {k: v for k, v in entry["oauth"].items() if k != "clientSecret"}
    return name, entry


def _package_entry(package: object, where: str, from_url: bool = False) -> Entry:
    if not isinstance(package, dict):
        raise ConfigError(f"{where}: each package must be an object")
    for key in ("registryType", "identifier", "version"):
        if not isinstance(package.get(key), str) or not package[key]:
            raise ConfigError(f"{where}: package needs a string '{key}'")
    registry, identifier = package["registryType"], package["identifier"]
    version = package["version"]
    runtime_args = _arguments(package.get("runtimeArguments"), where)
    package_args = _arguments(package.get("packageArguments"), where)
    env = {}
    for variable in _list(package.get("environmentVariables"), "environmentVariables", where):
        key, value = _key_value(variable, where)
        if from_url:
            value = _from_user_environment(key, variable)
        if value is not None:
            env[key] = value
    hint = package.get("runtimeHint")
    if from_url:
        _check_url_package(registry, version, hint, where)
    if registry == "pypi":
        command, pinned, lead = hint or "uvx", f"{identifier}=={version}", []
    elif registry == "npm":
        command, pinned, lead = hint or "npx", f"{identifier}@{version}", ["-y"]
    elif registry == "oci":
        # Environment variables reach a container only when named on the docker command line.
        command, pinned = hint or "docker", f"{identifier}:{version}"
        lead = ["run", "-i", "--rm", *(arg for key in env for arg in ("-e", key))]
    else:
        raise ConfigError(
            f"{where}: package registryType '{registry}' is not supported (use pypi, npm or oci, "
            "or write an mcpServers entry with the command to run)"
        )
    if command == "npx" and lead == ["-y"] and "-y" in runtime_args:
        lead = []
    entry: Entry = {"command": command, "args": [*lead, *runtime_args, pinned, *package_args]}
    if env:
        entry["env"] = env
    return entry


def _from_user_environment(name: str, variable: dict[str, Any]) -> str | None:
    """A URL registry's variable: a reference to the user's own value, never the registry's value.

    Required ones are always referenced (a missing one is reported for that server); optional ones
    only when the user has set them."""
    if variable.get("isRequired") or name in os.environ:
        return "${" + name + "}"
    return None


def _check_url_package(registry: str, version: str, hint: object, where: str) -> None:
    """A package from a URL registry runs one pinned release with its registry's own runner."""
    if _UNPINNED_VERSION.search(version):
        raise ConfigError(f"{where}: package version '{version}' is not one pinned release; a server "
                          "from a registry URL runs only an exact version")
    runners = _URL_RUNNERS.get(registry, set())
    if hint is not None and hint not in runners:
        raise ConfigError(f"{where}: runtimeHint '{hint}' is not a runner for {registry} packages "
                          f"({', '.join(sorted(runners)) or 'none'}); a registry URL cannot choose the "
                          "program toolscout runs")


def _remote_entry(remote: object, where: str, from_url: bool = False) -> Entry:
    if not isinstance(remote, dict) or not isinstance(remote.get("url"), str):
        raise ConfigError(f"{where}: each remote needs a 'type' and a 'url'")
    if from_url:
        require_secure_url(remote["url"], f"{where}: remote")
    kind = remote.get("type", "streamable-http")
    if kind not in ("streamable-http", "sse"):
        raise ConfigError(f"{where}: remote type '{kind}' is not supported (streamable-http, sse)")
    variables = remote.get("variables") if isinstance(remote.get("variables"), dict) else {}
    # A URL placeholder with no declared value is taken from the environment: {tenant} -> ${TENANT}.
    url = _substitute(remote["url"], variables, unresolved_to_env=True)
    headers = {}
    for header in _list(remote.get("headers"), "headers", where):
        key, value = _key_value(header, where)
        if value is not None:
            headers[key] = value
    return {"url": url, "type": "sse" if kind == "sse" else "http", "headers": headers}


def _arguments(items: object, where: str) -> list[str]:
    """Command-line words for a server.json argument list (positional and named)."""
    words: list[str] = []
    for arg in _list(items, "arguments", where):
        if not isinstance(arg, dict) or arg.get("type") not in ("positional", "named"):
            raise ConfigError(f"{where}: each argument needs 'type': 'positional' or 'named'")
        label = arg.get("name") if arg["type"] == "named" else arg.get("valueHint")
        value = _input_value(arg, str(label or "argument"))
        if arg["type"] == "named":
            if not isinstance(arg.get("name"), str):
                raise ConfigError(f"{where}: a named argument needs a 'name' such as '--port'")
            if value is not None:
                words.extend([arg["name"], value])
        elif value is not None:
            words.append(value)
    return words


def _key_value(item: object, where: str) -> tuple[str, str | None]:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
        raise ConfigError(f"{where}: environment variables and headers need a 'name'")
    return item["name"], _input_value(item, item["name"])


def _input_value(item: dict[str, Any], label: str) -> str | None:
    """The value of a server.json Input: its value, else its default, else ${LABEL} if required."""
    variables = item.get("variables") if isinstance(item.get("variables"), dict) else {}
    for key in ("value", "default"):
        if isinstance(item.get(key), str):
            return _substitute(item[key], variables, unresolved_to_env=False)
    if item.get("isRequired"):
        return "${" + _env_name(label) + "}"
    return None


def _substitute(text: str, variables: dict[str, Any], *, unresolved_to_env: bool) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        variable = variables.get(name)
        if isinstance(variable, dict):
            for key in ("value", "default"):
                if isinstance(variable.get(key), str):
                    return variable[key]
            return "${" + _env_name(name) + "}"
        # The schema says unknown placeholders stay as written; in URLs they name env values.
        return "${" + _env_name(name) + "}" if unresolved_to_env else match.group(0)

    return _PLACEHOLDER.sub(replace, text)


def _env_name(label: str) -> str:
    """"--api-key" -> "API_KEY", "X-Api-Token" -> "X_API_TOKEN"."""
    return re.sub(r"[^A-Za-z0-9]+", "_", label).strip("_").upper() or "VALUE"


def _transport_type(package: object) -> str | None:
    transport = package.get("transport") if isinstance(package, dict) else None
    # Older documents omit transport on stdio packages; stdio is what a package runner gives.
    return transport.get("type") if isinstance(transport, dict) else "stdio"


def _list(value: object, what: str, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{where}: '{what}' must be a list")
    return value

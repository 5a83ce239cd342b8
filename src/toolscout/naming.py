"""How what upstreams offer is named to clients, and the way back: id <-> (server, upstream name).

Two clients' names must never reach another upstream than the one that owns them, and names
must survive restarts, so each naming is a pure function of the pair, with its inverse here too.

- Tools and prompts: `server__name`, unique over all upstreams and at most 64 characters
  (`assign_ids`, and `NameMap`, which keeps it with its inverse). The inverse of an id is that
  map, never a split on the separator, since server and tool names may themselves contain it; a
  split only guesses which server an id may belong to (`id_server`), and the ways agents write a
  tool besides its id are read back to (server, name) pairs by `qualified_forms`.
- Resources and resource templates: `toolscout://<server>/<the upstream's own URI>`, the server
  name percent-encoded. The upstream's URI follows unchanged, so a template's `{variables}` stay
  where they were: a client expands the namespaced template, and stripping the prefix gives what
  the upstream's own template expands to (`split_uri`).

A client may also use an upstream's own prompt name or URI as long as exactly one upstream offers
it (as `execute_tool` takes a tool's own name): `template_matches` tells whether a URI is one a
template expands to.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import quote, unquote

__all__ = [
    "ID_SEPARATOR",
    "MAX_ID_LENGTH",
    "RESOURCE_SCHEME",
    "NameMap",
    "assign_ids",
    "id_server",
    "is_valid_id",
    "namespaced_uri",
    "qualified_forms",
    "split_uri",
    "template_matches",
]

# --- tools and prompts: server__name ---------------------------------------------------------

# Many clients (and model APIs) accept only this for tool names; the MCP spec's rule is a superset.
MAX_ID_LENGTH = 64
ID_SEPARATOR = "__"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_ID_RULE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_HASH_LENGTH = 8


def is_valid_id(value: str) -> bool:
    """True when `value` satisfies the tool-name rule toolscout exposes ids under."""
    return bool(_ID_RULE.match(value))


def _short_hash(server: str, name: str) -> str:
    return hashlib.sha256(f"{server}\0{name}".encode()).hexdigest()[:_HASH_LENGTH]


def _sanitize(part: str) -> str:
    return _UNSAFE.sub("_", part).strip("_") or "x"


def _candidate_id(server: str, name: str) -> str:
    return f"{_sanitize(server)}{ID_SEPARATOR}{_sanitize(name)}"


def _hashed_id(server: str, name: str) -> str:
    # Keep as much of the readable id as fits, then a hash of the exact (server, name) pair.
    suffix = f"_{_short_hash(server, name)}"
    return _candidate_id(server, name)[: MAX_ID_LENGTH - len(suffix)].rstrip("_-") + suffix


def assign_ids(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Give every (server, name) pair an exposed id: unique, deterministic, <= 64 chars.

    The id of a pair depends only on the pair and on which other pairs share its readable form, never
    on listing order, so ids stay stable across restarts. Readable ids that collide (after
    sanitising, or because they are too long) get a hash of the exact pair appended.
    """
    by_candidate: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for server, name in dict.fromkeys(pairs):
        by_candidate[_candidate_id(server, name)].append((server, name))
    ids: dict[tuple[str, str], str] = {}
    for candidate, members in by_candidate.items():
        for server, name in members:
            if len(members) == 1 and len(candidate) <= MAX_ID_LENGTH:
                ids[(server, name)] = candidate
            else:
                ids[(server, name)] = _hashed_id(server, name)
    return ids


@dataclass(frozen=True)
class NameMap:
    """Exposed names for (server, name) pairs, and the pair of each exposed name."""

    by_pair: Mapping[tuple[str, str], str] = field(default_factory=dict)
    by_name: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]]) -> NameMap:
        by_pair = assign_ids(pairs)
        return cls(by_pair=by_pair, by_name={name: pair for pair, name in by_pair.items()})


def id_server(exposed: str) -> str:
    """The server an id names before its first separator: where it belongs when that server's
    name has no separator of its own. A guess for an id not (or no longer) in a `NameMap`."""
    return exposed.split(ID_SEPARATOR, 1)[0]


# How agents write a tool besides its id: "server.tool", "server/tool", "server:tool" and the
# "mcp__server__tool" form some clients give MCP tools.
_QUALIFIERS = (".", "/", ":")
_CLIENT_PREFIX = "mcp__"


def qualified_forms(name: str) -> list[tuple[str, str]]:
    """(server, tool name) readings of `name`, most literal first."""
    forms = []
    for separator in _QUALIFIERS:
        server, found, rest = name.partition(separator)
        if found and server and rest:
            forms.append((server, rest))
    rest = name[len(_CLIENT_PREFIX):] if name.startswith(_CLIENT_PREFIX) else name
    # "mcp__server__tool", "server__tool" when the id was shortened or hashed, and a gateway name
    # an agent put in front ("mcp__toolscout__server__tool"); clients join names with the same
    # separator as our ids.
    parts = rest.split(ID_SEPARATOR)
    for start in range(len(parts) - 1):
        for cut in range(start + 1, len(parts)):
            server, tool_name = ID_SEPARATOR.join(parts[start:cut]), ID_SEPARATOR.join(parts[cut:])
            if server and tool_name:
                forms.append((server, tool_name))
    return forms


# --- resources and resource templates: toolscout://server/uri --------------------------------

RESOURCE_SCHEME = "toolscout"
_PREFIX = f"{RESOURCE_SCHEME}://"


def namespaced_uri(server: str, uri: str) -> str:
    """The URI (or URI template) clients see for `uri` of `server`."""
    return f"{_PREFIX}{quote(server, safe='')}/{uri}"


def split_uri(uri: str) -> tuple[str, str] | None:
    """(server, the upstream's URI) for a namespaced URI; None for one not made by `namespaced_uri`."""
    if not uri.startswith(_PREFIX):
        return None
    server, slash, rest = uri[len(_PREFIX):].partition("/")
    if not slash or not server or not rest:
        return None
    return unquote(server), rest


def template_matches(template: str, uri: str) -> bool:
    """Whether `uri` is one of the URIs `template` (RFC 6570) expands to."""
    return _template_pattern(template).fullmatch(uri) is not None


_EXPRESSION = re.compile(r"\{([+#./;?&]?)([^}]*)\}")


@lru_cache(maxsize=1024)
def _template_pattern(template: str) -> re.Pattern[str]:
    # Simple expansion stops at reserved characters; `+` and `#` may span them; the query forms
    # (`?`, `&`) match any query part. Conservative: a URI matches when some expansion could give it.
    parts, last = [], 0
    for match in _EXPRESSION.finditer(template):
        parts.append(re.escape(template[last:match.start()]))
        operator = match.group(1)
        if operator in ("+", "#"):
            parts.append(("#" if operator == "#" else "") + ".*")
        elif operator in ("?", "&"):
            parts.append(r"(?:[?&][^#]*)?")
        elif operator in (".", "/", ";"):
            parts.append(f"(?:{re.escape(operator)}[^/?#]*)*")
        else:
            parts.append(r"[^/?#]+")
        last = match.end()
    parts.append(re.escape(template[last:]))
    return re.compile("".join(parts))

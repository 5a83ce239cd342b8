"""How what upstreams offer is named to clients, and the way back: id <-> (server, upstream name).

Two clients' names must never reach another upstream than the one that owns them, and names
must survive restarts, so each naming is a pure function of the pair, with its inverse here too.

- Tools and prompts: `server__name`, unique over all upstreams and at most 64 characters
  (`toolscout.catalog.assign_ids`); the inverse is the map `assign_ids` returns (`NameMap`), never
  a split on the separator, since server and tool names may themselves contain it.
- Resources and resource templates: `toolscout://<server>/<the upstream's own URI>`, the server
  name percent-encoded. The upstream's URI follows unchanged, so a template's `{variables}` stay
  where they were: a client expands the namespaced template, and stripping the prefix gives what
  the upstream's own template expands to (`split_uri`).

A client may also use an upstream's own prompt name or URI as long as exactly one upstream offers
it (as `execute_tool` takes a tool's own name): `template_matches` tells whether a URI is one a
template expands to.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import quote, unquote

from toolscout.catalog import assign_ids

__all__ = ["RESOURCE_SCHEME", "NameMap", "namespaced_uri", "split_uri", "template_matches"]

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


@dataclass(frozen=True)
class NameMap:
    """Exposed names for (server, name) pairs, and the pair of each exposed name."""

    by_pair: Mapping[tuple[str, str], str] = field(default_factory=dict)
    by_name: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]]) -> NameMap:
        by_pair = assign_ids(pairs)
        return cls(by_pair=by_pair, by_name={name: pair for pair, name in by_pair.items()})

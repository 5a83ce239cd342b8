"""What upstreams offer besides tools: resources, resource templates and prompts, named for clients.

`Offerings.of(...)` takes what each upstream that is up lists and names it (`toolscout.naming`):
prompts `server__name`, resources and templates `toolscout://server/<uri>`. `records()` gives
each definition as a `ToolRecord` (its name led by its kind: `prompt:`, `resource:`,
`template:`), so the gateway's screens (pinning, the poisoning scan) judge them exactly as they
judge tools, and `toolscout approve --server S "prompt:NAME"` approves a changed prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from toolscout.catalog import ToolRecord
from toolscout.naming import NameMap, namespaced_uri, split_uri, template_matches

__all__ = ["KIND_PREFIXES", "Offerings", "UpstreamOffer"]

# How a definition that is not a tool is named in pins and screens: never a valid tool name.
KIND_PREFIXES = ("prompt:", "resource:", "template:")


@dataclass(frozen=True)
class UpstreamOffer:
    """One upstream's own listing, as it gave it."""

    resources: tuple[types.Resource, ...] = ()
    templates: tuple[types.ResourceTemplate, ...] = ()
    prompts: tuple[types.Prompt, ...] = ()


@dataclass(frozen=True)
class Offerings:
    """The resources, templates and prompts clients see, each with the server that owns it."""

    resources: tuple[tuple[str, types.Resource], ...] = ()
    templates: tuple[tuple[str, types.ResourceTemplate], ...] = ()
    prompts: tuple[tuple[str, types.Prompt], ...] = ()
    prompt_names: NameMap = field(default_factory=NameMap)
    # Exposed name or URI -> why a screen keeps it from clients.
    withheld: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, live: Mapping[str, UpstreamOffer]) -> Offerings:
        servers = sorted(live)
        prompts = [(server, prompt) for server in servers for prompt in _unique(live[server].prompts, "name")]
        return cls(
            resources=tuple((s, r) for s in servers for r in _unique(live[s].resources, "uri")),
            templates=tuple((s, t) for s in servers for t in _unique(live[s].templates, "uri_template")),
            prompts=tuple(prompts),
            prompt_names=NameMap.of((server, prompt.name) for server, prompt in prompts),
        )

    def records(self) -> list[ToolRecord]:
        """Every definition as a record for the screens; its id is what clients see."""
        records = [
            ToolRecord(id=namespaced_uri(s, r.uri), name=f"resource:{r.uri}", server=s, description=_text(r),
                       title=r.title)
            for s, r in self.resources
        ]
        records += [
            ToolRecord(id=namespaced_uri(s, t.uri_template), name=f"template:{t.uri_template}", server=s,
                       description=_text(t), title=t.title)
            for s, t in self.templates
        ]
        records += [
            ToolRecord(id=self.prompt_names.by_pair[(s, p.name)], name=f"prompt:{p.name}", server=s,
                       description=p.description or "", title=p.title, input_schema=_arguments_schema(p))
            for s, p in self.prompts
        ]
        return records

    def screened(self, withheld: Mapping[str, str]) -> Offerings:
        """These offerings less the withheld ones, which are remembered with their reason."""
        names = self.prompt_names.by_pair
        return Offerings(
            resources=tuple((s, r) for s, r in self.resources if namespaced_uri(s, r.uri) not in withheld),
            templates=tuple((s, t) for s, t in self.templates if namespaced_uri(s, t.uri_template) not in withheld),
            prompts=tuple((s, p) for s, p in self.prompts if names[(s, p.name)] not in withheld),
            prompt_names=self.prompt_names,
            withheld=dict(withheld),
        )

    def only(self, allows: Callable[[str], bool]) -> Offerings:
        """These offerings as a client limited to the servers `allows` accepts sees them."""
        return Offerings(
            resources=tuple((s, r) for s, r in self.resources if allows(s)),
            templates=tuple((s, t) for s, t in self.templates if allows(s)),
            prompts=tuple((s, p) for s, p in self.prompts if allows(s)),
            prompt_names=self.prompt_names,
            withheld={name: why for name, why in self.withheld.items() if (owner := self._owner(name)) and allows(owner)},
        )

    def _owner(self, exposed: str) -> str | None:
        """The server an exposed prompt name or namespaced URI belongs to."""
        pair = self.prompt_names.by_name.get(exposed)
        if pair is not None:
            return pair[0]
        split = split_uri(exposed)
        return split[0] if split is not None else None

    def listed_resources(self) -> list[types.Resource]:
        return [r.model_copy(update={"uri": namespaced_uri(s, r.uri)}) for s, r in self.resources]

    def listed_templates(self) -> list[types.ResourceTemplate]:
        return [t.model_copy(update={"uri_template": namespaced_uri(s, t.uri_template)}) for s, t in self.templates]

    def listed_prompts(self) -> list[types.Prompt]:
        return [p.model_copy(update={"name": self.prompt_names.by_pair[(s, p.name)]}) for s, p in self.prompts]

    def prompt(self, name: str) -> tuple[str, types.Prompt] | None:
        """(server, the upstream's prompt) for an exposed prompt name, or for an upstream's own
        prompt name that only one upstream offers; None if not offered now."""
        pair = self.prompt_names.by_name.get(name)
        if pair is not None:
            return next(((s, p) for s, p in self.prompts if (s, p.name) == pair), None)
        owners = [(s, p) for s, p in self.prompts if p.name == name]
        return owners[0] if len(owners) == 1 else None

    def has_template(self, server: str, uri_template: str) -> bool:
        return any(s == server and t.uri_template == uri_template for s, t in self.templates)

    def owners_of(self, uri: str) -> list[str]:
        """The servers that offer an upstream's own `uri`: listed as a resource, else as a
        template's expansion or as a template itself."""
        listed = [s for s, r in self.resources if r.uri == uri]
        if listed:
            return sorted(set(listed))
        return sorted({s for s, t in self.templates if t.uri_template == uri or template_matches(t.uri_template, uri)})

    @property
    def fingerprint(self) -> tuple[object, ...]:
        """Changes whenever anything clients would list changes."""
        return (
            tuple((s, r.model_dump_json()) for s, r in self.resources),
            tuple((s, t.model_dump_json()) for s, t in self.templates),
            tuple((s, p.model_dump_json()) for s, p in self.prompts),
            tuple(sorted(self.withheld.items())),
        )

    def kinds_changed(self, other: Offerings) -> tuple[bool, bool]:
        """(resources or templates changed, prompts changed) between `other` and these."""
        mine, theirs = self.fingerprint, other.fingerprint
        return mine[:2] != theirs[:2], mine[2] != theirs[2]


def _unique(items: Sequence[Any], key: str) -> list[Any]:
    """The first of each name: an upstream listing one twice is reached by that name anyway."""
    seen: set[str] = set()
    kept = []
    for item in items:
        value = getattr(item, key)
        if value not in seen:
            seen.add(value)
            kept.append(item)
    return kept


def _text(item: types.Resource | types.ResourceTemplate) -> str:
    return " ".join(part for part in (item.name, item.description or "") if part)


def _arguments_schema(prompt: types.Prompt) -> dict[str, Any]:
    arguments = prompt.arguments or []
    return {
        "type": "object",
        "properties": {a.name: {"type": "string", "description": a.description or ""} for a in arguments},
        "required": [a.name for a in arguments if a.required],
    }

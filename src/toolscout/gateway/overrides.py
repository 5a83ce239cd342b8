"""The operator's overrides applied to a screened catalog, and a call mapped back to the upstream.

One transform and its inverse, side by side (as fastmcp keeps a name transform beside its inverse):

- `overridden(catalog, overrides, withheld)`: each overridden tool shown under its new name (and an id made
  from it), its new description, and its input schema without the hidden and fixed arguments. It
  runs after the screens (pins, the poisoning screen) judged the upstream's own definition, so an
  override never hides a change upstream from approval, and before the catalog is enriched and
  indexed, so search finds the tool as the operator describes it.
- `upstream_arguments(tool, arguments)`: the arguments of a call as the upstream gets them (the
  name is `ToolRecord.call_name`): fixed values added; a hidden or fixed argument the agent passed
  is refused, since the operator chose it, and silently dropping it would run the tool with other
  values than the agent asked for.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from toolscout.catalog import Catalog, ToolOverride, ToolRecord
from toolscout.errors import ToolCallError
from toolscout.naming import assign_ids

if TYPE_CHECKING:
    from toolscout.registry.spec import ServerSpec

__all__ = ["Overrides", "overridden", "overrides_of", "upstream_arguments"]

logger = logging.getLogger(__name__)

# server -> the upstream's own tool name -> its override (each registry entry's "overrides").
Overrides = Mapping[str, Mapping[str, ToolOverride]]


def overrides_of(specs: Iterable[ServerSpec]) -> Overrides:
    """The overrides of every registry entry that has some, by server."""
    return {spec.name: spec.overrides for spec in specs if spec.overrides}


def _schema_without(schema: Mapping[str, Any], names: frozenset[str]) -> dict[str, Any]:
    shown = dict(schema)
    if isinstance(schema.get("properties"), Mapping):
        shown["properties"] = {key: value for key, value in schema["properties"].items() if key not in names}
    if isinstance(schema.get("required"), list):
        shown["required"] = [key for key in schema["required"] if key not in names]
    return shown


def _reshaped(tool: ToolRecord, override: ToolOverride, name: str) -> ToolRecord:
    return dataclasses.replace(
        tool,
        name=name,
        description=override.description if override.description is not None else tool.description,
        input_schema=_schema_without(tool.input_schema, override.withheld_arguments),
        override=override,
        upstream_name=tool.name,
    )


def _new_names(catalog: Catalog, overrides: Overrides) -> dict[tuple[str, str], str]:
    """(server, upstream name) -> the name shown, for every overridden tool listed; a new name
    that another tool of the same server already shows is not taken (a warning says so)."""
    names = {(tool.server, tool.name): tool.name for tool in catalog.tools}
    for (server, own) in list(names):
        override = overrides.get(server, {}).get(own)
        if override is not None and override.name:
            names[(server, own)] = override.name
    shown_by: dict[tuple[str, str], list[str]] = {}
    for (server, own), shown in names.items():
        shown_by.setdefault((server, shown), []).append(own)
    for (server, shown), owners in shown_by.items():
        if len(owners) > 1:
            logger.warning("server '%s': the override names more than one tool '%s' (%s); those keep their own "
                           "names", server, shown, ", ".join(sorted(owners)))
            for own in owners:
                names[(server, own)] = own
    return names


def overridden(catalog: Catalog, overrides: Overrides, withheld: Mapping[str, str] | None = None) -> Catalog:
    """`catalog` (every tool listed) with the operator's overrides applied (see the module's
    docstring) and the tools the screens withhold (`withheld`: upstream id -> reason) withheld,
    known by the ids their overrides give them too, so a call by that id is told why."""
    withheld = dict(withheld or {})
    if not any(overrides.get(tool.server, {}).get(tool.name) for tool in catalog.tools):
        return Catalog.of(catalog.tools, withheld)
    names = _new_names(catalog, overrides)
    # A new name gets the id any tool of that name would have; the other tools keep theirs.
    ids = assign_ids((server, shown) for (server, _), shown in names.items())
    taken = {tool.id for tool in catalog.tools if names[(tool.server, tool.name)] == tool.name}
    tools = []
    for tool in catalog.tools:
        override = overrides.get(tool.server, {}).get(tool.name)
        shown = names[(tool.server, tool.name)]
        if override is not None and shown != tool.name and ids[(tool.server, shown)] in taken:
            logger.warning("tool '%s': the override's name would give it the id of another tool; it keeps its own", tool.id)
            shown = tool.name
        if override is None:
            tools.append(tool)
        elif shown == tool.name:
            tools.append(_reshaped(tool, override, shown))
        else:
            tools.append(dataclasses.replace(_reshaped(tool, override, shown), id=ids[(tool.server, shown)]))
    pairs = list(zip(catalog.tools, tools, strict=True))
    shown_as = {after.id: before.id for before, after in pairs if after.id != before.id}
    served = [after for before, after in pairs if before.id not in withheld]
    return Catalog.of(served, withheld, shown_as)


def upstream_arguments(tool: ToolRecord, arguments: Mapping[str, Any]) -> Mapping[str, Any]:
    """The arguments the upstream gets for a call of `tool` (see the module's docstring)."""
    override = tool.override
    if override is None:
        return arguments
    passed = sorted(set(arguments) & override.withheld_arguments)
    if passed:
        raise ToolCallError(
            f"'{tool.id}' does not take {', '.join(repr(name) for name in passed)}: the operator of this gateway "
            "set or hid that argument. Call it again without it."
        )
    return {**arguments, **override.fixed}

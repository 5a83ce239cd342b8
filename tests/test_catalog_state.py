"""The catalog a gateway last saw is a record of the state store: on SQLite and a real Postgres
(shared by replicas), written whole or not at all, and read from an earlier version's JSON file once."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from support.registries import python_server, write_registry

from toolscout.catalog import Catalog, ToolRecord
from toolscout.registry.loading import load_registries
from toolscout.upstream.catalog_cache import catalogs_dir, load_catalog, save_catalog
from toolscout.upstream.status import State, UpstreamStatus

TOOL = ToolRecord(id="weather__forecast", name="forecast", server="weather", description="The forecast.",
                  input_schema={"type": "object"})
UP = UpstreamStatus(name="weather", transport="stdio", state=State.UP, reason=None, tool_count=1, summary="")


def test_the_catalog_seen_is_kept_in_the_store_and_read_back_by_any_process_using_it(location: str, tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"weather": python_server("weather_server.py")})
    specs = load_registries([registry])
    assert load_catalog([registry], specs, state=location) is None
    assert save_catalog([registry], specs, Catalog.of([TOOL]), [UP], state=location)
    seen = load_catalog([registry], specs, state=location)
    assert seen is not None and [tool.id for tool in seen.catalog.tools] == ["weather__forecast"]
    assert seen.statuses == (UP,)
    # Another registry's content is another catalog.
    other = write_registry(tmp_path / "servers.json", {"weather": python_server("weather_server.py", "--slow")})
    assert load_catalog([other], load_registries([other]), state=location) is None


def test_a_catalog_read_back_keeps_every_mapping_in_the_order_the_upstream_listed_it(location: str, tmp_path: Path) -> None:
    # The dense document names a tool's parameters in schema order: a catalog read back with its
    # keys sorted (as both stores keep JSON values) ranked otherwise than the one the gateway listed.
    registry = write_registry(tmp_path / "servers.json", {"weather": python_server("weather_server.py")})
    specs = load_registries([registry])
    schema = {"type": "object", "properties": {"path": {"type": "string"}, "content": {}, "overwrite": {}},
              "required": ["path"]}
    listed = ToolRecord(id="weather__forecast", name="forecast", server="weather", description="The forecast.",
                        input_schema=schema, annotations={"readOnlyHint": False, "destructiveHint": True})
    assert save_catalog([registry], specs, Catalog.of([listed]), [UP], state=location)
    seen = load_catalog([registry], specs, state=location)
    assert seen is not None
    (tool,) = seen.catalog.tools
    assert json.dumps(dataclasses.asdict(tool)) == json.dumps(dataclasses.asdict(listed))


def test_a_catalog_file_of_an_earlier_version_is_read_once_and_moved_into_the_store(location: str, tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"weather": python_server("weather_server.py")})
    specs = load_registries([registry])
    save_catalog([registry], specs, Catalog.of([TOOL]), [UP], state=str(tmp_path / "before.sqlite3"))
    # What an earlier version wrote: the same document, as a file in the data directory.
    from toolscout.state import open_state

    store = open_state(tmp_path / "before.sqlite3")
    with store.transaction("catalogs") as records:
        ((key, document),) = list(records.items())
    store.close()
    catalogs_dir().mkdir(parents=True)
    (catalogs_dir() / f"{key}.json").write_text(json.dumps(document), encoding="utf-8")
    seen = load_catalog([registry], specs, state=location)
    assert seen is not None and [tool.id for tool in seen.catalog.tools] == ["weather__forecast"]
    assert [path.name for path in catalogs_dir().iterdir()] == [f"{key}.json.imported"]
    assert load_catalog([registry], specs, state=location) is not None  # now from the store

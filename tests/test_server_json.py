"""server.json: the MCP Registry entry of toolscout itself, kept in step with the package."""

from __future__ import annotations

import json
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

from toolscout.cli import build_parser
from toolscout.registry.loading import load_registries

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
# The keys the schema allows on a package (it sets additionalProperties: false there).
PACKAGE_KEYS = {
    "registryType", "registryBaseUrl", "identifier", "version", "fileSha256", "runtimeHint",
    "transport", "runtimeArguments", "packageArguments", "environmentVariables",
}


def server_json() -> dict:
    return json.loads((ROOT / "server.json").read_text(encoding="utf-8"))


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def the_package() -> dict:
    (package,) = server_json()["packages"]
    return package


def test_server_json_has_the_required_fields_of_the_2025_12_11_schema():
    doc = server_json()
    assert doc["$schema"] == SCHEMA_URL
    assert re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", doc["name"])
    assert 1 <= len(doc["description"]) <= 100
    assert doc["version"]


def test_server_json_version_matches_pyproject_and_the_installed_package():
    doc = server_json()
    assert doc["version"] == pyproject()["version"] == version("toolscout")
    assert the_package()["version"] == doc["version"]


def test_the_package_entry_runs_toolscout_from_pypi_with_uvx_over_stdio():
    package = the_package()
    assert set(package) <= PACKAGE_KEYS
    assert package["registryType"] == "pypi"
    assert package["identifier"] == pyproject()["name"] == "toolscout"
    assert package["runtimeHint"] == "uvx"
    assert package["transport"] == {"type": "stdio"}


def test_package_arguments_are_serve_and_a_repeatable_registry_option():
    serve, registry = the_package()["packageArguments"]
    assert serve == {"type": "positional", "value": "serve", "description": serve["description"]}
    assert registry["type"] == "named" and registry["name"] == "--registry"
    assert registry["isRepeated"] is True and registry["description"]


def test_the_command_line_server_json_describes_is_accepted_by_the_cli():
    args = build_parser().parse_args(["serve", "--registry", "a.json", "--registry", "b.json"])
    assert args.command == "serve"
    assert [Path(p) for p in args.registry] == [Path("a.json"), Path("b.json")]


def test_toolscouts_own_server_json_translates_to_a_pinned_uvx_launch():
    (spec,) = load_registries([ROOT / "server.json"])
    assert spec.name == "toolscout"
    assert (spec.command, spec.args) == ("uvx", (f"toolscout=={version('toolscout')}", "serve"))

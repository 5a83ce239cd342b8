"""server.json: the MCP Registry entry of toolscout itself, kept in step with the package.

No package on PyPI or npm ships the official server.json schema (the MCP Bundles tool ships its own
manifest schemas only), and a schema read from the web is not copied here, so SERVER_JSON_RULES is a
schema of our own holding the rules of the official 2025-12-11 schema that toolscout's entry
touches: the required fields and their limits, a package's closed set of keys, its transport, and
the two kinds of argument with the input fields they take. The MCP Registry also requires the
package's README to say `mcp-name: <name>` before it accepts a PyPI package.
"""

from __future__ import annotations

import json
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import jsonschema

from toolscout.cli import build_parser
from toolscout.registry.loading import load_registries

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
# The keys the schema allows on a package (it sets additionalProperties: false there).
PACKAGE_KEYS = {
    "registryType", "registryBaseUrl", "identifier", "version", "fileSha256", "runtimeHint",
    "transport", "runtimeArguments", "packageArguments", "environmentVariables",
}

_INPUT = {
    "description": {"type": "string"}, "isRequired": {"type": "boolean"}, "isSecret": {"type": "boolean"},
    "format": {"enum": ["string", "number", "boolean", "filepath"]}, "value": {"type": "string"},
    "default": {"type": "string"}, "placeholder": {"type": "string"},
    "choices": {"type": "array", "items": {"type": "string"}}, "isRepeated": {"type": "boolean"},
    "variables": {"type": "object"},
}
SERVER_JSON_RULES = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["name", "description", "version"],
    "properties": {
        "$schema": {"type": "string", "format": "uri"},
        "name": {"type": "string", "minLength": 3, "maxLength": 200, "pattern": "^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$"},
        "description": {"type": "string", "minLength": 1, "maxLength": 100},
        "version": {"type": "string", "maxLength": 255},
        "title": {"type": "string", "minLength": 1, "maxLength": 100},
        "websiteUrl": {"type": "string", "format": "uri"},
        "packages": {"type": "array", "items": {"$ref": "#/$defs/package"}},
    },
    "$defs": {
        "package": {
            "type": "object",
            "required": ["registryType", "identifier", "transport"],
            "additionalProperties": False,
            "properties": {
                "registryType": {"type": "string"}, "registryBaseUrl": {"type": "string", "format": "uri"},
                "identifier": {"type": "string"}, "version": {"type": "string", "minLength": 1},
                "fileSha256": {"type": "string", "pattern": "^[a-f0-9]{64}$"}, "runtimeHint": {"type": "string"},
                "transport": {"type": "object", "required": ["type"],
                              "properties": {"type": {"enum": ["stdio", "streamable-http", "sse"]}}},
                "runtimeArguments": {"type": "array", "items": {"$ref": "#/$defs/argument"}},
                "packageArguments": {"type": "array", "items": {"$ref": "#/$defs/argument"}},
                "environmentVariables": {"type": "array", "items": {
                    "type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"}, **_INPUT}, "additionalProperties": False}},
            },
        },
        "argument": {"oneOf": [
            {"type": "object", "required": ["type"], "additionalProperties": False,
             "properties": {"type": {"const": "positional"}, "valueHint": {"type": "string"}, **_INPUT}},
            {"type": "object", "required": ["type", "name"], "additionalProperties": False,
             "properties": {"type": {"const": "named"}, "name": {"type": "string"}, **_INPUT}},
        ]},
    },
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


def test_server_json_follows_the_rules_of_the_registry_schema_it_names():
    doc = server_json()
    assert doc["$schema"] == SCHEMA_URL
    jsonschema.Draft202012Validator.check_schema(SERVER_JSON_RULES)
    errors = [error.message for error in jsonschema.Draft202012Validator(SERVER_JSON_RULES).iter_errors(doc)]
    assert errors == []


def test_the_rules_refuse_what_the_registry_refuses():
    validator = jsonschema.Draft202012Validator(SERVER_JSON_RULES)
    doc = server_json()
    assert not validator.is_valid({**doc, "name": "toolscout"})  # no namespace
    assert not validator.is_valid({**doc, "description": "x" * 101})
    unknown_key = {**the_package(), "command": "uvx"}
    assert not validator.is_valid({**doc, "packages": [unknown_key]})
    bad_argument = {**the_package(), "packageArguments": [{"type": "named", "value": "serve"}]}
    assert not validator.is_valid({**doc, "packages": [bad_argument]})


def test_the_readme_names_the_server_for_the_registry():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"mcp-name: {server_json()['name']}" in readme


def test_the_mcp_bundle_runs_this_version_with_uv():
    manifest = json.loads((ROOT / "bundle" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["version"] == pyproject()["version"]
    assert manifest["server"]["type"] == "uv"
    assert manifest["server"]["mcp_config"]["args"][:5] == ["run", "--directory", "${__dirname}", "toolscout", "serve"]
    assert [tool["name"] for tool in manifest["tools"]] == ["search_tools", "execute_tool"]

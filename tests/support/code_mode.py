"""Two small upstreams for the code-mode tests, each keeping a log of the calls it saw."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.registries import python_server, write_registry

__all__ = ["COMBINING_SCRIPT", "calls_seen", "crm_and_mail"]

_TOOLS = {
    "crm": [{"name": "list_customers", "description": "List the customers of a sales region with their open orders.",
             "inputSchema": {"type": "object", "properties": {"region": {"type": "string"}}, "required": ["region"]}}],
    "mail": [{"name": "send_message", "description": "Send an email message to a recipient.",
              "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
                              "required": ["to", "body"], "additionalProperties": False}}],
}

# Searches, calls one tool of each server and combines what they answered.
COMBINING_SCRIPT = """
found = search_tools("list the customers of a sales region", k=3)
customers = call_tool(found[0]["id"], {"region": "north"})
sent = call_tool("mail__send_message", {"to": "ops@example.com", "body": "region " + customers["arguments"]["region"]})
print("searched:", found[0]["id"])
{"customers_from": customers["server"], "mail_from": sent["server"], "body": sent["arguments"]["body"]}
"""


def crm_and_mail(folder: Path, **extra: dict[str, Any]) -> Path:
    """A registry of the two servers (and `extra` entries); each logs its calls in FOLDER/NAME.calls.jsonl."""
    servers = {}
    for name, tools in _TOOLS.items():
        spec = folder / f"{name}.tools.json"
        spec.write_text(json.dumps({"tools": tools}), encoding="utf-8")
        servers[name] = python_server("scripted_server.py", str(spec), name, str(folder / f"{name}.calls.jsonl"))
    return write_registry(folder / "servers.json", {**servers, **extra})


def calls_seen(folder: Path, server: str) -> list[dict[str, Any]]:
    log = folder / f"{server}.calls.jsonl"
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []

"""Defences against hostile upstream tool definitions: poisoning scan and definition pinning.

Pure modules (no MCP): the gateway feeds them ToolRecords and acts on what they return.
"""

from toolscout.security.pinning import PinStore
from toolscout.security.poisoning import Finding, scan_tool
from toolscout.security.screens import PinScreen, PoisoningScreen, flagged_tools

__all__ = ["Finding", "PinScreen", "PinStore", "PoisoningScreen", "flagged_tools", "scan_tool"]

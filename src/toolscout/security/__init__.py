"""Defences against hostile upstream tool definitions: poisoning scan and definition pinning.

Pure modules (no MCP): the gateway feeds them ToolRecords and acts on what they return.
"""

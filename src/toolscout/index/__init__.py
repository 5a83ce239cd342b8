"""Retrievers and the text they index. Nothing here imports the MCP SDK."""

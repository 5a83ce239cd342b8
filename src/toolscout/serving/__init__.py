"""The MCP face: the meta-tool server, its descriptions, argument checks, result packing, HTTP and learning hooks."""

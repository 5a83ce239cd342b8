"""A small notes server for the gateway tests (run as a stdio subprocess).

`enable_archive_tools` adds a tool at run time and tells the client with tools/list_changed
(on the session, or on its subscriptions/listen stream on protocol 2026-07-28).
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel

server = MCPServer("notes", instructions="Keeps short text notes: create, find and delete them.")
NOTES: dict[int, dict[str, object]] = {}


class Note(BaseModel):
    id: int
    title: str
    body: str
    tags: list[str]


@server.tool(annotations=ToolAnnotations(destructive_hint=False))
def create_note(title: str, body: str, tags: list[str] | None = None) -> Note:
    """Create a new text note with a title and a body; returns the stored note and its id."""
    note = Note(id=len(NOTES) + 1, title=title, body=body, tags=tags or [])
    NOTES[note.id] = note.model_dump()
    return note


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def search(text: str) -> str:
    """Search the notes for a piece of text in their title or body."""
    found = [f"{n['id']}: {n['title']}" for n in NOTES.values() if text in str(n["title"]) + str(n["body"])]
    return "\n".join(found) or "no notes match"


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def delete_note(note_id: int) -> str:
    """Delete a note by its numeric id."""
    if note_id not in NOTES:
        raise ToolError(f"there is no note with id {note_id}")
    del NOTES[note_id]
    return f"deleted note {note_id}"


def archive_note(note_id: int, reason: str = "") -> str:
    """Move a note into the cold storage archive so it no longer shows in searches."""
    return f"archived note {note_id}"


@server.tool()
async def enable_archive_tools(ctx: Context) -> str:
    """Turn on the optional archive tools of this server."""
    server.add_tool(archive_note)
    # Told both ways: on the session (handshake-era clients), on listen streams (2026-07-28).
    await ctx.session.send_tool_list_changed()
    await ctx.notify_tools_changed()
    return "archive tools enabled"


if __name__ == "__main__":
    server.run()

"""A small SQLite server, shaped like the bundled registry's mcp-server-sqlite (read_query,
list_tables), over an in-memory database of orders seeded the same way at every start.

    sqlite_server.py [ROWS]

For the code-mode benchmark (benchmarks/code_mode.py): a table an agent reads, filters and sums.
"""

from __future__ import annotations

import random
import sqlite3
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
REGIONS = ("north", "south", "east", "west")
STATUSES = ("open", "shipped", "paid", "cancelled")

server = MCPServer("sqlite", instructions="A SQLite database of customer orders: run read-only SQL queries on it.")
database = sqlite3.connect(":memory:", check_same_thread=False)


def _seed() -> None:
    draw = random.Random(7)
    database.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, region TEXT, amount REAL, status TEXT)")
    database.executemany(
        "INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
        [(i, f"customer-{draw.randint(1, 60):02d}", draw.choice(REGIONS), round(draw.uniform(20, 2500), 2),
          draw.choice(STATUSES)) for i in range(1, ROWS + 1)],
    )


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def read_query(query: str) -> list[dict[str, Any]]:
    """Execute a SELECT query on the SQLite database and return its rows."""
    if not query.strip().lower().startswith("select"):
        raise ToolError("only SELECT queries are allowed by read_query")
    cursor = database.execute(query)
    columns = [column[0] for column in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def list_tables() -> list[str]:
    """List the tables of the SQLite database."""
    return [row[0] for row in database.execute("SELECT name FROM sqlite_master WHERE type='table'")]


if __name__ == "__main__":
    _seed()
    server.run()

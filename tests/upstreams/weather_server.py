"""A small weather server for the gateway tests (run as a stdio subprocess).

It also has a tool named `search`, like the notes server: the gateway must keep both.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

server = MCPServer("weather", instructions="Weather forecasts and current conditions for cities worldwide.")


class Forecast(BaseModel):
    city: str
    days: int
    summary: list[str]


@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True))
def get_forecast(city: str, days: int = Field(default=3, ge=1, le=10)) -> Forecast:
    """Get the weather forecast (sun, rain, temperature) for a city for the next few days."""
    return Forecast(city=city, days=days, summary=[f"day {i + 1}: sunny, 21 C" for i in range(days)])


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def get_current_weather(city: str) -> str:
    """Get the current weather conditions (temperature, wind, humidity) in a city right now."""
    return f"{city}: 18 C, light wind, humidity 60%"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def search(name: str) -> str:
    """Search the list of known cities by name."""
    return ", ".join(c for c in ("Paris", "Lisbon", "Oslo") if name.lower() in c.lower()) or "no city"


if __name__ == "__main__":
    server.run()

"""toolscout: one MCP server in front of many, with hybrid tool search."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("toolscout")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0"

__all__ = ["__version__"]

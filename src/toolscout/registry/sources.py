"""Where a registry comes from, as a value: a file, a URL, or the bundled default.

    source_of("servers.json")                              # RegistryFile(Path("servers.json"))
    source_of("https://registry.example/v0.1/servers")     # RegistryUrl(...): fetched, not read as a path
    BUNDLED                                                # the registry shipped with toolscout

A URL answers either one registry document or a registry API's listing, page after page; which of
the two is told by what it answers (`toolscout.registry.loading`), not by the URL. `source_of` is
the one place a command-line value or a path is told apart; everything after it matches on the
type. `toolscout.registry.loading.read_source` is the one place each kind is read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from toolscout.registry.urls import is_registry_url

__all__ = [
    "RegistryFile",
    "RegistrySource",
    "RegistryUrl",
    "bundled_registry",
    "default_registry_path",
    "follow_text_symlink",
    "registry_files",
    "source_of",
    "sources_of",
]


@dataclass(frozen=True)
class RegistryFile:
    """A registry file on this machine (an mcpServers document, server.json entries, or settings)."""

    path: Path
    # The registry shipped inside the package (`--registry default`, or none given).
    bundled: bool = False

    @property
    def key(self) -> str:
        """Equal however the file was named (relative, with ~, through a symlink)."""
        return str(self.path.expanduser().resolve())

    def __str__(self) -> str:
        return str(self.path)

    def __fspath__(self) -> str:  # a file's path wherever one is taken (os.PathLike)
        return str(self.path)


@dataclass(frozen=True)
class RegistryUrl:
    """A registry fetched over HTTP(S): one document, or a registry API's listing."""

    url: str

    @property
    def key(self) -> str:
        return self.url

    def __str__(self) -> str:
        return self.url


RegistrySource = RegistryFile | RegistryUrl


def default_registry_path() -> Path:
    """The bundled default registry's file (registry/default.json, shipped as package data)."""
    return follow_text_symlink(Path(str(resources.files("toolscout") / "data" / "default.json")))


def bundled_registry() -> RegistryFile:
    """The bundled default registry, used when none is given."""
    return RegistryFile(default_registry_path(), bundled=True)


def source_of(value: RegistrySource | Path | str) -> RegistrySource:
    """A registry source from a value of any kind: a source as it is, a path as a file, a string
    as a URL when it is one (https, or http to this machine), else as a file's path."""
    if isinstance(value, (RegistryFile, RegistryUrl)):
        return value
    if isinstance(value, str) and is_registry_url(value):
        return RegistryUrl(value)
    return RegistryFile(Path(value))


def sources_of(values: Iterable[RegistrySource | Path | str]) -> list[RegistrySource]:
    return [source_of(value) for value in values]


def registry_files(values: Iterable[RegistrySource | Path | str]) -> list[Path]:
    """The files among the sources (what can be watched, and has overlays beside it)."""
    return [source.path for source in sources_of(values) if isinstance(source, RegistryFile)]


def follow_text_symlink(path: Path) -> Path:
    """The file a symlink checked out as text names, else ``path`` itself.

    In a source checkout data/default.json is a symlink to registry/default.json; git without
    symlink support (Windows) writes it as a small text file holding the target path instead.
    """
    if path.is_file() and path.stat().st_size < 200:
        target = path.read_text(encoding="utf-8").strip()
        if target.startswith("../") and target.endswith(".json"):
            return (path.parent / target).resolve()
    return path

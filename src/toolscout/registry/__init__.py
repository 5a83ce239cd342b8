"""Registries: loading the servers an install fronts (from files and URLs), and translating the formats they come in."""

from toolscout.registry.loading import load_registries
from toolscout.registry.sources import default_registry_path
from toolscout.registry.spec import ServerSpec

__all__ = ["ServerSpec", "default_registry_path", "load_registries"]

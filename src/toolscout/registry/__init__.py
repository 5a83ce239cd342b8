"""Registry files: loading the servers an install fronts, and translating the formats they come in."""

from toolscout.registry.loading import ServerSpec, default_registry_path, load_registries

__all__ = ["ServerSpec", "default_registry_path", "load_registries"]

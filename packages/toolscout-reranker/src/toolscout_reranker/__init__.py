"""toolscout's trained reranker: a cross-encoder that rescores the first tools of a search.

An optional extra: it never met the bar for being on by default, so the toolscout wheel carries
only the embedding model, and this package carries the reranker's files (its README.md is the
model card). toolscout finds it when it is installed (`--reranker bundled`).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["MODEL_DIR"]

# The reranker's files: model.onnx, tokenizer.json, reranker_config.json, reference_scores.json.
MODEL_DIR = Path(__file__).resolve().parent

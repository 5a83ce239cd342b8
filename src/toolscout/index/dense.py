"""Dense embeddings, and the one cache of exported ONNX files (for the embedding model and the
reranker alike; the exporter itself, which needs torch, is `toolscout.training.onnx_export`).

Two backends produce the same kind of vectors (mean-pooled, L2-normalised):
- "onnx" (default): onnxruntime with the model's tokenizer.json. A packaged `.onnx` file (such as
  the bundled model's) is used as is; a sentence-transformers folder is exported once to ONNX with
  int8 weights and cached on disk. Importing onnxruntime takes a fraction of a second and a query
  encodes in a few milliseconds on one thread, where torch costs seconds to import and ~4x more
  per query.
- "torch": sentence-transformers itself, for models the exporter cannot handle.
Only onnxruntime and tokenizers are runtime dependencies: torch, transformers, onnx and
sentence-transformers (the export and the torch backend) come with the `toolscout[train]` extra,
and using either without it is a ConfigError naming the extra. Everything heavy is imported inside
functions, so importing this module is cheap.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from toolscout.errors import ConfigError
from toolscout.index.base import Encoder, NOT_RETRIEVED, Query
from toolscout.index.model_files import ModelLocation, require_training_extra

__all__ = [
    "BACKENDS",
    "EXPORT_HEADS",
    "DenseRetriever",
    "OnnxEncoder",
    "TorchEncoder",
    "exported_onnx",
    "load_encoder",
]

log = logging.getLogger(__name__)

BACKENDS = ("onnx", "torch")
_BATCH = 32
# From this many tools on, the dense pass goes through BLAS (see DenseRetriever.scores).
_BLAS_ROWS = 40_000
_DEFAULT_MAX_TOKENS = 256


class DenseRetriever:
    """Cosine similarity between the query embedding and one normalised row per tool."""

    def __init__(self, matrix: np.ndarray) -> None:
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self.size = len(self.matrix)
        # Cosines of the last query vectors, by their bytes: one search asks twice for the same
        # vector (its ranking, then its match strength), and a request of several sentences asks
        # for each of them and their mean (`prepare`). A pass over a large catalog's matrix is
        # memory-bound (~30-40 ms at 100,000 tools here). Read-only; replaced whole, never mutated.
        self._kept: dict[bytes, np.ndarray] = {}

    def prepare(self, vectors: np.ndarray) -> None:
        """Compute the cosines of several query vectors in one pass over the matrix, for the
        `scores` calls that follow: past the CPU's caches a pass costs the reading of the matrix,
        so k vectors at once cost about one pass instead of k. Only where the passes go through
        BLAS anyway; smaller catalogs keep einsum, one vector at a time, and their exact cosines."""
        if self.size < _BLAS_ROWS or len(vectors) < 2:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        cosines = self.matrix @ vectors.T
        kept = {}
        for vector, column in zip(vectors, cosines.T):
            column = np.ascontiguousarray(column)
            column.setflags(write=False)
            kept[vector.tobytes()] = column
        self._kept = kept

    def scores(self, query: Query) -> np.ndarray:
        if query.embedding is None or self.size == 0:
            return np.full(self.size, NOT_RETRIEVED, dtype=np.float32)
        vector = query.embedding.astype(np.float32, copy=False)
        key = vector.tobytes()
        kept = self._kept.get(key)
        if kept is not None:
            return kept
        if self.size < _BLAS_ROWS:
            # einsum, not `@`: a matrix-vector product through some OpenBLAS builds takes ~8 ms for
            # a few thousand rows where numpy's own loop takes ~0.2 ms.
            cosines = np.einsum("ij,j->i", self.matrix, vector)
        else:
            # Past the CPU's caches BLAS wins: 30 ms instead of 60 ms at 100,000 x 384 here, while
            # at 20,000 its threads cost more than they save (benchmarks/dense_pass.py; cosines
            # equal to einsum's within 1e-7).
            cosines = self.matrix @ vector
        cosines.setflags(write=False)
        self._kept = {key: cosines}
        return cosines


def load_encoder(location: ModelLocation, *, backend: str, work_dir: Path) -> Encoder:
    """An encoder for `location`; `work_dir` holds what is derived from it (the exported ONNX)."""
    if backend not in BACKENDS:
        raise ConfigError(f"unknown embedding backend '{backend}'; use one of {', '.join(BACKENDS)}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a model hub
    if backend == "torch":
        require_training_extra("the torch embedding backend")
        return TorchEncoder(location)
    onnx_file = location.onnx_file
    if onnx_file is None:
        if not location.has_weights:
            raise ConfigError(f"embedding model '{location.spec}' has neither an .onnx file nor weights")
        onnx_file = exported_onnx(location, work_dir)
    return OnnxEncoder(location, onnx_file)


def _max_tokens(folder: Path) -> int:
    config = folder / "sentence_bert_config.json"
    try:
        return int(json.loads(config.read_text())["max_seq_length"])
    except (OSError, ValueError, KeyError, TypeError):
        return _DEFAULT_MAX_TOKENS


def _cls_pooling(folder: Path) -> bool:
    config = folder / "1_Pooling" / "config.json"
    try:
        pooling = json.loads(config.read_text())
    except (OSError, ValueError):
        return False
    # sentence-transformers before 6 writes one flag per mode; 6 and later name the mode.
    return bool(pooling.get("pooling_mode_cls_token")) or pooling.get("pooling_mode") == "cls"


def _normalise(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.maximum(norms, 1e-12)).astype(np.float32)


def _onnxruntime() -> Any:
    """onnxruntime, imported without its telemetry: on import it otherwise writes a device id file
    (~/.cache/Microsoft/DeveloperTools/.onnxruntime/deviceid) into the user's cache."""
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime

    return onnxruntime


class OnnxEncoder:
    """Encodes every text on its own, never in a padded batch: the int8 model quantises its
    activations with one scale per run, taken over every row and pad of the batch, so a text
    batched with longer or louder neighbours would get another vector. One text per run gives a
    tool the same vector whichever tools it is indexed with, and the same as a query of the same
    words; a pool of one-thread runs keeps every core busy on a catalog."""

    def __init__(self, location: ModelLocation, onnx_file: Path) -> None:
        from tokenizers import Tokenizer

        onnxruntime = _onnxruntime()

        self._onnxruntime = onnxruntime
        self._file = onnx_file
        # "onnx-single": vectors of one text per run; cached vectors of the batched encoder before
        # it (slightly other values) are not mixed with these.
        self.model_id = f"{location.identity}/onnx-single:{onnx_file.name}"
        self._cls = _cls_pooling(location.folder)
        self._tokenizer = Tokenizer.from_file(str(location.tokenizer_file))
        self._tokenizer.enable_truncation(max_length=_max_tokens(location.folder))
        # A tokenizer file may carry a padding setting of its own (to a fixed length): no pads at all.
        self._tokenizer.no_padding()
        # One thread per run: a single query is answered fastest so, leaving the other core to the
        # event loop, and a catalog runs one text per core in parallel (onnxruntime releases the GIL).
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if len(texts) <= 2:
            return np.stack([self._run(text) for text in texts])
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="toolscout-encode") as pool:
            return np.stack(list(pool.map(self._run, texts)))

    def _run(self, text: str) -> np.ndarray:
        encoding = self._tokenizer.encode(text)
        ids = np.array([encoding.ids], dtype=np.int64)
        mask = np.array([encoding.attention_mask], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feed)[0]
        if hidden.ndim == 2:  # the file already pools
            return _normalise(hidden)[0]
        if self._cls:
            return _normalise(hidden[:, 0])[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return _normalise(pooled)[0]


class TorchEncoder:
    def __init__(self, location: ModelLocation) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        self._torch = torch
        self.model_id = f"{location.identity}/torch"
        self._model = SentenceTransformer(str(location.folder), device="cpu")

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        # Two threads stall single-query encodes under load; bulk work may use every core.
        self._torch.set_num_threads(1 if len(texts) <= 2 else os.cpu_count() or 1)
        vectors = self._model.encode(
            list(texts), batch_size=_BATCH, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)


# What an exported file outputs: the encoder's last hidden state (an embedding model, pooled by
# OnnxEncoder) or a sequence classifier's logits (a cross-encoder's relevance score per pair).
EXPORT_HEADS = ("embedding", "classifier")


def exported_onnx(location: ModelLocation, work_dir: Path, *, head: str = "embedding") -> Path:
    """The model exported to ONNX with dynamically quantised int8 weights, made once and cached."""
    if head not in EXPORT_HEADS:
        raise ValueError(f"unknown export head '{head}'; use one of {', '.join(EXPORT_HEADS)}")
    # The embedding head keeps the key it always had, so existing caches stay valid.
    keyed = location.identity if head == "embedding" else f"{location.identity} {head}"
    key = hashlib.sha256(keyed.encode()).hexdigest()[:16]
    target = work_dir / "onnx" / key / "model-int8.onnx"
    if target.is_file():
        return target
    require_training_extra(f"exporting the sentence-transformers model '{location.spec}' to ONNX")
    # The exporter needs torch, so it lives with the training code; it imports nothing of ours.
    from toolscout.training.onnx_export import export_onnx

    log.info("exporting %s to ONNX (once; cached in %s)", location.spec, target.parent)
    target.parent.mkdir(parents=True, exist_ok=True)
    export_onnx(location.folder, target, classifier=head == "classifier")
    return target

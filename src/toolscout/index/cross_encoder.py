"""The reranker's model: a cross-encoder that reads a request together with one tool's document and
scores how well the tool serves it, run with onnxruntime + tokenizers (no torch at run time).

Its folder (the trained one is the optional package `toolscout-reranker`'s) holds an int8 ONNX file whose output
is the classifier's logit per pair, the tokenizer.json it was trained with, and
`reranker_config.json`: the tokens read per pair and the activation on the logit (what
sentence-transformers' CrossEncoder.predict applies, so the scores are the trained model's). A
sentence-transformers CrossEncoder folder (config.json with the classifier, weights, tokenizer) is
exported once to ONNX by the same exporter as the embedding model (`dense.exported_onnx`, needs the
`toolscout[train]` extra) and cached, like `--model FOLDER`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from toolscout.errors import ConfigError
from toolscout.index.model_files import ModelLocation

__all__ = [
    "ACTIVATIONS",
    "RERANKER_CONFIG",
    "CrossEncoderScorer",
    "RerankerConfig",
    "load_cross_encoder",
    "runtime_config",
]

RERANKER_CONFIG = "reranker_config.json"
ACTIVATIONS = ("sigmoid", "identity")
# Tokens read per (request, tool document) pair: a request and the start of a tool's document
# (name, description, first parameters). Cost grows with it; tool documents longer than this lose
# their last parameters, never the request (longest_first truncation cuts the longer text).
DEFAULT_MAX_TOKENS = 256
# One thread per run: on the 2-core measuring machine, under load, a second intra-op thread or a
# second worker made ten pairs slower (484 and 305 ms against 259 ms), and it leaves the other core
# to the event loop, like the query encoder.
THREADS = 1
# sentence-transformers names the activation by its torch class.
_TORCH_ACTIVATIONS = {
    "torch.nn.modules.activation.Sigmoid": "sigmoid",
    "torch.nn.modules.linear.Identity": "identity",
}


@dataclass(frozen=True)
class RerankerConfig:
    """What the runtime needs besides the ONNX file and the tokenizer (`reranker_config.json`)."""

    max_tokens: int = DEFAULT_MAX_TOKENS
    activation: str = "sigmoid"

    def __post_init__(self) -> None:
        if self.activation not in ACTIVATIONS:
            raise ConfigError(f"reranker activation '{self.activation}' unknown; use one of {', '.join(ACTIVATIONS)}")
        if self.max_tokens < 8:
            raise ConfigError(f"reranker max_tokens must be >= 8, got {self.max_tokens}")

    def write(self, folder: Path) -> Path:
        path = folder / RERANKER_CONFIG
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")
        return path


def runtime_config(folder: Path, *, max_tokens: int = DEFAULT_MAX_TOKENS) -> RerankerConfig:
    """The folder's `reranker_config.json`, else what its sentence-transformers files say.

    For a CrossEncoder folder, the activation comes from `config_sentence_transformers.json`
    (sigmoid when absent, CrossEncoder's default for one label) and the tokens read are
    `max_tokens` or the model's own limit, whichever is smaller.
    """
    own = folder / RERANKER_CONFIG
    if own.is_file():
        document = _read_json(own)
        try:
            return RerankerConfig(int(document["max_tokens"]), str(document["activation"]))
        except (KeyError, TypeError, ValueError):
            raise ConfigError(f"{own} needs {{\"max_tokens\": N, \"activation\": \"sigmoid\"}}") from None
    named = _read_json(folder / "config_sentence_transformers.json").get("activation_fn")
    activation = _TORCH_ACTIVATIONS.get(named, "sigmoid") if named else "sigmoid"
    if named and named not in _TORCH_ACTIVATIONS:
        raise ConfigError(f"cross-encoder in {folder} uses activation {named}; toolscout supports Sigmoid and Identity")
    limit = _read_json(folder / "tokenizer_config.json").get("model_max_length")
    if isinstance(limit, int) and 0 < limit < max_tokens:
        max_tokens = limit
    return RerankerConfig(max_tokens, activation)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    return document if isinstance(document, dict) else {}


class CrossEncoderScorer:
    """Scores (request, document) pairs, one onnxruntime run per pair.

    Unpadded single pairs, not one padded batch: tool documents vary from 30 to 250 tokens, and
    padding every pair to the longest cost 2-4x the CPU time (ten toolbench_stb pairs: 155-325 ms
    as one batch, 62-65 ms one by one; length-sorted batches of 2-8 fell between). A pair's score
    also stays the same whichever other candidates it is ranked with (int8 activations are scaled
    per run).
    """

    def __init__(self, location: ModelLocation, onnx_file: Path, config: RerankerConfig) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self.config = config
        self.model_id = f"{location.identity}/onnx:{onnx_file.name}"
        self._tokenizer = Tokenizer.from_file(str(location.tokenizer_file))
        # A saved tokenizer.json may carry the trainer's fixed padding and cut; these replace them.
        self._tokenizer.enable_truncation(max_length=config.max_tokens, strategy="longest_first")
        self._tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = min(THREADS, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}

    def scores(self, query: str, documents: Sequence[str]) -> np.ndarray:
        """One score per document for `query`, higher is better (after the model's activation)."""
        return self.activated(self.logits(query, documents))

    def activated(self, logits: np.ndarray) -> np.ndarray:
        """The model's activation applied to its logits: the scores `scores` answers."""
        logits = np.asarray(logits, dtype=np.float32)
        if self.config.activation == "sigmoid":
            return (1.0 / (1.0 + np.exp(-logits))).astype(np.float32)
        return logits

    def logits(self, query: str, documents: Sequence[str]) -> np.ndarray:
        """The classifier's logit per document for `query`, before any activation: what the learned
        ranker reads (a linear score reads a logit better than a squashed probability)."""
        if not documents:
            return np.zeros(0, dtype=np.float32)
        encodings = self._tokenizer.encode_batch([(query, d) for d in documents])
        return np.array([self._logit(e) for e in encodings], dtype=np.float32)

    def _logit(self, encoding: Any) -> float:
        feed = {
            "input_ids": np.array([encoding.ids], dtype=np.int64),
            "attention_mask": np.array([encoding.attention_mask], dtype=np.int64),
        }
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.array([encoding.type_ids], dtype=np.int64)
        return float(np.asarray(self._session.run(None, feed)[0]).reshape(-1)[0])


def load_cross_encoder(location: ModelLocation, *, work_dir: Path) -> CrossEncoderScorer:
    """The scorer for `location`; a CrossEncoder folder is exported to ONNX once, into `work_dir`."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a model hub
    config = runtime_config(location.folder)
    onnx_file = location.onnx_file
    if onnx_file is None:
        if not location.has_weights:
            raise ConfigError(f"reranker '{location.spec}' has neither an .onnx file nor weights in {location.folder}")
        from toolscout.index.dense import exported_onnx

        onnx_file = exported_onnx(location, work_dir, head="classifier")
    return CrossEncoderScorer(location, onnx_file, config)

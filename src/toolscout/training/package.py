"""From a trained sentence-transformers folder to the files the runtime loads, plus a model card.

The embedding model's runtime (toolscout.index.dense) needs only: an int8 ONNX file,
`tokenizer.json`, `sentence_bert_config.json` (max tokens) and `1_Pooling/config.json` (pooling).
The reranker's (toolscout.index.cross_encoder) needs an int8 ONNX file of the classifier,
`tokenizer.json` and `reranker_config.json` (max tokens, activation). Both ONNX files are made by
the runtime's own exporter, so a shipped model and a `--model FOLDER` / `--reranker FOLDER`
export are the same. The model card and licence beside them are written by hand.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from pathlib import Path

from toolscout.index.cross_encoder import DEFAULT_MAX_TOKENS, runtime_config
from toolscout.index.dense import exported_onnx
from toolscout.index.model_files import ModelLocation, resolve_model

__all__ = [
    "LOSS_CURVE",
    "ONNX_NAME",
    "RUNTIME_FILES",
    "SERVING_MAX_TOKENS",
    "REFERENCE_PAIRS",
    "REFERENCE_SCORES_FILE",
    "RERANKER_FILES",
    "package_model",
    "package_reranker",
    "write_loss_curve",
]

log = logging.getLogger(__name__)

RUNTIME_FILES = ("tokenizer.json", "sentence_bert_config.json", "1_Pooling/config.json")
ONNX_NAME = "model.onnx"
# What the shipped files must reproduce, checked by the tests without torch: the exporter's own
# vectors for a few texts, and the trained (float32) model's vectors they approximate.
REFERENCE_FILE = "reference_vectors.json"
REFERENCE_TEXTS = (
    "Weather forecast for a city.",
    "send an email to my colleague about the meeting",
    "get forecast (weather). Weather forecast for a city. Parameters: city (the city name).",
    "show me the git log",
    "x",
)
# The reranker's counterpart: its ONNX scores and the trained model's for a few pairs.
REFERENCE_SCORES_FILE = "reference_scores.json"
REFERENCE_PAIRS = (
    ("what time is it in Tokyo", "get current time (time). Current time in a given IANA time zone. Parameters: timezone."),
    ("what time is it in Tokyo", "convert time (time). Convert a time between time zones."),
    ("show me the git log", "git log (git). Shows the commit logs. Parameters: repo path; max count."),
    ("show me the git log", "git show (git). Shows the contents of a commit."),
    ("x", "send email (mail). Send an email message."),
)
RERANKER_FILES = ("tokenizer.json",)
LOSS_CURVE = "loss_curve.png"
# Queries are short; tool documents longer. The runtime embeds up to this many tokens per text
# (all-MiniLM-L6-v2's own setting), more than the training cut, so long schemas still count.
SERVING_MAX_TOKENS = 256


def package_model(run_dir: Path, model_dir: Path, target: Path) -> Path:
    """Write the runtime files of `model_dir` into `target` (replaced whole) and the loss curve."""
    location = resolve_model(str(model_dir))
    assert location is not None
    with tempfile.TemporaryDirectory() as scratch:
        staged = _staged(location, Path(scratch), "embedding", RUNTIME_FILES)
        config = json.loads((staged / "sentence_bert_config.json").read_text())
        config["max_seq_length"] = SERVING_MAX_TOKENS
        (staged / "sentence_bert_config.json").write_text(json.dumps(config, indent=2) + "\n")
        _install(staged, target)
    write_reference_vectors(model_dir, target)
    write_loss_curve(run_dir)
    log.info("runtime files written to %s", target)
    return target


def package_reranker(model_dir: Path, target: Path, *, max_tokens: int = DEFAULT_MAX_TOKENS) -> Path:
    """Write the runtime files of the CrossEncoder in `model_dir` into `target` (e.g. the shipped
    `packages/toolscout-reranker/src/toolscout_reranker`): model.onnx, tokenizer.json, reranker_config.json (at most
    `max_tokens` per pair) and reference_scores.json."""
    location = resolve_model(str(model_dir), what="reranker")
    assert location is not None
    with tempfile.TemporaryDirectory() as scratch:
        staged = _staged(location, Path(scratch), "classifier", RERANKER_FILES)
        runtime_config(model_dir, max_tokens=max_tokens).write(staged)
        _install(staged, target)
    write_reference_scores(model_dir, target)
    log.info("reranker runtime files written to %s", target)
    return target


def _staged(location: ModelLocation, scratch: Path, head: str, files: tuple[str, ...]) -> Path:
    """A folder in `scratch` with the exported int8 ONNX file and `files` copied from the model."""
    onnx_file = exported_onnx(location, scratch, head=head)
    staged = scratch / "staged"
    staged.mkdir()
    shutil.copy2(onnx_file, staged / ONNX_NAME)
    for name in files:
        (staged / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(location.folder / name, staged / name)
    return staged


def _install(staged: Path, target: Path) -> None:
    # Only the runtime files are replaced: the model card and licence beside them are written
    # by hand. Any other .onnx file would be picked up in place of the new one, so they go.
    for stale in target.glob("*.onnx") if target.is_dir() else ():
        stale.unlink()
    shutil.copytree(staged, target, dirs_exist_ok=True)


def write_reference_vectors(model_dir: Path, target: Path) -> Path:
    """The packaged ONNX file's vectors and the trained model's, for REFERENCE_TEXTS."""
    from sentence_transformers import SentenceTransformer

    from toolscout.index.dense import load_encoder

    packaged = load_encoder(resolve_model(str(target)), backend="onnx", work_dir=target)
    trained = SentenceTransformer(str(model_dir), device="cpu")
    texts = list(REFERENCE_TEXTS)
    document = {
        "texts": texts,
        # One text at a time: int8 activations are scaled per batch, so a batch's padding moves
        # them slightly; a single text (a query) is reproducible exactly.
        "onnx_int8": [[round(float(v), 6) for v in packaged.encode([text])[0]] for text in texts],
        "float32": [[round(float(v), 6) for v in row] for row in trained.encode(texts, normalize_embeddings=True)],
    }
    path = target / REFERENCE_FILE
    path.write_text(json.dumps(document) + "\n")
    return path


def write_reference_scores(model_dir: Path, target: Path) -> Path:
    """The packaged ONNX file's scores and the trained model's, for REFERENCE_PAIRS."""
    from sentence_transformers.cross_encoder import CrossEncoder

    from toolscout.index.cross_encoder import load_cross_encoder

    packaged = load_cross_encoder(resolve_model(str(target), what="reranker"), work_dir=target)
    trained = CrossEncoder(str(model_dir), device="cpu")
    pairs = [list(pair) for pair in REFERENCE_PAIRS]
    document = {
        "pairs": pairs,
        "onnx_int8": [round(float(packaged.scores(query, [text])[0]), 6) for query, text in pairs],
        "float32": [round(float(v), 6) for v in trained.predict(pairs, show_progress_bar=False)],
    }
    path = target / REFERENCE_SCORES_FILE
    path.write_text(json.dumps(document, indent=1) + "\n")
    return path


def write_loss_curve(run_dir: Path, *, loss: str = "MultipleNegativesRankingLoss") -> Path | None:
    """A PNG of training (and validation) loss per step, from the trainer's log history."""
    history_file = run_dir / "log_history.json"
    if not history_file.is_file():
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    history = json.loads(history_file.read_text())
    train = [(h["step"], h["loss"]) for h in history if "loss" in h]
    validation = [(h["step"], h["eval_loss"]) for h in history if "eval_loss" in h]
    figure, axes = plt.subplots(figsize=(6, 3.5))
    if train:
        axes.plot(*zip(*train), label="training loss")
    if validation:
        axes.plot(*zip(*validation), marker="o", label="held-back training requests")
    axes.set_xlabel("step")
    axes.set_ylabel(loss)
    if train or validation:  # a run too short to log a loss has nothing to label
        axes.legend()
    figure.tight_layout()
    path = run_dir / LOSS_CURVE
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path

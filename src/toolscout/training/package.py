"""From a trained sentence-transformers folder to the files the runtime loads, plus a model card.

The runtime (toolscout.index.dense) needs only: an int8 ONNX file, `tokenizer.json`,
`sentence_bert_config.json` (max tokens) and `1_Pooling/config.json` (pooling). The ONNX file is
made by the runtime's own exporter, so a shipped model and a `--model FOLDER` export are the same.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from pathlib import Path

from toolscout.index.dense import exported_onnx
from toolscout.index.model_files import resolve_model

__all__ = [
    "LOSS_CURVE",
    "ONNX_NAME",
    "RUNTIME_FILES",
    "SERVING_MAX_TOKENS",
    "package_model",
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
LOSS_CURVE = "loss_curve.png"
# Queries are short; tool documents longer. The runtime embeds up to this many tokens per text
# (all-MiniLM-L6-v2's own setting), more than the training cut, so long schemas still count.
SERVING_MAX_TOKENS = 256


def package_model(run_dir: Path, model_dir: Path, target: Path) -> Path:
    """Write the runtime files of `model_dir` into `target` (replaced whole) and the loss curve."""
    location = resolve_model(str(model_dir))
    assert location is not None
    with tempfile.TemporaryDirectory() as scratch:
        onnx_file = exported_onnx(location, Path(scratch))
        staged = Path(scratch) / "staged"
        staged.mkdir()
        shutil.copy2(onnx_file, staged / ONNX_NAME)
        for name in RUNTIME_FILES:
            (staged / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(model_dir / name, staged / name)
        config = json.loads((staged / "sentence_bert_config.json").read_text())
        config["max_seq_length"] = SERVING_MAX_TOKENS
        (staged / "sentence_bert_config.json").write_text(json.dumps(config, indent=2) + "\n")
        # Only the runtime files are replaced: the model card and licence beside them are written
        # by hand. Any other .onnx file would be picked up in place of the new one, so they go.
        for stale in target.glob("*.onnx") if target.is_dir() else ():
            stale.unlink()
        shutil.copytree(staged, target, dirs_exist_ok=True)
    write_reference_vectors(model_dir, target)
    write_loss_curve(run_dir)
    log.info("runtime files written to %s", target)
    return target


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


def write_loss_curve(run_dir: Path) -> Path | None:
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
    axes.set_ylabel("MultipleNegativesRankingLoss")
    if train or validation:  # a run too short to log a loss has nothing to label
        axes.legend()
    figure.tight_layout()
    path = run_dir / LOSS_CURVE
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path

"""Exporting a transformers model to ONNX with int8 weights: the step that needs torch, run once
per model folder that ships weights but no .onnx file (`toolscout.index.dense.exported_onnx`
decides where the file is cached and when to run it). Imports nothing of toolscout's, so the
runtime reaching it never pulls in the training code.
"""

from __future__ import annotations

import logging
import os
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["export_onnx"]


class _BelowError(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR


@contextmanager
def _quiet_exporters() -> Iterator[None]:
    """Silences what the exporting libraries say to the user about our build step.

    onnxruntime's quantizer logs dozens of INFO lines and a pre-processing hint straight to the
    root logger, and transformers draws a weight-loading bar; none of it is the user's business.
    A filter on the root logger catches only records logged on the root logger itself, so
    toolscout's own loggers (and other threads' progress) still reach the handlers.
    """
    from transformers.utils import logging as transformers_logging

    quiet = _BelowError()
    root = logging.getLogger()
    root.addFilter(quiet)
    bar_was_on = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        root.removeFilter(quiet)
        if bar_was_on:
            transformers_logging.enable_progress_bar()


def export_onnx(folder: Path, target: Path, *, classifier: bool = False) -> None:
    """Export the transformers model in `folder` to `target` (ONNX, int8 weights): its last hidden
    state, or with `classifier` a sequence classifier's logits."""
    with _quiet_exporters():
        _export(folder, target, classifier)


def _export(folder: Path, target: Path, classifier: bool) -> None:
    import torch

    # Loaded without its telemetry, as `toolscout.index.dense` loads it.
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel, AutoModelForSequenceClassification

    class _Head(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.logits if classifier else out.last_hidden_state

    loader = AutoModelForSequenceClassification if classifier else AutoModel
    model = _Head(loader.from_pretrained(str(folder))).eval()
    sample = torch.ones(1, 8, dtype=torch.long)
    axes = {0: "batch", 1: "sequence"}
    names = ["input_ids", "attention_mask", "token_type_ids"]
    output = "logits" if classifier else "last_hidden_state"
    output_axes = {0: "batch"} if classifier else axes
    # The tracer warns about shapes it treats as constants; the axes above keep them dynamic.
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fp32 = Path(scratch) / "model.onnx"
        int8 = Path(scratch) / "model-int8.onnx"
        torch.onnx.export(
            model,
            (sample, sample, torch.zeros_like(sample)),
            str(fp32),
            input_names=names,
            output_names=[output],
            dynamic_axes={**{name: axes for name in names}, output: output_axes},
            opset_version=17,
            dynamo=False,
        )
        quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True)
        # Atomic: a concurrent process sees either no file or a whole one.
        os.replace(int8, target)

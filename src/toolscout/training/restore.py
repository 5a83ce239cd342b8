"""Float weights back from a shipped int8 ONNX model, so training can go on from where it stopped.

The bundled model ships only as `model.onnx` with int8 weights (dynamic quantisation: per-channel
scales for the transformer's matrices, one scale for each embedding table); its float32 training run
is not kept. Training a later version from the base model again would throw away what the shipped
one learned, and a full run is hours on a CPU. So the run starts from the shipped weights instead:
every quantised initializer is dequantised, `(q - zero_point) * scale`, and written into the base
model's architecture under the parameter name the graph gives it.

Which PyTorch parameter a quantised matrix is cannot be read from its name (the exporter names
MatMul weights by number); it is found by following the graph from the `MatMulInteger` that reads it
to the `Add` that adds a named bias (`...attention.self.query.bias` -> `...query.weight`, transposed,
since a Linear stores `out x in`). Embedding tables and every float initializer keep their names.
Parameters the file does not hold stay the base model's.

Needs `toolscout[train]` (torch, onnx, sentence-transformers).
"""

from __future__ import annotations

import logging
import shutil
from collections import defaultdict
from pathlib import Path

import numpy as np

__all__ = ["dequantised_weights", "restore_model"]

log = logging.getLogger(__name__)

_QUANTISED = "_quantized"
# How far after a MatMulInteger its bias Add may be (Cast, Mul by scales, Mul, Add).
_MAX_HOPS = 6


def dequantised_weights(onnx_path: Path) -> dict[str, np.ndarray]:
    """Float32 arrays by the PyTorch parameter name of the model inside the ONNX file (no prefix)."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(onnx_path)).graph
    values = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    consumers: dict[str, list] = defaultdict(list)
    for node in graph.node:
        for name in node.input:
            consumers[name].append(node)
    weights: dict[str, np.ndarray] = {}
    for name, value in values.items():
        if name.endswith(_QUANTISED) or name.endswith(("_scale", "_zero_point")):
            continue
        if value.dtype == np.float32:
            weights[_parameter(name)] = value
    for name, value in values.items():
        if not name.endswith(_QUANTISED):
            continue
        stem = name[: -len(_QUANTISED)]
        scale = values[stem + "_scale"].astype(np.float32)
        zero = values[stem + "_zero_point"].astype(np.float32)
        array = (value.astype(np.float32) - zero) * scale
        if stem.startswith("model."):
            weights[_parameter(stem)] = array
            continue
        bias = _bias_after(name, consumers, values)
        if bias is None:
            raise ValueError(f"{onnx_path}: no bias follows the quantised matrix {stem}; cannot name it")
        weights[_parameter(bias[: -len("bias")] + "weight")] = array.T.copy()
    return weights


def _parameter(name: str) -> str:
    return name[len("model."):] if name.startswith("model.") else name


def _bias_after(weight: str, consumers: dict[str, list], values: dict[str, np.ndarray]) -> str | None:
    frontier = [node for node in consumers[weight]]
    for _ in range(_MAX_HOPS):
        following = []
        for node in frontier:
            if node.op_type == "Add":
                named = [i for i in node.input if i in values and i.endswith(".bias")]
                if named:
                    return named[0]
            for output in node.output:
                following.extend(consumers[output])
        frontier = following
    return None


# Frozen in every training run (TrainingPlan.freeze_word_embeddings), so the base's float values are
# the exact ones; the ONNX file holds them at one int8 scale for the whole table.
FROZEN_IN_TRAINING = ("embeddings.word_embeddings.weight",)


def restore_model(onnx_path: Path, base_folder: Path, out_folder: Path) -> Path:
    """A sentence-transformers folder: the base model's files with the ONNX file's weights in them."""
    import torch
    from sentence_transformers import SentenceTransformer

    weights = {k: v for k, v in dequantised_weights(onnx_path).items() if k not in FROZEN_IN_TRAINING}
    model = SentenceTransformer(str(base_folder), device="cpu")
    inner = model[0].auto_model
    state = inner.state_dict()
    unknown = sorted(set(weights) - set(state))
    if unknown:
        raise ValueError(f"{onnx_path}: weights the base architecture does not have: {unknown[:5]}")
    for name, array in weights.items():
        if tuple(state[name].shape) != array.shape:
            raise ValueError(f"{onnx_path}: {name} is {array.shape}, the base has {tuple(state[name].shape)}")
        state[name] = torch.from_numpy(np.array(array, dtype=np.float32, copy=True))
    inner.load_state_dict(state)
    kept = sorted(set(state) - set(weights))
    log.info("restored %d tensors from %s; %d kept from the base (%s)", len(weights), onnx_path.name,
             len(kept), ", ".join(kept[:4]) + ("..." if len(kept) > 4 else ""))
    if out_folder.exists():
        shutil.rmtree(out_folder)
    model.save(str(out_folder))
    return out_folder

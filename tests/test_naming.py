"""Naming and its inverse, for tools, prompts and resources alike (toolscout.naming): every
exposed name leads back to exactly the (server, name) pair it was made from."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import toolscout
from toolscout.naming import (
    ID_SEPARATOR,
    MAX_ID_LENGTH,
    NameMap,
    assign_ids,
    id_server,
    is_valid_id,
    namespaced_uri,
    qualified_forms,
    split_uri,
    template_matches,
)

# Pairs whose readable ids collide (sanitised alike, too long) or hold the separator themselves.
AWKWARD = [
    ("git", "git_log"),
    ("a-b", "c"), ("a_b", "c"), ("a.b", "c"),
    ("my__server", "tool"), ("my", "server__tool"),
    ("long", "x" * 80), ("long", "x" * 81),
    ("ünïcode", "naïve tool"),
]


def test_every_pair_gets_a_valid_unique_id_and_the_map_leads_back_to_it() -> None:
    names = NameMap.of(AWKWARD)
    assert len(set(names.by_pair.values())) == len(AWKWARD)
    assert all(is_valid_id(name) and len(name) <= MAX_ID_LENGTH for name in names.by_pair.values())
    assert {names.by_name[names.by_pair[pair]] for pair in AWKWARD} == set(AWKWARD)
    assert names.by_pair[("git", "git_log")] == "git__git_log"  # readable when nothing collides


def test_ids_do_not_depend_on_listing_order() -> None:
    shuffled = list(AWKWARD)
    random.Random(7).shuffle(shuffled)
    assert assign_ids(shuffled) == assign_ids(AWKWARD)


def test_the_server_an_id_names_and_the_ways_agents_write_a_tool_read_back() -> None:
    assert id_server("git__git_log") == "git"
    assert qualified_forms("git.git_log")[0] == ("git", "git_log")
    assert ("git", "git_log") in qualified_forms("mcp__git__git_log")
    assert ("git", "git_log") in qualified_forms("mcp__toolscout__git__git_log")
    assert qualified_forms("plain") == []


def test_resource_uris_and_templates_round_trip_to_their_server() -> None:
    for server, uri in [("library", "library://readme"), ("my server/x", "file:///a b?c#d"), ("s", "s://{x}/{+y}")]:
        exposed = namespaced_uri(server, uri)
        assert exposed.startswith("toolscout://")
        assert split_uri(exposed) == (server, uri)
    assert split_uri("library://readme") is None  # not one of ours: an upstream's own URI
    template = namespaced_uri("library", "library://books/{title}")
    assert template_matches(template, namespaced_uri("library", "library://books/dune"))
    assert not template_matches(template, namespaced_uri("library", "library://films/dune"))


def test_ids_are_joined_and_split_nowhere_but_in_naming() -> None:
    # One place for the scheme: another module spelling the separator would be a second naming.
    source = Path(toolscout.__file__).parent
    spelled = [
        str(path.relative_to(source))
        for path in source.rglob("*.py")
        if path.name != "naming.py" and "__pycache__" not in path.parts
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and node.value == ID_SEPARATOR
    ]
    assert spelled == []

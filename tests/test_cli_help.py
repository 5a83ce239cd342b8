"""Each command's --help fits it: a description line, and only the options that mean something to it."""

from __future__ import annotations

import pytest

from toolscout.cli import main

COMMANDS = ("serve", "search", "tools", "approve", "eval", "tune", "examples", "expansions")
CALL_LIMITS = ("--call-timeout", "--max-argument-bytes", "--max-result-bytes", "--max-line-bytes", "--max-concurrent-calls")


def help_of(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_says_what_it_does_under_its_usage(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    paragraphs = help_of(command, capsys).split("\n\n")
    # usage, then the description, then the argument sections
    assert not paragraphs[1].startswith(("positional arguments", "options")), paragraphs[1]


def test_call_limits_belong_to_serve_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert all(option in help_of("serve", capsys) for option in CALL_LIMITS)
    for command in ("search", "tools", "approve"):
        shown = help_of(command, capsys)
        assert not [option for option in CALL_LIMITS if option in shown], command
        assert "--registry" in shown and "--start-timeout" in shown


def test_transport_explains_its_choices(capsys: pytest.CaptureFixture[str]) -> None:
    text = " ".join(help_of("serve", capsys).split())
    assert "stdio (default): the MCP host starts toolscout" in text and "http: serve streamable HTTP" in text


def test_search_and_tools_offer_refresh(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--refresh" in help_of("search", capsys) and "--refresh" in help_of("tools", capsys)

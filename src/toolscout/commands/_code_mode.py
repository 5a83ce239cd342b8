"""`serve --code-mode` and the limits of its scripts (`toolscout.serving.code_mode`)."""

from __future__ import annotations

import argparse

from toolscout.errors import ConfigError
from toolscout.serving.options import CodeModeLimits

__all__ = ["add_code_mode_options", "code_mode_limits"]

_DEFAULTS = CodeModeLimits()
_MIB, _KIB = 1024 * 1024, 1024


def add_code_mode_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("code mode (run_code)")
    group.add_argument(
        "--code-mode", action="store_true",
        help="offer a third tool, run_code: the agent's Python script calls search_tools and execute_tool "
             "in a sandbox and only its answer comes back (off by default: docs/code-mode.md, docs/security.md)",
    )
    limits = (
        ("--code-wall-time", "wall_seconds", float, "SECONDS", _DEFAULTS.wall_seconds, "seconds a script may take, tool calls included"),
        ("--code-cpu-time", "cpu_seconds", float, "SECONDS", _DEFAULTS.cpu_seconds, "seconds a script may compute"),
        ("--code-memory-mb", "memory_mb", int, "MIB", _DEFAULTS.memory_bytes // _MIB, "memory a script may use"),
        ("--code-max-calls", "max_tool_calls", int, "N", _DEFAULTS.max_tool_calls, "tool calls per script"),
        ("--code-max-result-kb", "result_kb", int, "KIB", _DEFAULTS.max_result_bytes // _KIB, "what a script's answer may hold"),
        ("--code-workers", "workers", int, "N", _DEFAULTS.workers, "scripts run at once; more wait"),
    )
    for flag, dest, kind, metavar, default, what in limits:
        group.add_argument(flag, dest=f"code_{dest}", type=kind, default=default, metavar=metavar,
                           help=f"{what} (default {default:g})")


def code_mode_limits(args: argparse.Namespace) -> CodeModeLimits | None:
    """The limits `serve` runs scripts with, None when code mode is off; ConfigError for a bad one."""
    if not args.code_mode:
        return None
    values = {
        "--code-wall-time": args.code_wall_seconds, "--code-cpu-time": args.code_cpu_seconds,
        "--code-memory-mb": args.code_memory_mb, "--code-max-calls": args.code_max_tool_calls,
        "--code-max-result-kb": args.code_result_kb, "--code-workers": args.code_workers,
    }
    for flag, value in values.items():
        if not value > 0:
            raise ConfigError(f"{flag} must be more than 0, got {value:g}")
    return CodeModeLimits(
        wall_seconds=args.code_wall_seconds, cpu_seconds=args.code_cpu_seconds,
        memory_bytes=args.code_memory_mb * _MIB, max_tool_calls=args.code_max_tool_calls,
        max_result_bytes=args.code_result_kb * _KIB, workers=args.code_workers,
    )

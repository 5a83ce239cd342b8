"""A pytest plugin that counts the processes each test starts (`benchmarks/suite_processes.py`
turns it on): every `subprocess.Popen` goes through `_execute_child` (asyncio's and anyio's
subprocesses included), so one patch sees them; a bare `os.fork` (`pty.fork`) is not counted. A
fixture shared by several tests counts toward the first test that uses it. Written as JSON, test
id -> processes, at the end."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["ENVIRONMENT", "ProcessCount"]

# Where the counts go; the plugin is off when it is not set.
ENVIRONMENT = "TOOLSCOUT_COUNT_PROCESSES"


class ProcessCount:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.started = 0
        self.per_test: dict[str, int] = {}
        original = subprocess.Popen._execute_child  # type: ignore[attr-defined]

        def counted(popen: Any, *args: Any, **kwargs: Any) -> Any:
            self.started += 1
            return original(popen, *args, **kwargs)

        subprocess.Popen._execute_child = counted  # type: ignore[attr-defined]

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        before = self.started
        yield
        self.per_test[item.nodeid] = self.started - before

    def pytest_sessionfinish(self) -> None:
        self.out.write_text(json.dumps(self.per_test, indent=1))


def install(config: pytest.Config) -> None:
    out = os.environ.get(ENVIRONMENT)
    if out:
        config.pluginmanager.register(ProcessCount(Path(out)), "toolscout-process-count")

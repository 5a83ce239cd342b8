"""Tasks (long-running calls whose result is fetched later) are not passed through: what a client
or an agent is told instead.

The mcp SDK does not implement tasks in either protocol era (2025-11-25 defines `tasks/*` and the
`task` field of `tools/call`; 2026-07-28 moves them to the `io.modelcontextprotocol/tasks`
extension), so toolscout neither advertises them to its clients nor declares them to its
upstreams. What follows from that, in both eras:
- a client that asks for `execute_tool` as a task (the `task` field, or the extension in its
  request's `_meta`) gets the ordinary answer when the call ends, as a server that does not
  declare tasks must give it;
- `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` and `tasks/update` answer -32601
  with `TASK_METHOD_REFUSAL`;
- a tool its upstream runs only as a task (`execution.taskSupport: "required"`, or a refusal
  for want of the extension) is refused with `refused_task`, at once, naming the tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["TASKS_EXTENSION", "TASK_METHODS", "TASK_METHOD_REFUSAL", "needs_tasks", "refused_task"]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
# Every task method of either era (2025-11-25 has result and list; 2026-07-28 has update).
TASK_METHODS = ("tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tasks/update")
TASK_METHOD_REFUSAL = (
    "toolscout does not pass tasks through, so it has no tasks to report on. Call execute_tool "
    "without asking for a task: it answers when the tool has finished."
)


def refused_task(tool: str, server: str) -> str:
    """What an agent reads for a tool that upstream `server` runs only as a task."""
    return (
        f"'{tool}' runs only as a task (a long-running call whose result is fetched later), as "
        f"upstream server '{server}' requires, and toolscout does not pass tasks through. "
        "Use search_tools to find another tool for the task."
    )


def needs_tasks(error_data: Any) -> bool:
    """Whether a -32021 (missing required client capability) error's data asks for the tasks extension."""
    if not isinstance(error_data, Mapping):
        return False
    required = error_data.get("requiredCapabilities")
    extensions = required.get("extensions") if isinstance(required, Mapping) else None
    return isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions

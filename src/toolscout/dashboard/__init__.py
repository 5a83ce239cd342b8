"""The operator's dashboard at /ui of `toolscout serve --transport http` (and of `toolscout ui`).

Server-rendered pages of the same Starlette app as /mcp, one module each, over the same gateway
and stores as the commands (never a second implementation):

    servers.py     upstream states, reasons, next attempt, sign-in needed, try now
    tools.py       listed tools, why one is withheld, pending definitions with diff and Approve
    playground.py  a search as `search_tools` answers it, with what --explain adds, per profile
    learning.py    learned examples and generated phrases, with Remove
    activity.py    calls, errors and latency per server over the last hour
    calls.py       calls waiting for an operator's confirmation, with Allow and Deny

`site.py` mounts them under /ui and checks every request (Host, Origin, operator credential,
CSRF); `access.py` signs browsers in; `render.py` escapes and sets the security headers.
"""

from toolscout.dashboard.access import Access, Operator
from toolscout.dashboard.site import UI_PATH, Dashboard

__all__ = ["UI_PATH", "Access", "Dashboard", "Operator"]

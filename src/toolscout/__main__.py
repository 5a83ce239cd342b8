"""`python -m toolscout`: the same as the `toolscout` command (a gateway started this way is
recognised as toolscout, like the command, and never started by another gateway)."""

from __future__ import annotations

import sys

from toolscout.cli import main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(main())

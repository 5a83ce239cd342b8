"""Reading a JSON file a person may have written or edited: registries, overlays, pins, weights.

    document = read_json_file(path, "overlay file", advice="The format is described in docs/learning.md.")

Every way such a file can fail to load becomes one error of the caller's type, with one wording:

    cannot read overlay file /p/x.json: No such file or directory. <advice>
    overlay file /p/x.json is not UTF-8 text: line 3, column 7: invalid start byte. <advice>
    overlay file /p/x.json is not valid JSON: line 2, column 11: Expecting value. <advice>
    overlay file /p/x.json: key 'git__log' appears twice in one object. <advice>

The same key twice in one object is refused because json.loads would silently keep the last one,
dropping whatever the person wrote first. A UTF-8 byte order mark (as some Windows editors write)
is accepted. What the document must look like is the caller's business.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolscout.errors import ConfigError

__all__ = ["read_json_file"]

_REQUIRED: Any = object()


def read_json_file(
    path: Path,
    kind: str,
    *,
    error: type[Exception] = ConfigError,
    advice: str = "",
    if_missing: Any = _REQUIRED,
) -> Any:
    """The parsed content of the JSON file at `path`; `error(message)` if it cannot be had.

    `kind` names the file for a person ("registry file"); `advice` (a sentence) is appended to
    every message and says what to do. `if_missing`, when given, is returned for a file that does
    not exist instead of raising.
    """
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError as exc:
        if if_missing is not _REQUIRED:
            return if_missing
        raise error(_message(f"cannot read {kind} {path}: {exc.strerror or exc}", advice)) from exc
    except OSError as exc:
        raise error(_message(f"cannot read {kind} {path}: {exc.strerror or exc}", advice)) from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        where = _line_and_column(data, exc.start)
        raise error(_message(f"{kind} {path} is not UTF-8 text: {where}: {exc.reason}", advice)) from exc
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise error(_message(f"{kind} {path} is not valid JSON: {where}: {exc.msg}", advice)) from exc
    except _DuplicateKey as exc:
        raise error(_message(f"{kind} {path}: key '{exc.args[0]}' appears twice in one object", advice)) from exc
    except RecursionError:
        raise error(_message(f"{kind} {path} is nested too deeply to read", advice)) from None


def _message(problem: str, advice: str) -> str:
    return f"{problem}. {advice}" if advice else problem


def _line_and_column(data: bytes, offset: int) -> str:
    # Everything before the bad byte decoded fine, so the column can count characters, not bytes.
    start = data.rfind(b"\n", 0, offset) + 1
    column = len(data[start:offset].decode("utf-8-sig" if start == 0 else "utf-8")) + 1
    line = data.count(b"\n", 0, offset) + 1
    return f"line {line}, column {column}"


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result

"""Checking what an agent passes to `execute_tool` before anything reaches an upstream.

Every problem becomes an UnknownToolError or InvalidArgumentsError whose message says what was
wrong and what to send instead: the agent reads it and retries, so it must be specific (which
field, why, and the part of the schema that applies).
"""

from __future__ import annotations

import difflib
import functools
import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError, ValidationError, relevance
from referencing.exceptions import Unresolvable

from toolscout.catalog import ToolRecord
from toolscout.errors import InvalidArgumentsError, UnknownToolError

logger = logging.getLogger(__name__)

_MAX_ERRORS = 3
_MAX_FRAGMENT = 600
_MAX_MESSAGE = 300


def check_argument_size(value: Any, max_bytes: int) -> None:
    """Refuse arguments whose JSON is over `max_bytes`, or nested too deeply to serialize at all."""
    if isinstance(value, str):
        size = len(value) if value.isascii() else len(value.encode("utf-8", errors="surrogatepass"))
    else:
        try:
            size = len(json.dumps(value, ensure_ascii=False, default=str).encode("utf-8", errors="surrogatepass"))
        except RecursionError:
            raise InvalidArgumentsError(
                "'arguments' are nested too deeply to be sent; flatten them to what the tool's schema asks for"
            ) from None
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentsError(f"'arguments' cannot be written as JSON ({exc})") from None
    if size > max_bytes:
        raise InvalidArgumentsError(
            f"'arguments' are {size:,} bytes as JSON, over the limit of {max_bytes:,} bytes "
            "(max_argument_bytes); send less data per call, e.g. a file path or a smaller range instead of the content"
        )


def parse_arguments(value: Any) -> dict[str, Any]:
    """The arguments as a JSON object; a JSON string holding an object is accepted too."""
    if value is None:
        return {}
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidArgumentsError(
                f"'arguments' is a string but not valid JSON ({exc.msg} at character {exc.pos}); "
                "pass a JSON object such as {\"city\": \"Paris\"}"
            ) from exc
        except RecursionError:
            raise InvalidArgumentsError(
                "'arguments' is a JSON string nested too deeply to read; pass a JSON object such as {\"city\": \"Paris\"}"
            ) from None
    if not isinstance(value, dict):
        raise InvalidArgumentsError(
            f"'arguments' must be a JSON object mapping parameter names to values, not {_json_type(value)}"
        )
    return value


def closest_ids(name: str, ids: Iterable[str], n: int = 5) -> list[str]:
    """Ids that look like `name`: close spellings first, then ids that end with the same tool name."""
    ids = list(ids)
    close = difflib.get_close_matches(name, ids, n=n, cutoff=0.5)
    suffix = [i for i in ids if i.endswith(f"__{name}") or i.split("__")[-1] == name]
    return list(dict.fromkeys(suffix + close))[:n]


def unknown_tool(name: str, ids: Iterable[str]) -> UnknownToolError:
    suggestions = closest_ids(name, ids)
    hint = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
    return UnknownToolError(
        f"No tool has the id '{name}'.{hint} Use search_tools to find a tool and pass its 'id' "
        "exactly as returned."
    )


@functools.lru_cache(maxsize=512)
def _validator(schema_json: str) -> jsonschema.protocols.Validator | None:
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        # The upstream's own problem: let the call through and let the upstream judge the input.
        logger.warning("an upstream tool has an invalid input schema (%s); not validating", exc.message)
        return None
    return cls(schema)


# tool id -> (the schema object it was built for, its validator). Records are immutable and a
# catalog reuses them across calls, so an identity check skips serializing the schema per call.
_by_tool: dict[str, tuple[Any, jsonschema.protocols.Validator | None]] = {}
_MAX_CACHED_TOOLS = 4096


def _validator_of(tool: ToolRecord) -> jsonschema.protocols.Validator | None:
    cached = _by_tool.get(tool.id)
    if cached is not None and cached[0] is tool.input_schema:
        return cached[1]
    validator = _validator(json.dumps(dict(tool.input_schema), sort_keys=True, default=str))
    if len(_by_tool) >= _MAX_CACHED_TOOLS:
        _by_tool.clear()
    _by_tool[tool.id] = (tool.input_schema, validator)
    return validator


def validate_arguments(tool: ToolRecord, arguments: Mapping[str, Any]) -> None:
    """Raise InvalidArgumentsError naming each wrong field, why, and its schema fragment."""
    schema = tool.input_schema or {}
    if not schema:
        return
    validator = _validator_of(tool)
    if validator is None:
        return
    try:
        errors = sorted(validator.iter_errors(dict(arguments)), key=relevance)
    except Unresolvable as exc:
        # A $ref we cannot follow (remote, or broken): the upstream validates on its own.
        logger.warning("cannot validate arguments of '%s': unresolvable $ref (%s)", tool.id, exc)
        return
    if not errors:
        return
    lines = [_explain(error) for error in errors[:_MAX_ERRORS]]
    more = f" (and {len(errors) - _MAX_ERRORS} more)" if len(errors) > _MAX_ERRORS else ""
    required = schema.get("required") or []
    raise InvalidArgumentsError(
        f"Invalid arguments for '{tool.id}'{more}:\n"
        + "\n".join(f"- {line}" for line in lines)
        + (f"\nRequired parameters: {', '.join(map(str, required))}." if required else "")
        + "\nFix the arguments and call execute_tool again."
    )


def _explain(error: ValidationError) -> str:
    where = _path(error.absolute_path)
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        fragment = (error.schema.get("properties") or {}).get(missing) if isinstance(error.schema, dict) else None
        field = f"{where}.{missing}" if where != "arguments" else missing
        detail = f"; expected: {_fragment(fragment)}" if fragment else ""
        return f"'{field}' is required but missing{detail}"
    if error.validator == "additionalProperties":
        allowed = sorted((error.schema.get("properties") or {}) if isinstance(error.schema, dict) else {})
        return f"{where}: {_message(error)}; allowed parameters: {', '.join(allowed) or 'none'}"
    return f"'{where}': {_message(error)}; schema: {_fragment(error.schema)}"


def _message(error: ValidationError) -> str:
    """jsonschema quotes the offending value in full; a huge one must not flood the agent's context,
    so the middle of a long message goes (its end says what was expected)."""
    text = error.message
    return text if len(text) <= _MAX_MESSAGE else f"{text[:_MAX_MESSAGE // 2]} ... {text[-_MAX_MESSAGE // 4:]}"


def _path(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "arguments"


def _fragment(schema: Any) -> str:
    text = json.dumps(schema, ensure_ascii=False, default=str)
    return text if len(text) <= _MAX_FRAGMENT else text[: _MAX_FRAGMENT - 3] + "..."


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "an array"
    return "null" if value is None else f"a {type(value).__name__}"

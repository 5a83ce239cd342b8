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
import re
from collections.abc import Iterable, Mapping
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError, ValidationError, relevance
from referencing.exceptions import Unresolvable

from toolscout.catalog import ToolRecord
from toolscout.naming import ID_SEPARATOR, qualified_forms
from toolscout.errors import InvalidArgumentsError, ToolCallError, UnknownToolError

__all__ = [
    "ambiguous_tool",
    "check_argument_size",
    "closest_ids",
    "closest_parameter",
    "parse_arguments",
    "resolve_tool",
    "unknown_tool",
    "validate_arguments",
]

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


# How alike (difflib's ratio, 0..1) a name and an id, or their tool parts, must be to be suggested:
# one or two slips of the keys in a name of ordinary length, not a shared prefix such as "get_".
_CLOSE_SPELLING = 0.85


def closest_ids(name: str, ids: Iterable[str], n: int = 3) -> list[str]:
    """Ids `name` was probably meant as, closest first; none rather than unrelated ones.

    An id qualifies when it is spelled nearly like `name`, as a whole or in its tool part (the
    part after the server: "time__get_curent_time" -> "time__get_current_time", "get_forcast" ->
    "weather__get_forecast"), or when the words of one hold every word of the other and there are
    at least two ("send_email" -> "mail__send_email_message", "email__send")."""
    wanted = name.casefold()
    wanted_part = wanted.split(ID_SEPARATOR, 1)[-1]
    wanted_words = set(_words(wanted_part))
    scored: list[tuple[float, str]] = []
    for tool_id in ids:
        folded = tool_id.casefold()
        part = folded.split(ID_SEPARATOR, 1)[-1]
        score = max(
            difflib.SequenceMatcher(None, wanted, folded).ratio(),
            difflib.SequenceMatcher(None, wanted_part, part).ratio(),
        )
        part_words = set(_words(part))
        same_words = (len(wanted_words) >= 2 and wanted_words <= set(_words(folded))) or (
            len(part_words) >= 2 and part_words <= wanted_words
        )
        if score >= _CLOSE_SPELLING or same_words:
            scored.append((score, tool_id))
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    return [tool_id for _, tool_id in scored[:n]]


def resolve_tool(name: str, tools: Iterable[ToolRecord], withheld: Iterable[ToolRecord] = ()) -> ToolRecord:
    """The tool `name` stands for: its id, its upstream name when only one tool has it, or a
    server-qualified name. UnknownToolError lists the ids when the name is ambiguous, or the
    closest ids when nothing matches. `withheld` tools count when telling whether a name is
    ambiguous (a name must never reach one tool because a same-named one is withheld), and naming
    one is refused with ToolCallError."""
    tools = list(tools)
    hidden = list(withheld)
    by_id = {tool.id: tool for tool in tools}
    if name in by_id:
        return by_id[name]
    everything = tools + hidden
    for matches in (
        [tool for tool in everything if tool.name == name],
        [tool for tool in everything if tool.name.casefold() == name.casefold()],
        # Every reading of a qualified name at once: "a__b__c" may be server a's "b__c" or server
        # a__b's "c"; when both exist it names neither.
        list({
            tool.id: tool for server, tool_name in qualified_forms(name) for tool in everything
            if tool.server.casefold() == server.casefold()
            and tool_name.casefold() in (tool.name.casefold(), tool.id.casefold())
        }.values()),
    ):
        if len(matches) == 1:
            if matches[0].id not in by_id:
                raise ToolCallError(f"'{name}' names '{matches[0].id}', which is withheld; see toolscout tools.")
            return matches[0]
        if matches:
            raise ambiguous_tool(name, matches)
    raise unknown_tool(name, by_id)


def ambiguous_tool(name: str, tools: Iterable[ToolRecord]) -> UnknownToolError:
    tools = sorted(tools, key=lambda tool: tool.id)
    listed = ", ".join(f"{tool.id} (server {tool.server})" for tool in tools[:10])
    more = f" and {len(tools) - 10} more" if len(tools) > 10 else ""
    return UnknownToolError(
        f"'{name}' names {len(tools)} tools: {listed}{more}. Pass the id of the one you mean as 'name'."
    )


def unknown_tool(name: str, ids: Iterable[str]) -> UnknownToolError:
    suggestions = closest_ids(name, ids)
    hint = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
    return UnknownToolError(
        f"No tool is called '{name}'.{hint} Use search_tools to find a tool and pass its 'name' "
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


def validate_arguments(tool: ToolRecord, arguments: Mapping[str, Any]) -> list[str]:
    """Raise InvalidArgumentsError naming each wrong field, why, and its schema fragment.

    Unknown parameters: rejected when the schema forbids extras (`additionalProperties: false`) or
    when the key looks like a misspelt parameter that was not given ("amout" for "amount"). A
    schema that explicitly allows extras (`additionalProperties` true or a schema) takes them. A
    schema that says nothing lets them through, since many upstreams accept them, but they are not
    passed silently: the returned notes (one per such key) go back to the agent with the result.
    """
    schema = tool.input_schema or {}
    if not schema:
        return []
    typos, ignored = _unknown_parameters(schema, arguments)
    validator = _validator_of(tool)
    errors: list[ValidationError] = []
    if validator is not None:
        try:
            errors = sorted(validator.iter_errors(dict(arguments)), key=relevance)
        except Unresolvable as exc:
            # A $ref we cannot follow (remote, or broken): the upstream validates on its own.
            logger.warning("cannot validate arguments of '%s': unresolvable $ref (%s)", tool.id, exc)
            errors = []
    if typos:
        # The misspelt keys explain themselves; the schema's own complaint about them would repeat it.
        errors = [e for e in errors if not (e.validator == "additionalProperties" and not e.absolute_path)]
    if not errors and not typos:
        return [_ignored_note(tool, key, schema) for key in ignored]
    lines = [_unexpected(key, hint, _properties(schema)) for key, hint in typos]
    lines += [_explain(error) for error in errors[: max(0, _MAX_ERRORS - len(lines))]]
    hidden = len(typos) + len(errors) - len(lines)
    more = f" (and {hidden} more)" if hidden > 0 else ""
    required = schema.get("required") or []
    raise InvalidArgumentsError(
        f"Invalid arguments for '{tool.id}'{more}:\n"
        + "\n".join(f"- {line}" for line in lines)
        + (f"\nRequired parameters: {', '.join(map(str, required))}." if required else "")
        + "\nFix the arguments and call execute_tool again."
    )


def _properties(schema: Any) -> dict[str, Any]:
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    return dict(properties) if isinstance(properties, Mapping) else {}


def _unknown_parameters(
    schema: Mapping[str, Any], arguments: Mapping[str, Any]
) -> tuple[list[tuple[str, str | None]], list[str]]:
    """Top-level keys the schema does not name: (rejected keys with the parameter they probably
    meant, keys let through). Empty when the schema names no parameters or welcomes extras."""
    properties = _properties(schema)
    additional = schema.get("additionalProperties")
    if not properties or additional is True or isinstance(additional, Mapping):
        return [], []
    patterns = schema.get("patternProperties")
    unknown = [
        key for key in arguments
        if key not in properties and not _matches_pattern(key, patterns)
    ]
    if not unknown:
        return [], []
    not_given = [name for name in properties if name not in arguments]
    required = [name for name in schema.get("required") or () if name in not_given]
    typos: list[tuple[str, str | None]] = []
    ignored: list[str] = []
    for key in unknown:
        hint = closest_parameter(key, not_given)
        if hint is None and len(unknown) == 1 and len(required) == 1:
            # One key too many and one required parameter missing: that is what it was meant for.
            hint = required[0]
        if additional is False or hint is not None:
            typos.append((key, hint))
        else:
            ignored.append(key)
    return typos, ignored


def _matches_pattern(key: str, patterns: Any) -> bool:
    if not isinstance(patterns, Mapping):
        return False
    for pattern in patterns:
        try:
            if re.search(str(pattern), key):
                return True
        except re.error:
            return True  # a pattern we cannot read: assume it covers the key, the upstream judges
    return False


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [word for word in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if word]


def closest_parameter(key: str, names: Iterable[str]) -> str | None:
    """The parameter `key` was probably meant as: a close spelling ("amout" -> "amount") or one
    sharing a word with it ("file_path" -> "files"); None when nothing is close."""
    names = list(names)
    folded = {"".join(_words(name)): name for name in names}
    close = difflib.get_close_matches("".join(_words(key)), list(folded), n=1, cutoff=0.75)
    if close:
        return folded[close[0]]
    words = [w for w in _words(key) if len(w) >= 3]
    for name in names:
        for word in _words(name):
            if len(word) >= 3 and any(w.startswith(word) or word.startswith(w) for w in words):
                return name
    return None


def _unexpected(key: str, hint: str | None, properties: Mapping[str, Any] | None = None) -> str:
    if hint is None:
        return f"unexpected parameter '{key}'"
    fragment = (properties or {}).get(hint)
    return f"unexpected parameter '{key}'; did you mean '{hint}'?" + (
        f" expected: {_fragment(fragment)}" if fragment else ""
    )


def _ignored_note(tool: ToolRecord, key: str, schema: Mapping[str, Any]) -> str:
    names = ", ".join(_properties(schema))
    return (
        f"Note: '{key}' is not a parameter of '{tool.id}' (its parameters: {names}); it was passed on, "
        "but the tool may have ignored it."
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
        properties = _properties(error.schema)
        given = error.instance if isinstance(error.instance, Mapping) else {}
        extra = [key for key in given if key not in properties]
        not_given = [name for name in properties if name not in given]
        named = "; ".join(_unexpected(f"{where}.{key}" if where != "arguments" else key,
                                      closest_parameter(key, not_given), properties) for key in extra[:5])
        allowed = sorted(properties)
        return f"{named or _message(error)}; allowed parameters: {', '.join(allowed) or 'none'}"
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
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "an object"
    return "null" if value is None else "a value of another kind"

"""Tool-argument coercion: cast string arguments of parsed tool calls to the types their schema declares.

Mirrors `ResponseParser(tools=...)` of transformers 5.23.0: tools are JSON-schema dicts (OpenAI
`{"type": "function", "function": {...}}` or the flat `{name, parameters}` form) or Python callables,
whose schema comes from `respc.runtime.schema.get_json_schema` instead of transformers'.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from types import FunctionType, MethodType

TYPE_CHECKING = False  # typing costs ~5 ms to import: keep it off a generated module's import path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["coerce", "coerce_tool_calls", "schema_types", "tool_params"]

_NOT_FINITE = (float("inf"), float("-inf"))


def tool_params(tools: Iterable[dict | Callable] | None, target: str | None = None) -> dict[str, dict]:
    """Map each usable tool's name to its parameter `properties`; unusable entries are skipped silently.
    Python functions are described as the `target` release's `get_json_schema` would (default: newest)."""
    params: dict[str, dict] = {}
    for tool in tools or []:
        if isinstance(tool, (FunctionType, MethodType)):  # what inspect.isfunction/ismethod test
            from respc.runtime.schema import get_json_schema  # only callables need the docstring parser

            tool = get_json_schema(tool, target)
        description = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(description, dict) and isinstance(description.get("name"), str):
            parameters = description.get("parameters")
            properties = parameters.get("properties") if isinstance(parameters, dict) else None
            params[description["name"]] = properties if isinstance(properties, dict) else {}
    return params


def schema_types(schema: Any) -> tuple[str, ...]:
    """The JSON-schema type names a parameter admits, in the order casts are tried."""
    if not isinstance(schema, dict):
        return ()
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else []
    if isinstance(declared, list):
        types.extend(name for name in declared if isinstance(name, str))
    for union in ("anyOf", "oneOf"):
        for choice in schema.get(union) or []:
            types.extend(schema_types(choice))
    if schema.get("nullable") and "null" not in types:
        types.append("null")
    return tuple(types)


def coerce(raw: str, types: tuple[str, ...]) -> Any:
    """Cast `raw` to the first of `types` it fits; `string` does not stop the search (quirk Q32)."""
    for name in types:
        try:
            if name == "integer":
                try:
                    return int(raw)
                except ValueError:
                    number = float(raw)  # whole numbers written as floats ("3.0", "1e3") are integers too
                    if not number.is_integer():
                        continue
                    return int(number)
            if name == "number":
                number = float(raw)
                if number != number or number in _NOT_FINITE:
                    continue
                return int(number) if number.is_integer() and "." not in raw else number
            if name == "boolean" and raw.strip().lower() in ("true", "1", "false", "0"):
                return raw.strip().lower() in ("true", "1")
            if name == "null" and raw.strip() in ("null", "None"):
                return None
            if name in ("object", "array"):
                decoded = json.loads(raw)
                if isinstance(decoded, dict if name == "object" else list):
                    return decoded
        except ValueError:
            continue
    return raw


def coerce_tool_calls(value: Any, params: dict[str, dict]) -> Any:
    """Cast the string arguments of every tool call in `value` in place; lists are walked recursively."""
    if isinstance(value, list):
        return [coerce_tool_calls(item, params) for item in value]
    function = value.get("function") if isinstance(value, dict) else None
    if not isinstance(function, dict):
        return value
    name, arguments = function.get("name"), function.get("arguments")
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return value
    properties = params.get(name)
    if properties:
        for key, argument in arguments.items():
            if key not in properties:
                continue
            types = schema_types(properties[key])
            if not types:
                continue
            if isinstance(argument, str):
                arguments[key] = coerce(argument, types)
            elif isinstance(argument, list) and "array" not in types:
                # values collected by xml-inline's merge_duplicates are cast one by one
                arguments[key] = [coerce(item, types) if isinstance(item, str) else item for item in argument]
    return value

"""JSON schemas for tool functions, without transformers or torch.

Mirrors `transformers.utils.chat_template_utils.get_json_schema` of the targeted transformers release so
that compiled templates describe Python tools exactly as transformers would: same keys, same key order,
same exception classes. (5.24 also reads `name (type): description` entries in an Args block.) Its quirks are reproduced on purpose (see the comments); fixing one would make rendered prompts
differ from the reference.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
import types
from collections.abc import Callable
from contextlib import suppress
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin, get_type_hints

if TYPE_CHECKING:
    from respc.runtime.targets import Target

__all__ = ["DocstringParsingException", "TypeHintParsingException", "get_json_schema"]


class TypeHintParsingException(Exception):
    """A type hint has no JSON-schema equivalent (same name as transformers' exception)."""


class DocstringParsingException(Exception):
    """A docstring is missing, or does not describe every argument (same name as transformers' exception)."""


# Python types whose values can be written as JSON scalars, i.e. can appear in an "enum".
_SCALAR_TYPE_NAMES: dict[type, str] = {
    int: "integer",
    float: "number",
    str: "string",
    bool: "boolean",
    type(None): "null",
}

# Bare hints with a fixed schema; `None` stands for the empty schema of `Any`. Looked up as dict keys, like
# upstream, so subclasses are not matched and an unhashable hint raises TypeError.
_BARE_TYPE_NAMES: dict[Any, str | None] = {
    **_SCALAR_TYPE_NAMES,
    list: "array",
    tuple: "array",
    dict: "object",
    Any: None,
}

# Classes of optional libraries that transformers maps when they are installed: (module, attribute, type).
# They are found in `sys.modules` rather than imported: a hint can only be one of them once it is loaded.
_LIBRARY_TYPES: tuple[tuple[str, str, str], ...] = (
    ("PIL.Image", "Image", "image"),
    ("torch", "Tensor", "audio"),
)

# Docstring layout (Google style), with upstream's leniency: the summary ends at the first section keyword
# found anywhere, even mid-line; "Args:" / "Returns:" headers must start a line (not the first one) and be
# followed directly by a newline; the Args block ends at any "Returns:" or "Raises:", the Returns block only
# at "Raises:".
_SUMMARY_END = ("Args:", "Returns:", "Raises:")
_ARGS_END = ("Returns:", "Raises:")
_RETURNS_END = ("Raises:",)
_ARGS_HEADER = re.compile(r"\n\s*Args:\n")
_RETURNS_HEADER = re.compile(r"\n\s*Returns:\n")

# One "name: description" entry of an Args block. The description runs until the next line that holds a
# `word:` and is not indented deeper than this entry, or the end of the block. `\s*` after the colon may
# cross a newline, so an entry with an empty description swallows the following line.
_ARG_ENTRY = re.compile(
    r"""
    (?:\A|\n)
    (?P<indent>[ \t]*) (?P<name>\w+) : \s*
    (?P<text>.*?) \s*
    (?= \n (?!(?P=indent)[ \t]) [ \t]*\w+: | \Z )
    """,
    re.DOTALL | re.VERBOSE,
)
# transformers 5.24: an optional "(type)" between the name and the colon, in an entry and where the next
# one starts (`Target.docstring_arg_types`).
_TYPED_ARG_ENTRY = re.compile(
    r"""
    (?:\A|\n)
    (?P<indent>[ \t]*) (?P<name>\w+) (?:[ \t]*\([^()\n]*\))? : \s*
    (?P<text>.*?) \s*
    (?= \n (?!(?P=indent)[ \t]) [ \t]*\w+(?:[ \t]*\([^()\n]*\))?: | \Z )
    """,
    re.DOTALL | re.VERBOSE,
)
_LINE_BREAK = re.compile(r"\s*\n\s*")
# A trailing "(choices: [...])" (JSON) turns into an "enum"; the first "(choices:" in the text opens it.
_CHOICES = re.compile(r"\(choices:\s*(?P<values>.*?)\)\s*$", re.IGNORECASE)


def get_json_schema(func: Callable[..., Any], target: str | Target | None = None) -> dict[str, Any]:
    """Describe `func` as an OpenAI-style tool schema, exactly as transformers' `get_json_schema` does in
    the `target` release (default: the newest supported).

    The description and argument descriptions come from the Google-style docstring, the types from the
    type hints; an implicit unannotated `self`/`cls` is ignored. A "Returns:" section and return hint are
    optional and go to a "return" entry.

    Raises:
        DocstringParsingException: no docstring, or an argument without a description.
        TypeHintParsingException: an argument without a type hint, or a hint with no JSON equivalent.
    """
    name = getattr(func, "__name__", "operation")
    doc = inspect.getdoc(func)
    if not doc:
        raise DocstringParsingException(
            f"Cannot generate JSON schema for {name} because it has no docstring!"
        )
    from respc.runtime.targets import get_target  # here: this module imports only the standard library

    summary, arg_docs, returns_doc = _parse_docstring(doc.strip(), get_target(target).docstring_arg_types)

    parameters = _parameters_schema(func, name)
    return_schema = parameters["properties"].pop("return", None)
    if return_schema is not None and returns_doc is not None:
        return_schema["description"] = returns_doc
    for arg, schema in parameters["properties"].items():
        if arg not in arg_docs:
            raise DocstringParsingException(
                f"Cannot generate JSON schema for {name} because the docstring has no description for the "
                f"argument '{arg}'"
            )
        _describe(schema, arg_docs[arg])

    function: dict[str, Any] = {"name": name, "description": summary, "parameters": parameters}
    if return_schema is not None:
        function["return"] = return_schema
    return {"type": "function", "function": function}


def _describe(schema: dict[str, Any], text: str) -> None:
    """Attach an argument's description, moving a trailing `(choices: ...)` into "enum"."""
    choices = _CHOICES.search(text)
    if choices:
        # Whatever JSON is given is iterated (a string gives its characters); only strings are stripped.
        values = json.loads(choices["values"])
        schema["enum"] = [value.strip() if isinstance(value, str) else value for value in values]
        text = text[: choices.start()].strip()
    schema["description"] = text


def _first_index(text: str, needles: tuple[str, ...], start: int = 0) -> int:
    """Index of the earliest occurrence of any needle at or after `start`, or `len(text)`."""
    found = [index for index in (text.find(needle, start) for needle in needles) if index >= 0]
    return min(found, default=len(text))


def _parse_docstring(doc: str, typed: bool) -> tuple[str, dict[str, str], str | None]:
    """Split a cleaned docstring into its summary, argument descriptions and Returns text (None if absent)."""
    summary = doc[: _first_index(doc, _SUMMARY_END)].strip()

    arg_docs: dict[str, str] = {}
    header = _ARGS_HEADER.search(doc)
    if header:
        block = doc[header.end() : _first_index(doc, _ARGS_END, header.end())].rstrip()
        block = "\n".join(line for line in block.split("\n") if line.strip())
        for entry in (_TYPED_ARG_ENTRY if typed else _ARG_ENTRY).finditer(block):
            # A repeated name keeps its last description; line breaks inside one become single spaces
            arg_docs[entry["name"]] = _LINE_BREAK.sub(" ", entry["text"].strip())

    returns_doc = None
    header = _RETURNS_HEADER.search(doc)
    if header:
        # Unlike the Args block, newlines and relative indentation are kept as written
        returns_doc = doc[header.end() : _first_index(doc, _RETURNS_END, header.end())].strip()
    return summary, arg_docs, returns_doc


def _parameters_schema(func: Callable[..., Any], name: str) -> dict[str, Any]:
    """The "parameters" object: a property per type hint (plus "return"), and the arguments lacking defaults."""
    hints = get_type_hints(func)
    params = inspect.signature(func).parameters
    first = next(iter(params), None)
    # `==` rather than `is`, as upstream, so objects with unusual `__eq__` behave (and fail) the same way
    receiver = (
        first if first in ("self", "cls") and params[first].annotation == inspect.Parameter.empty else None
    )

    required = []
    for param_name, param in params.items():
        if param_name == receiver:
            continue
        if param.annotation == inspect.Parameter.empty:
            raise TypeHintParsingException(f"Argument {param_name} is missing a type hint in function {name}")
        if param.default == inspect.Parameter.empty:
            required.append(param_name)  # *args and **kwargs included, as upstream

    properties: dict[str, Any] = {}
    for hint_name, hint in hints.items():
        if hint_name == receiver:
            continue
        if hint_name == "return":
            # The model never writes the return value, so an unsupported return hint is just left out
            with suppress(TypeHintParsingException):
                properties[hint_name] = _hint_schema(hint)
        else:
            properties[hint_name] = _hint_schema(hint)

    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    """An "enum" of JSON scalars, typed with each JSON type present, in order of first appearance."""
    type_names = list(dict.fromkeys(_SCALAR_TYPE_NAMES[type(value)] for value in values))
    return {"type": type_names[0] if len(type_names) == 1 else type_names, "enum": values}


def _bare_schema(hint: Any) -> dict[str, Any]:
    """Schema of a hint without type arguments: a basic type, `Any`, or a known library class."""
    missing = object()
    type_name = _BARE_TYPE_NAMES.get(hint, missing)
    if type_name is missing:
        type_name = next(
            (json_type for module, attr, json_type in _LIBRARY_TYPES if _is_loaded(module, attr, hint)),
            missing,
        )
    if type_name is missing:
        raise TypeHintParsingException(
            f"Couldn't convert the type hint {hint!r} to a JSON schema, likely because it is a custom class or "
            "object. Supported hints are int, float, str, bool, None, Any, Enum classes, typing.Literal, and "
            "list, tuple, dict and Union types of those; for anything else, write the JSON schema by hand."
        )
    return {} if type_name is None else {"type": type_name}


def _is_loaded(module: str, attr: str, hint: Any) -> bool:
    """Whether `hint` is `module.attr`, checked in `sys.modules` so that nothing gets imported."""
    cls = getattr(sys.modules.get(module), attr, None)
    return cls is not None and cls is hint


def _hint_schema(hint: Any) -> dict[str, Any]:
    """Convert one (already evaluated) type hint to a fresh JSON-schema dict."""
    origin, args = get_origin(hint), get_args(hint)

    if origin is None:
        if isinstance(hint, type) and issubclass(hint, Enum):
            # The model has to generate member values, not names
            values = [member.value for member in hint]
            if not values:
                raise TypeHintParsingException(
                    f"The Enum {hint.__name__} has no members, so nothing matches it."
                )
            if any(type(value) not in _SCALAR_TYPE_NAMES for value in values):
                raise TypeHintParsingException(
                    f"The Enum {hint.__name__} has member values that are not JSON scalars: {values}"
                )
            return _enum_schema(values)
        return _bare_schema(hint)

    if origin is Union or origin is types.UnionType:
        schema = _union_schema([arg for arg in args if arg is not type(None)])
        if type(None) in args:
            schema["nullable"] = True
        return schema

    if origin is Literal and args:
        if any(type(arg) not in _SCALAR_TYPE_NAMES for arg in args):
            raise TypeHintParsingException(
                "Only int, float, str, bool and None values can be listed in Literal."
            )
        return _enum_schema(list(args))

    if origin is list:
        # Extra type arguments (`list[int, str]`) are ignored
        return {"type": "array", "items": _hint_schema(args[0])} if args else {"type": "array"}

    if origin is tuple:
        if not args:
            return {"type": "array"}
        if len(args) == 1:
            raise TypeHintParsingException(
                f"The type hint {str(hint).replace('typing.', '')} is a one-element tuple; use list[...] for "
                "several elements, or the element type itself for one."
            )
        if Ellipsis in args:
            raise TypeHintParsingException(
                "Variable-length tuple[..., ...] hints are not supported; use list[...]."
            )
        return {"type": "array", "prefixItems": [_hint_schema(arg) for arg in args]}

    if origin is dict:
        # JSON object keys are always strings, so only the value type can be expressed
        if len(args) != 2:
            return {"type": "object"}
        return {"type": "object", "additionalProperties": _hint_schema(args[1])}

    raise TypeHintParsingException(f"Couldn't convert the type hint {hint!r} to a JSON schema.")


def _union_schema(members: list[Any]) -> dict[str, Any]:
    """Schema of the non-None members of a Union (nullability is added by the caller)."""
    schemas = [_hint_schema(member) for member in members]
    if len(schemas) == 1:
        return schemas[0]
    if all(schema.keys() == {"type"} and isinstance(schema["type"], str) for schema in schemas):
        # Plain types merge into one sorted, de-duplicated "type" list (`list | tuple` is just "array")
        type_names = sorted({schema["type"] for schema in schemas})
        return {"type": type_names[0] if len(type_names) == 1 else type_names}
    # Schemas with more keys ("items", "enum", ...) or none at all (`Any`) would lose information if merged
    return {"anyOf": schemas}

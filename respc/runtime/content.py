"""Content parsers: turn the raw body of a closed region into its value.

Each parser mirrors `transformers.utils.chat_parsing.content_parsers` of the targeted transformers
release exactly, including which inputs raise and with which exception type; generated modules call
them by name, passing their release (`respc.runtime.targets`), which decides the few ways they differ.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

from respc.runtime.calls import parse_python_call_list
from respc.runtime.tags import tag_rows, tag_shape

TYPE_CHECKING = False  # typing costs ~5 ms to import: keep it off a generated module's import path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any

    from respc.runtime.targets import Target

__all__ = [
    "CONTENT_PARSERS",
    "DIRTY_PARSERS",
    "content_parser",
    "parse_bool",
    "parse_content",
    "parse_float",
    "parse_int",
    "parse_json",
    "parse_kv_lines",
    "parse_python_call_list",
    "parse_text",
    "parse_xml_inline",
]

# Placeholders for strings pulled out by `string_delims` before the JSON dialect rewrites run.
# They are control characters that real model output never contains; input holding them is refused.
_SENTINEL_OPEN, _SENTINEL_CLOSE = "\x01", "\x02"


def _strip(text: str, args: dict) -> str:
    return text.strip() if args.get("strip", True) else text


def parse_text(text: str, args: dict, target: Target) -> str:
    """The body itself, stripped of Unicode whitespace unless `strip` is false."""
    return text.strip() if args.get("strip", True) else text


def parse_int(text: str, args: dict, target: Target) -> int:
    """Python `int()` of the (optionally stripped) body: `+4_2` and Unicode digits are accepted."""
    return int(_strip(text, args))


def parse_float(text: str, args: dict, target: Target) -> float:
    """Python `float()` of the (optionally stripped) body: `nan`, `inf` and `1e3` are accepted."""
    return float(_strip(text, args))


def parse_bool(text: str, args: dict, target: Target) -> bool:
    """True iff the lower-cased body is `true` or `1`; never raises."""
    return _strip(text, args).lower() in ("true", "1")


# The patterns below are compiled on first use, each once (the `regex` module's own cache costs a few µs a
# call), and `regex` is imported only then: a parser whose fields are text or plain JSON never needs it.


@lru_cache(maxsize=256)
def _string_pattern(open_delim: str, close_delim: str) -> Any:
    import regex

    return regex.compile(regex.escape(open_delim) + r"(.*?)" + regex.escape(close_delim), flags=regex.DOTALL)


_tag_shape = lru_cache(maxsize=256)(tag_shape)


@lru_cache(maxsize=256)
def _tag_pattern(tag_pattern: str) -> Any:
    import regex

    return regex.compile(tag_pattern, flags=regex.DOTALL)


@lru_cache(maxsize=1)
def _unquoted_key() -> Any:
    import regex

    return regex.compile(r"(?<=[{,])(\w+):")


# The first alternative swallows a whole quoted string so that key-like text inside one is left alone.
_KEY_OUTSIDE_STRINGS = r'"(?:\\.|[^"\\])*"|(?<=[{,])(\s*)(\w+)(\s*):'


@lru_cache(maxsize=1)
def _unquoted_key_outside_strings() -> Any:
    import regex

    return regex.compile(_KEY_OUTSIDE_STRINGS)


@lru_cache(maxsize=1)
def _unquoted_key_outside_strings_ascii() -> Any:
    """`re`'s twin of the pattern above for ASCII text, about twice as fast: with the ASCII flag `\\s` and
    `\\w` mean on ASCII text what they mean to `regex`, and without DOTALL, as upstream compiles it. The
    string's two alternatives start with different characters (a backslash, anything else) and the key's
    runs are of disjoint classes, so `re` never backtracks far; tests/runtime/test_runtime.py compares the two.
    """
    import re

    return re.compile(_KEY_OUTSIDE_STRINGS, re.ASCII)


def _quote_key(match: Any) -> str:
    if match.group(2) is None:
        return match.group(0)
    return f'{match.group(1)}"{match.group(2)}"{match.group(3)}:'


# What a JSON value can start with, after JSON's whitespace (Python's `json` also reads NaN and
# Infinity): text starting with anything else cannot parse, so `allow_non_json` returns it at once
# instead of raising and catching a JSONDecodeError (which costs more than the rest of a small value).
_JSON_STARTS = frozenset('{["-0123456789tfnNI')
_JSON_SPACE = " \t\n\r"


# Whole texts whose `json.loads` value is known without the call (a tool argument's value is often one
# word or a small number): the literals, and ASCII digits without a leading zero, short enough that
# `int()` is exact and cheap (json reads integers with `int()` too).
_JSON_WORDS = {"true": True, "false": False, "null": None}

# `json.loads` wraps the C scanner in two Python calls and two whitespace matches (more than half the time
# of a small value). The scanner alone gives the same value when it reads the whole text from its first
# character; anything else (leading or trailing whitespace, extra data, a BOM, an error) goes to
# `json.loads`, which gives its own answer or exception. The decoder's defaults are `json.loads`'.
_SCAN = json.JSONDecoder().scan_once


def _loads(text: str) -> Any:
    """`json.loads(text)`, for a `str`."""
    try:
        value, end = _SCAN(text, 0)
    except (StopIteration, ValueError):
        end = -1  # json.loads is called outside this handler: its error must not chain to the scanner's
    return value if end == len(text) else json.loads(text)


def parse_json(text: str, args: dict, target: Target) -> Any:
    """`json.loads` after the optional dialect rewrites (`string_delims`, then `unquoted_keys`)."""
    return _json_parser(
        args.get("string_delims", []),
        args.get("unquoted_keys", False),
        args.get("allow_non_json"),
        args.get("strip", True),
        target,
    )(text)


def _json_parser(
    string_delims: Any, unquoted_keys: Any, lenient: Any, strip: Any, target: Target
) -> Callable[[Any], Any]:
    """The json parser with its arguments read: `plain` for bodies read as they are, `dialect` for the
    rewrites, chosen now when the arguments are of the types JSON gives them, else at each call (as
    upstream takes each flag's truth, and fails, there)."""

    def plain(text: Any) -> Any:
        if type(text) is not str:
            try:
                return json.loads(text)
            except json.JSONDecodeError as error:
                failure = error
            return _json_failure(text, text, failure, lenient, strip)
        if text in _JSON_WORDS:
            return _JSON_WORDS[text]
        if text.isdigit() and text.isascii() and len(text) < 16 and (text[0] != "0" or len(text) == 1):
            return int(text)
        if lenient is not None and lenient is not False:
            # No JSON value starts so: json.loads would fail, and upstream then asks `lenient`.
            head = text.lstrip(_JSON_SPACE)
            if (not head or head[0] not in _JSON_STARTS) and lenient:
                return text.strip() if strip else text
        try:
            return _loads(text)
        except json.JSONDecodeError as error:
            failure = error
        return _json_failure(text, text, failure, lenient, strip)

    def dialect(text: Any) -> Any:
        working = _dialect(text, string_delims, unquoted_keys, target)
        try:
            return _loads(working) if type(working) is str else json.loads(working)
        except json.JSONDecodeError as error:
            failure = error
        return _json_failure(text, working, failure, lenient, strip)

    if type(unquoted_keys) is bool and type(string_delims) is list:
        return plain if not unquoted_keys and not string_delims else dialect
    return lambda text: (
        plain if not unquoted_keys and type(string_delims) is list and not string_delims else dialect
    )(text)


def _json_failure(text: Any, working: Any, error: json.JSONDecodeError, lenient: Any, strip: Any) -> Any:
    """A body json.loads refused: the body itself when `lenient`, else upstream's error."""
    if lenient:
        return text.strip() if strip else text
    if working == text:
        raise ValueError(
            f"json parser could not parse region as JSON.\nContent: {text!r}\nError: {error}"
        ) from error
    raise ValueError(
        "json: could not parse after dialect transforms.\n"
        f"Original: {text!r}\nTransformed: {working!r}\nError: {error}"
    ) from error


def _dialect(text: str, string_delims: list, unquoted_keys: bool, target: Target) -> str:
    """The text with `string_delims` strings set aside, bare keys quoted, then the strings put back as
    JSON strings: upstream's passes, with the same result."""
    if string_delims and (_SENTINEL_OPEN in text or _SENTINEL_CLOSE in text):
        raise ValueError(
            "json: input contains reserved sentinel characters (\\x01/\\x02); cannot parse safely."
        )
    if type(text) is str and type(string_delims) is list and len(string_delims) <= 1:
        fast = _dialect_one_pass(text, string_delims, unquoted_keys)
        if fast is not None:
            return fast
    working = text
    extracted: list[str] = []
    for open_delim, close_delim in string_delims:
        working = _set_aside(working, open_delim, close_delim, extracted)
    if unquoted_keys:
        if target.json_keys_skip_strings:
            pattern = (
                _unquoted_key_outside_strings_ascii()
                if working.isascii()
                else _unquoted_key_outside_strings()
            )
            working = pattern.sub(_quote_key, working)
        else:
            working = _unquoted_key().sub(r'"\1":', working)
    if extracted:
        # Upstream replaces each placeholder in turn; they are distinct tokens that no other text holds
        # (input holding the sentinels is refused, json.dumps escapes them), so one pass is the same.
        strings = [json.dumps(raw) for raw in extracted]
        working = _placeholder().sub(lambda match: strings[int(match.group(1))], working)
    return working


# For `_dialect_one_pass`: a bare key with nothing around it (`{city:`), as both releases quote it when no
# whitespace or quote is near; JSON strings that need no escape (`json.dumps` gives the text in quotes).
_BARE_KEY = re.compile(r"(?<=[{,])(\w+)(?=:)", re.ASCII)
_SPACE_OR_QUOTE = re.compile(r'[\s"]', re.ASCII)
_PLAIN_STRING = re.compile(r"[ !#-\[\]-~]*")
_OPAQUE = "\x01"  # joins the text around the strings; stands where upstream's placeholders stand


def _dialect_one_pass(text: str, string_delims: list, unquoted_keys: bool) -> str | None:
    r"""`_dialect`'s answer without its three passes, or None where this shortcut is not proven exact.

    For at most one pair of (non-empty) delimiters: the strings are cut out as upstream's `(.*?)` finds
    them (`str.split` when open and close are the same: the same non-overlapping occurrences, left to
    right). Upstream's placeholders (`\x01N\x02`) start and end with characters that are neither space,
    word, `{`, `,`, `:` nor `"` (the digits N between them are never next to `{`, `,` or `:`), so a key can
    neither start right after one nor run across one: the text around the strings, joined with
    one such character, quotes the same keys. The shortcut takes that text only when it is ASCII (where
    `re`'s ASCII `\w`/`\s` are `regex`'s), holds no `"` (so 5.24's string alternative never matches) and
    no whitespace (so the key's `\s*` groups are empty, in both releases' patterns): a key is then a
    maximal word run between `{`/`,` and `:`, as `_BARE_KEY` finds it, and `str.join` quotes it."""
    if string_delims:
        pair = string_delims[0]
        if type(pair) is not list or len(pair) != 2:
            return None
        open_delim, close_delim = pair
        if type(open_delim) is not str or type(close_delim) is not str or not open_delim or not close_delim:
            return None
        if open_delim == close_delim:
            pieces = text.split(open_delim)
            if len(pieces) % 2 == 0:  # the last open has no close: it stays in the text
                pieces[-2:] = [pieces[-2] + open_delim + pieces[-1]]
            outside, strings = pieces[0::2], pieces[1::2]
        else:
            outside, strings = [], []
            pos = 0
            while (start := text.find(open_delim, pos)) >= 0:
                end = text.find(close_delim, start + len(open_delim))
                if end < 0:
                    break
                outside.append(text[pos:start])
                strings.append(text[start + len(open_delim) : end])
                pos = end + len(close_delim)
            outside.append(text[pos:])
        joined = _OPAQUE.join(outside) if strings else text
    else:
        strings, joined = [], text
    if unquoted_keys:
        if not joined.isascii() or _SPACE_OR_QUOTE.search(joined) is not None:
            return None
        joined = '"'.join(_BARE_KEY.split(joined))
    if not strings:
        return joined
    parts = joined.split(_OPAQUE)
    if len(parts) != len(strings) + 1:
        return None
    out = [""] * (2 * len(strings) + 1)
    out[0::2] = parts
    if _PLAIN_STRING.fullmatch("".join(strings)) is not None:
        out[1::2] = strings
        return '"'.join(out)  # p0"s0"p1"s1"p2: each string in quotes, as json.dumps gives it
    out[1::2] = [json.dumps(raw) for raw in strings]
    return "".join(out)


def _set_aside(working: str, open_delim: str, close_delim: str, extracted: list[str]) -> str:
    """Upstream's `regex.sub(escape(open) + "(.*?)" + escape(close), ..., DOTALL)`: each open, then the
    nearest close after it, left to right; found with `str.find` (an open with no close after it has
    no match, nor has any later open). Empty delimiters keep the regex."""
    if not open_delim or not close_delim:

        def stash(match: Any) -> str:
            extracted.append(match.group(1))
            return f"{_SENTINEL_OPEN}{len(extracted) - 1}{_SENTINEL_CLOSE}"

        return _string_pattern(open_delim, close_delim).sub(stash, working)
    parts: list[str] = []
    pos = 0
    while True:
        start = working.find(open_delim, pos)
        if start < 0:
            break
        end = working.find(close_delim, start + len(open_delim))
        if end < 0:
            break
        extracted.append(working[start + len(open_delim) : end])
        parts.append(working[pos:start])
        parts.append(f"{_SENTINEL_OPEN}{len(extracted) - 1}{_SENTINEL_CLOSE}")
        pos = end + len(close_delim)
    if not parts:
        return working
    parts.append(working[pos:])
    return "".join(parts)


@lru_cache(maxsize=1)
def _placeholder() -> Any:
    import re

    return re.compile("\x01([0-9]+)\x02")


def _value_of(value_parser: Any, target: Target) -> Callable[[Any], Any] | None:
    """The parser of a `value_parser` argument (None for none): built once when it is a dict naming a
    parser the target knows, else one that reads it for each value, as upstream does (and fails there)."""
    if value_parser is None:
        return None
    if type(value_parser) is dict:
        name, args = value_parser.get("name", "text"), value_parser.get("args", {})
        if type(name) is str and name in target.parser_names:
            return content_parser(name, args, target)
    return lambda raw: parse_content(
        raw, value_parser.get("name", "text"), value_parser.get("args", {}), target
    )


def parse_xml_inline(text: str, args: dict, target: Target) -> dict:
    """Collect every `tag_pattern` match into a dict of `key` -> (optionally parsed) `value`."""
    tag_pattern = args.get("tag_pattern")
    if tag_pattern is None:
        raise ValueError("xml-inline: 'tag_pattern' content_arg is required")
    shape = _tag_shape(tag_pattern) if type(tag_pattern) is str else None
    value = _value_of(args.get("value_parser"), target)
    return _xml_inline_parser(tag_pattern, shape, value, args.get("merge_duplicates", False), target)(text)


def _xml_inline_parser(
    tag_pattern: Any, shape: Any, value: Any, merge: Any, target: Target
) -> Callable[[Any], dict]:
    """The xml-inline parser with its arguments read: `shape` is the tag pattern's (`tag_shape`) when
    `str.find` can read its matches; `value` parses each value (None: kept as it is)."""

    def parse(text: Any) -> dict:
        if shape is not None and type(text) is str:
            if merge:
                return _tag_dict(tag_rows(text, shape), value, merge, target)
            # `_tag_dict` without merging, written out: a repeated key keeps its first place and last value.
            rows = tag_rows(text, shape)
            return dict(rows) if value is None else {key: value(raw) for key, raw in rows}
        pattern = _tag_pattern(tag_pattern)
        groups = pattern.groupindex
        if "key" not in groups:
            if pattern.search(text) is not None:
                raise ValueError(
                    f"xml-inline: tag_pattern must have a named group 'key'. Pattern: {tag_pattern}"
                )
            return {}
        has_value = "value" in groups
        if not merge and has_value:
            # `findall` builds no match objects (a third of the time), but gives "" for a group that did
            # not take part where a match object gives None: only an answer without "" can be trusted.
            key_at, value_at = groups["key"] - 1, groups["value"] - 1
            found = pattern.findall(text)
            if found and len(groups) > 1 and pattern.groups == len(groups):
                if all(row[key_at] and row[value_at] for row in found):
                    rows = [(row[key_at], row[value_at]) for row in found]
                    return dict(rows) if value is None else {key: value(raw) for key, raw in rows}
        return _tag_dict(_match_rows(pattern, text, tag_pattern, has_value), value, merge, target)

    return parse


def _match_rows(pattern: Any, text: str, tag_pattern: str, has_value: bool) -> Iterator[tuple[str, Any]]:
    """The `(key, raw value)` of each match, made as they are read: a missing key raises only after the
    values of the matches before it have been parsed, as upstream's loop does."""
    for match in pattern.finditer(text):
        key = match.group("key")
        if key is None:
            raise ValueError(f"xml-inline: tag_pattern must have a named group 'key'. Pattern: {tag_pattern}")
        yield key, match.group("value") if has_value else ""


def _tag_dict(rows: Iterable, value: Callable[[Any], Any] | None, merge: Any, target: Target) -> dict:
    """The dict of the `(key, raw value)` rows, in order, each value parsed by `value` (None: kept as it
    is), duplicates merged into lists if `merge`."""
    if not merge:
        # The same as assigning row by row: a repeated key keeps its first place and takes its last value.
        return dict(rows) if value is None else {key: value(raw) for key, raw in rows}
    out: dict[str, Any] = {}
    wraps_lists = target.xml_merge_wraps_lists
    merged: set[str] = set()
    for key, raw in rows:
        parsed = raw if value is None else value(raw)
        if key in out:
            # The first duplicate starts a list; 5.23 extends a first value that is already a list
            # instead of wrapping it (quirk Q15).
            if key not in merged if wraps_lists else not isinstance(out[key], list):
                out[key] = [out[key]]
                merged.add(key)
            out[key].append(parsed)
        else:
            out[key] = parsed
    return out


def parse_kv_lines(text: str, args: dict, target: Target) -> dict:
    """`key<kv_sep>value` lines (split on `line_sep`) into a dict; lines without the separator are skipped."""
    return _kv_lines_parser(
        args.get("line_sep", "\n"),
        args.get("kv_sep", ":"),
        args.get("strip", True),
        _value_of(args.get("value_parser"), target),
    )(text)


def _kv_lines_parser(line_sep: Any, kv_sep: Any, strip: Any, value: Any) -> Callable[[Any], dict]:
    """The kv-lines parser with its arguments read (`value` parses each value; None keeps it)."""

    def parse(text: Any) -> dict:
        out: dict[str, Any] = {}
        for line in text.split(line_sep):
            if strip:
                line = line.strip()
            if not line or kv_sep not in line:
                continue
            key, raw = line.split(kv_sep, 1)
            if strip:
                key, raw = key.strip(), raw.strip()
            out[key] = raw if value is None else value(raw)
        return out

    return parse


CONTENT_PARSERS: dict[str, Callable[[str, dict, Target], Any]] = {
    "text": parse_text,
    "int": parse_int,
    "float": parse_float,
    "bool": parse_bool,
    "json": parse_json,
    "xml-inline": parse_xml_inline,
    "kv-lines": parse_kv_lines,
    "python-call-list": parse_python_call_list,
}

# Parsers whose value is only meaningful once the region closes: their chunks stream with `dirty: True`.
DIRTY_PARSERS = frozenset({"json", "xml-inline", "kv-lines", "python-call-list"})


def parse_content(text: str, name: str, args: dict, target: Target) -> Any:
    """Run the content parser called `name` as `target` knows it (a name it does not know raises
    `KeyError`, an unhashable one `TypeError`, as upstream)."""
    if name not in target.parser_names:
        raise KeyError(name)
    return CONTENT_PARSERS[name](text, args, target)


# -- one field's parser ---------------------------------------------------------------------------------
# A generated module builds its fields' parsers once, when imported: what the arguments decide (which
# dialect passes run, the tag pattern's shape, the value parser) is settled there instead of on every
# region. Arguments of any unusual type (which upstream reads with truthiness, or fails on) keep the
# general parser, which answers as upstream does.


def content_parser(name: str, args: Any, target: Target) -> Callable[[str], Any]:
    """`lambda text: parse_content(text, name, args, target)`, with the arguments read once: the same
    values and exceptions (arguments that are not a dict are read at each call, where upstream fails)."""
    if type(name) is not str or name not in target.parser_names:
        return lambda text: parse_content(text, name, args, target)  # raises as upstream's lookup does
    if type(args) is dict:
        if name == "json":
            return _json_parser(
                args.get("string_delims", []),
                args.get("unquoted_keys", False),
                args.get("allow_non_json"),
                args.get("strip", True),
                target,
            )
        if name == "xml-inline" and args.get("tag_pattern") is not None:
            tag_pattern = args["tag_pattern"]
            shape = tag_shape(tag_pattern) if type(tag_pattern) is str else None
            value = _value_of(args.get("value_parser"), target)
            return _xml_inline_parser(tag_pattern, shape, value, args.get("merge_duplicates", False), target)
        if name == "kv-lines":
            return _kv_lines_parser(
                args.get("line_sep", "\n"),
                args.get("kv_sep", ":"),
                args.get("strip", True),
                _value_of(args.get("value_parser"), target),
            )
    general = CONTENT_PARSERS[name]
    return lambda text: general(text, args, target)

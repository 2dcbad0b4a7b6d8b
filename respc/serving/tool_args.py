"""Tool-call arguments as they are generated: the incremental half of `respc.serving.DeltaStream`.

A tool-call region's body grows chunk by chunk, but its value exists only when the region closes. The
builders here turn the growing body into OpenAI `arguments` text while the call is generated, and send
only text the final value cannot contradict: for JSON bodies the raw text of the arguments value (after
the template's JSON dialect rewrites), for xml-inline parameters JSON built one parameter at a time, with
string values streamed as JSON-escaped fragments once they are certain to stay strings. Where the
template's shape is not one they understand, the call is sent whole when its region closes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import regex

from respc.runtime.content import parse_content
from respc.runtime.tags import TagShape, tag_at, tag_shape
from respc.runtime.targets import Target, get_target
from respc.runtime.tools import coerce, schema_types
from respc.runtime.transform import placeholder

__all__ = ["CallShape", "Stripper", "ToolRegion", "call_parts", "same_value", "shape_of"]

# Types `tools=` coercion casts a string to; "string" and unknown types never cast (quirk Q32).
_CASTING_TYPES = frozenset({"integer", "number", "boolean", "null", "object", "array"})
# First characters `json.loads` can accept as a value; any other first character makes a value parsed
# with `json` + `allow_non_json` a plain string.
_JSON_STARTS = frozenset('{["-0123456789tfnNI')
_JSON_SPACE = " \t\n\r"
_WORD = regex.compile(r"\w")
_SPACE = regex.compile(r"\s")  # the json dialect's `\s`, as the `regex` module reads it
_STRING_RUN = re.compile(r'[^"\\]+')  # (`re`: twice as fast as `regex` on this class, and the same)


def same_value(a: Any, b: Any) -> bool:
    """Equal as JSON values, with types kept apart (1 is not 1.0 nor True) and NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return a == b


def call_parts(call: dict) -> tuple[Any, Any, Any]:
    """A final tool call's (id, name, arguments): the `function` dict if there is one, else the call itself.

    `arguments` falls back to `parameters` (some models write that key), then to `{}`.
    """
    function = call.get("function")
    function = function if isinstance(function, dict) else call
    arguments = function["arguments"] if "arguments" in function else function.get("parameters", {})
    return call.get("id"), function.get("name"), arguments


def _loads(raw: str) -> Any:
    """`json.loads(raw)` for the text of one JSON value: a string without escapes (`"city"`, a key or a
    name, most of them) is its text between the quotes, without the decoder; JSON takes any character but
    quotes, backslashes and control characters there, and printable text holds none of them."""
    if len(raw) > 1 and raw[0] == '"' and raw[-1] == '"':
        inner = raw[1:-1]
        if inner.isprintable() and '"' not in inner and "\\" not in inner:
            return inner
    return json.loads(raw)


def _json_key(key: Any) -> str:
    """`json.dumps(key, ensure_ascii=False)` (an xml parameter's key, a string but for an optional group's
    None), without the encoder for a string."""
    return '"' + _escape(key) + '"' if type(key) is str else json.dumps(key, ensure_ascii=False)


def _escape(text: str) -> str:
    # JSON escapes only quotes, backslashes and control characters, none of which printable text holds.
    if text.isprintable() and '"' not in text and "\\" not in text:
        return text
    return json.dumps(text, ensure_ascii=False)[1:-1]


_TAIL_LEAD = ("\\s*", "\\s+", "")  # a run of whitespace the tail may start with
_CONTROL_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
_METACHARACTERS = frozenset("\\.^$*+?{}[]|()")


def last_character(pattern: str) -> str | None:
    """The character every complete match of `pattern` holds last but for a trailing `\\s*` run, when its
    source ends with a literal one (not a letter or digit, not escaped), maybe then `\\s*`, and holds no
    alternation, lookaround or flag; else None. Text appended after a partial match, without it, cannot
    complete one: its last character (the run can be empty) would be in that text. (Nor a complete match
    starting after the partial one: the `regex` module's partial search prefers a complete match anywhere
    to a partial one, so none was in the text before; tests/serving/test_tool_args.py checks both.)"""
    pattern = pattern.removesuffix("\\s*")
    if len(pattern) < 2 or "|" in pattern or pattern.replace("(?P<", "").replace("(?:", "").count("(?"):
        return None
    last = pattern[-1]
    if last.isalnum() or last in _METACHARACTERS or pattern[-2] == "\\" or not last.isprintable():
        return None
    return last


def tail_start(after: str) -> tuple[str, bool] | None:
    """For a tail pattern `after` that is a literal, after a whitespace run or not (`\\s*</parameter>`):
    (the literal's first character, whether the run is there). None for any other pattern.

    A match of such a tail, whole or partial, starts at that character, or at whitespace that runs up to
    it or to the end of the text: text after a point with neither holds none (but the empty partial match
    at its very end, which every pattern has)."""
    if "|" in after or "(?" in after:
        return None  # another branch, or a flag, may start the match with anything
    for lead in _TAIL_LEAD:
        if lead and not after.startswith(lead):
            continue
        rest = after[len(lead) :]
        if rest[:1] == "\\" and len(rest) > 1 and (not rest[1].isalnum() or rest[1] in _CONTROL_ESCAPES):
            first = _CONTROL_ESCAPES.get(rest[1], rest[1])
        elif rest and rest[0] not in _METACHARACTERS:
            first = rest[0]
        else:
            continue
        if rest[2 if rest[0] == "\\" else 1 :][:1] in ("*", "?", "{"):
            continue  # the first character is optional: it need not start the match
        return first, bool(lead)
    return None


def holds_no_tail(start: tuple[str, bool], text: str, since: int) -> bool:
    """Whether `text` from `since` holds no match of the tail `start` describes (`tail_start`). (`isspace`
    takes every character the `regex` module's `\\s` takes, and four more, so it never misses a run.)"""
    first, lead = start
    return text.find(first, since) < 0 and not (lead and text[-1:].isspace())


class Stripper:
    """Streams text whose final value is `str.strip()`ped: leading whitespace is dropped and trailing
    whitespace held until something follows it, so what was sent is always a prefix of the final value."""

    def __init__(self, strip: bool) -> None:
        self.strip = strip
        self.started = False
        self.held = ""
        self.clear = not strip  # nothing to drop or hold: text that ends in no whitespace goes as it is

    def feed(self, text: str) -> str:
        if not self.strip:
            return text
        if not self.started:
            text = text.lstrip()
            if not text:
                return ""
            self.started = True
        text = self.held + text
        kept = text.rstrip()
        self.held = text[len(kept) :]
        self.clear = not self.held
        return kept


# ---------------------------------------------------------------------------------------------------
# What the template's tool_calls field looks like.


@dataclass(frozen=True)
class Source:
    """Where a part of a call comes from: an open-pattern capture, a path in the content, or a literal."""

    kind: str  # "capture", "content" or "literal"
    name: str = ""
    path: tuple = ()
    value: Any = None


@dataclass(frozen=True)
class XmlTags:
    """An xml-inline `tag_pattern` cut around its `value` group, so a value can stream before it ends."""

    tag: Any  # the whole pattern
    head: Any  # up to the value: holds the `key` group
    tail: Any | None  # after the value; None when the value cannot stream (not `.*?`, or a backreference)
    value_parser: dict | None
    # The value is `.*?`: a match that ends before the end of the body is the one the final body gives. A
    # greedy or alternating value can still change as text arrives (`[1` becomes `[1, 2]`), so its tag
    # is certain only once the region has closed.
    lazy: bool = True
    # What a match of `tail` starts with (`tail_start`), or None when that cannot be told: text without
    # it holds no tail, which spares the tail's (costlier) partial search on most feeds.
    tail_start: tuple[str, bool] | None = None
    # The pattern's shape when `respc.runtime.tags` reads it with `str.find` (`tag_at`), else None.
    shape: TagShape | None = None
    # The character every match of `head` ends with (`last_character`), or None: a head that matched only
    # partially stays partial while the text that comes lacks it, which spares the search.
    head_end: str | None = None


@dataclass(frozen=True)
class CallShape:
    """How to find a call's name, id and arguments in a tool_calls region while it is generated."""

    mode: str  # "json", "xml", or "final" (sent whole at close)
    each: bool = False  # transform_each: the content is a list, one call per item
    name: Source | None = None
    call_id: Source | None = None
    arguments: tuple = ()  # alternative content paths of the arguments, preferred first
    coerces: bool = False  # the call has a `function` dict, so `tools=` coercion applies to it
    open_re: Any = None
    dialect: dict = field(default_factory=dict)
    xml: XmlTags | None = None
    target: Target = field(default_factory=lambda: get_target(None))  # the release the parser follows


def _placeholder(node: Any) -> tuple | None:
    if isinstance(node, str):
        match = placeholder().fullmatch(node)
        if match:
            return tuple(match.group(1).split("."))
    return None


def _source(node: Any, groups: set, each: bool, late: set) -> Source | None:
    """Where `node` of a transform comes from; None when that is known only at the close (`late`: the
    close pattern's groups, which join the captures there in transformers 5.24)."""
    path = _placeholder(node)
    if path is None:
        return None if node is None or isinstance(node, (dict, list)) else Source("literal", value=node)
    root, rest = path[0], path[1:]
    if root in late:
        return None
    if root in groups and not rest:
        return Source("capture", name=root)
    if each:
        return Source("content", path=path)
    return Source("content", path=rest) if root == "content" else None


def _split_value_group(pattern: str) -> tuple[str, str, str] | None:
    """`pattern` cut into (before, inside, after) the `(?P<value>...)` group, or None."""
    start = pattern.find("(?P<value>")
    if start < 0:
        return None
    depth, i, in_class = 0, start, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "]":
                i += 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return pattern[:start], pattern[start + len("(?P<value>") : i], pattern[i + 1 :]
        i += 1
    return None


def _xml_tags(args: dict) -> XmlTags | None:
    pattern = args.get("tag_pattern")
    if not isinstance(pattern, str) or args.get("merge_duplicates"):
        return None
    try:
        tag = regex.compile(pattern, regex.DOTALL)
    except (regex.error, TypeError):
        return None
    if "key" not in tag.groupindex or "value" not in tag.groupindex:
        return None
    parts = _split_value_group(pattern)
    if parts is None:
        return None
    before, inside, after = parts
    try:
        head = regex.compile(before, regex.DOTALL)
    except regex.error:
        return None
    if "key" not in head.groupindex:
        return None
    tail = None
    if inside == ".*?":
        try:
            tail = regex.compile(after, regex.DOTALL)
        except regex.error:  # a backreference to the key: the value is sent when its tag completes
            tail = None
    value_parser = args.get("value_parser")
    return XmlTags(
        tag,
        head,
        tail,
        value_parser if isinstance(value_parser, dict) else None,
        inside == ".*?",
        tail_start(after) if tail is not None else None,
        tag_shape(pattern),
        last_character(before),
    )


def shape_of(spec: dict, target: str | Target | None = None) -> CallShape:
    """Read the tool_calls field of a template: which parts of a call can be known before it closes, for
    a parser following the `target` release (default: the newest supported)."""
    target = get_target(target)
    try:
        return _shape_of(spec, target)
    except (TypeError, AttributeError, regex.error):  # a template the parser itself fails on at close
        return CallShape("final", target=target)


def _shape_of(spec: dict, target: Target) -> CallShape:
    transform, each = spec.get("transform"), bool(spec.get("transform_each"))
    open_re = None
    if isinstance(spec.get("open_pattern"), str):
        open_re = regex.compile(spec["open_pattern"], regex.DOTALL)
    groups = set(open_re.groupindex) if open_re is not None else set()
    late = set()
    if target.close_captures and isinstance(spec.get("close_pattern"), str):
        late = set(regex.compile(spec["close_pattern"], regex.DOTALL).groupindex)
    if not isinstance(transform, dict):
        return CallShape("final", target=target)
    function = transform.get("function")
    coerces = isinstance(function, dict) or _placeholder(function) is not None
    function = transform if function is None else function
    if _placeholder(function) is not None:
        base = _placeholder(function)
        name = _source("{" + ".".join((*base, "name")) + "}", groups, each, late)
        arguments = tuple(
            _source("{" + ".".join((*base, key)) + "}", groups, each, late)
            for key in ("arguments", "parameters")
        )
    elif isinstance(function, dict):
        name = _source(function.get("name"), groups, each, late)
        key = "arguments" if "arguments" in function else "parameters"
        arguments = (_source(function.get(key), groups, each, late),)
    else:
        return CallShape("final", target=target)
    call_id = _source(transform.get("id"), groups, each, late) if "id" in transform else None
    if "id" in transform and call_id is None:
        return CallShape("final", target=target)
    usable = name is not None and all(a is not None and a.kind == "content" for a in arguments)
    if call_id is not None and call_id.kind == "content" and spec.get("content") != "json":
        usable = False
    common = dict(each=each, name=name, call_id=call_id, coerces=coerces, open_re=open_re, target=target)
    args = spec.get("content_args") or {}
    content = spec.get("content", "text")
    if usable and content == "json":
        delims = args.get("string_delims") or []
        if len(delims) > 1 or not all(_plain_pair(pair) for pair in delims):
            return CallShape("final", target=target)
        return CallShape("json", arguments=tuple(a.path for a in arguments), dialect=args, **common)
    if usable and content == "xml-inline" and not each and name.kind != "content":
        xml = _xml_tags(args)
        if xml is not None and [a.path for a in arguments][:1] == [()]:
            return CallShape("xml", arguments=((),), xml=xml, **common)
    return CallShape("final", target=target)


def _plain_pair(pair: Any) -> bool:
    """A string_delims pair the rewrite below follows: two non-empty strings, the opener not a word."""
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        return False
    return all(isinstance(d, str) and d for d in pair) and not _WORD.match(pair[0][0])


# ---------------------------------------------------------------------------------------------------
# JSON bodies: the dialect rewrite, a scanner that tracks where each value starts and ends, and the calls.


class _Dialect:
    """The json parser's `string_delims` (one pair) and `unquoted_keys` rewrites, applied as text arrives:
    the streaming form of `respc.runtime.content._dialect`, which follows upstream's three passes over a
    whole body (it must, for their errors and many pairs). One dialect, written twice because a
    transducer and a whole-text function cannot share their loops: a test holds them to the same JSON
    under any chunking (tests/serving/test_tool_args.py).

    transformers 5.23 quotes bare keys over the whole body, ordinary JSON strings included (quirk Q13),
    and only right after `{` or `,`; 5.24 (`skip_strings`) leaves quoted strings alone and allows
    whitespace around the key. This does the same, holding back only what the next characters could
    still change (a partial delimiter, a word that may be followed by `:`). A JSON string is sent as it
    arrives, as if it will close: if it never does, the body is not JSON, and the stream's final check
    reports the mismatch.
    """

    def __init__(self, args: dict, skip_strings: bool) -> None:
        delims = args.get("string_delims") or []
        self.delims = tuple(delims[0]) if delims else None
        self.unquoted = bool(args.get("unquoted_keys"))
        self.skip_strings = skip_strings
        self.pending = ""
        self.in_string = False  # inside an extracted (string_delims) string
        self.in_json_string = False  # inside an ordinary quoted string (skip_strings only)
        self.after_brace = False  # the last character outside extracted strings was `{` or `,`

    def feed(self, text: str, final: bool = False) -> str:
        buf, out, i = self.pending + text, [], 0
        opener, closer = self.delims or ("", "")
        while i < len(buf):
            if self.in_string:
                at = buf.find(closer, i)
                if at < 0:
                    keep = 0 if final else _partial_suffix(buf, i, closer)
                    out.append(_escape(buf[i : len(buf) - keep]))
                    i = len(buf) - keep
                    break
                out.append(_escape(buf[i:at]) + '"')
                i, self.in_string, self.after_brace = at + len(closer), False, False
                continue
            if self.in_json_string:
                end = i
                while end < len(buf) and buf[end] != '"':
                    end += 2 if buf[end] == "\\" else 1
                if end >= len(buf):
                    end = len(buf) - 1 if end > len(buf) else len(buf)  # keep a lone trailing backslash
                    out.append(buf[i:end])
                    i = end
                    if final:
                        out.append(buf[i:])
                        i = len(buf)
                    break
                out.append(buf[i : end + 1])
                i, self.in_json_string, self.after_brace = end + 1, False, False
                continue
            if opener:
                if buf.startswith(opener, i):
                    out.append('"')
                    i, self.in_string = i + len(opener), True
                    continue
                if not final and opener.startswith(buf[i:]):
                    break
            if self.unquoted and self.after_brace:
                key = self._key(buf, i, final)
                if key is None:
                    break  # it may still become a key
                if key:
                    out.append(key[0])
                    i, self.after_brace = key[1], False
                    continue
            char = buf[i]
            if self.skip_strings and char == '"':
                out.append(char)
                i, self.in_json_string, self.after_brace = i + 1, True, False
                continue
            char = buf[i]
            out.append(char)
            self.after_brace = char in "{,"
            i += 1
        self.pending = buf[i:]
        return "".join(out)

    def _key(self, buf: str, i: int, final: bool) -> tuple[str, int] | tuple[()] | None:
        """At `i`, right after `{` or `,`: (the rewritten text, where it ends) for a bare key; () when
        none starts here; None when the text so far cannot tell."""
        end = i
        if self.skip_strings:
            while end < len(buf) and _SPACE.match(buf[end]):
                end += 1
        word = end
        while end < len(buf) and _WORD.match(buf[end]):
            end += 1
        if end == word:
            if end == len(buf) and not final:
                return None
            if end > i:  # whitespace then no word: sent as it is
                return buf[i:end], end
            return ()
        after = end
        if self.skip_strings:
            while after < len(buf) and _SPACE.match(buf[after]):
                after += 1
        if after == len(buf) and not final:
            return None
        if buf.startswith(":", after):
            return f'{buf[i:word]}"{buf[word:end]}"{buf[end:after]}:', after + 1
        return buf[i:after], after


def _partial_suffix(buf: str, start: int, literal: str) -> int:
    """How many trailing characters of `buf[start:]` form a proper prefix of `literal`."""
    for size in range(min(len(literal) - 1, len(buf) - start), 0, -1):
        if literal.startswith(buf[len(buf) - size :]):
            return size
    return 0


class _Frame:
    __slots__ = ("array", "key", "state")

    def __init__(self, array: bool) -> None:
        self.array = array
        self.key: Any = -1 if array else None
        self.state = "first"  # first, key, colon, value, after


class _JsonScan:
    """Walks JSON text as it arrives and tells its sink where each value starts and ends, by path.

    Only the structure is followed; anything that is not JSON stops the walk (`broken`), and the
    region's value, parsed at close, then settles what the call was.
    """

    def __init__(self, sink: Any) -> None:
        self.sink = sink
        self.text = ""
        self.pos = 0
        self.stack: list[_Frame] = []
        self.root_done = False
        self.broken = False
        self.string_start = -1  # inside a string that started here
        self.string_is_key = False
        self.scalar_start = -1

    def path(self) -> tuple:
        return tuple([frame.key for frame in self.stack])

    def feed(self, text: str, final: bool = False) -> None:
        # Grown through a local that holds the only reference, so CPython extends it in place: `self.text
        # += text` would copy the whole body on every feed (quadratic over a long argument).
        body, self.text = self.text, ""
        body += text
        self.text = text = body
        i, end = self.pos, len(text)
        while i < end and not self.broken:
            if self.string_start >= 0:
                after = self._string(text, i)
                if after is None:
                    break  # a backslash at the very end waits for the character it escapes
                i = after
                continue
            char = text[i]
            if self.scalar_start >= 0:
                if char.isalnum() or char in "+-.":
                    i += 1
                    continue
                self.scalar_start = -1
                self._end_value(i)
            if char not in _JSON_SPACE:
                self._token(char, i)
            i += 1
        self.pos = i
        if final and self.scalar_start >= 0 and not self.broken:
            self.scalar_start = -1
            self._end_value(len(text))

    def _string(self, text: str, i: int) -> int | None:
        run = _STRING_RUN.match(text, i)
        if run:
            return run.end()
        if text[i] == "\\":
            return i + 2 if i + 1 < len(text) else None
        start, self.string_start = self.string_start, -1
        if self.string_is_key:
            frame = self.stack[-1]
            try:
                frame.key = _loads(text[start : i + 1])
            except ValueError:
                self.broken = True
            frame.state = "colon"
        else:
            self._end_value(i + 1)
        return i + 1

    def _token(self, char: str, i: int) -> None:
        frame = self.stack[-1] if self.stack else None
        if frame is None:
            if self.root_done:
                self.broken = True
            else:
                self._start_value(char, i)
            return
        state = frame.state
        if not frame.array and state in ("first", "key"):
            if char == '"':
                self.string_start, self.string_is_key = i, True
            elif char == "}" and state == "first":
                self._close(i)
            else:
                self.broken = True
        elif state == "colon":
            frame.state = "value"
            self.broken = char != ":"
        elif state == "after":
            if char == ",":
                frame.state = "value" if frame.array else "key"
            elif char == ("]" if frame.array else "}"):
                self._close(i)
            else:
                self.broken = True
        elif frame.array and state == "first" and char == "]":
            self._close(i)
        else:  # a value is expected
            if frame.array:
                frame.key += 1
            frame.state = "after"
            self._start_value(char, i)

    def _start_value(self, char: str, i: int) -> None:
        if char not in '{["-' and not char.isalnum():
            self.broken = True
            return
        self.sink.value_start(self.path(), i)
        if char in "{[":
            self.stack.append(_Frame(char == "["))
        elif char == '"':
            self.string_start, self.string_is_key = i, False
        else:
            self.scalar_start = i

    def _close(self, i: int) -> None:
        self.stack.pop()
        self._end_value(i + 1)

    def _end_value(self, end: int) -> None:
        if not self.stack:
            self.root_done = True
        self.sink.value_end(self.path(), end)


@dataclass
class _Call:
    """One call inside a region, as far as it has been generated."""

    name: Any = None
    call_id: Any = None
    announced: bool = False
    args_path: tuple | None = None
    args_end: int = -1
    sent_to: int = -1  # offset in the (rewritten) body up to which arguments were sent
    member: int = -1  # start of the argument member being generated, if it is a string or an array
    members: dict = field(default_factory=dict)  # start -> (end, key) of string and array members
    starts: dict = field(default_factory=dict)  # path -> start of the name and id values
    sent: list = field(default_factory=list)


class ToolRegion:
    """One open tool_calls region: takes its body chunks and yields operations, in order:
    ("header", item) once a call's name (and id, if the template has one) is known, then
    ("args", item, text) for each certain piece of its arguments.

    `item` numbers the calls inside the region (transform_each regions hold several); the stream gives
    announced calls their global index and id.
    """

    def __init__(self, shape: CallShape, captures: dict | None, params: dict) -> None:
        self.shape = shape
        self.captures = captures
        self.params = params
        self.calls: dict[int, _Call] = {}
        self.ops: list[tuple] = []
        self.raw: list[str] = []
        self.mode = "final" if captures is None and _needs_captures(shape) else shape.mode
        self._untyped_member = -1  # the member `feed_in_string` found no tool type for (the last asked)
        # Once a chunk has extended a string, the chunks after it that only extend it too are set aside here
        # (`feed_in_string`, a new list each time), until anything else reads or changes the region (`flush`).
        # `DeltaStream` appends a string's plain chunks to it itself while it is the list it was given.
        self.aside: list[str] | None = None
        self._aside_item = 0
        # What a chunk set aside must not hold: the character that may end the string, and (xml) whether
        # a trailing space is refused ("strip": the value is stripped) or held ("lead": the tail may
        # start with a run), as `aside_held` holds it.
        self.aside_end: tuple[str, str | None] = ('"', None)
        self.aside_held = ""
        if self.mode == "json":
            self.dialect = (
                _Dialect(shape.dialect, shape.target.json_keys_skip_strings)
                if _has_dialect(shape.dialect)
                else None
            )
            self.scan = _JsonScan(self)
        elif self.mode == "xml":
            call = self._call(0)
            self.xml = _XmlArgs(shape.xml, lambda key: self._types(call.name, key), shape.target)
            if self._ready(call):
                call.announced = True
                self.ops.append(("header", 0))
                self._send(0, "{")

    def start(self) -> list[tuple]:
        """The operations known as soon as the region opens (an xml call's name comes from its open tag)."""
        return self._take()

    def feed(self, text: str) -> list[tuple] | tuple[()]:
        """The operations this piece of body makes certain (an empty tuple for none, the commonest answer)."""
        if self.aside is not None:
            self.flush()
        self.raw.append(text)
        if self.mode == "json":
            self.scan.feed(self.dialect.feed(text) if self.dialect else text)
            self._flush_json()
        elif self.mode == "xml":
            sent = self.xml.feed(text)
            if sent:
                self._send(0, sent)
        ops = self.ops
        if not ops:
            return ()
        self.ops = []
        return ops

    def feed_in_string(self, text: str) -> tuple[int, str] | None:
        """(item, arguments text) for a chunk that only extends a JSON string inside the arguments of the
        region's one call (no quote, no backslash, nothing held back), or an xml-inline string value being
        sent (`_XmlArgs.feed_in_value`): the commonest chunk of a long argument. `feed` would walk it
        character run by run and render it from the body to the same text; this skips both. None when the
        chunk is not such (the caller then uses `feed`). The chunks after it go to `extend_aside`, which
        the caller asks first: what it does not take, this takes after those set aside."""
        if self.aside is not None:
            self.flush()
        if self.mode == "xml":
            call = self.calls.get(0)
            if call is None or not call.announced or self.xml.param is None:
                return None
            sent = self.xml.feed_in_value(text)
            if sent is None:
                return None
            self.raw.append(text)
            call.sent.append(sent)
            self.aside = []
            self.aside_end = self.xml.value_end()
            return 0, sent
        if self.mode != "json" or self.dialect is not None or len(self.calls) != 1:
            return None
        scan = self.scan
        if scan.string_start < 0 or scan.broken or '"' in text or "\\" in text or not text:
            return None
        ((item, call),) = self.calls.items()
        body = scan.text
        if (
            not call.announced
            or call.args_path is None
            or call.args_end >= 0
            or call.sent_to != len(body)
            or scan.pos != len(body)
        ):
            return None
        member = call.member
        if member >= 0 and member != self._untyped_member:
            if self._types(call.name, call.members[member][1]):
                return None  # coercion may rewrite this member: `feed` waits for its end
            self._untyped_member = member
        self._extend_string(call, text)
        self.aside, self._aside_item = [], item
        return item, text

    def extend_aside(self, text: str) -> str | None:
        """The arguments text for a chunk after one `feed_in_string` took (of the same item), when it holds
        neither the character that could end the string nor, where that matters, a trailing space: the
        chunk is only set aside (`flush` takes it in later). None for any other chunk, or when nothing is
        set aside: then call `feed_in_string`."""
        aside = self.aside
        if aside is None or not text:
            return None
        end, spaces = self.aside_end
        if end in text:
            return None
        if self.mode == "json":
            if "\\" in text:
                return None
            aside.append(text)
            return text
        if spaces is None or not text[-1].isspace():
            aside.append(text)
            held, self.aside_held = self.aside_held, ""
            return _escape(held + text if held else text)
        if spaces == "lead":
            # A trailing run the tail may start with is held back, where `_XmlArgs.feed` would hold it: a
            # run of these four only (any other space ends the fast way).
            piece = self.aside_held + text
            sent = piece.rstrip(" \t\n\r")
            if not sent[-1:].isspace():
                aside.append(text)
                self.aside_held = piece[len(sent) :]
                return _escape(sent)
        return None

    def flush(self) -> None:
        """Take in the chunks `feed_in_string` set aside: as it takes in the one before them."""
        aside, self.aside = self.aside, None
        if not aside:
            return
        text = "".join(aside)
        if self.mode == "json":
            self._extend_string(self.calls[self._aside_item], text)
            return
        held, self.aside_held = self.aside_held, ""
        sent = text[: len(text) - len(held)]
        self.raw.append(text)
        self.calls[0].sent.append(_escape(sent))
        self.xml.extend_value(text, sent)

    def _extend_string(self, call: _Call, text: str) -> None:
        self.raw.append(text)
        scan = self.scan
        body, scan.text = scan.text, ""  # grown through `body` alone, in place (see `_JsonScan.feed`)
        body += text
        scan.text = body
        scan.pos = call.sent_to = len(body)
        call.sent.append(text)

    def close(self) -> list[tuple]:
        """The operations the end of the body makes certain; the region's value settles the rest."""
        if self.aside is not None:
            self.flush()
        if self.mode == "json":
            self.scan.feed(self.dialect.feed("", final=True) if self.dialect else "", final=True)
            self._flush_json()
        elif self.mode == "xml":
            self._send(0, self.xml.feed("", closed=True))
        return self._take()

    def rest_of(self, item: int) -> str | None:
        """The rest of an announced call's arguments text once its body is complete; None if unknown."""
        if self.aside is not None:
            self.flush()
        call = self.calls[item]
        if self.mode == "xml":
            return self.xml.finish()
        if call.args_end < 0 or self.scan.broken:
            return None
        return self._render(call, call.args_end)

    # -- shared --------------------------------------------------------------------------------------

    def _take(self) -> list[tuple]:
        ops, self.ops = self.ops, []
        return ops

    def _send(self, item: int, text: str) -> None:
        call = self.calls.get(item)
        if text and call is not None and call.announced:
            call.sent.append(text)
            self.ops.append(("args", item, text))

    def _call(self, item: int) -> _Call:
        call = self.calls.get(item)
        if call is None:
            call = self.calls[item] = _Call()
            call.name = self._known(self.shape.name)
            call.call_id = self._known(self.shape.call_id)
        return call

    def _known(self, source: Source | None) -> Any:
        if source is None or source.kind == "content":
            return None
        if source.kind == "literal":
            return source.value
        return (self.captures or {}).get(source.name)

    def _ready(self, call: _Call) -> bool:
        return isinstance(call.name, str) and (self.shape.call_id is None or call.call_id is not None)

    def _types(self, name: Any, key: Any) -> tuple:
        """The types `tools=` coercion would try on argument `key` of tool `name`, if it can cast at all."""
        if not self.shape.coerces or not isinstance(name, str):
            return ()
        properties = self.params.get(name)
        if not properties or key not in properties:
            return ()
        types = schema_types(properties[key])
        return types if _CASTING_TYPES.intersection(types) else ()

    # -- JSON ----------------------------------------------------------------------------------------

    def _locate(self, path: tuple) -> tuple[int, tuple] | None:
        if not self.shape.each:
            return 0, path
        if path and isinstance(path[0], int):
            return path[0], path[1:]
        return None

    def value_start(self, path: tuple, offset: int) -> None:
        where = self._locate(path)
        if where is None:
            return
        item, rel = where
        call = self._call(item)
        if call.args_path is None:
            if rel in self.shape.arguments:
                call.args_path, call.sent_to = rel, offset
        elif call.args_end < 0 and rel[:-1] == call.args_path and len(rel) == len(call.args_path) + 1:
            if self.scan.text[offset] in '"[':
                call.member = offset
                call.members[offset] = (-1, rel[-1])
        for source in (self.shape.name, self.shape.call_id):
            if source is not None and source.kind == "content" and source.path == rel:
                call.starts[rel] = offset

    def value_end(self, path: tuple, end: int) -> None:
        where = self._locate(path)
        if where is None:
            return
        item, rel = where
        call = self._call(item)
        if call.args_path is not None and call.args_end < 0:
            if rel == call.args_path:
                call.args_end = end
            elif call.member >= 0 and rel[:-1] == call.args_path:
                call.members[call.member] = (end, rel[-1])
                call.member = -1
        for source, attr in ((self.shape.name, "name"), (self.shape.call_id, "call_id")):
            # Once announced, a call keeps its name and id: a later duplicate key then shows as a mismatch.
            if call.announced or source is None or source.kind != "content":
                continue
            if source.path == rel and rel in call.starts:
                try:
                    value = _loads(self.scan.text[call.starts[rel] : end])
                except ValueError:
                    value = None
                setattr(call, attr, value if isinstance(value, str) else None)

    def _flush_json(self) -> None:
        calls = self.calls
        for item in calls if len(calls) < 2 else sorted(calls):
            call = self.calls[item]
            if not call.announced and self._ready(call):
                call.announced = True
                self.ops.append(("header", item))
            if not call.announced or call.args_path is None or self.scan.broken:
                continue
            limit = call.args_end if call.args_end >= 0 else self.scan.pos
            if call.member >= 0 and self._types(call.name, call.members[call.member][1]):
                limit = min(limit, call.member)  # coercion may rewrite this member: wait for its end
            self._send(item, self._render(call, limit))

    def _render(self, call: _Call, limit: int) -> str:
        """Arguments text from where sending stopped up to `limit`, with members coercion casts rewritten."""
        text, out, at = self.scan.text, [], call.sent_to
        for start, (stop, key) in call.members.items():
            if start < at or stop < 0 or stop > limit:
                continue
            cast = self._coerced(call.name, key, text[start:stop])
            if cast is not None:
                out.append(text[at:start] + cast)
                at = stop
        if limit > at:
            out.append(text[at:limit])
            at = limit
        call.sent_to = at
        return "".join(out)

    def _coerced(self, name: Any, key: Any, raw: str) -> str | None:
        types = self._types(name, key)
        if not types:
            return None
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        if isinstance(value, str):
            cast: Any = coerce(value, types)
        elif isinstance(value, list) and "array" not in types:
            cast = [coerce(v, types) if isinstance(v, str) else v for v in value]
        else:
            return None
        return None if same_value(cast, value) else json.dumps(cast, ensure_ascii=False)


def _has_dialect(args: dict) -> bool:
    return bool(args.get("string_delims")) or bool(args.get("unquoted_keys"))


def _needs_captures(shape: CallShape) -> bool:
    return any(s is not None and s.kind == "capture" for s in (shape.name, shape.call_id))


# ---------------------------------------------------------------------------------------------------
# xml-inline parameters.


class _XmlArgs:
    """Builds the JSON object of xml-inline parameters as their tags arrive.

    Each member is sent with its value: strings as JSON-escaped fragments once certain to stay strings
    (no value parser or `text`, or `json` with `allow_non_json` on text that cannot be JSON, and no
    `tools=` type that would cast it), other values when their tag completes. It follows what
    `finditer` over the final body will match: the leftmost head, then the leftmost tail after it (the
    value is a lazy `.*?`); a value that is not lazy completes only when its region closes.
    """

    def __init__(self, tags: XmlTags, types: Any, target: Target) -> None:
        self.tags = tags
        self.types = types
        self.target = target
        self.body = ""
        self.pos = 0
        self.members = 0
        self.param: dict | None = None  # the parameter whose tag has started
        self.head_waits = False  # the last search of the head found it partial (see `XmlTags.head_end`)
        self.lost = False  # the final value can no longer match what was sent

    def feed(self, text: str, closed: bool = False) -> str:
        body, self.body = self.body, ""
        body += text  # extended in place: see _JsonScan.feed
        self.body = body
        out: list[str] = []
        tags = self.tags
        while not self.lost:
            param = self.param
            if param is None:
                if self.head_waits and not closed and tags.head_end not in text:
                    break  # still partial: its last character has not come (the answer of the search)
                head = tags.head.search(body, self.pos, partial=True)
                self.head_waits = head is not None and head.partial and tags.head_end is not None
                if head is None or head.partial or (head.end() == len(body) and not closed):
                    break
                param = self.param = {"start": head.start(), "key": head.group("key"), "at": head.end()}
                param.update(mode=None, seen=0, sent=[], strip=Stripper(self._strips()), since=head.end())
            tail = None
            if tags.tail is not None:
                # The tail cannot start before where it last could: a long value is searched once, not per feed.
                start = tags.tail_start
                if start is not None and holds_no_tail(start, body, param["since"]):
                    param["since"] = len(body)  # no character after `since` can start the tail
                else:
                    tail = tags.tail.search(body, param["since"], partial=True)
                    param["since"] = tail.start() if tail is not None else len(body)
            if tags.tail is None or (tail is not None and not tail.partial):
                whole = self._whole(body, param["start"])
                unsure = whole is not None and (whole[3] == len(body) or not tags.lazy)
                if whole is None or (tags.tail is None and unsure and not closed):
                    self.lost = whole is None and tags.tail is not None
                    break
                if whole[1] != param["at"] or whole[0] != param["key"]:
                    self.lost = True
                    break
                out.append(self._complete(param, whole[2]))
                self.pos, self.param = whole[3], None
                continue
            end = tail.start() if tail is not None else len(body)  # the value is certain up to here
            if param["mode"] is None:
                param["mode"] = self._decide(param["key"], body[param["at"] : end])
            if param["mode"] == "string":
                piece = param["strip"].feed(body[param["at"] + param["seen"] : end])
                param["seen"] = end - param["at"]
                param["sent"].append(piece)
                out.append(self._member(param) + _escape(piece))
            break
        return "".join(out)

    def _whole(self, body: str, start: int) -> tuple[str, int, str, int] | None:
        """The tag pattern's match at `start` as (key, value start, value, end), or None."""
        shape = self.tags.shape
        if shape is not None:
            return tag_at(body, shape, start)
        whole = self.tags.tag.match(body, start)
        if whole is None:
            return None
        return whole.group("key"), whole.start("value"), whole.group("value"), whole.end()

    def feed_in_value(self, text: str) -> str | None:
        """The arguments text for a chunk that only extends a string value being sent: no tail can start
        in the text not yet sent nor in the chunk (`holds_no_tail`, read on both), and the chunk ends the
        value's text so far with something stripping keeps. That is `feed`'s answer without its searches
        (a whitespace run held back as a possible tail start goes with it); None when the chunk is not
        such (then call `feed`)."""
        param, start = self.param, self.tags.tail_start
        if param is None or start is None or self.lost or not text or param["mode"] != "string":
            return None
        body, since = self.body, param["since"]
        strip = param["strip"]
        if (
            param["at"] + param["seen"] != since
            or not param.get("opened")
            or (strip.strip and (not strip.started or text[-1].isspace()))
            or body.find(start[0], since) >= 0
            or not holds_no_tail(start, text, 0)
        ):
            return None
        piece = strip.held + body[since:] + text if strip.strip else body[since:] + text
        strip.held = ""
        self.body = ""  # grown through `body` alone, in place (see `_JsonScan.feed`)
        body += text
        self.body = body
        param["since"] = len(body)
        param["seen"] = len(body) - param["at"]
        param["sent"].append(piece)
        return _escape(piece)

    def value_end(self) -> tuple[str, str | None]:
        """After `feed_in_value` took a chunk: what the chunks after it must not hold to extend the value
        (`ToolRegion.feed_in_string`): the tail's first character; and a trailing space is refused when
        the value is stripped, held when the tail starts with a run, else free."""
        first, lead = self.tags.tail_start
        return first, "strip" if self.param["strip"].strip else "lead" if lead else None

    def extend_value(self, text: str, sent: str) -> None:
        """`feed_in_value`'s bookkeeping for the chunks `value_end` let through, taken in together: `sent`
        is their text less the run held back (where the tail could start)."""
        param = self.param
        body, self.body = self.body, ""
        body += text
        self.body = body
        param["since"] = len(body) - (len(text) - len(sent))
        param["seen"] = param["since"] - param["at"]
        param["sent"].append(sent)

    def finish(self) -> str | None:
        """The closing brace, or None when what was sent cannot equal the final arguments."""
        if self.lost or (self.param is not None and self.param.get("opened")):
            return None
        return "}"

    def _strips(self) -> bool:
        parser = self.tags.value_parser
        return parser is not None and bool((parser.get("args") or {}).get("strip", True))

    def _decide(self, key: str, certain: str) -> str | None:
        if self.types(key):
            return "whole"
        parser = self.tags.value_parser
        if parser is None or parser.get("name", "text") == "text":
            return "string"
        if parser.get("name") == "json" and (parser.get("args") or {}).get("allow_non_json"):
            lead = certain.lstrip(_JSON_SPACE)
            if not lead:
                return None  # undecided until a character that is not whitespace arrives
            return "whole" if lead[0] in _JSON_STARTS else "string"
        return "whole"

    def _member(self, param: dict) -> str:
        if param.get("opened"):
            return ""
        param["opened"] = True
        separator = ", " if self.members else ""
        self.members += 1
        return f"{separator}{_json_key(param['key'])}: " + '"'

    def _complete(self, param: dict, raw: Any) -> str:
        parser = self.tags.value_parser
        try:
            value = (
                raw
                if parser is None
                else parse_content(raw, parser.get("name", "text"), parser.get("args", {}), self.target)
            )
        except Exception:  # the region's parse will fail the same way; nothing more is certain
            self.lost = True
            return ""
        types = self.types(param["key"])
        if types and isinstance(value, str):
            value = coerce(value, types)
        if param.get("opened") or param["mode"] == "string":
            opening = self._member(param)
            piece = param["strip"].feed(raw[param["seen"] :])
            streamed = "".join(param["sent"]) + piece
            if value != streamed or not isinstance(value, str):
                self.lost = True
                return ""
            return opening + _escape(piece) + '"'
        separator = ", " if self.members else ""
        self.members += 1
        return f"{separator}{_json_key(param['key'])}: {json.dumps(value, ensure_ascii=False)}"

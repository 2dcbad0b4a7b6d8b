"""OpenAI-style streaming deltas from a response parser: what a server sends while the model generates.

`DeltaStream` wraps any `ResponseParser` (a preset's, a generated module's, the drop-in
`respc.ResponseParser`, or transformers' own with `template=`) and turns its region events into
`chat.completion.chunk` `delta` dicts: `content`, `reasoning_content` (from a field named
`reasoning_content`, `thinking` or `reasoning`) and `tool_calls` entries whose arguments stream while the
call is generated (see `respc.tool_args`). The deltas are append-only, so the stream sends only text the
final message cannot contradict; its invariants and the policies where it cannot keep them:

* Text fields. With one segment of a field in the message, the concatenated deltas equal the final
  value: whitespace the value strips is held back until something follows it, and never sent at either
  end. With several segments, every segment is sent in order: a `join` field sends the join string
  before each segment after the first (and after a string in `defaults`, whose text itself is not
  sent), so the deltas equal the joined value less that default; a `repeats` field without join sends
  its items back to back; a non-repeating field whose later segment replaces an earlier one (the
  implicit field, quirk Q1) sends both, so the deltas hold every non-empty segment while the message
  keeps only the last. A field with another content parser or a transform is sent whole when its
  region closes if its value is a string, else not at all.
* Tool calls. Each call gets the next index; its first delta carries the id (the call's own `id` when
  the template gives one, else `call_` and 24 random hex digits), the type and the name with empty
  arguments, as soon as the name is known (from the open pattern's capture, found by re-running the
  pattern on the text, or when the name's JSON string ends); later deltas carry argument fragments,
  and `json.loads` of them equals the call's final `arguments` (or `parameters`, else `{}`). JSON
  bodies send the raw text of the arguments value (after the template's JSON dialect rewrites), except
  members `tools=` coercion would cast, each held until complete and sent cast; xml-inline parameters
  are sent as JSON built one parameter at a time. A call the stream cannot follow (a template shape it
  does not know, a region that opens and closes within one feed) is sent whole when its region closes.
  Calls of a non-repeating tool_calls field are all sent, though the message keeps the last region's.
  Each call's deltas come before the next call's first one (what the Responses and Anthropic wire
  formats need): a call whose arguments are known only when its region closes (a JSON item without
  them, whose value a transform fills) holds back the calls after it in the region until then.
  The finish reason is "tool_calls" when any call was sent, else "stop".
* Failures. A tool call that does not parse, a stream that ends inside a call that cannot be completed
  as sent (an xml string parameter whose closing tag never came), a final value that contradicts
  fragments already sent, or any other parser error raises `DeltaStreamError` from the `feed` or
  `finish` that found it. Its `deltas` hold everything produced up to the failure and not yet returned
  (events the parser lost in a failing `feed` are recovered by replaying the input, one character at a
  time, on a new parser from the parser's `restart()`, or on a copy taken at the start for parsers
  without one), so no content or reasoning already generated is
  lost; `reason` is "malformed" (the parser rejected a call at its close delimiter), "cut_off" (the
  stream ended inside a call), "mismatch" or "parser" (an error outside tool calls), `index` names the
  call when it was announced, and `raw` holds its body as far as it was seen. The stream is then over:
  a later `feed` or `finish` raises `RuntimeError`.
"""

from __future__ import annotations

import copy
import json
import secrets
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from respc.runtime.tools import tool_params
from respc.serving.tool_args import CallShape, Stripper, ToolRegion, call_parts, same_value, shape_of

__all__ = ["REASONING_FIELDS", "DeltaStream", "DeltaStreamError", "calls_of", "template_of"]

REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


class DeltaStreamError(ValueError):
    """The stream stopped: send `deltas` (produced before the failure, not yet returned), then report it."""

    def __init__(
        self, message: str, *, deltas: list[dict], reason: str, index: int | None = None, raw: str = ""
    ) -> None:
        super().__init__(message)
        self.deltas = deltas
        self.reason = reason
        self.index = index
        self.raw = raw


class _Mismatch(Exception):
    def __init__(self, message: str, index: int | None) -> None:
        super().__init__(message)
        self.index = index
        self.raw = ""


def template_of(parser: Any) -> dict | None:
    """The response template a respc parser was compiled from (its class's `TEMPLATE`), or None."""
    template = getattr(type(parser), "TEMPLATE", None)
    return template if isinstance(template, dict) else None


# transformers' own ResponseParser offers no public accessors; DeltaStream reads these of its attributes
# (the same in 5.23 and 5.24), and of respc parsers only the public `current_field` and `tool_parameters`.
_FOREIGN = {"current_field": "_current", "tool_parameters": "_tool_params"}


_MISSING = object()


def _read(parser: Any, name: str) -> Any:
    value = getattr(parser, name, _MISSING)  # (a property: read once, not by hasattr and again)
    return getattr(parser, _FOREIGN[name], None) if value is _MISSING else value


def _new_id() -> str:
    return "call_" + secrets.token_hex(12)


def calls_of(value: Any) -> list[dict]:
    """The call dicts of a tool_calls value, in order (transform_each with repeats nests lists)."""
    if isinstance(value, list):
        return [call for item in value for call in calls_of(item)]
    return [value] if isinstance(value, dict) else []


def _loads_same(text: str, value: Any) -> bool:
    try:
        return same_value(json.loads(text), value)
    except (ValueError, RecursionError):
        return False


class _TextField:
    """One field sent as `content` or `reasoning_content`: its segments, and what each has sent."""

    def __init__(self, key: str, streams: bool, strip: bool, join: Any, values: int) -> None:
        self.key = key
        self.streams = streams  # plain text, no transform: sent as it comes
        self.strip = strip
        self.join = join
        self.values = values  # earlier values a join goes after
        self.segment: Stripper | None = None
        self.sent: list[str] = []
        self.joined = False

    def open(self) -> None:
        self.segment, self.sent, self.joined = Stripper(self.strip), [], False

    def chunk(self, text: str) -> str:
        if self.segment is None:
            self.open()
        return self._out(self.segment.feed(text)) if self.streams else ""

    def close(self, value: Any) -> str:
        out = ""
        sent = "".join(self.sent)
        if isinstance(value, str) and value.startswith(sent):
            out = self._out(value[len(sent) :], closing=True)
        self.values += 1
        self.segment = None
        return out

    def _out(self, text: str, closing: bool = False) -> str:
        if not text and not closing:
            return ""
        lead = ""
        if self.join is not None and self.values and not self.joined:
            lead, self.joined = self.join, True  # the oracle joins empty segments too (quirk Q1)
        self.sent.append(text)
        return lead + text


@dataclass(frozen=True)
class _Layout:
    """What a stream reads of its template: the text fields it sends (`_TextField`'s arguments, after the
    field's name) and the tool calls' shape."""

    texts: tuple[tuple, ...]
    shape: CallShape | None
    target: Any


def _layout(template: Any, target: Any) -> _Layout:
    if not isinstance(template, dict) or not isinstance(template.get("fields"), dict):
        raise TypeError("DeltaStream: cannot find the parser's response template; pass template=")
    defaults = template.get("defaults") or {}
    texts = []
    for name, spec in template["fields"].items():
        key = "content" if name == "content" else "reasoning_content" if name in REASONING_FIELDS else None
        if key is None or not isinstance(spec, dict):
            continue
        args = spec.get("content_args")
        streams = spec.get("content", "text") == "text" and spec.get("transform") is None
        strip = bool(args.get("strip", True)) if isinstance(args, dict) else True
        join = spec.get("join") if spec.get("repeats") else None
        values = 1 if spec.get("join") and isinstance(defaults.get(name), str) else 0
        texts.append((name, key, streams, strip, join, values))
    spec = template["fields"].get("tool_calls")
    shape = shape_of(spec, target) if isinstance(spec, dict) else None
    return _Layout(tuple(texts), shape, target)


# A generated module's template is read once per parser class (a compiled template's class can be
# collected, hence the weak keys): reading it costs several times creating the parser. The class was
# compiled from the template as it was then, so a `TEMPLATE` changed later changes neither.
_LAYOUTS: weakref.WeakKeyDictionary[type, _Layout] = weakref.WeakKeyDictionary()


def _class_layout(cls: type) -> _Layout:
    layout = _LAYOUTS.get(cls)
    if layout is None:
        template = getattr(cls, "TEMPLATE", None)
        layout = _layout(template if isinstance(template, dict) else None, getattr(cls, "TARGET", None))
        _LAYOUTS[cls] = layout
    return layout


class DeltaStream:
    """OpenAI `chat.completion.chunk` deltas from a `ResponseParser`; see the module docstring for the rules.

    `template` and `target` (the transformers release the parser follows) are needed only for parsers
    that do not come from a generated module (transformers' own); `tools` must be the tools the parser
    was built with (they decide how arguments are typed); by default they are read from the parser.
    `new_id` makes the id of a call the template gives none.
    """

    def __init__(
        self,
        parser: Any,
        *,
        template: dict | None = None,
        target: str | None = None,
        tools: list | None = None,
        new_id: Callable[[], str] = _new_id,
    ) -> None:
        if template is None and target is None:
            layout = _class_layout(type(parser))
        else:
            template = template if template is not None else template_of(parser)
            target = target if target is not None else getattr(type(parser), "TARGET", None)
            layout = _layout(template, target)
        self.parser = parser
        self.message: dict | None = None
        self.calls: list[dict] = []  # {"index", "id", "name"} of every call sent, in order
        self._texts = {field: _TextField(*args) for field, *args in layout.texts}
        self._shape = layout.shape
        self._params = (
            tool_params(tools, layout.target) if tools is not None else _read(parser, "tool_parameters") or {}
        )
        self._new_id = new_id
        self._fed = ""  # everything fed so far, but for
        self._unjoined: list[str] = []  # the chunks fed since, on the fast path (`_grow` joins them)
        self._floor = 0  # where in it the parser has certainly consumed up to (a lower bound)
        self._region: ToolRegion | None = None
        self._items: dict[int, int] = {}  # call number inside the open region -> index in the stream
        self._argless: set[int] = set()  # calls sent without any arguments yet
        self._aside_index = -1  # the call whose argument the region sets chunks aside for
        self._aside: list[str] | None = None  # the list it sets a string's chunks aside in
        self._aside_end: str | None = None  # (xml) what such a chunk must not hold, else None (JSON)
        self._hold: int | None = None  # where the deltas that wait for an earlier call's arguments start
        self._deltas: list[dict] = []
        self._mismatch: _Mismatch | None = None  # the first call found to contradict what was sent
        self._state = "live"
        # respc parsers route most chunks without events (`feed_text`); `_target` is then the text field or
        # tool call the next chunk would go to, when nothing else waits (`_fast_target`).
        self._feed_text: Callable[[str], str | None] | None = getattr(parser, "feed_text", None)
        self._target: Any = None
        # A parser as it was before any feed, for the replay after a failure: respc parsers make a new one
        # (`restart`); of others (transformers' own) a deep copy is taken now.
        self._restart: Callable[[], Any] | None = getattr(parser, "restart", None)
        if self._restart is None:
            try:
                pristine = copy.deepcopy(parser)
                self._restart = lambda: copy.deepcopy(pristine)
            except Exception:  # a parser that cannot be copied only loses the replay after a failure
                pass
        self._run(parser.initial_events, eos=False)
        # The prompt's deltas go out with the first feed's (`_take`), which the fast path would not send.
        self._target = None if self._deltas else self._fast_target()

    # -- public --------------------------------------------------------------------------------------

    def feed(self, text: str) -> list[dict]:
        """The deltas this piece of model output makes certain (those of the prefix come with the first)."""
        target = self._target
        if target is not None:
            # The commonest feed: the parser routes the chunk into the open text field or tool call as
            # one chunk event or none, without building it (`feed_text`), and nothing waits to be sent:
            # `_process` for that event, written out. (`_target` is None unless the stream is live.)
            try:
                routed = self._feed_text(text)
            except Exception as error:
                self._replay(text)
                raise self._failure(error, eos=False) from error
            if routed is not None:
                self._unjoined.append(text)  # (`_grow` moves the floor past it)
                if routed is not text:
                    # Only the routed text is consumed, and it follows what was: as the floor moves by
                    # the routed text's length, a lower bound stays one (see `_process`).
                    self._floor += len(routed) - len(text)
                    if not routed:
                        return []
                if target is not self._region:
                    segment = target.segment
                    out = routed if segment.clear and not routed[-1].isspace() else segment.feed(routed)
                    if not out:
                        return []
                    target.sent.append(out)
                    return [{target.key: out}]
                # A chunk that only extends the string argument the last chunk extended is set aside
                # (`extend_aside`), for the same call (`_aside_index`, kept when `feed_in_string` took it).
                # Here, while the region still sets chunks aside in the list it did then (a new one after
                # any other change), a chunk that JSON escaping leaves as it is: in a JSON string, one
                # without a quote or backslash; in an xml value (`_aside_end`, the tail's first
                # character), one that is printable, holds no tail's start and ends in no space, with no
                # space held back before it.
                aside = target.aside
                if aside is not None:
                    end = self._aside_end
                    if (
                        aside is self._aside
                        and '"' not in routed
                        and "\\" not in routed
                        and (
                            end is None
                            or (
                                end not in routed
                                and routed.isprintable()
                                and not routed[-1].isspace()
                                and not target.aside_held
                            )
                        )
                    ):
                        aside.append(routed)
                        return [
                            {"tool_calls": [{"index": self._aside_index, "function": {"arguments": routed}}]}
                        ]
                    sent = target.extend_aside(routed)
                    if sent is not None:
                        if not sent:
                            return []  # (a run held back: the tail may start there)
                        return [
                            {"tool_calls": [{"index": self._aside_index, "function": {"arguments": sent}}]}
                        ]
                sent = target.feed_in_string(routed)
                if sent is not None:
                    index = self._aside_index = self._items[sent[0]]
                    self._aside = target.aside
                    self._aside_end = None if target.mode == "json" else target.aside_end[0]
                    if not sent[1]:
                        return []
                    self._argless.discard(index)
                    return [{"tool_calls": [{"index": index, "function": {"arguments": sent[1]}}]}]
                ops = target.feed(routed)
                if not ops:
                    return []  # (nothing waits to be sent on this path: see `_fast_target`)
                self._ops(ops)
                if self._hold is not None:  # (else the call is still the target: the field is as it was)
                    self._target = None
                return self._take()
        if self._state != "live":  # `_live`, inlined
            raise RuntimeError(f"DeltaStream already {self._state}")
        try:
            events = self.parser.feed(text)
        except Exception as error:
            self._replay(text)
            raise self._failure(error, eos=False) from error
        self._grow(text)
        if not events and not self._deltas:
            return []  # held back: no region opened or closed, so the target is as it was
        if target is not None and len(events) == 1 and events[0]["type"] == "region_chunk":
            # One chunk into the target, which the parser held back before (`</` then `arg`): `_process`
            # for that event, written out; no region opened or closed, so the target is as it was.
            chunk = events[0]["text"]
            found = self._fed.find(chunk, self._floor)
            self._floor = found + len(chunk) if found >= 0 else self._floor
            if target is not self._region:
                self._text(target.key, target.chunk(chunk))
                return self._take()
            ops = target.feed(chunk)
            if not ops:
                return []
            self._ops(ops)
            if self._hold is not None:
                self._target = None
            return self._take()
        self._run(events, eos=False)
        self._target = self._fast_target()
        return self._take()

    def finish(self) -> tuple[list[dict], str]:
        """End the stream: the last deltas and the finish reason ("tool_calls" or "stop")."""
        self._live()
        try:
            message, events = self.parser.finalize()
        except Exception as error:
            raise self._failure(error, eos=True) from error
        self._run(events, eos=True)
        self.message = message
        self._state, self._target = "finished", None
        return self._take(), "tool_calls" if self.calls else "stop"

    # -- events --------------------------------------------------------------------------------------

    def _fast_target(self) -> Any:
        """The open text field (streamed as it comes, without join) or tool call that the next chunk the
        parser routes without events goes to; None when nothing is open, deltas wait (calls held back
        behind an earlier call's arguments) or the parser has no `feed_text`."""
        if self._feed_text is None or self._hold is not None or self._state != "live":
            return None
        current = _read(self.parser, "current_field")
        if self._region is not None:
            return self._region if current == "tool_calls" else None
        field = self._texts.get(current)
        if field is not None and field.segment is not None and field.streams and field.join is None:
            return field
        return None

    def _grow(self, text: str = "") -> None:
        """Bring `_fed` up to date: the chunks the fast path set aside, then `text`. The floor moves past
        the chunks set aside (`feed` took off what of them was not routed)."""
        grown, self._fed = self._fed, ""
        if self._unjoined:
            whole = "".join(self._unjoined)
            self._unjoined.clear()
            grown += whole
            self._floor += len(whole)
        grown += text  # extended in place while this is its only reference (see respc.tool_args)
        self._fed = grown

    def _live(self) -> None:
        if self._state != "live":
            raise RuntimeError(f"DeltaStream already {self._state}")

    def _run(self, events: list[dict], eos: bool) -> None:
        self._mismatch = None
        self._process(events)
        mismatch = self._mismatch
        if mismatch is not None:
            self._state, self._target = "failed", None
            raise DeltaStreamError(
                str(mismatch),
                deltas=self._take(),
                reason="cut_off" if eos else "mismatch",
                index=mismatch.index,
                raw=mismatch.raw,
            )

    def _process(self, events: list[dict]) -> None:
        if self._unjoined:
            self._grow()
        for at, event in enumerate(events):
            kind, field = event["type"], event["field"]
            if kind == "region_chunk":
                # The first place the chunk can be at or after the floor is not after where it is.
                found = self._fed.find(event["text"], self._floor)
                self._floor = found + len(event["text"]) if found >= 0 else self._floor
            text = self._texts.get(field)
            if text is not None:
                if kind == "region_open":
                    text.open()
                elif kind == "region_chunk":
                    self._text(text.key, text.chunk(event["text"]))
                else:
                    self._text(text.key, text.close(event["value"]))
            elif field == "tool_calls" and self._shape is not None:
                if kind == "region_open" or self._region is None:
                    self._region = ToolRegion(self._shape, self._captures(events, at), self._params)
                    self._items = {}
                    self._ops(self._region.start())
                if kind == "region_chunk":
                    self._ops(self._region.feed(event["text"]))
                elif kind == "region_close":
                    self._ops(self._region.close())
                    try:
                        self._settle(event["value"])
                    except _Mismatch as mismatch:  # reported once the text these events carry is sent
                        mismatch.raw = "".join(self._region.raw)
                        self._mismatch = self._mismatch or mismatch
                    self._region = None
                    self._release()

    def _captures(self, events: list[dict], at: int) -> dict | None:
        """The open-pattern groups of the tool call opened by `events[at]`, found by re-running the pattern.

        Only a region still open after these events needs them (one that also closes here is sent from
        its value). Its open match is then the leftmost one after the text the parser has certainly
        consumed whose end is followed by the body these events route into it (after that body the
        parser holds back at most a partial delimiter).
        """
        pattern = self._shape.open_re
        if pattern is None:
            return {}
        if events[at]["type"] != "region_open":
            return None
        body = []
        for event in events[at + 1 :]:
            if event["type"] != "region_chunk":
                return None
            body.append(event["text"])
        after, text = "".join(body), self._fed
        limit, start = len(text) - len(after), self._floor
        while start <= limit:
            match = pattern.search(text, start)
            if match is None or match.start() > limit:
                return None
            if match.end() <= limit and text.startswith(after, match.end()):
                self._floor = match.end()
                return {key: value for key, value in match.groupdict().items() if value is not None}
            start = match.start() + 1
        return None

    def _settle(self, value: Any) -> None:
        """Check the calls of a closed region against what was sent, and send what remains."""
        region, calls = self._region, calls_of(value)
        for item, call in enumerate(calls):
            call_id, name, arguments = call_parts(call)
            tracked = region.calls.get(item)
            if tracked is None or not tracked.announced:
                self._announce(call_id if isinstance(call_id, str) else None, name)
                self._args(len(self.calls) - 1, json.dumps(arguments, ensure_ascii=False))
                continue
            index = self._items[item]
            if name != tracked.name or (region.shape.call_id is not None and call_id != tracked.call_id):
                raise _Mismatch(f"tool call {index}: the final name or id differs from the one sent", index)
            sent = "".join(tracked.sent)
            rest = region.rest_of(item)
            whole = [] if sent else [json.dumps(arguments, ensure_ascii=False)]
            choices = ([rest] if rest is not None else []) + whole
            for choice in choices:
                if _loads_same(sent + choice, arguments):
                    self._args(index, choice)
                    break
            else:
                raise _Mismatch(
                    f"tool call {index}: the arguments sent cannot complete to the final ones", index
                )
        for item in region.calls:
            if item >= len(calls) and region.calls[item].announced:
                index = self._items[item]
                raise _Mismatch(f"tool call {index} was sent but is not in the final message", index)

    def _ops(self, ops: list[tuple]) -> None:
        for op in ops:
            call = self._region.calls[op[1]]
            if op[0] == "header":
                if self._hold is None and not self._argless.isdisjoint(self._items.values()):
                    # An earlier call of this region gets its arguments only when the region closes: the
                    # calls after it wait until then, so that each call's deltas come before the next's.
                    self._hold = len(self._deltas)
                self._announce(call.call_id if isinstance(call.call_id, str) else None, call.name)
                self._items[op[1]] = len(self.calls) - 1
            else:
                self._args(self._items[op[1]], op[2])

    # -- deltas --------------------------------------------------------------------------------------

    def _text(self, key: str, text: str) -> None:
        if not text:
            return
        last = self._deltas[-1] if self._deltas else None
        if last is not None and list(last) == [key]:
            last[key] += text
        else:
            self._deltas.append({key: text})

    def _announce(self, call_id: str | None, name: Any) -> None:
        call_id = call_id if call_id is not None else self._new_id()
        index = len(self.calls)
        self.calls.append({"index": index, "id": call_id, "name": name})
        self._argless.add(index)
        entry = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        self._deltas.append({"tool_calls": [entry]})

    def _args(self, index: int, text: str) -> None:
        if not text:
            return
        self._argless.discard(index)
        last = self._deltas[-1] if self._deltas else None
        if last is not None and list(last) == ["tool_calls"]:
            entry = last["tool_calls"][0]
            if entry["index"] == index and "id" not in entry:
                entry["function"]["arguments"] += text
                return
        self._deltas.append({"tool_calls": [{"index": index, "function": {"arguments": text}}]})

    def _take(self) -> list[dict]:
        if self._hold is None:
            deltas, self._deltas = self._deltas, []
            return deltas
        deltas, self._deltas, self._hold = self._deltas[: self._hold], self._deltas[self._hold :], 0
        return deltas

    def _release(self) -> None:
        """Send the calls that waited, each after the arguments of the call before it (all are tool calls)."""
        if self._hold is not None:
            waited = self._deltas[self._hold :]
            self._deltas[self._hold :] = sorted(waited, key=lambda delta: delta["tool_calls"][0]["index"])
            self._hold = None

    # -- failures ------------------------------------------------------------------------------------

    def _replay(self, text: str) -> None:
        """Recover the events the parser lost in the failing `feed` (quirk Q6), one character at a time."""
        if self._restart is None:
            return
        clone = self._restart()
        self._grow()
        try:
            clone.feed(self._fed)
            for char in text:
                events = clone.feed(char)
                self._grow(char)
                self._process(events)
        except Exception:  # the failure itself, now at its exact character (or a mismatch just before it)
            return

    def _failure(self, error: Exception, eos: bool) -> DeltaStreamError:
        self._state, self._target = "failed", None
        region = self._region
        in_call = region is not None or (eos and _read(self.parser, "current_field") == "tool_calls")
        announced = [self._items[item] for item in sorted(self._items)] if region is not None else []
        index = announced[-1] if announced else None
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        if in_call:
            reason = "cut_off" if eos else "malformed"
            where = f"tool call {index}" if index is not None else "a tool call"
            message = f"{where} {'was cut off' if eos else 'is malformed'}: {first_line}"
        else:
            reason, message = "parser", f"the parser failed: {type(error).__name__}: {first_line}"
        if region is not None:
            region.flush()
        raw = "".join(region.raw) if region is not None else ""
        self._release()
        return DeltaStreamError(message, deltas=self._take(), reason=reason, index=index, raw=raw)

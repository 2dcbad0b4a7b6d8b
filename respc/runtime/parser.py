"""The processing pass that every generated parser runs, written once.

A generated module subclasses `CompiledParser`, supplying one scan method per parser state and the
field tables the plan decided; this class holds the mechanism that transformers 5.23.0's
`ResponseParser._process` defines (commit the best delimiter, route text, open and close regions,
hold back possible delimiters), so event lists match the oracle's exactly. Unlike the oracle it keeps
only the unconsumed text (plus a little context for the patterns) and region bodies as lists of parts,
so every feed costs O(chunk + held text).
"""

from __future__ import annotations

from respc.runtime.scan import LazyRegex, run_start
from respc.runtime.tools import coerce_tool_calls, tool_params

TYPE_CHECKING = False  # typing costs ~5 ms to import: keep it off a generated module's import path
if TYPE_CHECKING:
    from typing import Any, ClassVar

__all__ = ["PREFIX_REQUIRED", "CompiledParser"]

PREFIX_REQUIRED = (
    "`ResponseParser`/`parse_response` requires `prefix` (the chat prompt sent to the model before "
    "generation), because chat templates often pre-write part of the assistant message (e.g. an "
    "opening `<think>` tag) that the parser must see to parse the output correctly. If the generation "
    'already contains the complete message, pass `prefix=""` to opt out explicitly.'
)


_find = str.find
_COALESCE = 512  # parts of a region joined into one block at a time


_SIZED = (list, dict, str)  # values the oracle drops from the message when empty (None always)


class CompiledParser:
    """Streaming parser for one compiled template; see the generated subclass for the format."""

    # Filled in by the generated subclass.
    IMPLICIT: ClassVar[Any] = None  # the implicit field's name, or None for the null sink
    SCANS: ClassVar[
        dict
    ]  # state (field name, or IMPLICIT outside explicit regions) -> streaming scan (buf, pos)
    ENDS: ClassVar[dict]  # state -> its end-of-stream scan: (buf, pos) -> the delimiter to commit, or None
    QUICK: ClassVar[dict]  # state -> pattern: a class of every watched delimiter's first char, or None
    FIRST: ClassVar[dict]  # state -> the one character QUICK's class holds, checked with `in`, or None
    TAILS: ClassVar[dict]  # state -> character sets of the trailing runs that lead-run delimiters hold
    DIRTY: ClassVar[dict]  # field name -> the `dirty` flag of its chunks
    VALUES: ClassVar[dict]  # field name -> function(body, captures) giving the region's value
    JOINS: ClassVar[dict]  # field name -> join string, for repeated fields with `join`
    REPEATS: ClassVar[frozenset]  # fields whose values are collected in a list
    REQUIRED: ClassVar[tuple]  # fields with `optional` false, in template order
    DEFAULT_KEYS: ClassVar[frozenset]
    START_ANCHOR: ClassVar[Any]  # compiled start anchor
    START_ANCHOR_KIND: ClassVar[str]  # "start_anchor" or "start_anchor_pattern"
    KEEP: ClassVar[int | None]  # consumed characters kept as pattern context; None keeps everything

    # state -> (scan, end, quick, first, tails, dirty): what entering a state sets, looked up once.
    _STATES: ClassVar[dict | None]
    # field -> (value function, join or None, repeats): what closing a region needs, looked up once.
    _FIELDS: ClassVar[dict]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._STATES = None  # built by the first parser: taking a LazyRegex's `search` compiles it
        if cls.KEEP == 0 and "feed" not in cls.__dict__:
            cls.feed = CompiledParser._feed_without_context  # type: ignore[method-assign]
        cls._FIELDS = {
            name: (value, cls.JOINS.get(name), name in cls.REPEATS) for name, value in cls.VALUES.items()
        }

    @classmethod
    def _build_states(cls) -> dict:
        cls._STATES = {
            state: (
                scan,
                cls.ENDS[state],
                # A pattern's `search` (modules generated before respc compiled patterns lazily held
                # the bound `search` itself: accepted as is).
                getattr(cls.QUICK[state], "search", cls.QUICK[state]),
                cls.FIRST[state],
                cls.TAILS[state],
                cls.DIRTY.get(state, False),
            )
            for state, scan in cls.SCANS.items()
        }
        return cls._STATES

    @classmethod
    def warm_up(cls) -> None:
        """Compile the template's regex patterns now rather than in the first parse.

        Generated modules compile `regex` patterns on first use, so that importing one stays cheap; the
        first parse then pays for importing `regex` (~15 ms once per process). A server that would rather
        pay it at start-up calls this once.
        """
        # The patterns the scans use live in their modules' globals (a subclass may bring its own).
        modules = {id(f.__globals__): f.__globals__ for f in (*cls.SCANS.values(), *cls.ENDS.values())}
        for namespace in modules.values():
            for value in list(namespace.values()):
                if isinstance(value, LazyRegex):
                    value.compiled()
        if isinstance(cls.START_ANCHOR, LazyRegex):
            cls.START_ANCHOR.compiled()
        cls._build_states()

    @staticmethod
    def defaults() -> dict:
        """A fresh copy of the template's `defaults`."""
        return {}

    def __init__(
        self, prefix: str | None = None, *, tools: list | None = None, errors: str = "strict"
    ) -> None:
        if prefix is None:
            raise ValueError(PREFIX_REQUIRED)
        if errors not in ("strict", "keep"):
            raise ValueError(f"errors must be 'strict' or 'keep', got {errors!r}")
        self._tools = tool_params(tools) if tools else {}
        # errors="keep": a region that fails to parse is reported here instead of raising (not upstream).
        self.errors: list[dict] | None = [] if errors == "keep" else None
        self._buf = ""
        self._pos = 0
        self._output: dict[str, Any] = self.defaults()
        self._finalized = False
        self._fast = False  # set by feed() once the common case applies
        self._run = None  # likewise, for states whose delimiters may start with a run (`\s*<tool_call>`)
        self._held: list[str] = []  # the `_run` path's newest pieces of a held run, not yet in _buf
        self._held_at = _COALESCE
        self._reset()
        self.initial_events: list[dict] = []
        if prefix:
            remainder = self._truncate_past_last_anchor(prefix)
            if remainder:
                self._buf = remainder
                self._process(self.initial_events, False)
                self._trim()

    def _truncate_past_last_anchor(self, prefix: str) -> str:
        last_end = None
        for match in self.START_ANCHOR.finditer(prefix):
            last_end = match.end()
        if last_end is None:
            import logging  # only needed on this path; keeps importing a parser cheap

            logging.getLogger("respc").info(
                "response_template defines %s but the anchor was not found in the prefix; "
                "the parser will process the entire prefix instead.",
                self.START_ANCHOR_KIND,
            )
            return prefix
        return prefix[last_end:]

    def _reset(self) -> None:
        current = self.IMPLICIT
        self._current = current
        states = self._STATES or self._build_states()
        self._scan, self._end, self._quick, self._first, self._tails, self._dirty = states[current]
        self._captures: dict[str, str] = {}
        self._parts: list[str] = []
        self._coalesce_at = _COALESCE
        self._opened = False
        self._empty_open = False  # a zero-width open with no text routed since (quirk Q5 guard)

    def _trim(self) -> None:
        keep = self.KEEP
        if keep is not None and self._pos > keep:
            self._buf = self._buf[self._pos - keep :]
            self._pos = keep

    def feed(self, text: str) -> list[dict]:
        """Consume the next piece of model output; returns the events it caused."""
        # The common case, kept to a few operations: a region is open, nothing is held back, and no
        # watched delimiter can start in this chunk, so the oracle's pass routes the whole chunk as one
        # event. (str.find also makes a non-str chunk raise TypeError, as upstream.)
        if self._fast and text and _find(text, self._first) < 0:
            self._buf = text  # the chunk is all the context the patterns can look back at
            self._pos = len(text)
            parts = self._parts
            parts.append(text)
            if len(parts) >= self._coalesce_at:
                self._coalesce()
            return [{"type": "region_chunk", "field": self._current, "text": text, "dirty": self._dirty}]
        # The same for a state watching `\s*<tool_call>`-style delimiters: only a trailing run of one
        # class can be pending (no watched delimiter can start in the chunk or the held text), so route
        # up to the run and hold the run, as the oracle's pass does.
        run = self._run
        if run is not None:
            if not text:
                # The oracle ignores an empty (or any false) chunk and reruns its pass, which changes
                # nothing here: the state is at rest. Answering directly keeps the empty deltas of a
                # streaming detokenizer from sending a held run through the slow path (rejoined, rescanned).
                return []
            held = self._held
            # The held text, if any, is itself such a run (`held` holds its newest pieces).
            if _find(text, self._first) < 0 and (held or _find(self._buf, self._first, self._pos) < 0):
                cut = len(text)
                while cut and text[cut - 1] in run:
                    cut -= 1
                if not cut:
                    # The whole chunk extends the held run. Set it aside rather than copy the held text
                    # on every feed (quadratic in a long run); blocks as `_coalesce` makes bound memory.
                    held.append(text)
                    if len(held) >= self._held_at:
                        held[-_COALESCE:] = ["".join(held[-_COALESCE:])]
                        self._held_at = len(held) + _COALESCE
                    return []
                if held:
                    self._unhold()
                routed = self._buf[self._pos :] + text[:cut]
                self._buf = routed[-1] + text[cut:]  # one character of context, as _trim keeps
                self._pos = 1
                parts = self._parts
                parts.append(routed)
                if len(parts) >= self._coalesce_at:
                    self._coalesce()
                return [
                    {"type": "region_chunk", "field": self._current, "text": routed, "dirty": self._dirty}
                ]
        return self._feed_slow(text)

    def _feed_without_context(self, text: str) -> list[dict]:
        """Consume the next piece of model output; returns the events it caused.

        (`feed` for templates without regex delimiters, installed by `__init_subclass__`: literals never
        look back, so the common case need not even keep the chunk as context.)"""
        if self._fast and text and _find(text, self._first) < 0:
            parts = self._parts
            parts.append(text)
            if len(parts) >= self._coalesce_at:
                self._coalesce()
            return [{"type": "region_chunk", "field": self._current, "text": text, "dirty": self._dirty}]
        return self._feed_slow(text)

    def _feed_slow(self, text: str) -> list[dict]:
        if self._held:
            self._unhold()
        self._fast = False  # until this feed has finished without error
        self._run = None
        events = self._feed(text)
        if (
            self._first is not None
            and self._current is not None
            and self._opened
            and self.KEEP is not None
            and not self._empty_open
        ):
            tails = self._tails
            self._fast = not tails and self._pos == len(self._buf)
            self._run = tails[0] if len(tails) == 1 else None
        return events

    def _unhold(self) -> None:
        """Put the pieces of a held run that `feed` set aside back at the end of the buffer."""
        self._buf += "".join(self._held)
        self._held = []
        self._held_at = _COALESCE

    def _feed(self, text: str) -> list[dict]:
        if self._finalized:
            raise RuntimeError("ResponseParser already finalized")
        if text:
            first = self._first
            if first is not None:
                plain = _find(text, first) < 0
            else:
                quick = self._quick
                plain = quick is not None and quick(text) is None
            if plain:  # no watched delimiter can start in this chunk
                buf = self._buf
                pos = self._pos
                if pos == len(buf) and not self._tails:
                    # Nothing held either: the oracle's pass routes the whole chunk as one event.
                    buf = buf + text if self.KEEP is None else text  # the chunk is context enough
                    self._buf = buf
                    self._pos = len(buf)
                    self._empty_open = False
                    current = self._current
                    if current is None:
                        return []
                    parts = self._parts
                    parts.append(text)
                    if len(parts) >= self._coalesce_at:
                        self._coalesce()
                    chunk = {"type": "region_chunk", "field": current, "text": text, "dirty": self._dirty}
                    if self._opened:
                        return [chunk]
                    self._opened = True
                    return [{"type": "region_open", "field": current}, chunk]
                if self._tails and (
                    pos == len(buf)
                    or (buf.find(first, pos) < 0 if first is not None else self._quick(buf, pos) is None)
                ):
                    return self._feed_runs(text)
            self._buf += text
        events: list[dict] = []
        self._process(events, False)
        self._trim()
        return events

    def _feed_runs(self, text: str) -> list[dict]:
        """No watched delimiter can complete in the unconsumed text: only lead-run delimiters
        (`\\s*<tool_call>`) can be pending, on the trailing run of their class. Route up to that run and
        hold it, as the oracle's pass does, without scanning for every delimiter."""
        buf = self._buf + text
        pos = self._pos
        tails = self._tails
        if len(tails) == 1:
            run = tails[0]
            hold = len(buf)
            while hold > pos and buf[hold - 1] in run:
                hold -= 1
        else:
            hold = min(run_start(buf, pos, run) for run in tails)
        self._buf = buf
        self._pos = hold
        if hold == pos:
            return []
        events: list[dict] = []
        self._route(events, buf[pos:hold])
        if self.KEEP is not None and hold > 1:
            self._buf = buf[hold - 1 :]  # one character of context is all the patterns look back at
            self._pos = 1
        return events

    def finalize(self) -> tuple[dict, list[dict]]:
        """End the stream: close what is open and return `(message, events)`."""
        if self._finalized:
            raise RuntimeError("ResponseParser already finalized")
        if self._held:
            self._unhold()
        self._fast = False
        self._run = None
        events: list[dict] = []
        self._process(events, True)
        return self._finish(events), events

    @classmethod
    def parse_whole(cls, text: str, prefix: str | None, tools: list | None, errors: str) -> dict:
        """`parse_response`: one end-of-stream pass and no events.

        The oracle feeds the text and then finalizes; a pass that holds back nothing (end of stream)
        reaches the same message, because holding only delays text, never reorders or drops it.
        """
        parser = cls(prefix, tools=tools, errors=errors)
        if text:
            parser._buf += text
        parser._run_to_end()
        message = parser._finish(None)
        if parser.errors:
            message["parse_errors"] = parser.errors
        return message

    @classmethod
    def parse_tokens(cls, response: Any, prefix: Any, tools: list | None, errors: str, tokenizer: Any) -> Any:
        """`parse_response` with `tokenizer=`: token ids, batches and arrays as `tokenizer.parse_response`
        takes them (same classification, broadcasting and errors), each item parsed by `parse_whole`."""
        from respc.runtime.tokenizer import parse_with_tokenizer

        def parse(text: str, prefix: str | None, tools: list | None) -> dict:
            return cls.parse_whole(text, prefix, tools, errors)

        return parse_with_tokenizer(parse, response, prefix=prefix, tools=tools, tokenizer=tokenizer)

    def _finish(self, events: list[dict] | None) -> dict:
        missing = [name for name in self.REQUIRED if name not in self._output] if self.REQUIRED else None
        if missing:
            error = ValueError(f"Required response_template fields missing from parsed output: {missing}")
            if self.errors is None:
                raise error
            for name in missing:
                self._keep_error(events, name, "", error)
        defaults = self.DEFAULT_KEYS
        self._output = {
            k: v
            for k, v in self._output.items()
            if k in defaults or (v is not None and (not isinstance(v, _SIZED) or v))
        }
        self._finalized = True
        return self._output

    def _process(self, events: list[dict] | None, eos: bool) -> None:
        """The oracle's processing pass; `events` is None when nobody will read them."""
        buf = self._buf
        while True:
            pos = self._pos
            if eos:
                commit = self._end(buf, pos)
            else:
                commit, hold = self._scan(buf, pos)
            if commit is not None:
                start, end, is_open, name, match = commit
                if start > pos:
                    self._route(events, buf[pos:start])
                # The oracle moves past the delimiter before closing, so a failing close leaves it consumed.
                self._pos = end
                if is_open:
                    self._close(events)
                    self._open(events, name, match, start == end)
                else:
                    had_opened = self._opened
                    zero_width_open = self._empty_open
                    self._close(events)
                    if start == end:
                        if not had_opened:
                            break  # the oracle stops the pass here rather than re-fire (quirk Q4)
                        if zero_width_open:
                            raise RuntimeError(
                                f"response template field {name!r}: its open and close both matched the empty "
                                f"string at the same place, so transformers would loop forever here"
                            )
                continue
            if eos:
                if pos < len(buf):
                    self._route(events, buf[pos:])
                    self._pos = len(buf)
                self._close(events)
                break
            if hold > pos:
                self._route(events, buf[pos:hold])
                self._pos = hold
            break

    def _run_to_end(self) -> None:
        """`_process(None, True)` for `parse_whole`, with the loop's state in local variables: nothing is
        held at the end of the stream, so each region's text is routed as one slice."""
        buf = self._buf
        pos = self._pos
        while True:
            commit = self._end(buf, pos)
            if commit is None:
                break
            start, end, is_open, name, match = commit
            if start > pos:
                self._empty_open = False
                if self._current is not None:
                    self._parts.append(buf[pos:start])
                    self._opened = True
            # The oracle moves past the delimiter before closing, so a failing close leaves it consumed.
            self._pos = pos = end
            if is_open:
                if self._opened:
                    self._close(None)
                self._open(None, name, match, start == end)
            else:
                had_opened = self._opened
                zero_width_open = self._empty_open
                if had_opened:
                    self._close(None)
                if start == end:
                    if not had_opened:
                        return  # the oracle stops the pass here rather than re-fire (quirk Q4)
                    if zero_width_open:
                        raise RuntimeError(
                            f"response template field {name!r}: its open and close both matched the empty "
                            f"string at the same place, so transformers would loop forever here"
                        )
        if pos < len(buf):
            if self._current is not None:
                self._parts.append(buf[pos:])
                self._opened = True
            self._pos = len(buf)
        self._close(None)

    def _coalesce(self) -> None:
        """Join the newest parts of a long region into one block: a 4-character chunk held as its own
        string costs about 60 bytes, so a long stream would hold 15 times its size. Each character is
        copied once more, and the blocks themselves are only joined at close."""
        parts = self._parts
        parts[-_COALESCE:] = ["".join(parts[-_COALESCE:])]
        self._coalesce_at = len(parts) + _COALESCE

    def _route(self, events: list[dict] | None, text: str) -> None:
        self._empty_open = False
        current = self._current
        if current is None:
            return
        parts = self._parts
        parts.append(text)
        if len(parts) >= self._coalesce_at:
            self._coalesce()
        if events is None:
            self._opened = True
            return
        if not self._opened:
            events.append({"type": "region_open", "field": current})
            self._opened = True
        events.append({"type": "region_chunk", "field": current, "text": text, "dirty": self._dirty})

    def _open(self, events: list[dict] | None, name: Any, match: Any, zero_width: bool) -> None:
        self._current = name
        # (`_STATES` may still be unbuilt in a parser unpickled in a fresh process: __init__ never ran.)
        states = self._STATES or self._build_states()
        self._scan, self._end, self._quick, self._first, self._tails, self._dirty = states[name]
        self._captures = (
            {} if match is None else {k: v for k, v in match.groupdict().items() if v is not None}
        )
        self._parts = []
        self._coalesce_at = _COALESCE
        self._opened = True
        self._empty_open = zero_width
        if events is not None:
            events.append({"type": "region_open", "field": name})

    def _close(self, events: list[dict] | None) -> None:
        current = self._current
        if not self._opened:
            # Only the implicit region (or the null sink) can be unopened, and it has nothing to reset.
            return
        body = "".join(self._parts)
        output = self._output
        try:
            parse, join, repeats = self._FIELDS[current]
            value = parse(body, self._captures)
            if self._tools:
                value = coerce_tool_calls(value, self._tools)
            if join is not None:
                if not isinstance(value, str):
                    raise ValueError(
                        f"Field '{current}': 'join' requires each match to parse to a string, "
                        f"got {type(value).__name__}."
                    )
                previous = output.get(current)
                output[current] = value if previous is None else previous + join + value
            elif repeats:
                output.setdefault(current, []).append(value)
            else:
                output[current] = value
        except Exception as error:
            if self.errors is None:
                raise
            self._keep_error(events, current, body, error)
            self._reset()
            return
        if events is not None:
            events.append({"type": "region_close", "field": current, "value": value})
        self._reset()

    def _keep_error(self, events: list[dict] | None, field: Any, text: str, error: BaseException) -> None:
        """errors="keep": report a region that failed to parse, with its raw text, and carry on."""
        report = {"field": field, "text": text, "error": str(error), "exception": type(error).__name__}
        self.errors.append(report)
        if events is not None:
            events.append({"type": "region_error", **report})

    def _coerce_tool_calls(self, value: Any) -> Any:
        """Tool-argument coercion as upstream tests call it: returns `value`, cast in place."""
        return coerce_tool_calls(value, self._tools)

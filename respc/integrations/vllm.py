"""respc as vLLM's response parser: `vllm serve MODEL --enable-auto-tool-choice --tool-call-parser respc
--reasoning-parser respc`.

vLLM loads the `vllm.general_plugins` entry point (`register`) in each of its processes before it reads
its command line. `register` adds the name `respc` to vLLM's tool and reasoning parser registries and
makes `ParserManager.get_parser` answer that name with `RespcParser`, one parser for the whole message:
for names it does not know vLLM would pair a reasoning parser with a separate tool parser, a split that
one template-driven parser does not have. The template (see `respc.integrations.template`) is found and
compiled once per process; a missing or bad one stops the server at start-up with one line.

What a request gets, exactly as transformers parses it wherever transformers returns a message:
`parse()` is its message (reasoning, content, tool calls with arguments as JSON text); `parse_delta()`
feeds the compiled parser through `respc.serving.DeltaStream`, so reasoning and content are sent as they
are generated and each tool call sends its id, type and name first, then argument fragments whose
concatenation is its arguments' JSON. The prompt is the parser's `prefix`. Policies:

* Parsing is lenient (`errors="keep"`): a region transformers would reject (malformed or cut-off tool
  call JSON, a failing transform) never fails the request; its text, as the model wrote it, is sent as
  content, with a warning in the log. A call already announced keeps the fragments it was sent.
* Arguments written as a JSON string (Granite 4's `"arguments": "{\\"x\\": 1}"`) are sent as the
  string's text, as vLLM's other parsers do, once the string is complete.
* Without tools in the request, or with `tool_choice="none"`, the template is used without its
  `tool_calls` field, so a call the model writes stays text; without `--reasoning-parser respc`, the
  same for reasoning.
* `tool_choice="required"`, a named tool choice and `strict` tools are refused with vLLM's own 400
  error: the plugin derives no grammar from the template to force them. `parallel_tool_calls=False` is
  left to vLLM, which sends the first call only.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from openai.types.responses import ToolChoiceCustom, ToolChoiceFunction
from vllm.entrypoints.generate.base.protocol import (
    DeltaMessage,
    FunctionCall,
)
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionNamedToolChoiceParam
from vllm.exceptions import VLLMValidationError
from vllm.parser.abstract_parser import Parser
from vllm.reasoning import ReasoningParser, ReasoningParserManager
from vllm.renderers.chat_utils import make_tool_call_id
from vllm.tool_parsers import ToolParser, ToolParserManager

from respc.integrations.template import ServedTemplate, ServingTemplateError, served_template
from respc.serving import DeltaStream, DeltaStreamError
from respc.serving.deltas import calls_of
from respc.serving.tool_args import call_parts

__all__ = ["NAME", "RespcParser", "RespcReasoningParser", "RespcToolParser", "register"]

NAME = "respc"
logger = logging.getLogger("respc")


def register() -> None:
    """The `vllm.general_plugins` entry point: registers `respc` (idempotent, as vLLM asks of plugins)."""
    from vllm.parser.parser_manager import ParserManager

    ReasoningParserManager.register_lazy_module(NAME, __name__, "RespcReasoningParser")
    ToolParserManager.register_lazy_module(NAME, __name__, "RespcToolParser")
    if getattr(ParserManager.get_parser, "respc_original", None) is None:
        original = ParserManager.get_parser.__func__

        def get_parser(
            cls: type,
            tool_parser_name: str | None = None,
            reasoning_parser_name: str | None = None,
            enable_auto_tools: bool = False,
            **options: Any,
        ) -> type[Parser] | None:
            if NAME not in (tool_parser_name, reasoning_parser_name):
                return original(cls, tool_parser_name, reasoning_parser_name, enable_auto_tools, **options)
            return parser_class(
                tools=tool_parser_name == NAME and enable_auto_tools,
                reasoning=reasoning_parser_name == NAME,
                other=({tool_parser_name, reasoning_parser_name} - {NAME, None, ""}),
                tokenizer=options.get("tokenizer"),
            )

        get_parser.respc_original = original
        ParserManager.get_parser = classmethod(get_parser)


def parser_class(*, tools: bool, reasoning: bool, other: set, tokenizer: Any) -> type[RespcParser] | None:
    """The `Parser` class vLLM instantiates per request, checked against the served tokenizer now."""
    if other:
        raise TypeError(
            f"--tool-call-parser/--reasoning-parser {NAME} cannot be combined with {sorted(other)[0]}: "
            f"{NAME} parses the whole message from one template; pass {NAME} to both"
        )
    if not tools and not reasoning:
        return None  # --tool-call-parser respc without --enable-auto-tool-choice: vLLM parses nothing
    if tokenizer is not None:
        served = _served(tokenizer)
        for with_tools in {
            tools,
            False,
        }:  # compiled now, not in a request: with and without the request's tools
            served.module(reasoning=reasoning, tools=with_tools)
        logger.info("respc: serving %s (transformers %s)", served.origin, served.target)
    return type(
        "RespcParser",
        (RespcParser,),
        {
            "reasoning_parser_cls": RespcReasoningParser if reasoning else None,
            "tool_parser_cls": RespcToolParser if tools else None,
        },
    )


def _served(tokenizer: Any) -> ServedTemplate:
    try:
        return served_template(tokenizer)
    except ServingTemplateError as error:
        raise TypeError(f"{NAME} parser: {error}") from None


def _decode(tokenizer: Any, token_ids: Sequence[int]) -> str:
    """The text of `token_ids` with special tokens kept: many delimiters are special tokens."""
    try:
        return tokenizer.decode(
            list(token_ids),
            skip_special_tokens=False,
            clean_up_tokenization_spaces=False,
            spaces_between_special_tokens=False,
        )
    except TypeError:  # a tokenizer without the last two options
        return tokenizer.decode(list(token_ids), skip_special_tokens=False)


def _reasoning_over(served: ServedTemplate, text: str, *, thinking_disabled: bool) -> bool:
    """Whether reasoning is over at the end of `text` (a prompt, or a prompt and what followed it): the
    template has none, or a reasoning region closed and none is open; one not begun yet may still come,
    unless the request turned thinking off."""
    fields = served.reasoning_fields
    if not fields:
        return True
    parser = served.module().ResponseParser(text, errors="keep")
    if parser.current_field in fields:
        return False
    events = parser.initial_events
    if any(e["type"] in ("region_close", "region_error") and e["field"] in fields for e in events):
        return True
    return thinking_disabled


class RespcReasoningParser(ReasoningParser):
    """`--reasoning-parser respc`: where reasoning ends, for vLLM's structured-output gate (in the engine
    process too) and `RespcParser`; the message itself is parsed by `RespcParser`."""

    def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, *args, **kwargs)
        self.served = _served(tokenizer)
        chat_template_kwargs = kwargs.get("chat_template_kwargs") or {}
        self._thinking_disabled = chat_template_kwargs.get("enable_thinking", True) is False
        self._end_ids = self._closer_ids()

    def _closer_ids(self) -> list[list[int]] | None:
        """The token ids of each literal reasoning closer, or None when a closer is a pattern."""
        closers: list[str] = []
        for name in self.served.reasoning_fields:
            close = self.served.template["fields"][name].get("close")
            if close is None:
                return None
            closers += [close] if isinstance(close, str) else list(close)
        vocab = self.vocab
        ids = [
            [vocab[c]] if c in vocab else self.model_tokenizer.encode(c, add_special_tokens=False)
            for c in closers
        ]
        return ids if ids and all(ids) else None

    @property
    def reasoning_start_str(self) -> str | None:
        return self._literal("open")

    @property
    def reasoning_end_str(self) -> str | None:
        return self._literal("close")

    def _literal(self, key: str) -> str | None:
        """The first reasoning field's literal delimiter, which vLLM reads for its reasoning token ids."""
        fields = self.served.reasoning_fields
        value = self.served.template["fields"][fields[0]].get(key) if fields else None
        value = value[0] if isinstance(value, list) and value else value
        return value if isinstance(value, str) else None

    def is_reasoning_end(self, input_ids: Sequence[int]) -> bool:
        text = _decode(self.model_tokenizer, input_ids)
        return _reasoning_over(self.served, text, thinking_disabled=self._thinking_disabled)

    def is_reasoning_end_streaming(self, input_ids: Sequence[int], delta_ids: Iterable[int]) -> bool:
        if self._end_ids is None:
            return self.is_reasoning_end(input_ids)
        fresh = len(list(delta_ids))
        for end in self._end_ids:
            window = list(input_ids[max(0, len(input_ids) - fresh - len(end) + 1) :])
            if any(window[at : at + len(end)] == end for at in range(len(window) - len(end) + 1)):
                return True
        return False

    def extract_content_ids(self, input_ids: list[int]) -> list[int]:
        raise NotImplementedError("RespcParser parses the whole message")

    def extract_reasoning(self, model_output: str, request: Any) -> tuple[str | None, str | None]:
        raise NotImplementedError("RespcParser parses the whole message")

    def extract_reasoning_streaming(self, *args: Any, **kwargs: Any) -> DeltaMessage | None:
        raise NotImplementedError("RespcParser parses the whole message")


class RespcToolParser(ToolParser):
    """`--tool-call-parser respc`: selects `RespcParser`, which parses the tool calls."""


def _tool_dicts(tools: Sequence[Any] | None) -> list[dict]:
    """Chat Completions and Responses function tools as transformers' `tools=` dicts."""
    result = []
    for tool in tools or ():
        tool = tool.model_dump(exclude_none=True) if hasattr(tool, "model_dump") else tool
        if not isinstance(tool, dict) or tool.get("type", "function") != "function":
            continue
        if isinstance(tool.get("function"), dict):
            result.append(tool)
        elif isinstance(tool.get("name"), str):  # a Responses API function tool is flat
            function = {key: tool[key] for key in ("name", "description", "parameters") if key in tool}
            result.append({"type": "function", "function": function})
    return result


def _strict(tool: Any) -> bool:
    tool = tool.model_dump(exclude_none=True) if hasattr(tool, "model_dump") else tool
    if not isinstance(tool, dict):
        return False
    function = tool.get("function")
    return bool(tool.get("strict") or (isinstance(function, dict) and function.get("strict")))


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _arguments(value: Any) -> str:
    """Arguments as OpenAI sends them: JSON text, or the text of a JSON string as it is."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class RespcParser(Parser):
    """The message of one request (or one choice), parsed by the served template's compiled parser."""

    reasoning_parser_cls: type[ReasoningParser] | None = RespcReasoningParser
    tool_parser_cls: type[ToolParser] | None = RespcToolParser
    always_adjust_request = True

    def __init__(self, tokenizer: Any, tools: list | None = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, tools, *args, **kwargs)
        self.served = _served(tokenizer)
        self._tools = _tool_dicts(tools)
        self._prompt_ids: list[int] | None = None
        self._prefix = ""
        self._stream: _Stream | None = None
        self._counter: _ReasoningCounter | None = None

    # -- what vLLM calls -------------------------------------------------------------------------------

    def adjust_request(self, request: Any) -> Any:
        request.skip_special_tokens = False  # delimiters are often special tokens
        if hasattr(request, "spaces_between_special_tokens"):
            request.spaces_between_special_tokens = False
        if self._tool_parser is not None and request.tools and request.tool_choice != "none":
            refused = self._refused(request)
            if refused is not None:
                guarantee, parameter = refused
                raise VLLMValidationError(
                    f"--tool-call-parser {NAME} cannot guarantee {guarantee}: it derives no grammar from the "
                    'response template; use tool_choice "auto"',
                    parameter=parameter,
                )
        return request

    def set_prompt_token_ids(self, prompt_token_ids: Sequence[int]) -> None:
        prompt_token_ids = list(prompt_token_ids)
        if prompt_token_ids != self._prompt_ids:
            self._prompt_ids = prompt_token_ids
            self._prefix = _decode(self.model_tokenizer, prompt_token_ids)
            self._stream = None

    def is_reasoning_end(self, input_ids: list[int]) -> bool:
        return self._reasoning_parser is None or self._reasoning_parser.is_reasoning_end(input_ids)

    def parse(
        self,
        model_output: str,
        request: Any,
        enable_auto_tools: bool = False,
        model_output_token_ids: Sequence[int] = (),
    ) -> tuple[str | None, str | None, list[FunctionCall] | None]:
        self._initialize_history_tool_call_cnt(request)
        module = self._module(request)
        message = module.parse_response(model_output, prefix=self._prefix, tools=self._tools, errors="keep")
        reasoning = [_text(message[f]) for f in self.served.reasoning_fields if message.get(f) is not None]
        content = _text(message.get("content"))
        lost = [error["text"] for error in message.get("parse_errors", ())]
        for error in message.get("parse_errors", ()):
            logger.warning(
                "respc: %s region sent as content: %s", error["field"], error["error"].splitlines()[0]
            )
        if lost:
            content = (content or "") + "".join(lost)
        calls = []
        for call in calls_of(message.get("tool_calls")):
            call_id, name, arguments = call_parts(call)
            call_id = call_id if isinstance(call_id, str) else self._new_id(name)
            calls.append(FunctionCall(id=call_id, name=name, arguments=_arguments(arguments)))
        return "".join(reasoning) if reasoning else None, content, calls or None

    def parse_delta(
        self,
        delta_text: str,
        delta_token_ids: list[int],
        request: Any,
        prompt_token_ids: list[int] | None = None,
        *,
        finished: bool,
    ) -> DeltaMessage | None:
        self._initialize_history_tool_call_cnt(request)
        if self._prompt_ids is None and prompt_token_ids is not None:
            self.set_prompt_token_ids(prompt_token_ids)
        if self._stream is None:
            parser = self._module(request).ResponseParser(self._prefix, tools=self._tools, errors="keep")
            self._stream = _Stream(parser, self.served.reasoning_fields, self._new_id)
        delta = self._stream.feed(delta_text, len(delta_token_ids), finished=finished)
        if delta is not None and not request.include_reasoning:
            delta.reasoning = None
            if not delta.content and not delta.tool_calls:
                return None
        return delta

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        """The generated tokens inside reasoning regions (their delimiters not counted)."""
        if self._reasoning_parser is None or not self.served.reasoning_fields:
            return 0
        stream = self._stream
        if stream is not None and stream.exact and stream.tokens == len(token_ids):
            return stream.reasoning_tokens
        counter = self._counter
        if counter is None or counter.tokens > len(token_ids):
            counter = self._counter = _ReasoningCounter(self)
        return counter.count(token_ids)

    # -- helpers ---------------------------------------------------------------------------------------

    def _tools_on(self, request: Any) -> bool:
        return self._tool_parser is not None and bool(request.tools) and request.tool_choice in (None, "auto")

    def _module(self, request: Any) -> Any:
        return self.served.module(reasoning=self._reasoning_parser is not None, tools=self._tools_on(request))

    def _refused(self, request: Any) -> tuple[str, str] | None:
        if any(_strict(tool) for tool in request.tools or ()):
            return "strict tools", "tools"
        if request.tool_choice == "required":
            return "a required tool call", "tool_choice"
        if isinstance(
            request.tool_choice, (ToolChoiceFunction, ToolChoiceCustom, ChatCompletionNamedToolChoiceParam)
        ):
            return "a named tool call", "tool_choice"
        return None

    def _new_id(self, name: Any) -> str:
        state = self._stream_state
        call_id = make_tool_call_id(
            id_type=state.tool_call_id_type, func_name=name, idx=state.history_tool_call_cnt
        )
        state.history_tool_call_cnt += 1
        return call_id


class _ReasoningCounter:
    """Counts reasoning tokens one token at a time, on its own parser, for the calls a stream cannot answer
    (a whole message, or deltas of several tokens: speculative decoding). vLLM passes the growing list of
    generated ids, so each call feeds only the new ones."""

    def __init__(self, owner: RespcParser) -> None:
        from respc.runtime.tokenizer import as_decoder

        self.ids = as_decoder(owner.model_tokenizer).stream()
        self.parser = owner.served.module().ResponseParser(owner._prefix, errors="keep")
        self.fields = owner.served.reasoning_fields
        self.tokens = 0
        self.reasoning = 0

    def count(self, token_ids: Sequence[int]) -> int:
        for token in token_ids[self.tokens :]:
            before = self.parser.current_field
            self.parser.feed(self.ids.step([token]))
            self.reasoning += before in self.fields and self.parser.current_field in self.fields
        self.tokens = len(token_ids)
        return self.reasoning


_PENDING = "\0respc-call-"  # DeltaStream's ids for calls the template gives none, named in _Stream


class _Stream:
    """One generation: a DeltaStream over a lenient parser, its deltas as vLLM `DeltaMessage`s."""

    def __init__(self, parser: Any, reasoning_fields: tuple[str, ...], new_id: Callable[[Any], str]) -> None:
        self.parser = parser
        self.fields = reasoning_fields
        self.new_id = new_id
        numbers = iter(range(1 << 62))
        self.deltas = DeltaStream(parser, new_id=lambda: f"{_PENDING}{next(numbers)}")
        self.failed = False  # DeltaStream stopped: the rest of the output is sent as content
        self.errors = 0  # parser.errors already sent as content
        self.held: dict[int, list[str]] = {}  # calls whose arguments are a JSON string, until it completes
        self.plain: set[int] = set()  # calls whose arguments are sent as they come
        self.tokens = 0
        self.reasoning_tokens = 0  # tokens fed while a reasoning region stayed open
        self.exact = True  # one token per delta: each token's field is known

    def feed(self, text: str, tokens: int, *, finished: bool) -> DeltaMessage | None:
        before = self.parser.current_field
        deltas = self._feed(text, finished)
        after = self.parser.current_field
        self.tokens += tokens
        self.reasoning_tokens += tokens if before in self.fields and after in self.fields else 0
        self.exact = self.exact and tokens <= 1
        return self._message(deltas)

    def _feed(self, text: str, finished: bool) -> list[dict]:
        if self.failed:
            return [{"content": text}] if text else []
        deltas: list[dict] = []
        try:
            deltas += self.deltas.feed(text)
            if finished:
                deltas += self.deltas.finish()[0]
        except DeltaStreamError as error:
            # Only a stream that contradicts what it sent ends here (parsing is lenient): send what was
            # produced, the call's text, and from now on the output as it comes.
            logger.warning("respc: %s; the rest of the output is sent as content", error)
            self.failed = True
            deltas += error.deltas
            deltas += [{"content": error.raw}] if error.raw else []
        deltas += self._lost()
        if finished:  # a JSON string that never completed: its text, as the call's arguments
            deltas += [
                {"tool_calls": [{"index": index, "function": {"arguments": "".join(held)}}]}
                for index, held in self.held.items()
            ]
            self.plain.update(self.held)
            self.held.clear()
        return deltas

    def _lost(self) -> list[dict]:
        """The text of regions the parser could not parse, as content."""
        errors = self.parser.errors or ()
        lost = []
        for error in errors[self.errors :]:
            logger.warning(
                "respc: %s region sent as content: %s", error["field"], error["error"].splitlines()[0]
            )
            lost.append({"content": error["text"]})
        self.errors = len(errors)
        return lost

    def _message(self, deltas: list[dict]) -> DeltaMessage | None:
        content: list[str] = []
        reasoning: list[str] = []
        calls: list[dict] = []
        for delta in deltas:
            if "content" in delta:
                content.append(delta["content"])
            elif "reasoning_content" in delta:
                reasoning.append(delta["reasoning_content"])
            else:
                for entry in delta["tool_calls"]:
                    self._call(entry, calls)
        fields: dict[str, Any] = {}  # only what the delta has, as vLLM's own parsers build them
        if content:
            fields["content"] = "".join(content)
        if reasoning:
            fields["reasoning"] = "".join(reasoning)
        if calls:
            # Given as dicts: one validation builds the DeltaToolCalls, at two thirds the cost of three.
            fields["tool_calls"] = calls
        return DeltaMessage(**fields) if fields else None

    def _call(self, entry: dict, calls: list[dict]) -> None:
        index, function = entry["index"], entry["function"]
        if "id" in entry:
            call_id = entry["id"]
            if call_id.startswith(_PENDING):
                call_id = self.new_id(function["name"])
            header = {"name": function["name"], "arguments": ""}
            calls.append({"index": index, "id": call_id, "type": "function", "function": header})
            return
        arguments = self._arguments(index, function["arguments"])
        if not arguments:
            return
        if calls and calls[-1]["index"] == index:
            calls[-1]["function"]["arguments"] += arguments
        else:
            calls.append({"index": index, "function": {"arguments": arguments}})

    def _arguments(self, index: int, text: str) -> str:
        """Argument fragments as sent, except a JSON string, held whole and sent as its text."""
        if index in self.plain:
            return text
        held = self.held.setdefault(index, [])
        held.append(text)
        whole = "".join(held)
        lead = whole.lstrip()
        if not lead:
            return ""
        if lead[0] != '"':
            self.plain.add(index)
            del self.held[index]
            return whole
        if whole.rstrip().endswith('"'):
            try:
                value = json.loads(whole)
            except ValueError:
                return ""
            self.plain.add(index)
            del self.held[index]
            return value
        return ""

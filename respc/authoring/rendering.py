"""Chat templates rendered as transformers renders them, without transformers.

`ChatTemplate.render` gives what `tokenizer.apply_chat_template(conversation, tokenize=False, ...)` gives in
transformers 5.23.0 and 5.24.0, whose `utils/chat_template_utils.py` and `tokenization_utils_base.py` agree
on everything a rendering of plain messages sees: jinja2's immutable sandbox with `trim_blocks` and
`lstrip_blocks`, the loop-control and `{% generation %}` extensions, transformers' own `tojson` filter
and `raise_exception`, `strftime_now`, `dict` and `namespace` globals; message keys whose value is None
dropped and reasoning copied under `thinking` and `reasoning_content`; the tokenizer's special tokens
(`respc.authoring.sources.special_tokens`) as keyword arguments that the call's own keyword arguments
override. Only plain data goes in: messages, tools and documents are dicts, lists and scalars (tools as
JSON schemas, not Python functions).
"""

from __future__ import annotations

import contextvars
import functools
import json
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.utils
from jinja2.sandbox import ImmutableSandboxedEnvironment

__all__ = ["MIN_JINJA2", "ChatTemplate", "compile_chat_template", "prepare_messages"]

# transformers refuses older jinja2: earlier releases have known sandbox escapes, and chat templates come
# from model repositories, so they are untrusted code.
MIN_JINJA2 = (3, 1, 6)

# The names a message's reasoning is passed under; transformers copies it to the first two (the standard
# name chat templates read, and the one gpt-oss templates read).
REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")

# The clock `strftime_now` reads: a checker renders every probe at one instant, so that a template which
# prints the time renders the prompt and the conversation alike.
_NOW: contextvars.ContextVar[datetime | None] = contextvars.ContextVar(
    "respc_chat_template_now", default=None
)


class _Generation(jinja2.ext.Extension):
    """`{% generation %}...{% endgeneration %}`: transformers marks the assistant's tokens with it; a
    rendering to text keeps the body as it is."""

    tags = {"generation"}  # noqa: RUF012 (jinja2's Extension API reads a class attribute)

    def parse(self, parser: Any) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller: Any) -> str:
        return caller()


def _raise_exception(message: Any) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    # transformers' filter: json.dumps as is, where jinja2's own escapes HTML characters
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _strftime_now(format: str) -> str:
    return (_NOW.get() or datetime.now()).strftime(format)


class _TemplateDict:
    """The `dict` global: builds dicts, and exposes nothing else a template could climb through."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict:
        return dict.fromkeys(*args, **kwargs)


class _TemplateNamespace(jinja2.utils.Namespace):
    """The `namespace` global: jinja2's, refusing attribute names that start with an underscore."""

    def __init__(*args: Any, **kwargs: Any) -> None:
        # jinja2's signature trick: `self` comes from args, so `namespace(self=...)` still sets a key
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for name in attrs:
            _TemplateNamespace._check_name(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _TemplateNamespace._check_name(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check_name(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(
                "Chat templates cannot store underscore-prefixed attributes on a namespace, but got "
                f"{name!r}. Please rename the attribute."
            )


def _jinja2_version() -> tuple[int, ...]:
    return tuple(int(part) for part in jinja2.__version__.split(".")[:3] if part.isdigit())


@functools.lru_cache(maxsize=64)
def compile_chat_template(source: str) -> jinja2.Template:
    """`source` compiled in transformers' sandbox; raises jinja2's `TemplateSyntaxError` on a bad template."""
    if _jinja2_version() < MIN_JINJA2:
        raise ImportError(
            f"rendering chat templates needs jinja2>={'.'.join(map(str, MIN_JINJA2))} (older releases have "
            f"sandbox escapes), not {jinja2.__version__}: pip install -U jinja2"
        )
    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, jinja2.ext.loopcontrols]
    )
    environment.filters["tojson"] = _tojson
    environment.globals["raise_exception"] = _raise_exception
    environment.globals["strftime_now"] = _strftime_now
    environment.globals["dict"] = _TemplateDict()
    environment.globals["namespace"] = _TemplateNamespace
    return environment.from_string(source)


def _plain(value: Any) -> Any:
    """transformers' `_plain_template_data`: JSON-like data rebuilt from plain types (str, int and float
    subclasses brought back to the base type, tuples kept), anything else an inert `<TypeName>`."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {_plain(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_plain(item) for item in value)
    return f"<{type(value).__name__}>"


def prepare_messages(messages: list[Any]) -> list[Any]:
    """The messages as a chat template sees them: keys whose value is None dropped, plain data, and the
    reasoning (under any of `REASONING_KEYS`) also under `thinking` and `reasoning_content`."""
    prepared = []
    for message in messages:
        if not isinstance(message, dict):
            raise TypeError(
                f"Chat messages should be dicts, dataclasses or pydantic models, but got {message!r}."
            )
        message = _plain({key: value for key, value in message.items() if value is not None})
        reasoning = next((message[key] for key in REASONING_KEYS if message.get(key) is not None), None)
        if reasoning is not None:
            message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        prepared.append(message)
    return prepared


@dataclass(frozen=True)
class ChatTemplate:
    """A model's chat template (one, or several by name as `tokenizer.chat_template` holds them) and the
    special tokens it is rendered with; `where` names the file it came from."""

    template: str | Mapping[str, str]
    special_tokens: Mapping[str, str] = field(default_factory=dict)
    where: str = "<chat template>"

    def __post_init__(self) -> None:
        if not isinstance(self.template, str):
            object.__setattr__(self, "template", types.MappingProxyType(dict(self.template)))
        object.__setattr__(self, "special_tokens", types.MappingProxyType(dict(self.special_tokens)))

    def source(self, tools: list | None = None) -> str:
        """The template text used for a call with `tools`, chosen as `tokenizer.get_chat_template` does:
        among named templates, `tool_use` when tools are given, else `default`."""
        if isinstance(self.template, str):
            return self.template
        if tools is not None and "tool_use" in self.template:
            return self.template["tool_use"]
        if "default" in self.template:
            return self.template["default"]
        raise ValueError(
            "This model has multiple chat templates with no default specified! Please either pass a chat "
            "template or the name of the template you wish to use to the `chat_template` argument. Available "
            f"template names are {sorted(self.template)}."
        )

    def texts(self) -> list[str]:
        """Every template text, the default first."""
        if isinstance(self.template, str):
            return [self.template]
        names = sorted(self.template, key=lambda name: (name != "default", name))
        return [self.template[name] for name in names]

    def render(
        self,
        messages: list[dict],
        *,
        tools: list[dict] | None = None,
        documents: list[dict] | None = None,
        add_generation_prompt: bool = False,
        now: datetime | None = None,
        **kwargs: Any,
    ) -> str:
        """`tokenizer.apply_chat_template(messages, tools=..., documents=..., add_generation_prompt=...,
        tokenize=False, **kwargs)`; `now` fixes the clock `strftime_now` reads (default: the time of the call).
        Errors are the template's own: jinja2's `TemplateError` from `raise_exception`, `TemplateSyntaxError`.
        """
        if not messages:
            raise ValueError(
                "Cannot apply chat template to an empty conversation. Provide at least one message."
            )
        if tools is not None and not all(isinstance(tool, dict) for tool in tools):
            raise TypeError("tools are rendered as JSON schemas (dicts); convert Python functions first")
        if documents is not None and not all(isinstance(document, dict) for document in documents):
            raise TypeError("Documents should be a list of dicts with 'title' and 'text' keys!")
        template = compile_chat_template(self.source(tools))
        variables = _plain({**self.special_tokens, **kwargs})
        token = _NOW.set(now)
        try:
            return template.render(
                messages=prepare_messages(messages),
                tools=_plain(tools),
                documents=_plain(documents),
                add_generation_prompt=add_generation_prompt,
                **variables,
            )
        finally:
            _NOW.reset(token)

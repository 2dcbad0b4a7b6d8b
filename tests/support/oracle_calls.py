"""Calls the tests make on an oracle other than through a response parser: content parsers, get_json_schema
and the tokenizer entry points. Run in whichever process holds that oracle (tests/support/oracles.py, request
kind "call"), so every argument and result is plain data."""

from __future__ import annotations

from typing import Any


def content(name: str, text: str, args: dict) -> Any:
    """transformers' content parser `name` on `text`."""
    from transformers.utils.chat_parsing.content_parsers import parse_content

    return parse_content(text, name, args)


def schema_of_source(source: str, name: str) -> dict:
    """transformers' `get_json_schema` of the function `name` that `source` defines."""
    from transformers.utils.chat_template_utils import get_json_schema

    namespace: dict[str, Any] = {}
    exec(source, namespace)
    return get_json_schema(namespace[name])


def _tokenizer(tokenizer_json: str, template: Any) -> Any:
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(tokenizer_json), response_template=template
    )


def tokenizer_parse(tokenizer_json: str, template: Any, cases: list[tuple[Any, Any]]) -> list[tuple]:
    """`tokenizer.parse_response(response, prefix=prefix)` for each case: ("ok", value) or
    ("raise", exception name, message)."""
    tokenizer = _tokenizer(tokenizer_json, template)
    out = []
    for response, prefix in cases:
        try:
            out.append(("ok", tokenizer.parse_response(response, prefix=prefix)))
        except Exception as error:
            out.append(("raise", type(error).__name__, str(error)))
    return out


def tokenizer_stream_prefixes(tokenizer_json: str, template: Any, prefixes: list[Any]) -> list[tuple]:
    """`tokenizer.get_response_parser(prefix=prefix).initial_events` for each prefix, or its error."""
    tokenizer = _tokenizer(tokenizer_json, template)
    out = []
    for prefix in prefixes:
        try:
            out.append(("ok", tokenizer.get_response_parser(prefix=prefix).initial_events))
        except Exception as error:
            out.append(("raise", type(error).__name__, str(error)))
    return out


def batch_decode(tokenizer_json: str, sequences: Any) -> Any:
    """`tokenizer.batch_decode(sequences)` (5.24 answers an empty batch with [])."""
    return _tokenizer(tokenizer_json, None).batch_decode(sequences)


def render_chat(model_dir: str, cases: list[dict]) -> list[tuple]:
    """`tokenizer.apply_chat_template(tokenize=False, **case)` for each case, on the tokenizer saved in
    `model_dir`: ("ok", text) or ("raise", exception name, message)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    out = []
    for case in cases:
        try:
            out.append(("ok", tokenizer.apply_chat_template(tokenize=False, **case)))
        except Exception as error:
            out.append(("raise", type(error).__name__, str(error)))
    return out


def special_tokens_map(model_dir: str) -> dict:
    """`tokenizer.special_tokens_map` of the tokenizer saved in `model_dir`."""
    from transformers import AutoTokenizer

    return dict(AutoTokenizer.from_pretrained(model_dir).special_tokens_map)

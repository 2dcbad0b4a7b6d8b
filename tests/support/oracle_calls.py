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


# -- respc.accelerate beside transformers: the same calls on one tokenizer, before and after ---------------


def _value(spec: Any) -> Any:
    """A call argument: {"np": data} stands for a numpy array of data; anything else is itself."""
    if isinstance(spec, dict) and set(spec) == {"np"}:
        import numpy as np

        return np.array(spec["np"])
    return spec


def _tools(spec: Any) -> Any:
    """None, ("schemas", [...]) or ("functions", source, names): Python functions defined here by `source`,
    since functions do not cross to a worker process."""
    if spec is None or spec[0] == "schemas":
        return None if spec is None else spec[1]
    namespace: dict[str, Any] = {}
    exec(spec[1], namespace)
    return [namespace[name] for name in spec[2]]


def _outcome(call: Any) -> tuple:
    """("ok", value) or ("raise", the names along the exception type's MRO, message)."""
    try:
        return ("ok", call())
    except Exception as error:
        return ("raise", _names(type(error)), str(error))


def _names(kind: type) -> tuple[str, ...]:
    return tuple(klass.__name__ for klass in kind.__mro__)


def _run(tokenizer: Any, call: tuple) -> Any:
    """One call: ("parse", response, schema, prefix, tools) or ("stream", template, prefix, chunks, tools)."""
    from support.oracles import stream_trace

    kind, first, second, third, tools = call
    if kind == "parse":
        return _outcome(
            lambda: tokenizer.parse_response(_value(first), second, prefix=_value(third), tools=_tools(tools))
        )
    trace = stream_trace(
        lambda: tokenizer.get_response_parser(first, prefix=_value(second), tools=_tools(tools)), third
    )
    return [(step[0], _names(step[1]), step[2]) if step[0] == "raise" else step for step in trace]


def accelerated_calls(model_dir: str, calls: list[tuple], after: dict | None = None) -> dict:
    """Each call on the tokenizer `AutoTokenizer` loads from `model_dir`, with transformers, then with
    `respc.accelerate` (target: the installed transformers'), then with the tokenizer pickled and loaded
    again; `after` holds attributes set on the tokenizer before the calls are made once more each way."""
    import pickle

    from transformers import AutoTokenizer

    import respc

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    out: dict[str, list] = {"transformers": [_run(tokenizer, call) for call in calls]}
    respc.accelerate(tokenizer)
    out["respc"] = [_run(tokenizer, call) for call in calls]
    copy = pickle.loads(pickle.dumps(tokenizer))
    out["respc, unpickled"] = [_run(copy, call) for call in calls]
    if after:
        for name, value in after.items():
            setattr(tokenizer, name, value)
        out["respc, after"] = [_run(tokenizer, call) for call in calls]
        respc.accelerate(tokenizer, False)
        out["transformers, after"] = [_run(tokenizer, call) for call in calls]
    return out


def saved_files(model_dir: str, out_dir: str, accelerate: bool) -> dict:
    """The files `save_pretrained` writes for the tokenizer loaded from `model_dir`, accelerated or not."""
    from pathlib import Path

    from transformers import AutoTokenizer

    import respc

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if accelerate:
        respc.accelerate(tokenizer)
    tokenizer.save_pretrained(out_dir)
    return {path.name: path.read_bytes() for path in sorted(Path(out_dir).iterdir())}

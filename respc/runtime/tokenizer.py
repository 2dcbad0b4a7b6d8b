"""Token ids in, parsed messages out, without torch or transformers.

`tokenizer.parse_response` and `tokenizer.get_response_parser` in transformers 5.23.0 accept token ids,
batches and arrays, and decode them keeping special tokens (many delimiters are special tokens). This
module gives compiled parsers the same entry points on top of a `tokenizers.Tokenizer` (the optional
`tokenizers` package, imported only when a `tokenizer.json` is read), of a transformers tokenizer (its
`decode`, through its `tokenizers` backend where that gives the same text), or of any object with a
transformers-style `decode(ids, skip_special_tokens=...)`. numpy and torch are never imported: arrays
are recognised only when their library is already loaded, since only then can the caller hold one.
"""

from __future__ import annotations

import functools
import json
import operator
import os
import sys
from collections import UserDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "IdStream",
    "TokenDecoder",
    "TokenStreamParser",
    "as_decoder",
    "load_tokenizer",
    "parse_with_tokenizer",
    "response_parser_with_tokenizer",
    "stream_prefix",
    "token_ids",
]

# transformers 5.23.0, tokenization_utils_base.py: the messages of `parse_response` and
# `get_response_parser`, copied verbatim because callers match on them.
PARSE_PREFIX_REQUIRED = (
    "`parse_response` requires `prefix=` (the prompt that came before generation), because chat "
    "templates often pre-write part of the assistant message (e.g. an opening `<think>` tag) that the "
    "parser must see to parse correctly. If you're sure you don't need the prefix, you can pass an "
    "empty string or list."
)
STREAM_PREFIX_NOT_SINGLE = (
    "`prefix=` must be a single sequence (str, list[int], or 1D tensor) for `get_response_parser`."
)

# PreTrainedTokenizerBase.clean_up_tokenization, in its order (the replacements can chain).
_CLEAN_UP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"))
_CLEAN_UP += ((" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))

_NO_CLEAN_UP_STREAM = (
    "streaming from token ids is not supported for a tokenizer with clean_up_tokenization_spaces=True; "
    "decode the ids and feed the text"
)
_INSTALL_HINT = "reading tokenizer.json needs the `tokenizers` package: pip install tokenizers"


def _loaded_types() -> tuple[tuple[type, ...], tuple[type, ...]]:
    """(numpy scalar types, array and tensor types) that transformers' `to_py_obj` converts, from the
    libraries already loaded: a caller cannot hold an array of a library that was never imported."""
    found = {
        name: getattr(sys.modules.get(module), attribute, None)
        for name, module, attribute in [
            ("number", "numpy", "number"),
            ("ndarray", "numpy", "ndarray"),
            ("tensor", "torch", "Tensor"),
            ("mlx", "mlx.core", "array"),
        ]
    }
    found = {name: kind for name, kind in found.items() if isinstance(kind, type)}  # half-imported modules
    numbers = (found["number"],) if "number" in found else ()
    return numbers, tuple(found.values())


def _to_python(obj: Any) -> Any:
    """transformers' `to_py_obj`: arrays and tensors become (nested) lists, numbers stay as they are."""
    return _convert(obj, *_loaded_types())


def _convert(obj: Any, numbers: tuple[type, ...], arrays: tuple[type, ...]) -> Any:
    if isinstance(obj, (int, float)):
        return obj
    if isinstance(obj, (dict, UserDict)):
        return {key: _convert(value, numbers, arrays) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        if all(isinstance(item, (int, float, *numbers)) for item in obj):
            return list(obj)
        return [_convert(item, numbers, arrays) for item in obj]
    if arrays and isinstance(obj, arrays):
        return obj.tolist()
    return obj


class TokenDecoder:
    """Token ids to text exactly as transformers' `tokenizer.decode(ids)` gives it: special tokens kept."""

    def decode_one(self, ids: list[int]) -> str:
        """The text of one sequence of ids."""
        raise NotImplementedError

    def stream(self) -> IdStream:
        """A fresh incremental decoder for one generated sequence."""
        return _PrefixDiffStream(self.decode_one)

    def decode(self, token_ids: Any) -> str | list[str]:
        """`decode(token_ids)` with transformers' defaults: a str for one sequence, a list for a batch."""
        token_ids = _to_python(token_ids)
        if isinstance(token_ids, (list, tuple)) and token_ids and isinstance(token_ids[0], (list, tuple)):
            return [self._decode_item(ids) for ids in token_ids]
        return self._decode_item(token_ids)

    def _decode_item(self, ids: Any) -> str:
        if isinstance(ids, int):
            ids = [ids]
        if isinstance(ids, dict):
            ids = ids["input_ids"]
        return self.decode_one(ids)


class _TokenizersDecoder(TokenDecoder):
    """A `tokenizers.Tokenizer`, with the clean-up rule of transformers' fast tokenizers."""

    def __init__(self, tokenizer: Any, *, clean_up: bool = False, clean_up_bpe: bool = False) -> None:
        self.tokenizer = tokenizer
        # transformers ignores clean_up_tokenization_spaces for BPE models unless forced.
        bpe = type(tokenizer.model).__name__ == "BPE"
        self.clean_up = clean_up and (clean_up_bpe or not bpe)

    def decode_one(self, ids: list[int]) -> str:
        text = self.tokenizer.decode(ids, skip_special_tokens=False)
        if self.clean_up:
            for old, new in _CLEAN_UP:
                text = text.replace(old, new)
        return text

    def stream(self) -> IdStream:
        if self.clean_up:
            # The clean-up rewrites text across token boundaries, so a prefix of the ids does not
            # decode to a prefix of the text; no incremental decoder can match `decode` then.
            raise ValueError(_NO_CLEAN_UP_STREAM)
        return _DecodeStream(self.tokenizer, self.decode_one)


class _TransformersDecoder(TokenDecoder):
    """A transformers tokenizer: the text of its `decode(ids)`, taken from its `tokenizers` backend directly
    while the tokenizer decodes as transformers' fast tokenizers do (same calls, without the Python layers
    between: they cost as much as the decoding itself), else from `decode` itself."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        # transformers is loaded (the caller holds one of its tokenizers): its own functions, not copies.
        self._to_py_obj = sys.modules["transformers.utils.generic"].to_py_obj
        base = sys.modules["transformers.tokenization_utils_base"].PreTrainedTokenizerBase
        backend = sys.modules.get("transformers.tokenization_utils_tokenizers")
        fast = getattr(backend, "TokenizersBackend", None)
        self._plain = (base.decode, getattr(fast, "_decode", None))
        self._table: _ByteTable | None = None

    def backend(self) -> Any:
        """The `tokenizers.Tokenizer` whose `decode(ids, skip_special_tokens=False)` is `decode(ids)` now, or
        None: a class or instance that decodes its own way, or clean-up of spaces (a Python rewrite)."""
        tokenizer = self.tokenizer
        kind = type(tokenizer)
        if kind.decode is not self._plain[0] or kind._decode is not self._plain[1]:
            return None
        own = tokenizer.__dict__
        if "decode" in own or "_decode" in own or tokenizer.clean_up_tokenization_spaces:
            return None
        return tokenizer._tokenizer

    def decode(self, token_ids: Any) -> str | list[str]:
        """`tokenizer.decode(token_ids)`: one str for a sequence, a list for a batch."""
        backend = self.backend()
        if backend is None:
            return self.tokenizer.decode(token_ids)
        if type(token_ids) is list and set(map(type, token_ids)) <= _INT:
            # What to_py_obj returns for a list of ints, a copy, without its Python loop over the ids (which
            # costs half as much as decoding them).
            return self._decode_ints(backend, token_ids)
        token_ids = self._to_py_obj(token_ids)
        if (
            isinstance(token_ids, (list, tuple))
            and len(token_ids) > 0
            and isinstance(token_ids[0], (list, tuple))
        ):
            return [_backend_decode(backend, ids) for ids in token_ids]
        return _backend_decode(backend, token_ids)

    def decode_one(self, ids: list[int]) -> str:
        backend = self.backend()
        if backend is None:  # as `_MethodDecoder`, for tokenizers that decode their own way (vLLM's too)
            return self.tokenizer.decode(ids, skip_special_tokens=False)
        return _backend_decode(backend, ids)

    def _decode_ints(self, backend: Any, ids: list[int]) -> str:
        """`backend.decode(ids, skip_special_tokens=False)` for a list of ints; from a table of each token's
        bytes when the decoder is byte-level alone (`_ByteTable`: a fifth of the time, the same text)."""
        table = self._table
        if table is None or table.backend is not backend or not table.current():
            table = self._table = _ByteTable.of(backend)
        if table.tokens is None or (ids and (min(ids) < 0 or max(ids) >= len(table.tokens))):
            return backend.decode(ids, skip_special_tokens=False)  # its own errors, and unknown ids skipped
        return b"".join(map(table.tokens.__getitem__, ids)).decode("utf-8", "replace")

    def stream(self) -> IdStream:
        # With clean-up (older configs turn it on), prefix diffing as for any `decode` object: the best an
        # incremental decoder can do when a prefix of the ids need not decode to a prefix of the text.
        backend = self.backend()
        return (
            _PrefixDiffStream(self.decode_one) if backend is None else _DecodeStream(backend, self.decode_one)
        )


_INT = {int}


class _ByteTable:
    """The bytes of each token of a `tokenizers.Tokenizer` whose decoder is `ByteLevel` alone (GPT-2, Llama 3,
    Qwen, DeepSeek, gpt-oss...): there `decode(ids, skip_special_tokens=False)` maps each token's characters
    back to bytes (a token with a character outside the byte alphabet gives its UTF-8 as is, added tokens
    included), joins them and decodes the UTF-8 lossily (maximal subparts become U+FFFD, as Python's
    "replace" does). `tokens` is None for any other decoder. Rebuilt when tokens are added or the decoder
    is replaced."""

    __slots__ = ("backend", "decoder", "size", "tokens")

    def __init__(self, backend: Any, decoder: Any, size: int, tokens: tuple[bytes, ...] | None) -> None:
        self.backend, self.decoder, self.size, self.tokens = backend, decoder, size, tokens

    @classmethod
    def of(cls, backend: Any) -> _ByteTable:
        decoder = backend.decoder
        size = backend.get_vocab_size(with_added_tokens=True)
        if type(decoder).__name__ != "ByteLevel" or type(decoder).__module__ != "tokenizers.decoders":
            return cls(backend, decoder, size, None)
        to_byte = {char: byte for byte, char in _byte_alphabet().items()}
        tokens = []
        for token_id in range(size):
            token = backend.id_to_token(token_id)
            if token is None:  # a hole in the vocabulary: decode skips the id; so must we
                return cls(backend, decoder, size, None)
            try:
                tokens.append(bytes(to_byte[char] for char in token))
            except KeyError:
                tokens.append(token.encode("utf-8"))
        return cls(backend, decoder, size, tuple(tokens))

    def current(self) -> bool:
        """Whether the backend still has this table's decoder and vocabulary size."""
        return self.backend.get_vocab_size(with_added_tokens=True) == self.size and _same_decoder(
            self.backend.decoder, self.decoder
        )


def _same_decoder(now: Any, then: Any) -> bool:
    return type(now) is type(then) and now.__getstate__() == then.__getstate__()


@functools.cache
def _byte_alphabet() -> dict[int, str]:
    """GPT-2's map of the 256 bytes to printable characters, as `tokenizers`' ByteLevel uses it."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    others = [byte for byte in range(256) if byte not in printable]
    return {
        **{byte: chr(byte) for byte in printable},
        **{byte: chr(256 + index) for index, byte in enumerate(others)},
    }


def _backend_decode(backend: Any, ids: Any) -> str:
    """transformers' `TokenizersBackend._decode(ids)` with its defaults, less the clean-up it would skip."""
    if isinstance(ids, int):
        ids = [ids]
    if isinstance(ids, dict):
        ids = ids["input_ids"]
    return backend.decode(ids, skip_special_tokens=False)


class _MethodDecoder(TokenDecoder):
    """Any object with a transformers-style `decode(ids, skip_special_tokens=...)`."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def decode_one(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False)


def _tokenizers_module() -> Any:
    try:
        import tokenizers
    except ImportError as error:
        raise ImportError(_INSTALL_HINT) from error
    return tokenizers


def load_tokenizer(source: Any) -> TokenDecoder:
    """A decoder for a tokenizer.json path, a model directory, a `tokenizers.Tokenizer`, a transformers
    tokenizer or another `decode` object.

    A model directory's `tokenizer_config.json` supplies `clean_up_tokenization_spaces`, as transformers
    reads it there.
    """
    if isinstance(source, TokenDecoder):
        return source
    if isinstance(source, (str, os.PathLike)):
        return _load_path(Path(source))
    tokenizers = sys.modules.get("tokenizers")
    if tokenizers is not None and isinstance(source, tokenizers.Tokenizer):
        return _TokenizersDecoder(source)
    base = sys.modules.get("transformers.tokenization_utils_base")
    if base is not None and isinstance(source, base.PreTrainedTokenizerBase):
        return _TransformersDecoder(source)
    if callable(getattr(source, "decode", None)):
        return _MethodDecoder(source)
    raise TypeError(
        f"tokenizer must be a tokenizer.json path, a model directory, a tokenizers.Tokenizer or an object "
        f"with decode(ids, skip_special_tokens=...), not {type(source).__name__}"
    )


def _load_path(path: Path) -> TokenDecoder:
    config: dict[str, Any] = {}
    if path.is_dir():
        config_path = path / "tokenizer_config.json"
        if config_path.is_file():
            config = json.loads(config_path.read_text(encoding="utf-8"))
        path = path / "tokenizer.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path.parent}: no tokenizer.json (respc reads fast tokenizers only)")
    elif not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    tokenizer = _tokenizers_module().Tokenizer.from_file(str(path))
    return _TokenizersDecoder(
        tokenizer,
        clean_up=bool(config.get("clean_up_tokenization_spaces", False)),
        clean_up_bpe=bool(
            config.get("clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output", False)
        ),
    )


def as_decoder(tokenizer: Any) -> TokenDecoder:
    """`load_tokenizer` for the `tokenizer=` arguments: a loaded tokenizer or `decode` object, not a path."""
    if isinstance(tokenizer, (str, os.PathLike)):
        # Reading tokenizer.json takes far longer than parsing; doing it on every call would be a trap.
        raise TypeError("tokenizer= takes a loaded tokenizer; load a path once with load_tokenizer(path)")
    return load_tokenizer(tokenizer)


def parse_with_tokenizer(
    parse: Callable[..., dict],
    response: Any,
    *,
    prefix: Any = None,
    tools: list | None = None,
    tokenizer: Any,
) -> dict | list[dict]:
    """transformers' `tokenizer.parse_response(response, prefix=..., tools=...)` with `parse` as the template.

    Same classification of `response` and `prefix` (text, ids, batches, arrays), broadcasting, results and
    errors; `parse(text, prefix=..., tools=...)` is a compiled module's `parse_response`.
    """
    if prefix is None:
        raise ValueError(PARSE_PREFIX_REQUIRED)
    decoder = as_decoder(tokenizer)
    if isinstance(response, str):
        responses, batched = [response], False
    elif isinstance(response, (list, tuple)) and (not response or isinstance(response[0], str)):
        responses, batched = list(response), True
    else:
        decoded = decoder.decode(response)
        responses, batched = ([decoded], False) if isinstance(decoded, str) else (decoded, True)

    if isinstance(prefix, str):
        prefixes, per_item = [prefix], False
    elif isinstance(prefix, (list, tuple)) and not prefix:
        prefixes, per_item = [""], False  # the explicit opt-out, broadcast
    elif isinstance(prefix, (list, tuple)) and isinstance(prefix[0], str):
        prefixes, per_item = list(prefix), True
    else:
        decoded = decoder.decode(prefix)
        prefixes, per_item = ([decoded], False) if isinstance(decoded, str) else (decoded, True)
    if not per_item:
        prefixes = prefixes * len(responses)
    elif len(prefixes) != len(responses):
        raise ValueError(
            f"Got {len(responses)} response(s) but {len(prefixes)} prefix(es); `prefix` must be "
            "a single sequence (broadcast to every response), or one prefix per response."
        )

    parsed = [parse(text, prefix=item_prefix, tools=tools) for text, item_prefix in zip(responses, prefixes)]
    return parsed if batched else parsed[0]


def stream_prefix(prefix: Any, tokenizer: Any) -> str | None:
    """`get_response_parser`'s prefix: a str or None as given, anything else decoded to one sequence."""
    if prefix is None or isinstance(prefix, str):
        return prefix
    decoded = as_decoder(tokenizer).decode(prefix)
    if not isinstance(decoded, str):
        raise ValueError(STREAM_PREFIX_NOT_SINGLE)
    return decoded


def token_ids(ids: Any) -> list[int]:
    """One sequence of ids for `feed_ids`: an int, a list of ints, or a 1-D array or tensor."""
    ids = _to_python(ids)
    if isinstance(ids, int):
        return [operator.index(ids)]
    if not isinstance(ids, list) or any(isinstance(item, (list, tuple)) for item in ids):
        raise TypeError(f"feed_ids takes one sequence of token ids, not {type(ids).__name__}")
    return [operator.index(item) for item in ids]


class IdStream:
    """Incremental decoding of one generated sequence: text is released only when it is final.

    A character split across byte-level tokens is held until its last byte arrives, so no chunk ends
    in a broken character; once `flush` releases the rest, the chunks join to `decode(all ids)` (but see
    `_PrefixDiffStream._release` for a broken character in a byte-fallback tokenizer).
    """

    def step(self, ids: Iterable[int]) -> str:
        """The new text that `ids` complete (often "", while a character is incomplete)."""
        raise NotImplementedError

    def flush(self) -> str:
        """Release held ids as `decode` would render them (a truncated character becomes U+FFFD)."""
        raise NotImplementedError


class _DecodeStream(IdStream):
    """`tokenizers.decoders.DecodeStream`, plus the flush it lacks."""

    def __init__(self, tokenizer: Any, decode_one: Callable[[list[int]], str]) -> None:
        self._tokenizer = tokenizer
        self._decode = decode_one
        self._stream = self._new_stream([])
        self._last: list[int] = []  # the id of the last released text: context for decoding the held ids
        self._held: list[int] = []

    @staticmethod
    def _new_stream(context: list[int]) -> Any:
        from tokenizers.decoders import DecodeStream

        if not context:
            return DecodeStream(skip_special_tokens=False)
        try:
            return DecodeStream(ids=context, skip_special_tokens=False)
        except TypeError:  # tokenizers < 0.22 has no `ids=`; lose only the context of a leading space
            return DecodeStream(skip_special_tokens=False)

    def step(self, ids: Iterable[int]) -> str:
        parts = []
        for token in ids:
            try:
                piece = self._stream.step(self._tokenizer, token)
            except TypeError:
                raise
            except Exception:  # tokenizers' bare "Invalid prefix encountered": see _PrefixDiffStream._release
                piece = self._decode([*self._held, token])
                self._stream = self._new_stream([*self._held, token])
            if piece is None:
                self._held.append(token)
            else:
                parts.append(piece)
                self._last, self._held = [token], []
        return "".join(parts)

    def flush(self) -> str:
        if not self._held:
            return ""
        text = _text_after(self._decode, self._last, self._held)
        self._stream = self._new_stream(self._last + self._held)
        self._last, self._held = self._held[-1:], []
        return text


class _PrefixDiffStream(IdStream):
    """DecodeStream's algorithm for any `decode`: decode a short window, release what follows its prefix."""

    def __init__(self, decode_one: Callable[[list[int]], str]) -> None:
        self._decode = decode_one
        self._window: list[int] = []  # context ids (already released) followed by held ids
        self._read = 0  # window[:read] is the context
        self._prefix = ""  # decode(window[:read])

    def step(self, ids: Iterable[int]) -> str:
        parts = []
        for token in ids:
            self._window.append(token)
            text = self._decode(self._window)
            if len(text) > len(self._prefix) and not text.endswith("\ufffd"):
                parts.append(self._release(text))
        return "".join(parts)

    def flush(self) -> str:
        if self._read == len(self._window):
            return ""
        return self._release(self._decode(self._window))

    def _release(self, text: str) -> str:
        held = self._window[self._read :]
        if text.startswith(self._prefix):
            new = text[len(self._prefix) :]
        else:
            # A byte-fallback decoder turns a whole run of byte tokens into U+FFFD, one per byte, once the
            # run is broken, rewriting text already released; DecodeStream raises there. Released text
            # cannot be taken back, so render the held ids on their own.
            new = self._decode(held)
        # The released ids become the context of the next ones (a decoder may strip a leading space).
        self._window, self._read = held, len(held)
        self._prefix = self._decode(held)
        return new


def _text_after(decode: Callable[[list[int]], str], context: list[int], ids: list[int]) -> str:
    """The text `ids` add after `context`."""
    base = decode(context) if context else ""
    full = decode(context + ids)
    return full[len(base) :] if full.startswith(base) else decode(ids)


class TokenStreamParser:
    """A compiled `ResponseParser` that also takes token ids, decoded incrementally (`feed_ids`)."""

    def __init__(self, parser: Any, ids: IdStream) -> None:
        self.parser = parser
        self._ids = ids

    @property
    def initial_events(self) -> list[dict]:
        return self.parser.initial_events

    def feed(self, text: str) -> list[dict]:
        """Feed text; ids still held (an incomplete character) go first, so the order is kept."""
        held = self._ids.flush()
        return self.parser.feed(held + text if held else text)

    def feed_ids(self, ids: Any) -> list[dict]:
        """Feed token ids (an int, a list, a 1-D array); the events are those of feeding their new text."""
        return self.parser.feed(self._ids.step(token_ids(ids)))

    def finalize(self) -> tuple[dict, list[dict]]:
        """Feed what the ids still hold, then finalize: the message is that of the whole decoded text."""
        held = self._ids.flush()
        events = self.parser.feed(held) if held else []
        message, final = self.parser.finalize()
        return message, events + final

    def __getattr__(self, name: str) -> Any:
        return getattr(self.parser, name)


def response_parser_with_tokenizer(
    parser_class: Callable[..., Any], *, prefix: Any = None, tools: list | None = None, tokenizer: Any
) -> TokenStreamParser:
    """transformers' `tokenizer.get_response_parser(prefix=..., tools=...)` for a compiled parser class."""
    decoder = as_decoder(tokenizer)
    parser = parser_class(stream_prefix(prefix, decoder), tools=tools)
    return TokenStreamParser(parser, decoder.stream())

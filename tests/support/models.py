"""Model directories as the Hub lays them out, built in the test: a real (tiny) `tokenizers` tokenizer,
`tokenizer_config.json` and, when asked, `config.json` and `chat_template.jinja`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer, models, pre_tokenizers

ABSENT = object()  # leave the key out (None writes it as null)
WORDS = ("[UNK]", "<think>", "</think>", "hm", "hi", "Hi", "<|im_end|>")


def word_tokenizer(words: tuple[str, ...] = WORDS) -> Tokenizer:
    """A word-level tokenizer over `words`, split on whitespace (unknown words become [UNK])."""
    tokenizer = Tokenizer(models.WordLevel({word: i for i, word in enumerate(words)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return tokenizer


def model_dir(
    root: Path,
    name: str = "model",
    *,
    tokenizer: Tokenizer | None = None,
    response_template: Any = ABSENT,
    chat_template: Any = ABSENT,
    jinja: str | None = None,
    model_type: str | None = None,
    name_or_path: str | None = None,
    config: bool | None = None,
) -> Path:
    """`root/name` holding `tokenizer.json` (a `word_tokenizer` unless given), `tokenizer_config.json`
    with the templates given, `chat_template.jinja` when `jinja` is given, and `config.json` with the
    model type and repository id given (written when either is given, or when `config` is true)."""
    directory = root / name
    directory.mkdir(parents=True)
    (tokenizer or word_tokenizer()).save(str(directory / "tokenizer.json"))
    settings: dict[str, Any] = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 8192}
    if chat_template is not ABSENT:
        settings["chat_template"] = chat_template
    if response_template is not ABSENT:
        settings["response_template"] = response_template
    (directory / "tokenizer_config.json").write_text(json.dumps(settings), encoding="utf-8")
    if jinja is not None:
        (directory / "chat_template.jinja").write_text(jinja, encoding="utf-8")
    if config or (config is None and (model_type is not None or name_or_path is not None)):
        model_config: dict[str, Any] = {}
        if model_type is not None:
            model_config["model_type"] = model_type
        if name_or_path is not None:
            model_config["_name_or_path"] = name_or_path
        (directory / "config.json").write_text(json.dumps(model_config), encoding="utf-8")
    return directory


def trained_tokenizer(corpus: list[str], delimiters: list[str], *, kind: str = "byte-level") -> Tokenizer:
    """A BPE tokenizer trained on `corpus`: "byte-level" (GPT-2 style, `delimiters` as special tokens),
    "added" (the same, `delimiters` as ordinary added tokens) or "byte-fallback" (Llama style: <0xNN> byte
    tokens, "▁" spaces, a first space stripped on decoding; `delimiters` as ordinary added tokens)."""
    from tokenizers import AddedToken, decoders, normalizers, trainers

    if kind == "byte-fallback":
        tokenizer = Tokenizer(models.BPE(byte_fallback=True, fuse_unk=True))
        tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        tokenizer.decoder = decoders.Sequence(
            [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
        )
        trainer = trainers.BpeTrainer(
            vocab_size=700,
            special_tokens=[f"<0x{byte:02X}>" for byte in range(256)],
            limit_alphabet=80,
            show_progress=False,
        )
    elif kind in ("byte-level", "added"):
        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
        )
    else:
        raise ValueError(f"unknown tokenizer kind {kind!r}")
    tokenizer.train_from_iterator(
        [*corpus, "Hello world, the weather is mild.", "你好 🎉 東京 café"] * 3, trainer
    )
    if kind in ("byte-fallback", "added"):
        tokenizer.add_tokens([AddedToken(d, normalized=False) for d in delimiters])
    else:
        tokenizer.add_special_tokens([AddedToken(d, special=True, normalized=False) for d in delimiters])
    return tokenizer

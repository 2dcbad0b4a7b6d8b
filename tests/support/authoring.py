"""What the authoring tests (tests/authoring/) share: the real chat templates of
tests/authoring/chat_templates (with the special tokens they render with), a fixed clock, and model
directories built on the spot around a tiny tokenizer trained here, which transformers loads as it loads
a downloaded model."""

from __future__ import annotations

import functools
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from respc.authoring import ChatTemplate

CHAT_TEMPLATES = Path(__file__).parents[1] / "authoring" / "chat_templates"
INDEX: dict[str, dict[str, Any]] = json.loads((CHAT_TEMPLATES / "index.json").read_text(encoding="utf-8"))
NOW = datetime(2026, 1, 2, 3, 4, 5)


def chat_template(name: str) -> ChatTemplate:
    """A real chat template of the collection, with its model's special tokens."""
    text = (CHAT_TEMPLATES / f"{name}.jinja").read_bytes().decode("utf-8")
    return ChatTemplate(text, INDEX[name]["special_tokens"], f"{name}.jinja")


@functools.cache
def tiny_tokenizer_json() -> str:
    """A byte-level BPE trained on a few sentences: enough for transformers to load a tokenizer."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tokenizer.train_from_iterator(
        ["What is the weather in Paris?", "It is sunny in Paris today."] * 20, trainer
    )
    return tokenizer.to_str()


def model_dir(path: Path, config: dict[str, Any], files: dict[str, str] | None = None) -> Path:
    """A model directory at `path`: tokenizer.json, `config` as tokenizer_config.json, and other files."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "tokenizer.json").write_text(tiny_tokenizer_json(), encoding="utf-8")
    config = {"tokenizer_class": "PreTrainedTokenizerFast", **config}
    (path / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    for name, text in (files or {}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text, encoding="utf-8", newline="")
    return path

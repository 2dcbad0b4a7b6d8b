"""The decoder respc uses for a transformers tokenizer (`respc.runtime.tokenizer.load_tokenizer(tokenizer)`)
gives exactly `tokenizer.decode`'s text: through the `tokenizers` backend, or through the table of each
token's bytes for a byte-level decoder, on random ids (added and special tokens, characters cut between
tokens, ids out of range), after tokens are added and after the decoder is replaced."""

from __future__ import annotations

import random

import numpy as np
import pytest
from support.models import trained_tokenizer
from support.outcome import outcome
from tokenizers import AddedToken, decoders
from transformers import PreTrainedTokenizerFast

from respc.runtime.tokenizer import load_tokenizer

CORPUS = ["hello wörld 你好 🎉 café, the weather is mild", "<think>hm</think> 東京 🧑\u200d🚀 naïve"]
DELIMITERS = ["<think>", "</think>", "<｜end▁of▁sentence｜>", "<|im_end|>"]


def _tokenizer(kind: str) -> PreTrainedTokenizerFast:
    backend = trained_tokenizer(CORPUS, DELIMITERS, kind=kind)
    backend.add_tokens(
        [AddedToken("Ġhello", normalized=False), AddedToken("plain é added"), AddedToken("ĠĠ")]
    )
    return PreTrainedTokenizerFast(tokenizer_object=backend)


def _same(tokenizer: PreTrainedTokenizerFast, cases: list, decoder: object = None) -> None:
    decoder = decoder or load_tokenizer(tokenizer)
    for ids in cases:
        ours, theirs = outcome(decoder.decode, ids), outcome(tokenizer.decode, ids)
        assert ours[0] == theirs[0], (ids, ours, theirs)
        if ours[0] == "ok":
            assert ours[1] == theirs[1], ids
        else:
            assert (ours[1], ours[2]) == (theirs[1], theirs[2]), ids


def _random_ids(tokenizer: PreTrainedTokenizerFast, count: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    size = len(tokenizer)
    return [[rng.randrange(size) for _ in range(rng.randint(0, 12))] for _ in range(count)]


@pytest.mark.parametrize("kind", ["byte-level", "byte-fallback"])
def test_decoding_ids_gives_transformers_text(kind: str) -> None:
    tokenizer = _tokenizer(kind)
    cases: list = _random_ids(tokenizer, 3_000, seed=1)
    cases += [[], 5, [len(tokenizer) + 7, 3], [-1], [True, 2], [2.0], np.array([3, 4]), [[1, 2], [3]], [[]]]
    cases += [{"input_ids": [4, 5]}, [np.int64(6), 7]]
    _same(tokenizer, cases)


def test_tokens_added_later_and_a_new_decoder_are_seen() -> None:
    tokenizer = _tokenizer("byte-level")
    decoder = load_tokenizer(tokenizer)
    _same(tokenizer, _random_ids(tokenizer, 200, seed=2), decoder)
    tokenizer.add_tokens(["Ġworld", "新"], special_tokens=False)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|new|>"]})
    _same(tokenizer, [*_random_ids(tokenizer, 500, seed=3), [len(tokenizer) - 1] * 3], decoder)
    tokenizer.backend_tokenizer.decoder = decoders.ByteLevel(add_prefix_space=True)
    _same(tokenizer, _random_ids(tokenizer, 200, seed=4), decoder)
    tokenizer.backend_tokenizer.decoder = decoders.Metaspace()
    _same(tokenizer, _random_ids(tokenizer, 200, seed=5), decoder)


def test_clean_up_and_overridden_decode_go_through_decode_itself() -> None:
    tokenizer = _tokenizer("byte-level")
    tokenizer.clean_up_tokenization_spaces = True
    tokenizer.clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output = True
    text = "hello , wörld ! it 's"
    ids = tokenizer(text)["input_ids"]
    assert tokenizer.decode(ids) != text.replace("<think>", "")  # the clean-up changed something
    _same(tokenizer, [ids, *_random_ids(tokenizer, 100, seed=6)])
    tokenizer.clean_up_tokenization_spaces = False
    tokenizer.decode = lambda token_ids, **options: "own decode"
    assert load_tokenizer(tokenizer).decode([1, 2]) == "own decode"

"""Property-based differential tests: hypothesis builds texts from each template's own delimiters,
their fragments and pieces of realistic samples, then compares respc and the oracle under random
chunkings, prefixes and tools."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.compare import (
    SAMPLES,
    TEMPLATES,
    assert_same,
    oracle_parse,
    oracle_stream,
    respc_parse,
    respc_stream,
)
from transformers.utils.chat_parsing import ResponseParser as OracleParser

EXAMPLES = int(os.environ.get("RESPC_HYPOTHESIS_EXAMPLES", "60"))
GENERIC = [" ", "\n", "x", "hi", "{", "}", '"', ":", ",", "<", ">", "/", "é", "🙂", "1", "true", "\\", "\x00"]
TOOLS = [
    {
        "name": "f",
        "parameters": {"properties": {"a": {"type": "integer"}, "b": {"type": ["boolean", "string"]}}},
    }
]


def _literals(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def atoms(name: str) -> list[str]:
    """Delimiters of the template, samples cut at random places later, and generic characters."""
    template = TEMPLATES[name]
    found = _literals(template.get("start_anchor"))
    for field in template["fields"].values():
        for key in ("open", "close"):
            found += _literals(field.get(key))
    found += [case["text"] for case in SAMPLES.get(name, []) if case["text"]]
    return sorted(set(found)) + GENERIC


@st.composite
def piece(draw: st.DrawFn, pool: list[str]) -> str:
    atom = draw(st.sampled_from(pool))
    if len(atom) > 1 and draw(st.booleans()):
        a = draw(st.integers(0, len(atom) - 1))
        b = draw(st.integers(a + 1, len(atom)))
        return atom[a:b]
    return atom


@st.composite
def scenario(draw: st.DrawFn, name: str) -> tuple[str, list[str], bool]:
    pool = atoms(name)
    text = "".join(draw(st.lists(piece(pool), max_size=12)))
    prefix = "".join(draw(st.lists(piece(pool), max_size=3)))
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=6))))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    return prefix, chunks, draw(st.booleans())


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_random_texts_match_oracle(name: str) -> None:
    template = TEMPLATES[name]

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(scenario(name))
    def check(case: tuple[str, list[str], bool]) -> None:
        prefix, chunks, with_tools = case
        tools = TOOLS if with_tools else None
        ours = respc_stream(template, prefix, chunks, tools)
        theirs = oracle_stream(template, prefix, chunks, tools)
        assert_same(ours, theirs, template, f"{name} prefix={prefix!r} chunks={chunks!r}")
        text = "".join(chunks)
        ours = respc_parse(template, text, prefix, tools)
        assert_same(
            ours, oracle_parse(template, text, prefix, tools), template, f"{name} parse {prefix!r} {text!r}"
        )

    check()


@pytest.mark.parametrize("name", ["serving_qwen2", "serving_qwen3_5", "feature_zero_width_open"])
@pytest.mark.parametrize("width", [1, 3, 7])
def test_long_whitespace_runs_match_oracle(name: str, width: int) -> None:
    """A `\\s*<tool_call>` state holds a trailing whitespace run, as upstream. respc sets the run's pieces
    aside (joined in blocks of 512) instead of re-copying it per feed: runs longer than one block, ending
    in a tool call, in text, or at the end of the stream, must give the oracle's events."""
    template = TEMPLATES[name]
    call = {
        "serving_qwen2": '<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>',
        "serving_qwen3_5": "<tool_call>\n<function=f>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>",
        "feature_zero_width_open": "</s>",
    }[name]
    run = " \n\t" * 700  # 2,100 characters: several blocks of pieces at every width
    for text in (f"a{run}{call}b", f"a{run}b{run}", f"<think>x</think>{run}c{run}{call}{run}"):
        chunks = [text[i : i + width] for i in range(0, len(text), width)]
        ours = respc_stream(template, "", chunks)
        assert_same(
            ours, oracle_stream(template, "", chunks), template, f"{name} width={width} {text[:30]!r}"
        )
        # Streaming detokenizers emit empty deltas (a token ending mid-character): one after each piece.
        chunks = [piece for chunk in chunks[:400] for piece in (chunk, "")] + chunks[400:]
        ours = respc_stream(template, "", chunks)
        assert_same(ours, oracle_stream(template, "", chunks), template, f"{name} width={width} with ''")


@st.composite
def literal_template(draw: st.DrawFn) -> dict:
    """Two or three fields whose delimiters are short, colliding literals (prefixes of one another,
    overlapping ends), so that states watch several literals at once."""
    word = st.text(alphabet="<ab>", min_size=1, max_size=4)
    names = draw(st.lists(st.sampled_from(["x", "y", "z"]), min_size=2, max_size=3, unique=True))
    fields = {name: {"open": draw(word), "close": draw(word)} for name in names}
    return {"start_anchor": "S", "fields": fields}


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
# A complete literal that runs into another's partial match at the buffer end still commits.
@example(
    template={
        "start_anchor": "S",
        "fields": {"x": {"open": "ab", "close": ">"}, "y": {"open": "b<", "close": "a"}},
    },
    text="ab",
    cuts=[2],
)
@given(
    template=literal_template(),
    text=st.text(alphabet="<ab>c", max_size=30),
    cuts=st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=8),
)
def test_literal_only_states_match_oracle(template: dict, text: str, cuts: list[int]) -> None:
    """States watching only literals scan with one alternation plus a set of partial literals while
    streaming; the events must stay the oracle's whatever the literals share."""
    chunks, at = [], 0
    while at < len(text):
        step = cuts[len(chunks) % len(cuts)]
        chunks.append(text[at : at + step])
        at += step
    OracleParser(template, "")  # a valid template: the comparison below must not be of two errors
    theirs = oracle_stream(template, "", chunks)
    assert_same(respc_stream(template, "", chunks), theirs, template, f"chunks={chunks!r}")


PRESET_TEXTS = [
    (name, case["text"], case["prefix"])
    for name in __import__("respc").presets()
    for case in __import__("json").loads(
        (__import__("pathlib").Path(__file__).parents[1] / "fixtures" / "presets" / f"{name}.json").read_text(
            encoding="utf-8"
        )
    )
]


@settings(max_examples=max(EXAMPLES, 60), deadline=None, suppress_health_check=list(HealthCheck))
@given(
    case=st.sampled_from(PRESET_TEXTS),
    runs=st.lists(st.sampled_from(["", " ", "\n", " \n\t", "\n\n"]), min_size=1, max_size=4),
    cuts=st.lists(st.integers(min_value=1, max_value=7), min_size=1, max_size=6),
)
def test_delimiters_held_across_chunks_match_oracle(case: tuple, runs: list[str], cuts: list[int]) -> None:
    """Every preset's realistic outputs, with whitespace runs put before its delimiters' first
    characters, cut into small chunks: each delimiter is held across several feeds, through the
    held-prefix paths (a literal's prefix, a regex's partial match) and the lead-run path."""
    import respc

    name, text, prefix = case
    widened = "".join(
        runs[i % len(runs)] + char if char in "<[" else char for i, char in enumerate(text)
    )  # `<` and `[` start most delimiters
    chunks, at = [], 0
    while at < len(widened):
        step = cuts[len(chunks) % len(cuts)]
        chunks.append(widened[at : at + step])
        at += step
    template = respc.load_preset(name).TEMPLATE
    ours = respc_stream(template, prefix, chunks)
    assert_same(ours, oracle_stream(template, prefix, chunks), template, f"{name} chunks={chunks!r}")


@st.composite
def literal_list_template(draw: st.DrawFn) -> dict:
    """Like `literal_template`, but delimiters may be literal lists whose members contain, extend or
    overlap one another, and one field may be implicit (no open: its close list is watched outside,
    as Gemma 4's content closes on `<turn|>`, `<|tool_response>` or `<eos>`)."""
    word = st.text(alphabet="<ab>", min_size=1, max_size=4)
    delimiter = st.one_of(word, st.lists(word, min_size=2, max_size=3, unique=True))
    names = draw(st.lists(st.sampled_from(["x", "y", "z"]), min_size=2, max_size=3, unique=True))
    fields = {name: {"open": draw(delimiter), "close": draw(delimiter)} for name in names}
    if draw(st.booleans()):
        del fields[names[-1]]["open"]
    return {"start_anchor": "S", "fields": fields}


@settings(max_examples=max(EXAMPLES, 150), deadline=None, suppress_health_check=list(HealthCheck))
@given(
    template=literal_list_template(),
    text=st.text(alphabet="<ab>c", max_size=24),
    cuts=st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=8),
    width=st.integers(min_value=1, max_value=4),
)
def test_literal_lists_held_from_a_chunk_start_match_oracle(
    template: dict, text: str, cuts: list[int], width: int
) -> None:
    """Chunks that begin where a delimiter may begin and hold only its first characters take the runtime's
    fresh-hold path (no scan); a literal list's members are stems only when no other member is inside
    them. Each text is also cut at every delimiter start into pieces of `width` characters."""
    from hypothesis import assume

    try:
        OracleParser(template, "")
    except Exception:
        assume(False)  # an invalid template: a comparison of two errors says nothing here
    chunks, at = [], 0
    while at < len(text):
        step = cuts[len(chunks) % len(cuts)]
        chunks.append(text[at : at + step])
        at += step
    assert_same(
        respc_stream(template, "", chunks), oracle_stream(template, "", chunks), template, f"{chunks=}"
    )
    # Cut before every `<` (the start of most delimiters here), then into pieces of `width`.
    pieces = [
        piece
        for part in text.replace("<", "\x00<").split("\x00")
        if part
        for piece in (part[i : i + width] for i in range(0, len(part), width))
    ]
    assert_same(
        respc_stream(template, "", pieces), oracle_stream(template, "", pieces), template, f"{pieces=}"
    )


@pytest.mark.parametrize("chunks", [["q<a", "b", ">z"], ["q<", "a", "b", "z"], ["q<a", "b>", "z"]])
def test_a_held_regex_partial_gives_way_to_a_complete_match_further_on(chunks: list[str]) -> None:
    """`regex`'s partial search prefers a complete match after the held text (`b`) to the partial one at
    its start (`<ab` of `<ab>`): the held-partial path must check the search, not a match at the start."""
    template = {
        "start_anchor": "S",
        "fields": {
            "x": {"open_pattern": "<a(?:b>|c)|b", "close": "</c>", "content": "text"},
            "c": {"content": "text"},
        },
    }
    assert_same(
        respc_stream(template, "", chunks), oracle_stream(template, "", chunks), template, f"{chunks}"
    )

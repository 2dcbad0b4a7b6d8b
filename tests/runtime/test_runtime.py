"""Runtime pieces against their transformers counterparts, value by value (each target against its release
where they differ)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.outcome import outcome, same_outcome
from transformers.utils.chat_parsing import content_parsers as oracle_content
from transformers.utils.chat_parsing import response_parser as oracle_parser

from respc.runtime import content, tools, transform
from respc.runtime.targets import get_target

TYPES = ["integer", "number", "boolean", "null", "object", "array", "string", "mystery"]
RAW = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            "7",
            "3.0",
            "1e3",
            "3.5",
            " 7 ",
            "+7",
            "1_000",
            "٣",
            "007",
            "NaN",
            "inf",
            "-inf",
            "true",
            "FALSE",
            "0",
            "1",
            "null",
            "None",
            " null ",
            "NULL",
            '{"a":1}',
            "[1,2]",
            "[]",
            "{}",
            "yes",
            "1.50",
            "9" * 5000,
        ]
    ),
)


def _same(a: object, b: object) -> bool:
    return type(a) is type(b) and (a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b)))


@settings(max_examples=400, deadline=None)
@given(RAW, st.lists(st.sampled_from(TYPES), max_size=3).map(tuple))
def test_coerce_matches_oracle(raw: str, types: tuple[str, ...]) -> None:
    assert _same(tools.coerce(raw, types), oracle_parser._coerce(raw, types))


SCHEMAS = st.recursive(
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.one_of(
                st.sampled_from(TYPES), st.lists(st.one_of(st.sampled_from(TYPES), st.integers()))
            ),
            "nullable": st.booleans(),
        },
    ),
    lambda inner: st.fixed_dictionaries(
        {},
        optional={
            "anyOf": st.lists(inner, max_size=3),
            "oneOf": st.lists(inner, max_size=2),
            "type": st.sampled_from(TYPES),
        },
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(SCHEMAS, st.none(), st.integers()))
def test_schema_types_match_oracle(schema: object) -> None:
    assert tools.schema_types(schema) == oracle_parser._schema_types(schema)


ARGS = st.fixed_dictionaries(
    {},
    optional={
        "strip": st.booleans(),
        "unquoted_keys": st.booleans(),
        "allow_non_json": st.booleans(),
        "string_delims": st.sampled_from(
            [
                [],
                [['<|"|>', '<|"|>']],
                [["<<", ">>"], ["[[", "]]"]],
                [["ab", "ba"]],  # overlapping: "aba" holds no string
                [["x", "xx"], ["<", "<"]],
                [["", ">"]],  # an empty delimiter keeps upstream's regex
            ]
        ),
    },
)
BODIES = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        [
            "{a:1,b:{c:2}}",
            "{ a: 1}",
            '{"s": "x,y:z"}',
            '{s:<|"|>x,y:z<|"|>}',
            "[NaN, Infinity]",
            " 42 ",
            "٤٢",
            "1e3",
            "TRUE",
            "{a:<<x>>,b:[[y]]}",
            "\x01",
            "",
            "nan",
            '{ city: "Paris", note: "a,b: c"}',
            '{a : 1, "b,c:d": {e :2}}',
            '{"k":"{a:1}", "e": "x\\"y,z:1"}',
            '{"u": "a\\\nb,c:1"}',
            "<k>[1]</k><k>[2]</k><k>3</k>",
            "<k></k><k> 1 </k>",
            "\u00a0 42",
            "\x1c42",
            " \t\nParis ",
            "NaN",
            "-Infinity",
            "nulls",
            "true story",
            "-",
            '{a:<<x>y>>,b:"<<z>>"}',
            "abababa",
            "{k:xxvxx, j:<a<}",
            "<<<x>>>",
            '{a:<|"|>unterminated}',
            "<k>1</k><k>[2]</k><j>[]</j><j>[]</j>",
            "[f(a=1, b=[1, {'x': None}]), g()]",
            # whole words and integers, which the json parser answers without json.loads
            "0",
            "-0",
            "00",
            "007",
            "7",
            "123456789012345",
            "1234567890123456",
            "9" * 4400,
            "true",
            "false",
            "null",
            "True",
            "\u00b2",
            "\uff11\uff12",
            "<k>007</k><j>true</j><i>12</i><h>null</h>",
            "a: 0\nb: 012\nc: false\nd: 99",
        ]
    ),
)


# xml-inline patterns: the usual shape, a value that may not take part, a key that may not, an empty value.
TAG_PATTERNS = (
    r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>",
    r"<(?P<key>\w+)>(?:(?P<value>\d+)|[^<]*)</(?P=key)>",
    r"(?:<(?P<key>\w+)>|<>)(?P<value>.*?)</\w*>",
    r"<(?P<key>\w+)>\s*(?P<value>.*?)\s*</(?P=key)>",
)


@pytest.mark.parametrize("name", sorted(content.CONTENT_PARSERS))
def test_content_parsers_match_oracle(name: str, target: str) -> None:
    """Each content parser (a name the target does not know raises KeyError in both), on bodies that hit
    the dialect knobs, against the target's release."""
    from support.oracles import oracle

    release = get_target(target)

    @settings(max_examples=400, deadline=None, derandomize=True)
    @given(BODIES, ARGS)
    def check(body: str, args: dict) -> None:
        if name == "xml-inline":
            args = {
                **args,
                "tag_pattern": TAG_PATTERNS[len(body) % len(TAG_PATTERNS)],
                "merge_duplicates": not args.get("strip", True),
                "value_parser": {"name": "json", "args": {"allow_non_json": True}},
            }
        if name == "kv-lines":
            args = {**args, "value_parser": {"name": "json", "args": {"allow_non_json": True}}}
        ours = outcome(content.parse_content, body, name, args, release)
        (theirs,) = oracle(target).request("call", ("content", (name, body, args)))
        assert same_outcome(ours, theirs), (body, args, ours, theirs)

    check()


PATHS = st.sampled_from(
    [
        "{content}",
        "{content.a}",
        "{content.a.b}",
        "{missing}",
        "{content.0}",
        "{x}",
        "{}",
        "{a b}",
        "plain",
        5,
        None,
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        PATHS,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(st.sampled_from(["k", "{content}"]), inner, max_size=2),
        ),
        max_leaves=5,
    ),
    st.one_of(
        st.integers(),
        st.text(max_size=3),
        st.fixed_dictionaries({"a": st.one_of(st.integers(), st.fixed_dictionaries({"b": st.integers()}))}),
        st.lists(st.integers(), max_size=2),
    ),
)
def test_transforms_match_oracle(template: object, value: object) -> None:
    scope = {"x": "capture", "content": value}
    ours = outcome(transform.apply_transform, template, scope)
    assert same_outcome(ours, outcome(oracle_content._apply_transform, template, scope))


def test_tool_registration_matches_oracle() -> None:
    entries = [
        "x",
        3,
        None,
        {"function": "x"},
        {"name": "flat", "parameters": {"properties": {"n": {"type": "integer"}}}},
        {
            "type": "function",
            "function": {"name": "f", "parameters": {"properties": {"a": {"type": "string"}}}},
        },
        {
            "type": "function",
            "function": {"name": "f", "parameters": {"properties": {"a": {"type": "integer"}}}},
        },
        {"function": {"name": "noparams"}},
        {"function": {"name": 5}},
    ]
    parser = oracle_parser.ResponseParser({"start_anchor": "a", "fields": {"c": {}}}, "", tools=entries)
    assert tools.tool_params(entries) == parser._tool_params


def test_lead_run_character_lists_match_the_regex_module() -> None:
    """The parser checks lead-run characters by set membership: each list must be exactly its class."""
    import regex

    from respc.runtime.scan import RUN_CLASSES

    everything = "".join(map(chr, range(0x110000)))
    for run_class, (_, chars) in RUN_CLASSES.items():
        assert set(regex.findall(run_class, everything)) == set(chars), run_class


@settings(max_examples=60, deadline=None)
@given(
    pattern=st.sampled_from(
        [r"<tool_call>\s*<function=(?P<name>[^>\n]+)>", r"a.b", r"(?:x|xy)+;", r"\s*<\|"]
    ),
    text=st.text(alphabet="<>_ab.\nxy;|tool_call=function", max_size=40),
    pos=st.integers(min_value=0, max_value=5),
    partial=st.booleans(),
)
def test_lazy_regex_behaves_as_the_compiled_pattern(pattern: str, text: str, pos: int, partial: bool) -> None:
    """Generated modules hold LazyRegex delimiters: every search must be the oracle's DOTALL pattern's."""
    import regex

    from respc.runtime.scan import LazyRegex

    lazy, compiled = LazyRegex(pattern), regex.compile(pattern, regex.DOTALL)
    got, want = lazy.search(text, pos, partial=partial), compiled.search(text, pos, partial=partial)
    assert (got and (got.span(), got.partial, got.groupdict())) == (
        want and (want.span(), want.partial, want.groupdict())
    )
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in compiled.finditer(text)]
    assert (lazy.flags, lazy.groupindex, lazy.pattern) == (compiled.flags, compiled.groupindex, pattern)
    assert LazyRegex(".", dotall=False).search("\n") is None and lazy.compiled() is lazy.compiled()


def test_lazy_regex_compiles_only_when_used() -> None:
    import copy
    import pickle

    from respc.runtime.scan import LazyRegex

    lazy = LazyRegex("(")  # invalid: compiling it would raise, so nothing below may compile it
    assert repr(lazy) == "LazyRegex('(')" and not hasattr(lazy, "__deepcopy__")
    assert copy.copy(lazy).pattern == "(" and pickle.loads(pickle.dumps(lazy)).pattern == "("
    with pytest.raises(Exception, match="missing \\)"):
        lazy.search("x")


# --- the parser's public accessors -------------------------------------------------------------------


def _tool(city: str, days: int) -> dict:
    """Look the weather up.

    Args:
        city: The city.
        days: How many days.
    """
    return {}


def test_accessors_follow_the_stream() -> None:
    import respc

    module = respc.load_preset("qwen3")
    parser = module.ResponseParser("<|im_start|>assistant\n<think>\n", tools=[_tool])
    assert parser.current_field == "reasoning_content" and not parser.finalized
    assert dict(parser.tool_parameters) == {
        "_tool": {
            "city": {"type": "string", "description": "The city."},
            "days": {"type": "integer", "description": "How many days."},
        }
    }
    with pytest.raises(TypeError):
        parser.tool_parameters["other"] = {}  # type: ignore[index]
    parser.feed("hm</think>Hi <tool_call>{")  # a regex open ending at the chunk's edge may still grow
    assert parser.current_field == "tool_calls"
    parser.feed('"name": "_tool", "arguments": {"city": "Oslo", "days": "3"}}</tool_call>')
    message, _ = parser.finalize()
    assert parser.finalized and message["tool_calls"][0]["function"]["arguments"] == {
        "city": "Oslo",
        "days": 3,
    }


def test_restart_replays_the_prefix_with_the_same_tools_and_mode() -> None:
    """`restart` gives the parser as constructed (DeltaStream replays a failing feed on it); it keeps the
    prefix past its last anchor, not the whole prompt, and the tools' schemas, not the functions."""
    import pickle

    import respc

    module = respc.load_preset("qwen3")
    prompt = "<|im_start|>user\n" + "long history " * 1000 + "<|im_end|>\n<|im_start|>assistant\n<think>\n"
    parser = module.ResponseParser(prompt, tools=[_tool], errors="keep")
    parser.feed("a</think>b<tool_call>{bad}</tool_call>")
    fresh = parser.restart()
    assert type(fresh) is type(parser) and fresh.initial_events == parser.initial_events
    assert fresh.current_field == "reasoning_content" and fresh.errors == []
    assert "long history" not in pickle.dumps(fresh).decode("latin-1")  # the prompt was not kept
    fresh.feed('a</think>b<tool_call>{"name": "_tool", "arguments": {"city": "X", "days": "2"}}</tool_call>')
    assert fresh.finalize()[0]["tool_calls"][0]["function"]["arguments"]["days"] == 2
    parser.finalize()
    assert parser.errors[0]["field"] == "tool_calls"
    pickle.loads(pickle.dumps(module.ResponseParser(prompt, tools=[_tool])))  # the function is not kept


def test_a_generated_parser_can_be_subclassed() -> None:
    import respc

    module = respc.load_preset("smollm3")

    class Counting(module.ResponseParser):
        fed = 0

        def feed(self, text: str) -> list[dict]:
            Counting.fed += 1
            return super().feed(text)

    parser = Counting("")
    parser.feed("<think>x</think>")
    assert Counting.fed == 1 and parser.finalize()[0]["reasoning_content"] == "x"


TWIN_TEXT = st.text(alphabet=st.characters(max_codepoint=127), max_size=40) | st.sampled_from(
    [
        "<a>1</a><b> x </b>",
        "<parameter=x>\n\x1c 1 \x1f\n</parameter><parameter=y>\x0b\x0c2\t</parameter>",
        "a=1 b = 2\x1cc=\x1f3",
        "key:value\nk2:v2\n",
        "x y_z: 12, w: 3",
        '{a:1, "b,c:d": {e\x1c:2}, \x1cf :"x\\"y,z:1"}',
        '{"\\\n,k:1"}',
    ]
)


@settings(max_examples=300, deadline=None)
@given(TWIN_TEXT)
def test_the_unquoted_keys_pattern_has_an_exact_re_twin(text: str) -> None:
    """The json dialect runs 5.24's unquoted-keys rewrite on `re` for ASCII text: it must rewrite exactly as
    the `regex` pattern does (a backslash before a line break included)."""
    ours = content._unquoted_key_outside_strings_ascii()
    theirs = content._unquoted_key_outside_strings()
    assert ours.sub(content._quote_key, text) == theirs.sub(content._quote_key, text)


@pytest.mark.parametrize(
    "body",
    [
        '[{"name": "f", "a": 1}, {"name": "g", "a": {"b": 2}}]',
        "[]",
        '[{"name": "f"}]',  # a placeholder the item lacks: KeyError listing the scope
        '[{"name": "f", "a": 1}, 3]',  # the item check comes after the first item's transform
        '[{"a": 1}, 3]',  # ... which fails first here
        '[{"name": "f", "a": 5}]',  # a dotted path into a number
        '{"name": "f"}',  # not a list
    ],
)
def test_transform_each_written_out_matches_oracle(body: str, target: str) -> None:
    """`transform_each` is written out as a comprehension over `each_scope`: values, and errors in the
    oracle's order (the list, then each item as it is reached, then its placeholders)."""
    from support.compare import assert_same, oracle_parse, respc_parse

    template = {
        "start_anchor": "S",
        "fields": {
            "calls": {
                "open_pattern": r"<c (?P<tag>\w+)>",
                "close": "</c>",
                "content": "json",
                "transform_each": True,
                "transform": {"n": "{name}", "args": "{a}", "b": "{a.b}", "tag": "{tag}", "k": [1, None]},
            }
        },
    }
    if body.startswith('[{"name": "f", "a": 1}, {'):
        template["fields"]["calls"]["transform"].pop("b")  # the first item has no a.b
    text = f"<c x>{body}</c>"
    ours = respc_parse(template, text, "", target=target)
    assert_same(ours, oracle_parse(template, text, "", target=target), template, body, target)
    assert "each_scope" in __import__("respc").generate_source(template, target=target)

"""Hostile templates: a corpus of injection attempts, huge and deeply nested templates, and runaway regexes.

Templates come from model repositories anyone can publish. Every string position a template has (field
names, every delimiter key, defaults keys and values, transform keys and values, content_args, join, start
anchors) carries each hostile string; the compiled module must run nothing at import or parse time (a
canary file is never created), carry a `TEMPLATE` equal to its input, and parse as transformers 5.23.0
does. Sizes and depths go past what real templates use; catastrophic-backtracking delimiters are compared
on small inputs only.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import regex
from support.compare import assert_same, oracle_stream, respc_stream
from support.outcome import outcome

import respc

CANARY = Path("/tmp/respc-hostile-canary")
TOUCH = f"__import__('os').system('touch {CANARY}')"
HOSTILE = [
    "'",
    '"',
    "'''",
    '"""',
    "\\",
    "\\\\",
    'a\\"b',
    "\n",
    "\r",
    "\r\n",
    "\t\x0b\x0c",
    "\x00",
    "\x1b[2J",
    "\x85\u2028\u2029",
    "\ud800",
    "\udfff",
    "\ufeff",
    "\u202e",
    "\U0010ffff",
    "é思🙂",
    "x" * 300,
    "{{ 7*7 }}",
    "{% raw %}",
    "{%- endfor %}",
    "{#",
    "{{ cycler.__init__.__globals__.os.system('touch " + str(CANARY) + "') }}",
    "{0}",
    "%(x)s %s",
    "${HOME}",
    "{}",
    "}}",
    "{content}",
    TOUCH,
    f'"""\nimport os; os.system("touch {CANARY}")\n"""',
    f"')\nimport os; os.system('touch {CANARY}')\n#",
    f'"; {TOUCH}; "',
    f"'''; {TOUCH}; '''",
    f"\\\n{TOUCH}",
    f"\n{TOUCH}\n#",
    "# comment",
    "# -*- coding: latin-1 -*-",
    "x\\",
    "\\N{BULLET}\\x41\\u0041",
    "+AFwACg-import os",
    "<!--",
    "*/",
]
IDENTS = [
    "",
    "outside",
    "_scan_outside",
    "TEMPLATE",
    "START_ANCHOR",
    "class",
    "def",
    "None",
    "self",
    "__init__",
]
IDENTS += ["__class__", "1abc", "a-b", "a_b", "a b", "A B", "思", "ResponseParser", "parse_response"]
# the names of derived constants (lengths, rare characters, tables), beside the fields they derive from
IDENTS += ["x", "x_open", "x_open_length", "x_open_prefix", "x_rare", "near", "release", "outside_literals"]


def hostile_template(word: str) -> dict:
    """`word` in every string position a template has."""
    esc = regex.escape(word)
    return {
        "version": 1,
        "defaults": {word: word, "role": [word, {word: [word, None, 1]}], f"k{word}": {word: word}},
        "start_anchor": [word + "<A>", "<A>"],
        "fields": {
            word: {
                "open": ["<" + word + ">", "<o>"],
                "close": "</" + word + ">",
                "repeats": True,
                "join": word,
                "content_args": {"strip": False, word: word},
            },
            f"p{word}": {
                "open_pattern": "<p" + esc + r"(?P<n>\w*)>",
                "close_pattern": "(?:" + esc + "|</p>)",
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": "<" + esc + r"(?P<key>\w+)>(?P<value>.*?)</" + esc + ">",
                    "value_parser": {"name": "kv-lines", "args": {"kv_sep": word + "=", word: [word]}},
                    word: word,
                },
                "transform": {"name": "{n}", "arguments": "{content}", word: [word, {word: word}], "k": word},
            },
            f"j{word}": {
                "open": "<j>",
                "close": ["</j>", word + "!"],
                "content": "json",
                "content_args": {"string_delims": [[word + "[", "]"]], "unquoted_keys": True, word: word},
                "transform": {"v": "{content}", word: word},
            },
            "content": {"close": [word + "<eos>", "<eos>"], "content_args": {word: word}},
        },
    }


def hostile_texts(word: str) -> list[str]:
    return [
        f"hi<{word}>body{word}</{word}>tail<{word}>more</{word}><eos>x",
        f"<j>{{a: {word}[x{word}]}}</j>{word}<eos>",
        f"<p{word}f><{word}k>a{word}=1</{word}>{word}after",
        f"<o>x</{word}>{word}<A>y<j>[1]{word}!",
    ]


@pytest.fixture
def canary() -> Iterator[Path]:
    CANARY.unlink(missing_ok=True)
    yield CANARY
    assert not CANARY.exists(), "template text was executed"


def import_from_file(source: str, path: Path) -> Any:
    """Import generated source the way users do: from a file on disk."""
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _oracle_load_error(template: Any) -> Exception | None:
    from transformers.utils.chat_parsing.response_templates import load_response_template

    try:
        load_response_template(template)
    except Exception as error:
        return error
    return None


def check_exact(template: dict, texts: list[str], prefix: str, step: int = 1) -> None:
    """respc and the oracle agree on each text, whole and in chunks of `step` characters."""
    for text in texts:
        for chunks in ([text], [text[i : i + step] for i in range(0, len(text), step)]):
            ours, theirs = respc_stream(template, prefix, chunks), oracle_stream(template, prefix, chunks)
            assert_same(ours, theirs, template, f"prefix={prefix!r} chunks={chunks!r}")


@pytest.mark.parametrize("word", HOSTILE, ids=[repr(w)[:24] for w in HOSTILE])
def test_hostile_strings_everywhere(word: str, canary: Path, tmp_path: Path) -> None:
    template = hostile_template(word)
    rejected = _oracle_load_error(template)
    if rejected is not None:  # e.g. a word holding a {placeholder} with text around it
        with pytest.raises(type(rejected)):
            respc.generate_source(template, name=word)
        return
    source = respc.generate_source(template, name=word)
    module = import_from_file(source, tmp_path / "hostile_parser.py")
    assert not canary.exists(), "importing the generated module ran template text"
    assert module.TEMPLATE == template
    check_exact(template, hostile_texts(word), f"{word}<A>pre<o>")
    for text in hostile_texts(word):  # the module imported from disk parses as the in-memory one
        from_file = outcome(lambda text=text: module.parse_response(text, prefix=""))
        assert from_file == outcome(lambda text=text: respc.parse_response(text, template, prefix=""))


@pytest.mark.parametrize("word", HOSTILE[::4], ids=[repr(w)[:24] for w in HOSTILE[::4]])
def test_hostile_start_anchor_pattern(word: str, canary: Path) -> None:
    template = {
        "start_anchor_pattern": "(?:" + regex.escape(word) + "|<A>)",
        "fields": {"t": {"open": word + "<t>", "close": "</t>"}, "c": {}},
    }
    module = respc.compile_template(template)
    assert module.TEMPLATE == template
    check_exact(template, [f"{word}<t>x</t>{word}", "a<A>b"], f"pre{word}mid<A>x{word}")


def test_field_names_that_look_like_generated_identifiers(canary: Path, tmp_path: Path) -> None:
    """Names that sanitise alike, or to the module's own names, must not collide or shadow anything."""
    fields = {name: {"open": f"<{i}>", "close": f"</{i}>"} for i, name in enumerate(IDENTS)}
    fields["implicit"] = {"close": "<eos>"}
    template = {"start_anchor": "S", "fields": fields}
    module = import_from_file(respc.generate_source(template), tmp_path / "names_parser.py")
    assert module.TEMPLATE == template
    text = "".join(f"<{i}>v{i}</{i}>" for i in range(len(IDENTS))) + "rest<eos>"
    check_exact(template, [text], "")
    assert module.parse_response(text, prefix="") == {name: f"v{i}" for i, name in enumerate(IDENTS)} | {
        "implicit": "rest"
    }


def test_cli_compiles_hostile_json(canary: Path, tmp_path: Path) -> None:
    """The file route: JSON escapes (lone surrogates, NUL) through `respc compile`, then import."""
    for i, word in enumerate(["\ud800", "\x00", '"""', TOUCH, "é思🙂"]):
        template = hostile_template(word)
        (tmp_path / "t.json").write_text(json.dumps(template), encoding="ascii")
        out = tmp_path / f"cli_parser_{i}.py"
        done = subprocess.run(
            [sys.executable, "-m", "respc", "compile", "t.json", "-o", out.name],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        spec = importlib.util.spec_from_file_location(out.stem, out)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert module.TEMPLATE == template


def test_source_name_cannot_set_the_file_encoding(canary: Path, tmp_path: Path) -> None:
    """The source name lands on line 1, where Python reads a PEP 263 coding declaration: with
    `coding=utf-7`, `+AFwACg-` would decode to a backslash-newline ending the comment that quotes a
    delimiter, and the rest of the delimiter would run as code when the parser scans."""
    payload = f"x+AFwACg-    {TOUCH}  # "
    template = {"start_anchor": "S", "fields": {"c": {"open": "<c>", "close": payload}, "d": {"open": "é"}}}
    for name in (
        "coding=utf-7",
        "model -*- coding: latin-1 -*-",
        "a\rcoding:utf-7",
        "vim: fileencoding=utf-7",
    ):
        module = import_from_file(respc.generate_source(template, name=name), tmp_path / "named_parser.py")
        assert module.TEMPLATE == template, f"{name!r} changed how the module decodes"
        module.parse_response("<c>hi" + payload, prefix="")
        assert not canary.exists()


def test_cli_source_path_cannot_set_the_file_encoding(canary: Path, tmp_path: Path) -> None:
    """The same through the CLI: SOURCE is a model directory whose name holds a coding declaration."""
    model = tmp_path / "coding=latin-1"
    model.mkdir()
    template = {"start_anchor": "S", "fields": {"c": {"open": "<é>", "close": "</é>"}}}
    (model / "tokenizer_config.json").write_text(
        json.dumps({"response_template": template}), encoding="utf-8"
    )
    done = subprocess.run(
        [sys.executable, "-m", "respc", "compile", model.name, "-o", "p.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    if done.returncode == 0:
        spec = importlib.util.spec_from_file_location("p", tmp_path / "p.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert module.TEMPLATE == template, "the directory name changed how the module decodes"
    else:  # refusing such a name is fine too, as one clear line
        assert done.stderr.startswith("respc: error:") and done.stderr.count("\n") == 1, done.stderr


def test_in_memory_modules_are_inert_too(canary: Path) -> None:
    template = hostile_template(TOUCH)
    assert respc.compile_template(template).TEMPLATE == template


def test_source_names_cannot_break_the_header() -> None:
    source = respc.generate_source({"start_anchor": "a", "fields": {"c": {}}}, name="evil\nimport os")
    assert "\nimport os\n" not in source.split('"""')[0]
    compile(source, "x", "exec")


def test_hundreds_of_fields() -> None:
    fields: dict[str, Any] = {f"f{i}": {"open": f"<f{i}>", "close": f"</f{i}>"} for i in range(200)}
    fields.update({f"r{i}": {"open_pattern": rf"\s*<r{i}(?P<n>\w*)>", "transform": "{n}"} for i in range(3)})
    fields["content"] = {"close": ["<eos>", "<f1"]}
    template = {"start_anchor": [f"<s{i}>" for i in range(50)], "fields": fields}
    text = "".join(f"<f{i}>v{i}</f{i}>x" for i in range(0, 200, 13)) + "<f19 <f1>a</f1><f199>b<eos>"
    check_exact(template, [text, text + "<r2q>tail", "<f3"], "<s49>pre<f7>", step=5)


def test_hundred_thousand_character_delimiters() -> None:
    """Literal delimiters of 100k characters in every position (their last character is distinct: the
    `regex` module's first partial search of a long periodic string takes minutes, in the oracle too)."""
    big = "<" + "ab" * 50_000 + ">"
    template = {
        "start_anchor": ["<s>", big],
        "fields": {
            "t": {"open": big, "close": ["</t>", big[::-1], big + "/"]},
            "u": {"open": "<u>", "close": big[:-1] + "!"},
            "content": {"close": [big + "!", "<eos>"]},
        },
    }
    for text in ("a" + big + "b</t>c" + big + "!d", big[:-1], "<u>" + big[:-1] + "!x" + big + "/"):
        steps = [text[i : i + 9973] for i in range(0, len(text), 9973)]
        for chunks in ([text], [text[:50_001], text[50_001:]], steps):
            ours = respc_stream(template, f"<s>{big}q", chunks)
            assert_same(
                ours, oracle_stream(template, f"<s>{big}q", chunks), template, f"chunks of {len(chunks[0])}"
            )


def _nested(depth: int, leaf: Any, lists: bool = True) -> Any:
    """`leaf` under `depth` levels of dicts (and, with `lists`, a list every other level)."""
    for level in range(depth):
        leaf = {"a": [leaf]} if lists and level % 2 else {"a": leaf}
    return leaf


def _value_parser_chain(depth: int) -> dict:
    parser: dict = {"name": "int"}
    for _ in range(depth):
        parser = {"name": "kv-lines", "args": {"kv_sep": "=", "line_sep": ";", "value_parser": parser}}
    return parser


@pytest.mark.parametrize("depth", [10, 60])
def test_deeply_nested_transforms_and_value_parsers(depth: int) -> None:
    template = {
        "start_anchor": "S",
        "defaults": {"d": _nested(depth, "x")},
        "fields": {
            "t": {"open": "<t>", "close": "</t>", "transform": _nested(depth, "{content}")},
            "v": {
                "open": "<v>",
                "close": "</v>",
                "content": "kv-lines",
                "content_args": {"value_parser": _value_parser_chain(depth // 2)},
            },
        },
    }
    assert respc.compile_template(template).TEMPLATE == template
    check_exact(template, ["<t>hi</t><v>a: b=c=7</v>", "<v>a: b=c=x</v>"], "")


@pytest.mark.xfail(
    strict=True,
    reason="respc bug: transforms nested ~200 deep (which the oracle accepts and applies) exceed Python's "
    "parser nesting limit once inlined; respc raises SourceError/RecursionError instead of compiling",
)
def test_transform_nested_as_deep_as_the_oracle_takes() -> None:
    transform = _nested(200, "{content}", lists=False)
    template = {
        "start_anchor": "S",
        "fields": {"t": {"open": "<t>", "close": "</t>", "transform": transform}},
    }
    assert _oracle_load_error(template) is None
    check_exact(template, ["<t>hi</t>"], "")


def test_depth_beyond_the_oracle_is_an_error_of_the_same_type() -> None:
    """Nested past the recursion limit, the oracle's loader raises RecursionError; respc must not accept."""
    transform = _nested(3000, "{content}", lists=False)
    template = {"start_anchor": "S", "fields": {"t": {"open": "<t>", "transform": transform}}}
    oracle_error = _oracle_load_error(template)
    assert isinstance(oracle_error, RecursionError)
    with pytest.raises(RecursionError):
        respc.compile_template(template)


BACKTRACKING = [r"(a+)+$", r"(?:a|a)*b", r"(x*)*y", r"(?:a|aa)+c", r"(\w+\s?)+!"]


def _backtracking_template(pattern: str) -> dict:
    fields = {"t": {"open": "<t>", "close_pattern": pattern}, "c": {"close_pattern": pattern}}
    return {"start_anchor": "S", "fields": fields}


@pytest.mark.filterwarnings("ignore:.*may backtrack exponentially")
@pytest.mark.parametrize("pattern", BACKTRACKING)
def test_catastrophic_patterns_agree_on_small_inputs(pattern: str) -> None:
    """Backtracking-prone delimiters give the oracle's results on short texts (long ones are not tried)."""
    texts = ["aaaa", "aab", "<t>aaaa</t>", "xxy", "aac<t>aaac", "ab cd!<t>x y!", "<t>" + "a" * 12, "a\n"]
    check_exact(_backtracking_template(pattern), texts, "Sa")


@pytest.mark.xfail(
    strict=True,
    reason="respc gap (shared with the oracle): the `regex` module's first partial search of a long periodic "
    "regex takes time cubic in its length (1000 chars 0.3 s, 2000 chars 2.7 s, 4000 chars 36 s) and does not "
    "check its `timeout`, so set_search_timeout does not stop it; nothing warns at compile time",
)
def test_search_limit_covers_long_periodic_patterns() -> None:
    from respc.runtime.scan import SearchTimeout, set_search_timeout

    pattern = "y" + "ab" * 900  # fresh text: the `regex` module caches compiled patterns by source
    template = {"start_anchor": "S", "fields": {"t": {"open_pattern": pattern, "close": "</t>"}}}
    set_search_timeout(0.05)
    try:
        with pytest.raises(SearchTimeout):
            respc.ResponseParser(template, "").feed("q")
    finally:
        set_search_timeout(None)


def test_search_timeout_turns_a_runaway_search_into_a_clear_error() -> None:
    import time

    from respc.runtime.scan import SearchTimeout, set_search_timeout

    # The `regex` module defuses `(a+)+$`, but not an alternation whose branches overlap.
    template = {"start_anchor": "a", "fields": {"x": {"open": "<x>", "close_pattern": "(a|aa)+$"}}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = respc.compile_template(template)
    assert module.parse_response("<x>aaaa</x>", prefix="") == {"x": "aaaa</x>"}
    set_search_timeout(0.05)
    try:
        started = time.perf_counter()
        with pytest.raises(SearchTimeout, match=r"/\(a\|aa\)\+\$/ took longer than the 0.05 s limit"):
            module.parse_response("<x>" + "a" * 40 + "!", prefix="")
        assert time.perf_counter() - started < 5
    finally:
        set_search_timeout(None)
    with pytest.raises(ValueError, match="positive number"):
        set_search_timeout(0)


def test_nested_repeats_stay_on_regex_whose_guards_defuse_them() -> None:
    """A whole-message scan runs a delimiter on `re` for ASCII text only when the pattern has no repeat or
    alternation inside a repeat: `regex` answers `(a+)+$` on 40 a's at once, `re` would take hours."""
    code = (
        "import respc\n"
        "t = {'start_anchor': 'a', 'fields': {'x': {'open': '<x>', 'close_pattern': '(a+)+$'}}}\n"
        "import warnings; warnings.simplefilter('ignore')\n"
        "m = respc.compile_template(t)\n"
        "print(m.parse_response('<x>' + 'a' * 40 + '!', prefix=''))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "'x': '" + "a" * 40 + "!'" in done.stdout


def test_a_required_literal_missing_keeps_the_search_on_regex() -> None:
    """`regex` fails at once when a literal every match needs is absent (its required-string check); `re`
    would try `[ \\t]*\\n?[ \\t]*` at each of 30,000 spaces (cubic: minutes). The `re` twin only answers
    when the text holds the pattern's required literals. (A whole message: streaming, transformers' partial
    searches of this pattern are cubic themselves, and respc runs the same ones.)"""
    code = (
        "import respc\n"
        "t = {'start_anchor': 'A', 'fields': {'c': {'close_pattern': '[ \\\\t]*\\\\n?[ \\\\t]*</answer>'}}}\n"
        "import warnings; warnings.simplefilter('ignore')\n"
        "m = respc.compile_template(t)\n"
        "text = 'x' + ' ' * 30000 + 'y'\n"
        "assert m.parse_response(text, prefix='') == {'c': text}\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr


def _module_names(source: str) -> Counter:
    """How often each module-level name of a generated module is bound (imported, assigned, defined)."""
    import ast

    bound: Counter = Counter()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound[node.name] += 1
        elif isinstance(node, ast.Assign):
            bound.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            bound.update(alias.asname or alias.name for alias in node.names)
    return bound


def test_field_names_spelling_generated_names_bind_nothing_twice() -> None:
    """Field names are data (issue #32, class 5): names that spell the module's own names and suffixes
    (`_scan_outside`, `STATES`, `CONTENT_CLOSE`, `x_open_re`...) never make two definitions share a name."""
    bases = ["content", "_scan_outside", "outside", "STATES", "scan", "end", "far", "value", "none"]
    bases += ["start_anchor", "template", "self", "__init__", "parse_response", "CONTENT_CLOSE", "re"]
    suffixes = ["", "_open", "_close", "_open_re", "_re", "_prefix", "_alt", "_whole", "_args", "_transform"]
    suffixes += ["_parse", "_starts", "_2", " 2"]
    names = [base + suffix for base in bases for suffix in suffixes]
    for first in range(0, len(names), 12):
        fields = {}
        for i, name in enumerate(names[first : first + 12]):
            field: dict = {"content": ("text", "json", "int")[i % 3]}
            field["open_pattern" if i % 2 else "open"] = rf"\s*<{i}>" if i % 2 else f"<{i}>"
            field["close_pattern" if i % 3 else "close"] = f"</{i}>" if i % 3 else [f"</{i}>", f"</{i}x>"]
            if i % 5 == 0:
                field["transform"] = {"x": "{content}"}
            fields[name] = field
        bound = _module_names(respc.generate_source({"start_anchor": "<A>", "fields": fields}))
        twice = sorted(name for name, count in bound.items() if count > 1)
        assert not twice, f"names bound twice with fields {sorted(fields)}: {twice}"

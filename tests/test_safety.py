"""Hostile templates: template text reaches generated source only as checked literals.

Each hostile string goes into field names, delimiters, defaults, transforms and content args; the
module must import with no side effect, carry a `TEMPLATE` equal to its input, and parse exactly as
the oracle does on texts made of those same strings.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest
from conftest import assert_same, oracle_stream, respc_stream

import respc

CANARY = Path("/tmp/respc-safety-canary")
HOSTILE = [
    "'",
    '"',
    "'''",
    '"""',
    "\\",
    'a\\"b',
    "\n",
    "\r\n",
    "\x00",
    "\ud800",
    "\u2028",
    "{{ 7*7 }}",
    "{% raw %}",
    "{#",
    f"__import__('os').system('touch {CANARY}')",
    f'"""\nimport os; os.system("touch {CANARY}")\n"""',
    f"')\nimport os; os.system('touch {CANARY}')\n#",
    "# comment",
    "x\\",
    "é思🙂",
]


def hostile_template(word: str) -> dict:
    return {
        "defaults": {word: word, "role": [word, {word: word}]},
        "start_anchor": [word + "<A>", "<A>"],
        "fields": {
            word: {
                "open": ["<" + word + ">", "<o>"],
                "close": "</" + word + ">",
                "transform": {word: "{content}", "k": word},
            },
            "tool "
            + word: {
                "open": "<t>",
                "close": "</t>",
                "content": "json",
                "content_args": {"string_delims": [[word + "[", "]"]]},
            },
            "content": {"close": [word, "<eos>"]},
        },
    }


@pytest.mark.parametrize("word", HOSTILE, ids=[repr(w)[:30] for w in HOSTILE])
def test_hostile_template_is_inert_and_exact(word: str, tmp_path: Path) -> None:
    CANARY.unlink(missing_ok=True)
    template = hostile_template(word)
    source = respc.generate_source(template, name=word)
    path = tmp_path / "hostile_parser.py"
    path.write_text(source, encoding="utf-8", errors="surrogatepass")
    spec = importlib.util.spec_from_file_location("hostile_parser", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert not CANARY.exists(), "importing the generated module ran template text"
    assert module.TEMPLATE == template
    texts = [
        f"hi<{word}>body{word}</{word}>tail<eos>",
        f'<t>{{"a": {word}[x]}}</t>{word}',
        f"<o>x</{word}>{word}<A>y",
    ]
    for text in texts:
        for chunks in ([text], list(text)):
            ours = respc_stream(template, word + "<A>pre", chunks)
            theirs = oracle_stream(template, word + "<A>pre", chunks)
            assert_same(ours, theirs, template, f"hostile {word!r} chunks={chunks!r}")
    assert not CANARY.exists()


def test_hostile_source_is_in_memory_too() -> None:
    CANARY.unlink(missing_ok=True)
    module = respc.compile_template(hostile_template(HOSTILE[14]))
    assert module.TEMPLATE == hostile_template(HOSTILE[14])
    assert not CANARY.exists()


def test_non_literal_values_are_refused() -> None:
    with pytest.raises(respc.TemplateError, match="cannot be inlined"):
        respc.generate_source({"start_anchor": "a", "fields": {"c": {}}, "defaults": {"x": object()}})


def test_source_names_cannot_break_the_header() -> None:
    source = respc.generate_source({"start_anchor": "a", "fields": {"c": {}}}, name="evil\nimport os")
    assert "\nimport os\n" not in source.split('"""')[0]
    compile(source, "x", "exec")
    assert sys.modules.get("hostile_parser") is None


@pytest.mark.parametrize(
    "name", ["coding=utf-7", "x -*- coding: latin-1 -*-", "vim: set fileencoding=utf-16 :"]
)
def test_source_names_cannot_declare_an_encoding(name: str, tmp_path: Path) -> None:
    """PEP 263: a `coding:` comment on line 1 or 2 changes how Python decodes the whole module."""
    source = respc.generate_source({"start_anchor": "a", "fields": {"c": {"close": "+AGk-"}}}, name=name)
    assert not re.search(r"^[ \t\f]*#.*?coding[:=]", "\n".join(source.splitlines()[:2]), re.MULTILINE)
    path = tmp_path / "named_parser.py"
    path.write_bytes(source.encode("utf-8"))
    spec = importlib.util.spec_from_file_location("named_parser", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.TEMPLATE["fields"]["c"]["close"] == "+AGk-"


def test_search_timeout_turns_a_runaway_search_into_a_clear_error() -> None:
    import time

    import pytest as _pytest

    from respc.runtime.scan import SearchTimeout, set_search_timeout

    # The `regex` module defuses `(a+)+$`, but not an alternation whose branches overlap.
    template = {"start_anchor": "a", "fields": {"x": {"open": "<x>", "close_pattern": "(a|aa)+$"}}}
    module = respc.compile_template(template)
    assert module.parse_response("<x>aaaa</x>", prefix="") == {"x": "aaaa</x>"}
    set_search_timeout(0.05)
    try:
        started = time.perf_counter()
        with _pytest.raises(SearchTimeout, match=r"/\(a\|aa\)\+\$/ took longer than the 0.05 s limit"):
            module.parse_response("<x>" + "a" * 40 + "!", prefix="")
        assert time.perf_counter() - started < 5
    finally:
        set_search_timeout(None)
    with _pytest.raises(ValueError, match="positive number"):
        set_search_timeout(0)

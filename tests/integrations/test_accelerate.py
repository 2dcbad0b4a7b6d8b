"""`respc.accelerate(tokenizer)` against the real transformers, both releases: the same calls on a tokenizer
that `AutoTokenizer.from_pretrained` loads from a model directory built here (a BPE tokenizer trained on the
preset's own cases, `tokenizer_config.json` with a chat template and the preset as `response_template`),
made with transformers, then accelerated, then accelerated and pickled; a template assigned afterwards; the
files `save_pretrained` writes. Each release runs its calls in its own process (tests/support/oracles.py),
where `accelerate` takes that release as its target.
"""

from __future__ import annotations

import json
import keyword
import pickle
import re
from pathlib import Path
from typing import Any

import pytest
from support.compare import TEMPLATES, chunkings
from support.models import model_dir, trained_tokenizer
from support.oracles import oracle
from transformers import AutoTokenizer

import respc
from respc.integrations.transformers import acceleration_of

ROOT = Path(__file__).parents[2]
CASES_DIR = ROOT / "tests" / "fixtures" / "presets"
NAMES = respc.presets()
CHAT_TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
TYPES = ("string", "integer", "number", "boolean", "array", "object")
PYTHON_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
PYTHON_TYPES |= {"array": "list", "object": "dict"}


def _cases(name: str) -> list[dict]:
    return json.loads((CASES_DIR / f"{name}.json").read_text(encoding="utf-8"))


def _delimiters(name: str) -> list[str]:
    """The tag-like tokens of a preset's cases: what a real tokenizer of the family has as added tokens."""
    text = "".join(case["prefix"] + case["text"] for case in _cases(name))
    return sorted(set(re.findall(r"<[|｜]?[^<>\s]{1,40}[|｜]?>|\[[A-Z_]{3,20}\]", text)))


def _tools(name: str) -> tuple[tuple, tuple] | None:
    """The tools the preset's cases call, as JSON schemas and as Python functions (source and names),
    each argument given a type from a fixed cycle, so arguments are cast as well as kept."""
    found: dict[str, list[str]] = {}
    for case in _cases(name):
        for call in (case.get("expected") or {}).get("tool_calls") or []:
            function = call.get("function", call)
            if isinstance(function.get("name"), str) and isinstance(function.get("arguments"), dict):
                found.setdefault(function["name"], [])
                found[function["name"]] += [
                    a for a in function["arguments"] if a not in found[function["name"]]
                ]
    if not found:
        return None
    schemas, sources, names = [], [], []
    for index, (tool, arguments) in enumerate(sorted(found.items())):
        types = {argument: TYPES[(index + i) % len(TYPES)] for i, argument in enumerate(arguments)}
        properties = {argument: {"type": kind, "description": argument} for argument, kind in types.items()}
        parameters = {"type": "object", "properties": properties, "required": list(arguments)}
        schemas.append(
            {"type": "function", "function": {"name": tool, "description": tool, "parameters": parameters}}
        )
        usable = [tool, *arguments]
        if all(part.isidentifier() and not keyword.iskeyword(part) for part in usable):
            signature = ", ".join(f"{argument}: {PYTHON_TYPES[kind]}" for argument, kind in types.items())
            documented = "".join(f"\n        {argument}: the {argument}" for argument in arguments)
            sources.append(
                f"def {tool}({signature}):\n    '''Call {tool}.\n\n    Args:{documented}\n    '''\n"
            )
            names.append(tool)
    functions = ("functions", "\n".join(sources), names) if names else None
    return ("schemas", schemas), functions


def _build(root: Path, name: str, kind: str) -> tuple[Path, Any]:
    corpus = [part for case in _cases(name) for part in (case["prefix"], case["text"])]
    tokenizer = trained_tokenizer(corpus, _delimiters(name), kind=kind)
    template = respc.load_preset(name).TEMPLATE
    directory = model_dir(
        root, name, tokenizer=tokenizer, response_template=template, chat_template=CHAT_TEMPLATE
    )
    return directory, tokenizer


def _calls(name: str, tokenizer: Any) -> list[tuple]:
    """Strings, ids and arrays, one at a time and in batches, with and without tools; streams under the
    suite's chunkings; and the refusals (no prefix, mismatched batches, a batch of stream prefixes)."""
    cases = _cases(name)
    tools = _tools(name)
    variants = [None, *(tools or ())]
    calls: list[tuple] = []
    ids = [tokenizer.encode(case["text"]).ids for case in cases]
    prefixes = [tokenizer.encode(case["prefix"]).ids for case in cases]
    for index, case in enumerate(cases):
        calls.append(("parse", case["text"], None, case["prefix"], None))
        calls.append(("parse", {"np": ids[index]}, None, {"np": prefixes[index]}, None))
        calls += [("parse", ids[index], None, prefixes[index], each) for each in variants]
        for chunks in chunkings(case["text"], seed=index, random_splits=1):
            calls.append(("stream", None, prefixes[index], chunks, variants[index % len(variants)]))
    calls += [
        ("parse", ids, None, prefixes, variants[-1]),
        ("parse", [case["text"] for case in cases], None, "", None),
        ("parse", ids, None, prefixes[0], None),
        ("parse", {"np": [ids[0], ids[0]]}, None, {"np": [prefixes[0], prefixes[0]]}, None),
        ("parse", [], None, "", None),
        ("parse", [], None, [], None),
        ("parse", ids[0], None, None, None),
        ("parse", ids, None, prefixes[:1] * 2, None),
        ("parse", ids[0], TEMPLATES["smollm"], "", None),
        ("parse", ids[0], {"fields": 5}, "", None),
        ("stream", None, [prefixes[0], prefixes[0]], [], None),
        ("stream", None, None, [], None),
        ("stream", TEMPLATES["smollm"], prefixes[0], [cases[0]["text"]], None),
    ]
    return calls


def _same(mine: Any, expected: Any) -> bool:
    """Equal outcomes; an exception of respc's may be a subclass of transformers' (`respc.TemplateError` is
    the `ValueError` transformers raises), with the same message."""
    if isinstance(mine, list) and isinstance(expected, list):
        return len(mine) == len(expected) and all(_same(a, b) for a, b in zip(mine, expected))
    if mine[0] == expected[0] == "raise":
        return expected[1][0] in mine[1] and mine[2] == expected[2]
    return mine == expected or repr(mine) == repr(expected)  # repr: NaN values compare unequal


def _assert_same(ours: list, theirs: list, calls: list[tuple], what: str) -> None:
    for call, mine, expected in zip(calls, ours, theirs, strict=True):
        if not _same(mine, expected):
            pytest.fail(f"{what} differs on {call!r}\nrespc:        {mine!r}\ntransformers: {expected!r}")


# Every preset with a byte-level tokenizer; a third of them with a byte-fallback one as well (the decoders
# differ, the parsing does not).
KINDS = [(name, "byte-level") for name in NAMES] + [(name, "byte-fallback") for name in NAMES[::3]]


@pytest.mark.parametrize(("name", "kind"), KINDS)
def test_accelerated_tokenizer_parses_as_transformers(
    name: str, kind: str, target: str, tmp_path: Path
) -> None:
    directory, tokenizer = _build(tmp_path, name, kind)
    calls = _calls(name, tokenizer)
    after = {"response_template": TEMPLATES["qwen3"]}
    (result,) = oracle(target).request(
        "call", ("accelerated_calls", (str(directory), calls, after)), deadline=300
    )
    assert result[0] == "ok", result
    out = result[1]
    _assert_same(out["respc"], out["transformers"], calls, "accelerated")
    _assert_same(out["respc, unpickled"], out["transformers"], calls, "accelerated and unpickled")
    _assert_same(out["respc, after"], out["transformers, after"], calls, "a template assigned afterwards")


def test_save_pretrained_writes_what_transformers_writes(target: str, tmp_path: Path) -> None:
    directory, _ = _build(tmp_path, "qwen3", "byte-level")
    written = [
        oracle(target).request(
            "call", ("saved_files", (str(directory), str(tmp_path / f"out-{accelerated}"), accelerated))
        )
        for accelerated in (False, True)
    ]
    assert written[0][0][0] == "ok", written[0]
    assert written[0] == written[1]
    assert set(written[0][0][1]) >= {"tokenizer.json", "tokenizer_config.json"}


# --- in this process (transformers 5.24.0) -----------------------------------------------------------------


def _loaded(tmp_path: Path, name: str = "qwen3") -> tuple[Any, list[list[int]], list[list[int]]]:
    directory, tokenizer = _build(tmp_path, name, "byte-level")
    cases = _cases(name)
    ids = [tokenizer.encode(case["text"]).ids for case in cases]
    prefixes = [tokenizer.encode(case["prefix"]).ids for case in cases]
    return AutoTokenizer.from_pretrained(directory), ids, prefixes


def test_accelerate_returns_its_argument_and_is_undone(tmp_path: Path) -> None:
    tokenizer, _, _ = _loaded(tmp_path)
    original = type(tokenizer).parse_response
    assert respc.accelerate(tokenizer) is tokenizer
    assert type(tokenizer.parse_response).__module__ == "respc.integrations.transformers"
    assert respc.accelerate(tokenizer, False) is tokenizer
    assert tokenizer.parse_response.__func__ is original
    with respc.accelerated(tokenizer) as same:
        assert same is tokenizer
        assert type(tokenizer.parse_response).__module__ == "respc.integrations.transformers"
    assert tokenizer.parse_response.__func__ is original
    other = AutoTokenizer.from_pretrained(tokenizer.name_or_path)
    respc.accelerate(tokenizer)
    assert other.parse_response.__func__ is original  # one instance only, never the class


def test_the_target_follows_the_installed_transformers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import transformers

    tokenizer, _, _ = _loaded(tmp_path)
    assert acceleration_of(respc.accelerate(tokenizer)).target == "5.24"
    monkeypatch.setattr(transformers, "__version__", "5.25.0")
    with pytest.raises(respc.UnknownTarget) as refused:
        respc.accelerate(tokenizer)
    assert str(refused.value) == (
        "transformers 5.25.0 is installed, and respc parses as transformers 5.23.x, 5.24.x: install one of "
        "those, or pass target= (5.23, 5.24) to parse as that release regardless"
    )
    assert acceleration_of(respc.accelerate(tokenizer, target="5.23")).target == ("5.23")


def test_a_tokenizer_without_a_template_is_refused_or_given_the_detected_preset(tmp_path: Path) -> None:
    directory, _ = _build(tmp_path, "qwen3", "byte-level")
    config = json.loads((directory / "tokenizer_config.json").read_text(encoding="utf-8"))
    del config["response_template"]
    config["chat_template"] = "{%- if tools %}<tool_call>\n{{ tools }}</tool_call>{% endif %}<|im_start|>"
    (directory / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    loaded = AutoTokenizer.from_pretrained(directory)
    with pytest.raises(respc.ResponseTemplateNotFound, match="has no response_template: set one first"):
        respc.accelerate(loaded)
    assert "parse_response" not in vars(loaded)
    with pytest.warns(UserWarning, match=r"parsing with the preset qwen3 \(chat template: "):
        respc.accelerate(loaded, detect=True)
    case = _cases("qwen3")[0]
    ours = loaded.parse_response(case["text"], prefix=case["prefix"])
    respc.accelerate(loaded, False)
    assert ours == loaded.parse_response(
        case["text"], respc.load_preset("qwen3").TEMPLATE, prefix=case["prefix"]
    )


def test_a_processor_is_accelerated_through_its_tokenizer(tmp_path: Path) -> None:
    from transformers import ProcessorMixin

    tokenizer, ids, prefixes = _loaded(tmp_path)

    class TextProcessor(ProcessorMixin):
        attributes = ("tokenizer",)
        tokenizer_class = "AutoTokenizer"

        def __init__(self, tokenizer: Any) -> None:
            super().__init__(tokenizer)

    processor = TextProcessor(tokenizer)
    expected = processor.parse_response(ids[0], prefix=prefixes[0])
    assert respc.accelerate(processor) is processor
    assert type(tokenizer.parse_response).__module__ == "respc.integrations.transformers"
    assert processor.parse_response(ids[0], prefix=prefixes[0]) == expected


def test_for_tokenizer_binds_the_parser_to_the_tokenizer(tmp_path: Path) -> None:
    tokenizer, ids, prefixes = _loaded(tmp_path)
    parser = respc.for_tokenizer(tokenizer)
    assert parser.origin == "the tokenizer's response_template"
    assert parser.parse_response(ids, prefix=prefixes) == tokenizer.parse_response(ids, prefix=prefixes)
    stream = parser.get_response_parser(prefix=prefixes[0])
    events = stream.feed_ids(ids[0])
    message, final = stream.finalize()
    theirs = tokenizer.get_response_parser(prefix=prefixes[0])
    assert message == tokenizer.parse_response(ids[0], prefix=prefixes[0])
    assert [e for e in theirs.initial_events] == stream.initial_events
    assert events or final


def _parse_row(row: dict, tokenizer: Any) -> dict:
    return {"message": json.dumps(tokenizer.parse_response(row["ids"], prefix=row["prefix"]))}


def test_an_accelerated_tokenizer_works_in_datasets_map_workers(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    tokenizer, ids, prefixes = _loaded(tmp_path)
    rows = datasets.Dataset.from_dict({"ids": ids * 2, "prefix": prefixes * 2})
    expected = rows.map(_parse_row, fn_kwargs={"tokenizer": tokenizer}, num_proc=2)["message"]
    respc.accelerate(tokenizer)
    assert pickle.loads(pickle.dumps(tokenizer)).parse_response.acceleration.target == "5.24"
    ours = rows.map(_parse_row, fn_kwargs={"tokenizer": tokenizer}, num_proc=2, load_from_cache_file=False)
    assert ours["message"] == expected


# --- for_model: repository ids through the local Hugging Face cache ----------------------------------------


def _cache_repo(hub: Path, repo_id: str, source: Path, commit: str = "0123abcd") -> None:
    repo = hub / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit, encoding="utf-8")
    (repo / "snapshots").mkdir()
    source.rename(repo / "snapshots" / commit)


@pytest.mark.parametrize("variable", ["HF_HUB_CACHE", "HF_HOME"])
def test_for_model_resolves_a_cached_repo_id(
    variable: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory, tokenizer = _build(tmp_path, "qwen3", "byte-level")
    hub = tmp_path / "home" / "hub" if variable == "HF_HOME" else tmp_path / "cache"
    _cache_repo(hub, "acme/tiny-qwen", directory)
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, str(hub.parent if variable == "HF_HOME" else hub))
    monkeypatch.setenv("RESPC_CACHE_DIR", str(tmp_path / "respc-cache"))
    parser = respc.for_model("acme/tiny-qwen")
    assert parser.path == hub / "models--acme--tiny-qwen" / "snapshots" / "0123abcd"
    case = _cases("qwen3")[0]
    ids = tokenizer.encode(case["text"]).ids
    assert parser.parse_response(ids, prefix=case["prefix"]) == respc.load_preset("qwen3").parse_response(
        tokenizer.decode(ids, skip_special_tokens=False), prefix=case["prefix"]
    )
    with pytest.raises(respc.InputError) as missing:
        respc.for_model("acme/not-cached")
    message = str(missing.value)
    assert "\n" not in message and message.startswith(
        "acme/not-cached: not a model directory, and not in the"
    )
    assert "never downloads" in message

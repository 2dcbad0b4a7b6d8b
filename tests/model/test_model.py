"""`respc.model`: where templates come from (SOURCE arguments, model directories), `for_model`'s choice
of parser, the on-disk cache of compiled modules, and writing a template back into a tokenizer config.
(How a `for_model` parser decodes token ids is tested with the tokenizers in tests/runtime/test_tokenizer.py.)
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.compare import TEMPLATES
from support.models import ABSENT, model_dir

import respc
from respc import model

TEXT = "<think>hm</think>Hi<|im_end|>"


def _model_dir(
    root: Path, family: str, *, template: Any = "family", model_type: str | None = "smollm3"
) -> Path:
    """A model directory with the fixture template `family` ("null": a null template, None: none)."""
    chosen = TEMPLATES[family] if template == "family" else None if template == "null" else ABSENT
    return model_dir(root, response_template=chosen, model_type=model_type)


# --- SOURCE arguments ---------------------------------------------------------------------------------


def test_load_source_reads_templates_configs_directories_and_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = tmp_path / "smollm.json"
    bare.write_text(json.dumps(TEMPLATES["smollm"]), encoding="utf-8")
    directory = _model_dir(tmp_path, "smollm")
    config = directory / "tokenizer_config.json"
    assert model.load_source(str(bare)) == (TEMPLATES["smollm"], "smollm.json")  # absolute: the name only
    assert model.load_source(str(config)) == (TEMPLATES["smollm"], "tokenizer_config.json")
    assert model.load_source(str(directory)) == (TEMPLATES["smollm"], "tokenizer_config.json")
    monkeypatch.chdir(tmp_path)
    assert model.load_source("smollm.json") == (TEMPLATES["smollm"], "smollm.json")
    assert model.load_source("model") == (TEMPLATES["smollm"], "model/tokenizer_config.json")
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps({"response_template": TEMPLATES["gemma4"]})))
    assert model.load_source("-") == (TEMPLATES["gemma4"], "<stdin>")
    no_template = _model_dir(tmp_path / "typed", "smollm", template=None, model_type="qwen3")
    template, name = model.load_source(str(no_template))
    assert template == respc.load_preset("qwen3").TEMPLATE and name == "qwen3 preset (for model)"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file or directory"),
        ("{not json", "invalid JSON at line 1 column 2: Expecting property name enclosed in double quotes"),
        (b"\xff\xfe", "not UTF-8 text (byte 0: invalid start byte)"),
        ('{"tokenizer_class": "X"}', "has no 'response_template' key"),
        ('{"response_template": null}', "'response_template' is null"),
        ("[" * 100_000 + "]" * 100_000, "invalid JSON: nested too deeply"),
    ],
)
def test_load_source_errors_are_one_line_naming_the_file(tmp_path: Path, content: Any, message: str) -> None:
    path = tmp_path / "tokenizer_config.json"
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    elif isinstance(content, bytes):
        path.write_bytes(content)
    with pytest.raises(respc.InputError) as raised:
        model.load_source(str(path))
    assert str(raised.value) == f"{path}: {message}"


# --- model directories ----------------------------------------------------------------------------------


def _shipped_presets() -> list[str]:
    try:
        return respc.presets()
    except ModuleNotFoundError:  # respc/generated/_registry.py not written yet
        return []


@pytest.mark.parametrize("template", [None, "null"])
def test_for_model_without_a_template_uses_the_preset_or_says_why(template: Any, tmp_path: Path) -> None:
    presets = _shipped_presets()
    if presets:
        from respc.registry import preset_info

        name = presets[0]
        model_type = preset_info(name)["model_types"][0]
        directory = _model_dir(tmp_path, "smollm", template=template, model_type=model_type)
        parser = model.for_model(directory, cache=tmp_path / "cache")
        assert parser.origin == f"preset {name}"
        assert parser.module is respc.load_preset(name)
    else:
        directory = _model_dir(tmp_path, "smollm", template=template, model_type="smollm3")
        with pytest.raises(model.ResponseTemplateNotFound, match="ships no presets"):
            model.for_model(directory, cache=tmp_path / "cache")
    (directory / "config.json").write_text(json.dumps({"model_type": "no-such-model"}), encoding="utf-8")
    with pytest.raises(
        model.ResponseTemplateNotFound,
        match=r"has no response_template, and no shipped preset matches it \(.*no preset lists 'no-such-model'",
    ):
        model.for_model(directory, cache=tmp_path / "cache")
    (directory / "config.json").unlink()
    with pytest.raises(model.ResponseTemplateNotFound, match=r"model_type: config\.json gives none"):
        model.for_model(directory, cache=tmp_path / "cache")


def test_for_model_reports_a_bad_directory(tmp_path: Path) -> None:
    with pytest.raises(respc.InputError, match="absent: not a model directory"):
        model.for_model(tmp_path / "absent")
    directory = _model_dir(tmp_path, "smollm")
    (directory / "tokenizer_config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(respc.InputError, match=r"tokenizer_config\.json: invalid JSON at line 1 column 2"):
        model.for_model(directory)
    bad = {"fields": {"content": {"close": 5}}}
    (directory / "tokenizer_config.json").write_text(json.dumps({"response_template": bad}), encoding="utf-8")
    with pytest.raises(respc.TemplateError):
        model.for_model(directory, cache=tmp_path / "cache")


# --- the disk cache ----------------------------------------------------------------------------------


def _cache_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file())


_LOAD = """
import json, sys
blocked = sys.argv[3] == "blocked"
if blocked:
    for name in ("jinja2", "black"):
        sys.modules[name] = None  # as on a runtime-only install: loading must not compile
import respc
module = respc.compile_template(json.loads(sys.argv[1]), cache=sys.argv[2])
print(module.__file__)
print(sorted(m for m in sys.modules if m.startswith("respc.compiler")))
"""


def _load(template: Any, cache: Path, blocked: bool = True) -> subprocess.CompletedProcess:
    """`respc.compile_template(template, cache=cache)` in a fresh process (an empty in-memory cache)."""
    args = [json.dumps(template), str(cache), "blocked" if blocked else "free"]
    return subprocess.run([sys.executable, "-c", _LOAD, *args], capture_output=True, text=True)


def test_a_later_process_loads_from_disk_without_compiling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(respc._compile, "_MEMORY", {})  # as in a fresh process, whatever ran before
    template = TEMPLATES["gemma4"]
    first = respc.compile_template(template, cache=tmp_path / "a")
    (cached,) = _cache_files(tmp_path / "a")
    assert cached.name.endswith(f"-{respc.DEFAULT_TARGET}.py") and first.__file__ == str(cached)
    assert respc.compile_template(template, cache=tmp_path / "a") is first  # once per process
    done = _load(template, tmp_path / "a")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(cached), "[]"]
    text = '<|channel>thought\nhm<channel|>Hi<|tool_call>call:f{a:<|"|>x<|"|>}<tool_call|>'
    assert first.parse_response(text, prefix="") == respc.compile_template(template).parse_response(
        text, prefix=""
    )


def test_the_default_cache_directory_follows_the_environment(tmp_path: Path) -> None:
    directory = model_dir(tmp_path, response_template=TEMPLATES["smollm"])
    env = {**os.environ, model.CACHE_ENV: str(tmp_path / "cache")}
    script = "import respc, sys; respc.for_model(sys.argv[1]); print('ok')"
    done = subprocess.run(
        [sys.executable, "-c", script, str(directory)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert [p.suffix for p in _cache_files(tmp_path / "cache")] == [".py"]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other template", "empty", "world-writable"])
def test_a_damaged_cache_file_is_rebuilt(damage: str, tmp_path: Path) -> None:
    template = TEMPLATES["smollm"]
    respc.compile_template(template, cache=tmp_path / "cache")
    (path,) = _cache_files(tmp_path / "cache")
    source = path.read_text(encoding="utf-8")
    if damage == "garbage":
        path.write_bytes(b"\x00\xff not python")
    elif damage == "truncated":
        path.write_text(source[: len(source) // 2], encoding="utf-8")
    elif damage == "other template":
        other = respc.generate_source(TEMPLATES["qwen3"], name="tokenizer_config.json")
        digest = source.split("# template-sha256: ", 1)[1].split("\n", 1)[0]
        claimed = other.split("# template-sha256: ", 1)
        claimed[1] = digest + claimed[1][len(digest) :]
        path.write_text("# template-sha256: ".join(claimed), encoding="utf-8")
    elif damage == "empty":
        path.write_text("", encoding="utf-8")
    else:
        path.chmod(0o666)
    done = _load(template, tmp_path / "cache", blocked=False)
    assert done.returncode == 0, done.stderr
    assert "rebuilding cached parser" in done.stderr
    assert path.read_text(encoding="utf-8") == source
    assert [p.name for p in _cache_files(tmp_path / "cache")] == [path.name]  # no temporary files left


_RACE = """
import os, sys, time
import respc
while not os.path.exists(sys.argv[2]):
    time.sleep(0.005)
template = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|assistant|>",
    "fields": {"content": {"close": "<|end|>", "content": "text"}},
}
module = respc.compile_template(template, cache=sys.argv[1])
assert module.parse_response("hi<|end|>", prefix="") == {"role": "assistant", "content": "hi"}
"""


def test_concurrent_processes_share_the_cache_safely(tmp_path: Path) -> None:
    go = tmp_path / "go"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACE, str(tmp_path / "cache"), str(go)], stderr=subprocess.PIPE
        )
        for _ in range(4)
    ]
    go.touch()
    for worker in workers:
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err.decode()
    files = _cache_files(tmp_path / "cache")
    assert len(files) == 1 and files[0].suffix == ".py", files


# --- writing a template back -----------------------------------------------------------------------


def test_write_response_template_keeps_every_other_key(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer_config.json"
    original = {
        "add_bos_token": False,
        "response_template": {"fields": {"content": {"close": "<old>"}}},
        "added_tokens_decoder": {"7": {"content": "<|im_end|>", "special": True}},
        "tokenizer_class": "PreTrainedTokenizerFast",
        "chat_template": "{{ messages }}",
        "model_max_length": 1e30,
        "extra_special_tokens": ["é", "你好"],
    }
    path.write_text(json.dumps(original, indent=2), encoding="utf-8")
    path.chmod(0o640)
    assert model.write_response_template(tmp_path, TEMPLATES["smollm"]) == path
    written = json.loads(path.read_text(encoding="utf-8"))
    assert list(written) == list(original)
    assert written == dict(original, response_template=TEMPLATES["smollm"])
    assert path.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tokenizer_config.json"]

    del written["response_template"]
    path.write_text(json.dumps(written), encoding="utf-8")
    model.write_response_template(path, TEMPLATES["gemma4"])
    assert list(json.loads(path.read_text(encoding="utf-8"))) == [*written, "response_template"]

    before = path.read_bytes()
    with pytest.raises(respc.TemplateError):
        model.write_response_template(path, {"fields": {"content": {"close": 5}}})
    assert path.read_bytes() == before

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    model.write_response_template(fresh, TEMPLATES["smollm"])
    assert json.loads((fresh / "tokenizer_config.json").read_text(encoding="utf-8")) == {
        "response_template": TEMPLATES["smollm"]
    }


def test_for_model_parses_text_without_a_tokenizer_json(tmp_path: Path) -> None:
    """As `respc parse --model` does: tokenizer.json is needed for token ids only, config.json not at all
    when tokenizer_config.json holds the template."""
    directory = tmp_path / "text-only"
    directory.mkdir()
    template = TEMPLATES["smollm"]
    config = {"response_template": template}
    (directory / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    text = "<think>hmm</think>Hello!<|im_end|>"
    parser = model.for_model(directory, cache=tmp_path / "cache")
    assert parser.parse_response(text, prefix="") == respc.parse_response(text, template, prefix="")
    stream = parser.get_response_parser(prefix="")
    stream.feed(text)
    assert stream.finalize()[0] == respc.parse_response(text, template, prefix="")
    with pytest.raises(FileNotFoundError, match=r"no tokenizer\.json .*token ids need it; text does not"):
        parser.parse_response([1, 2, 3], prefix="")

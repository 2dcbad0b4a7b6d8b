"""respc renders chat templates as `tokenizer.apply_chat_template(..., tokenize=False)` of transformers 5.24.0
(in process) and 5.23.0 (in its worker): every real chat template of the collection on every probe, and
hand-written templates for each piece of transformers' environment (globals, filters, extensions, the
sandbox, message preparation, special tokens from tokenizer_config.json, named templates)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.authoring import INDEX, chat_template, model_dir
from support.oracles import oracle

from respc.authoring import ChatTemplate, load_chat_template
from respc.authoring.probes import probes_for
from respc.authoring.rendering import MIN_JINJA2

TARGETS = ("5.24", "5.23")


def oracle_render(target: str, directory: Path, cases: list[dict]) -> list[tuple]:
    """transformers' renderings of `cases` with the tokenizer saved in `directory`."""
    [(status, value)] = oracle(target).request("call", ("render_chat", (str(directory), cases)), deadline=120)
    assert status == "ok", value
    return value


def ours(template: ChatTemplate, cases: list[dict]) -> list[tuple]:
    out = []
    for case in cases:
        case = dict(case)
        messages = case.pop("conversation")
        try:
            out.append(("ok", template.render(messages, **case)))
        except Exception as error:
            out.append(("raise", type(error).__name__, str(error)))
    return out


def probe_cases(template: ChatTemplate, string_arguments: bool = False) -> list[dict]:
    """Both renderings of every probe: the prompt with the generation prompt, the whole conversation."""
    cases = []
    for probe in probes_for(template):
        history, turn = probe.history, probe.turn
        if string_arguments:
            for message in [*history, turn]:
                for call in message.get("tool_calls") or []:
                    call["function"]["arguments"] = json.dumps(call["function"]["arguments"])
        common = {"tools": probe.tool_list, **probe.kwargs}
        cases.append({"conversation": history, "add_generation_prompt": True, **common})
        cases.append({"conversation": [*history, turn], "add_generation_prompt": False, **common})
    return cases


def assert_same_renderings(template: ChatTemplate, directory: Path, cases: list[dict], target: str) -> None:
    # Templates that print the time (strftime_now) can straddle a second: compare again before failing.
    for attempt in range(3):
        theirs = oracle_render(target, directory, cases)
        mine = ours(template, cases)
        if mine == theirs or "strftime_now" not in "".join(template.texts()) or attempt == 2:
            break
    for case, a, b in zip(cases, mine, theirs):
        assert a == b, f"transformers {target} differs on {case}:\nrespc:        {a!r}\ntransformers: {b!r}"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(INDEX))
def test_real_chat_templates_render_as_transformers(name: str, target: str, tmp_path: Path) -> None:
    template = chat_template(name)
    directory = model_dir(tmp_path / name, {"chat_template": template.template, **template.special_tokens})
    assert load_chat_template(directory) == ChatTemplate(
        template.template, template.special_tokens, str(directory / "tokenizer_config.json")
    )
    cases = probe_cases(template) + probe_cases(template, string_arguments=True)
    assert_same_renderings(template, directory, cases, target)


MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi <b>&amp;</b> 'x' \"y\" ü 東京"},
    {"role": "assistant", "content": "Hello", "thinking": "greet them", "tool_calls": None},
]

# One template per piece of transformers' environment; each renders something, or raises.
FEATURES = {
    "loop_controls": "{% for m in messages %}{% if loop.index > 2 %}{% break %}{% endif %}"
    "{% if m.role == 'system' %}{% continue %}{% endif %}[{{ m.content }}]{% endfor %}",
    "generation_tag": "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}<a>{{ m.content }}"
    "</a>{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}",
    "trim_and_lstrip": "{% for m in messages %}\n    {% if m.role == 'user' %}\n        U:{{ m.content }}\n"
    "    {% endif %}\n{% endfor %}",
    "namespace": "{% set ns = namespace(count=0, self=1) %}{% for m in messages %}{% set ns.count = ns.count + 1 %}"
    "{% endfor %}{{ ns.count }}/{{ ns.self }}",
    "namespace_underscore": "{% set ns = namespace(_hidden=1) %}{{ ns._hidden }}",
    "namespace_underscore_set": "{% set ns = namespace() %}{% set ns._x = 1 %}{{ ns._x }}",
    "tojson_default": "{{ messages | tojson }}",
    "tojson_arguments": "{{ messages[1] | tojson(indent=2, sort_keys=True) }}{{ messages[1] | tojson(ensure_ascii=True) }}"
    "{{ messages[0] | tojson(separators=(',', ':')) }}{{ tools | tojson(indent='\\t') }}",
    "raise_exception": "{{ raise_exception('roles must alternate') }}",
    "dict_global": "{{ dict(a=1, b=[2]) | tojson }}{{ dict.fromkeys(['x', 'y']) | tojson }}",
    "strftime_now": "{{ strftime_now('%Y') | length }}",
    "message_preparation": "{% for m in messages %}{{ m | tojson }}{% for k in m %}{{ k }},{% endfor %}|{% endfor %}",
    "variables": "{{ add_generation_prompt }}|{{ tools | length if tools else 'none' }}|{{ documents | tojson }}"
    "|{{ extra | default('-') }}|{{ enable_thinking is defined }}",
    "undefined_attribute": "{{ messages[0].nothing.deeper }}",
    "sandbox": "{{ messages.__class__.__mro__ }}",
    "sandbox_mutation": "{% set x = [] %}{{ x.append(1) }}{{ x }}",
    "syntax_error": "{% for m in messages %}{{ m.content }",
}


@pytest.mark.parametrize("target", TARGETS)
def test_transformers_environment(target: str, tmp_path: Path) -> None:
    cases = [
        {"conversation": MESSAGES},
        {"conversation": MESSAGES, "add_generation_prompt": True, "tools": [{"name": "f", "parameters": {}}]},
        {
            "conversation": MESSAGES,
            "documents": [{"title": "t", "text": "x"}],
            "extra": ("a", 1),
            "enable_thinking": False,
        },
    ]
    for name, text in FEATURES.items():
        template = ChatTemplate(text)
        directory = model_dir(tmp_path / name, {"chat_template": text})
        assert_same_renderings(template, directory, cases, target)


SPECIAL_TOKEN_CONFIGS = {
    "strings": {"bos_token": "<s>", "eos_token": "</s>", "pad_token": None, "unk_token": "<unk>"},
    "added_token_objects": {
        "bos_token": {
            "__type": "AddedToken",
            "content": "<|begin|>",
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        },
        "eos_token": {
            "__type": "AddedToken",
            "content": "<|end|>",
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        },
    },
    "model_specific": {
        "eos_token": "</s>",
        "image_token": "<image>",
        "tool_token": {"__type": "AddedToken", "content": "<tool>"},
    },
    "extra_special_tokens_object": {"eos_token": "</s>", "extra_special_tokens": {"audio_token": "<audio>"}},
    "additional_special_tokens_list": {"eos_token": "</s>", "additional_special_tokens": ["<x>", "<y>"]},
    "explicit_model_specific": {
        "eos_token": "</s>",
        "model_specific_special_tokens": {"video_token": "<video>"},
    },
}
TOKEN_TEMPLATE = (
    "{{ bos_token | default('-') }}|{{ eos_token | default('-') }}|{{ pad_token | default('-') }}"
    "|{{ unk_token | default('-') }}|{{ image_token | default('-') }}|{{ tool_token | default('-') }}"
    "|{{ audio_token | default('-') }}|{{ video_token | default('-') }}|{{ messages[0].content }}"
)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("config", sorted(SPECIAL_TOKEN_CONFIGS))
def test_special_tokens_from_tokenizer_config(config: str, target: str, tmp_path: Path) -> None:
    directory = model_dir(tmp_path, {"chat_template": TOKEN_TEMPLATE, **SPECIAL_TOKEN_CONFIGS[config]})
    [(status, theirs)] = oracle(target).request("call", ("special_tokens_map", (str(directory),)))
    template = load_chat_template(directory)
    assert (status, dict(template.special_tokens)) == ("ok", theirs)
    # the call's own keyword arguments override a special token
    cases = [{"conversation": MESSAGES}, {"conversation": MESSAGES, "eos_token": "<override>"}]
    assert_same_renderings(template, directory, cases, target)


@pytest.mark.parametrize("target", TARGETS)
def test_legacy_special_tokens_map(target: str, tmp_path: Path) -> None:
    """special_tokens_map.json counts only where the config has no added_tokens_decoder."""
    legacy = json.dumps({"eos_token": {"content": "<|legacy|>", "special": True}, "bos_token": "<b>"})
    for name, config in {
        "read": {"chat_template": TOKEN_TEMPLATE, "eos_token": "</s>"},
        "ignored": {"chat_template": TOKEN_TEMPLATE, "eos_token": "</s>", "added_tokens_decoder": {}},
    }.items():
        directory = model_dir(tmp_path / name, config, {"special_tokens_map.json": legacy})
        [(status, theirs)] = oracle(target).request("call", ("special_tokens_map", (str(directory),)))
        assert (status, dict(load_chat_template(directory).special_tokens)) == ("ok", theirs)


@pytest.mark.parametrize("target", TARGETS)
def test_named_templates(target: str, tmp_path: Path) -> None:
    """chat_template.jinja and additional_chat_templates/: `tool_use` when tools are given, else `default`;
    a config's list of named templates likewise."""
    files = {
        "chat_template.jinja": "default:{{ messages[0].content }}",
        "additional_chat_templates/tool_use.jinja": "tools:{{ tools | length }}",
    }
    listed = [
        {"name": "default", "template": "D{{ messages | length }}"},
        {"name": "tool_use", "template": "T{{ tools | length }}"},
    ]
    cases = [{"conversation": MESSAGES}, {"conversation": MESSAGES, "tools": [{"name": "f"}]}]
    for directory in (
        model_dir(tmp_path / "files", {}, files),
        model_dir(tmp_path / "listed", {"chat_template": listed}),
        model_dir(tmp_path / "file_wins", {"chat_template": "config"}, {"chat_template.jinja": "file"}),
    ):
        assert_same_renderings(load_chat_template(directory), directory, cases, target)


def test_no_default_among_named_templates() -> None:
    template = ChatTemplate({"tool_use": "T"})
    assert template.render([{"role": "user", "content": "x"}], tools=[{"name": "f"}]) == "T"
    with pytest.raises(ValueError, match="multiple chat templates with no default"):
        template.render([{"role": "user", "content": "x"}])


def test_clock_and_inputs() -> None:
    from datetime import datetime

    template = ChatTemplate("{{ strftime_now('%d %b %Y %H:%M') }}")
    assert (
        template.render([{"role": "user", "content": ""}], now=datetime(2026, 3, 4, 5, 6))
        == "04 Mar 2026 05:06"
    )
    with pytest.raises(ValueError, match="empty conversation"):
        template.render([])
    with pytest.raises(TypeError, match="JSON schemas"):
        template.render([{"role": "user", "content": ""}], tools=[print])
    assert MIN_JINJA2 == (3, 1, 6)


def test_sources(tmp_path: Path) -> None:
    from respc import InputError
    from respc.authoring import NoChatTemplate

    jinja = tmp_path / "t.jinja"
    jinja.write_text("{{ bos_token }}x", encoding="utf-8")
    assert load_chat_template(jinja) == ChatTemplate("{{ bos_token }}x", {}, str(jinja))
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"chat_template": "c", "eos_token": "</s>"}), encoding="utf-8")
    assert load_chat_template(config).special_tokens == {"eos_token": "</s>"}
    config.write_text(json.dumps({"eos_token": "</s>"}), encoding="utf-8")
    with pytest.raises(NoChatTemplate, match="has no 'chat_template'"):
        load_chat_template(config)
    with pytest.raises(NoChatTemplate, match="no chat template"):
        load_chat_template(model_dir(tmp_path / "empty", {}))
    config.write_text(json.dumps({"chat_template": 5}), encoding="utf-8")
    with pytest.raises(InputError, match="'chat_template' must be a string"):
        load_chat_template(config)
    with pytest.raises(InputError, match="no such file"):
        load_chat_template(tmp_path / "missing.jinja")
    processor = model_dir(
        tmp_path / "processor", {}, {"chat_template.json": json.dumps({"chat_template": "P"})}
    )
    assert load_chat_template(processor).template == "P"


def test_every_real_template_has_its_source_written_down() -> None:
    readme = (Path(__file__).parent / "chat_templates" / "README.md").read_text(encoding="utf-8")
    files = sorted(p.name for p in (Path(__file__).parent / "chat_templates").glob("*.jinja"))
    assert files == sorted(f"{name}.jinja" for name in INDEX)
    for name in files:
        assert f"| `{name}` |" in readme, f"{name} has no row in chat_templates/README.md"

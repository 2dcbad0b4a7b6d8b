"""Finding the preset for a real model: repository ids (re-publishers, quantisations, fine-tunes),
chat templates (markers as the published templates write them, including checkpoints whose
`model_type` misleads), model directories in `for_model`'s order, ambiguity and refusal, and end-of-
generation tokens (every preset parses the same with and without them, streamed and whole)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.cli import respc_cli
from support.compare import chunkings
from support.models import model_dir
from support.outcome import outcome

import respc
from respc.registry import (
    AmbiguousPreset,
    TargetTooOld,
    UnsupportedFormat,
    _family_match,
    match_model,
    normalise_repo_id,
    preset_info,
)

ROOT = Path(__file__).parents[2]
CASES_DIR = Path(__file__).parents[1] / "fixtures" / "presets"

# --- repository ids ---------------------------------------------------------------------------------

# Real Hub ids, each with the preset it must get. Official ids, quantisations (AWQ, GPTQ, FP8, GGUF,
# MLX, bnb, w4a16), re-publications (unsloth, mlx-community, lmstudio-community, bartowski with its
# `org_` prefix, RedHatAI, hugging-quants, ggml-org, QuantFactory, TheBloke, cerebras) and fine-tunes
# named after another family (Hermes on Llama/Mistral, R1 distills on Qwen/Llama, Nemotron on Llama).
REPO_IDS = [
    ("Qwen/Qwen3-4B-Thinking-2507", "qwen3"),
    ("Qwen/Qwen3-4B-Instruct-2507", "qwen3"),
    ("Qwen/Qwen3-0.6B", "qwen3"),
    ("Qwen/Qwen3-32B-AWQ", "qwen3"),
    ("Qwen/Qwen3-8B-FP8", "qwen3"),
    ("Qwen/Qwen3-Next-80B-A3B-Thinking", "qwen3"),
    ("Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4", "qwen3"),
    ("Qwen/Qwen2.5-Coder-32B-Instruct", "qwen3"),
    ("Qwen/QwQ-32B", "qwen3"),
    ("unsloth/Qwen3-14B", "qwen3"),
    ("unsloth/Qwen3-14B-GGUF", "qwen3"),
    ("unsloth/Qwen3-8B-unsloth-bnb-4bit", "qwen3"),
    ("mlx-community/Qwen3-30B-A3B-4bit", "qwen3"),
    ("lmstudio-community/Qwen3-30B-A3B-GGUF", "qwen3"),
    ("bartowski/Qwen_Qwen3-8B-GGUF", "qwen3"),
    ("RedHatAI/Qwen3-8B-FP8-dynamic", "qwen3"),
    ("NousResearch/Hermes-2-Pro-Mistral-7B", "qwen3"),
    ("NousResearch/Hermes-2-Pro-Mistral-7B-GGUF", "qwen3"),
    ("NousResearch/Hermes-3-Llama-3.1-8B", "qwen3"),
    ("NousResearch/Hermes-4-14B", "qwen3"),
    ("TheBloke/OpenHermes-2.5-Mistral-7B-GGUF", "qwen3"),
    ("Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8", "qwen3_5"),
    ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3_5"),
    ("mlx-community/Qwen3-Coder-30B-A3B-Instruct-4bit", "qwen3_5"),
    ("Qwen/Qwen3.5-4B", "qwen3_5"),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8", "qwen3_5"),
    ("stepfun-ai/Step-3.5-Flash", "qwen3_5"),
    ("deepseek-ai/DeepSeek-R1-0528", "deepseek_r1"),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "deepseek_r1"),
    ("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", "deepseek_r1"),
    ("deepseek-ai/DeepSeek-R1-0528-Qwen3-8B", "deepseek_r1"),
    ("bartowski/deepseek-ai_DeepSeek-R1-0528-Qwen3-8B-GGUF", "deepseek_r1"),
    ("bartowski/DeepSeek-R1-Distill-Qwen-32B-GGUF", "deepseek_r1"),
    ("mlx-community/DeepSeek-R1-Distill-Qwen-7B-4bit", "deepseek_r1"),
    ("unsloth/DeepSeek-R1-Distill-Qwen-7B-GGUF", "deepseek_r1"),
    ("perplexity-ai/r1-1776", "deepseek_r1"),
    ("deepseek-ai/DeepSeek-V3-0324", "deepseek_v3"),
    ("deepseek-ai/DeepSeek-V3.1-Terminus", "deepseek_v3_1"),
    ("openai/gpt-oss-20b", "gpt_oss"),
    ("unsloth/gpt-oss-20b", "gpt_oss"),
    ("unsloth/gpt-oss-20b-GGUF", "gpt_oss"),
    ("ggml-org/gpt-oss-20b-GGUF", "gpt_oss"),
    ("lmstudio-community/gpt-oss-20b-MLX-8bit", "gpt_oss"),
    ("mlx-community/gpt-oss-20b-MXFP4-Q8", "gpt_oss"),
    ("meta-llama/Llama-3.3-70B-Instruct", "llama3_json"),
    ("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF", "llama3_json"),
    ("hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4", "llama3_json"),
    ("RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8", "llama3_json"),
    ("QuantFactory/Meta-Llama-3-8B-Instruct-GGUF", "llama3_json"),
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8", "llama4"),
    ("unsloth/Llama-4-Scout-17B-16E-Instruct-GGUF", "llama4"),
    ("RedHatAI/Llama-4-Scout-17B-16E-Instruct-quantized.w4a16", "llama4"),
    ("mlx-community/Llama-4-Scout-17B-16E-Instruct-4bit", "llama4"),
    ("Team-ACE/ToolACE-8B", "llama3_pythonic"),
    ("mistralai/Mistral-7B-Instruct-v0.3", "mistral_v3"),
    ("mistralai/Mistral-Nemo-Instruct-2407", "mistral_v3"),
    ("RedHatAI/Mistral-Small-3.1-24B-Instruct-2503-FP8-dynamic", "mistral_v3"),
    ("TheBloke/Mistral-7B-Instruct-v0.2-GGUF", "mistral_v3"),
    ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", "mistral_v11"),
    ("unsloth/Mistral-Small-3.2-24B-Instruct-2506-GGUF", "mistral_v11"),
    ("bartowski/mistralai_Mistral-Small-3.2-24B-Instruct-2506-GGUF", "mistral_v11"),
    ("mistralai/Magistral-Small-2509", "mistral_v11"),
    ("mistralai/Devstral-Small-2507", "mistral_v11"),
    ("zai-org/GLM-4.5-Air", "glm4_5"),
    ("zai-org/GLM-4.6", "glm4_5"),
    ("unsloth/GLM-4.5-Air-GGUF", "glm4_5"),
    ("mlx-community/GLM-4.5-Air-4bit", "glm4_5"),
    ("cerebras/GLM-4.5-Air-REAP-82B-A12B", "glm4_5"),
    ("zai-org/GLM-4.7-Flash", "glm4_7"),
    ("moonshotai/Kimi-K2-Instruct-0905", "kimi_k2"),
    ("unsloth/Kimi-K2-Instruct-GGUF", "kimi_k2"),
    ("moonshotai/Kimi-Dev-72B", "qwen3"),  # "Kimi", but a Qwen2.5-72B fine-tune
    ("MiniMaxAI/MiniMax-M2", "minimax_m2"),
    ("google/gemma-4-31B-it", "gemma4"),
    ("ibm-granite/granite-3.3-8b-instruct", "granite3"),
    ("ibm-granite/granite-4.0-h-small-FP8", "granite4"),
    ("ibm-granite/granite-4.0-micro", "granite4"),
    ("CohereLabs/c4ai-command-r7b-12-2024", "cohere"),
    ("microsoft/Phi-4-mini-instruct", "phi4_mini"),
    ("nvidia/Llama-3_3-Nemotron-Super-49B-v1_5", "nemotron"),
    ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", "nemotron"),
    ("stepfun-ai/step3", "step3"),
    ("ByteDance-Seed/Seed-OSS-36B-Instruct", "seed_oss"),
    ("mlx-community/SmolLM3-3B-4bit", "smollm3"),
    ("internlm/internlm2_5-7b-chat", "internlm2"),
    ("ai21labs/AI21-Jamba-Mini-1.7", "jamba"),
    ("tencent/Hunyuan-A13B-Instruct-GPTQ-Int4", "hunyuan"),
    ("baidu/ERNIE-4.5-21B-A3B-Thinking", "ernie4_5"),
    ("meituan-longcat/LongCat-Flash-Chat", "longcat"),
    ("LiquidAI/LFM2-1.2B-Tool", "lfm2"),
    ("LiquidAI/LFM2-8B-A1B", "lfm2"),
    ("LiquidAI/LFM2.5-1.2B-Thinking", "lfm2"),
    ("/srv/models/Qwen3-8B-AWQ/", "qwen3"),  # a local path named after the repository
    ("unsloth/Qwen3-30B-A3B-Instruct-2507-UD-Q4_K_XL", "qwen3"),
    ("bartowski/Qwen_Qwen3-8B-IQ4_XS", "qwen3"),
    ("nvidia/Llama-3.1-Nemotron-70B-Instruct-HF", "llama3_json"),  # Llama 3.1's template, not <TOOLCALL>
    ("microsoft/Phi-4-mini-reasoning", "phi4_mini"),
    ("mistralai/Mistral-Large-Instruct-2407", "mistral_v3"),
]

# Ids that must not get a preset: embedding and reranking models, and families whose name looks like
# a shipped one but whose checkpoints write another format.
NO_PRESET = [
    "Qwen/Qwen3-Embedding-8B",
    "Qwen/Qwen3-Reranker-4B",
    "nvidia/OpenReasoning-Nemotron-32B",
    "nvidia/Mistral-NeMo-Minitron-8B-Instruct",
]


@pytest.mark.parametrize(("repo_id", "preset"), REPO_IDS, ids=[r for r, _ in REPO_IDS])
def test_real_repo_ids_resolve_to_their_preset(repo_id: str, preset: str) -> None:
    assert respc.preset_for(repo_id) is respc.load_preset(preset)
    assert respc.preset_for(repo_id.upper()) is respc.load_preset(preset)
    assert match_model(repo_id).by == "repo id"
    found = _family_match(repo_id)  # the family patterns alone, without the ids the index lists
    assert found is not None and found.preset == preset, found


def test_the_table_covers_every_variant_kind_and_most_presets() -> None:
    assert len(REPO_IDS) >= 60
    names = {repo_id.split("/")[0].lower() for repo_id, _ in REPO_IDS}
    for republisher in ("unsloth", "mlx-community", "lmstudio-community", "bartowski", "redhatai"):
        assert republisher in names
    ids = " ".join(r.lower() for r, _ in REPO_IDS)
    for suffix in ("-awq", "-gptq", "-fp8", "-gguf", "-4bit", "bnb-4bit", "mlx-8bit", ".w4a16"):
        assert suffix in ids
    shipped = set(respc.presets())
    covered = {preset for _, preset in REPO_IDS}
    # Found by chat template only: Gemma 3's stock template has no tools (the pythonic one is vLLM's),
    # and Inkling has no public checkpoints.
    assert shipped - covered == {"gemma3_pythonic", "inkling"}


@pytest.mark.parametrize(
    ("repo_id", "name"),
    [
        ("bartowski/Qwen_Qwen3-8B-GGUF", "qwen3-8b"),
        ("mlx-community/Qwen3-30B-A3B-Instruct-2507-4bit-DWQ", "qwen3-30b-a3b-instruct-2507"),
        ("RedHatAI/Llama-4-Scout-17B-16E-Instruct-quantized.w4a16", "llama-4-scout-17b-16e-instruct"),
        ("unsloth/Qwen3-8B-unsloth-bnb-4bit", "qwen3-8b"),
        ("Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4", "qwen2.5-72b-instruct"),
        ("RedHatAI/Qwen3-8B-FP8-dynamic", "qwen3-8b"),
        ("lmstudio-community/gpt-oss-20b-MLX-8bit", "gpt-oss-20b"),
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "deepseek-r1-distill-qwen-7b"),  # -Distill stays
        ("Qwen/Qwen3-4B-Thinking-2507", "qwen3-4b-thinking-2507"),  # -Thinking stays
        ("gguf", "gguf"),  # never stripped to nothing
    ],
)
def test_normalise_repo_id_drops_organisation_and_quantisation_only(repo_id: str, name: str) -> None:
    assert normalise_repo_id(repo_id) == name


@pytest.mark.parametrize("repo_id", NO_PRESET)
def test_look_alike_ids_get_no_preset(repo_id: str) -> None:
    with pytest.raises(respc.PresetNotFound):
        respc.preset_for(repo_id)


def test_an_id_matching_two_families_equally_is_ambiguous() -> None:
    with pytest.raises(AmbiguousPreset, match=r"glm4_5 \(.*\); qwen3 \(") as raised:
        respc.preset_for("someone/GLM-4.5-Qwen3-merge")  # two base patterns at the same rank
    assert raised.value.candidates == ("glm4_5", "qwen3")


def test_known_inexpressible_families_are_refused_with_the_reason() -> None:
    for repo_id, reason in [
        ("deepseek-ai/DeepSeek-V3.2-Exp", "DSML"),
        ("allenai/Olmo-3-7B-Think", "one pythonic call per line"),
        ("Salesforce/xLAM-2-8b-fc-r", "Bare JSON array"),
    ]:
        with pytest.raises(UnsupportedFormat, match=reason):
            respc.preset_for(repo_id)


def test_unknown_ids_name_the_closest_families() -> None:
    with pytest.raises(respc.PresetNotFound, match=r"did you mean qwen3, qwen3_5\?") as raised:
        respc.preset_for("someone/qwen-7b-chat")
    assert not isinstance(raised.value, AmbiguousPreset)
    with pytest.raises(respc.PresetNotFound, match=r"\(`respc presets` lists all \d+ with their models\)$"):
        respc.preset_for("gemma-3-27b-it")  # Gemma 3's stock template has no tools: no preset


def test_model_types_and_names_resolve_and_a_shared_type_is_ambiguous() -> None:
    assert match_model("qwen3_moe").preset == "qwen3"  # the type transformers' serving maps
    assert match_model("deepseek_v3").preset == "deepseek_v3"  # shared, but one preset is named after it
    assert match_model("gemma3_pythonic").by == "name"
    with pytest.raises(AmbiguousPreset, match="glm4_5, glm4_7") as raised:
        respc.preset_for("glm4_moe")
    assert raised.value.candidates == ("glm4_5", "glm4_7")


def test_listed_repo_ids_belong_to_one_preset_and_win_over_patterns() -> None:
    owners: dict[str, str] = {}
    for name in respc.presets():
        for repo_id in preset_info(name)["repo_ids"]:
            assert (
                repo_id.lower() not in owners
            ), f"{repo_id}: claimed by {owners.get(repo_id.lower())} and {name}"
            owners[repo_id.lower()] = name
            assert match_model(repo_id).preset == name, repo_id


# --- chat templates ---------------------------------------------------------------------------------

# Excerpts written from the published chat templates: each keeps the lines that name the format, in
# the template's own spelling (Jinja string literals, escaped newlines where the template has them).
TEMPLATES = {
    "qwen3": (
        "{%- if tools %}{{- '<|im_start|>system\\n' }}{{- \"# Tools\\n\\nYou may call one or more "
        "functions to assist with the user query.\\n\\nYou are provided with function signatures within "
        '<tools></tools> XML tags:\\n<tools>" }}{%- for tool in tools %}{{- tool | tojson }}{%- endfor %}'
        '{{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and '
        'arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": '
        '<function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}{%- endif %}'
        "{%- if enable_thinking is defined and enable_thinking is false %}"
        "{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}"
    ),
    "qwen3_5": (  # Qwen3-Coder: the XML call layout inside <tool_call>
        "{{- '\\n\\nIf you choose to call a function ONLY reply in the following format with NO suffix:"
        "\\n\\n<tool_call>\\n<function=example_function_name>\\n<parameter=example_parameter_1>\\nvalue_1"
        "\\n</parameter>\\n</function>\\n</tool_call>' }}{%- for tool_call in message.tool_calls %}"
        "{{- '\\n<tool_call>\\n<function=' + tool_call.name + '>\\n' }}{%- endfor %}"
    ),
    "smollm3": (
        "{{- '<|im_start|>system\\n' }}{{- '## Metadata\\n\\nKnowledge Cutoff Date: June 2025\\n' }}"
        "{{- 'Reasoning Mode: ' + reasoning_mode + '\\n\\n' }}{%- if '/no_think' in system_message %}"
        "{%- set reasoning_mode = '/no_think' %}{%- endif %}{%- if xml_tools %}{{- '<tool_call>' }}"
        "{%- endif %}"
    ),
    "deepseek_r1": (  # R1-Distill-Qwen: DeepSeek's tokens, though config.json says qwen2
        "{%- if message['role'] == 'assistant' and 'tool_calls' in message %}{{'<｜Assistant｜>"
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + "
        "tool['function']['name'] + '\\n' + '```json' + '\\n' + tool['function']['arguments'] + "
        "'\\n' + '```' + '<｜tool▁call▁end｜>'}}{%- endif %}{% if '</think>' in content %}"
        "{% set content = content.split('</think>')[-1] %}{% endif %}"
        "{% if add_generation_prompt %}{{'<｜Assistant｜><think>\\n'}}{% endif %}"
    ),
    "deepseek_v3": (
        "{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + "
        "'<｜tool▁sep｜>' + tool['function']['name'] + '\\n' + '```json'}}"
        "{% if add_generation_prompt %}{{'<｜Assistant｜>'}}{% endif %}"
    ),
    "deepseek_v3_1": (
        "{%- if message['prefix'] is defined and message['prefix'] and thinking %}{{'<think>'}}"
        "{%- endif %}{{'<｜tool▁call▁begin｜>'+ tool['function']['name'] + '<｜tool▁sep｜>' + "
        "tool['function']['arguments'] + '<｜tool▁call▁end｜>'}}{% if add_generation_prompt %}"
        "{{'<｜Assistant｜>'}}{%- if not thinking %}{{'</think>'}}{%- else %}{{'<think>'}}{%- endif %}"
        "{% endif %}"
    ),
    "gpt_oss": (
        "{{- '<|start|>assistant<|channel|>analysis<|message|>' + message.thinking + '<|end|>' }}"
        "{{- '# Valid channels: analysis, commentary, final. Channel must be included for every "
        "message.' }}{{- '<|start|>assistant to=' + 'functions.' + tool_call.name + "
        "'<|channel|>commentary json<|message|>' + tool_call.arguments|tojson + '<|call|>' }}"
    ),
    "glm4_5": (
        "[gMASK]<sop>{%- if tools -%}<|system|>\\n# Tools\\n<tool_call>{function-name}\\n"
        "<arg_key>{arg-key-1}</arg_key>\\n<arg_value>{arg-value-1}</arg_value>\\n</tool_call>"
        "{%- endif -%}{%- if add_generation_prompt -%}<|assistant|>{{- '\\n<think></think>' if "
        "(enable_thinking is defined and not enable_thinking) else '' -}}{%- endif -%}"
    ),
    "glm4_7": (
        "[gMASK]<sop>{%- if tools -%}<|system|>\\n# Tools\\n<tool_call>{function-name}<arg_key>"
        "{arg-key-1}</arg_key><arg_value>{arg-value-1}</arg_value></tool_call>{%- endif -%}"
        "{%- set clear_thinking = clear_thinking if clear_thinking is defined else true -%}"
        "{%- if add_generation_prompt -%}<|assistant|>{{- '</think>' if (enable_thinking is defined "
        "and not enable_thinking) else '<think>' -}}{%- endif -%}"
    ),
    "granite3": (
        "{{- '<|start_of_role|>system<|end_of_role|>' }}{%- if tools %}{{- ' You are a helpful AI "
        "assistant with access to the following tools. When a tool is required to answer the "
        "user\\'s query, respond only with <|tool_call|> followed by a JSON list of tools used.' }}"
        "{%- endif %}{{- '<|end_of_text|>\\n' }}"
    ),
    "granite4": (  # carries Qwen's tool prompt sentence too; <|start_of_role|> settles it
        "{{- '<|start_of_role|>system<|end_of_role|>' }}{{- '\\n\\nFor each tool call, return a json "
        "object with function name and arguments within <tool_call></tool_call> XML tags:\\n"
        '<tool_call>\\n{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call>\' }}'
        "{{- '<|end_of_text|>\\n' }}"
    ),
    "mistral_v3": (
        "{%- if loop.last and tools is not none %}{{- '[AVAILABLE_TOOLS] ' }}{{- tools|tojson }}"
        "{{- '[/AVAILABLE_TOOLS]' }}{%- endif %}{{- '[INST] ' + message['content'] + '[/INST]' }}"
        "{{- '[TOOL_CALLS] [' }}{%- for tool_call in message.tool_calls %}{{- tool_call|tojson }}"
        "{%- endfor %}{{- ']' + eos_token }}"
    ),
    "mistral_v11": (
        "{%- for tool in message['tool_calls'] %}{{- '[TOOL_CALLS]' + tool.function.name }}"
        "{%- if tool.id is defined %}{{- '[CALL_ID]' + tool.id }}{%- endif %}{{- '[ARGS]' + "
        "arguments }}{%- endfor %}{{- eos_token }}"
    ),
    "llama3_json": (
        '{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}{%- if builtin_tools is defined or '
        'tools is not none %}{{- "Environment: ipython\\n" }}{%- endif %}{{- \'Respond in the format '
        '{"name": function name, "parameters": dictionary of argument name and its value}.\' }}'
        '{{- "<|eot_id|>" }}'
    ),
    "llama3_pythonic": (  # vLLM's tool_chat_template_llama3.2_pythonic.jinja
        '{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}{{- "Environment: ipython\\n" }}'
        '{{- "If you decide to invoke any of the function(s), you MUST put it in the format of '
        "[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]"
        '\\n" }}{{- "You SHOULD NOT include any other text in the response if you call a function." }}'
    ),
    "llama4": (  # vLLM's tool_chat_template_llama4_pythonic.jinja
        '{{- "<|header_start|>system<|header_end|>\\n\\n" }}{{- "Use exact format: '
        '[func_name1(param1=value1, param2=value2), func_name2(...)]" }}{{- "<|eot|>" }}'
        "{%- if add_generation_prompt %}{{- '<|header_start|>assistant<|header_end|>\\n\\n' }}"
        "{%- endif %}"
    ),
    "gemma3_pythonic": (  # vLLM's tool_chat_template_gemma3_pythonic.jinja
        "{{ bos_token }}{{- '<start_of_turn>user\\n' }}{{- 'If you decide to invoke any of the "
        "function(s), you MUST put it in the format of [func_name1(params_name1=params_value1, "
        "params_name2=params_value2...), func_name2(params)]\\n' }}{{- 'You SHOULD NOT include any "
        "other text in the response if you call a function. Respond with a python list of the "
        "function calls.' }}{{ '<end_of_turn>\\n' }}"
    ),
    "lfm2": (
        "{{- '<|im_start|>system\\n' }}{%- if tools %}{{- 'List of tools: <|tool_list_start|>[' }}"
        "{%- for tool in tools %}{{- tool | tojson }}{%- endfor %}{{- ']<|tool_list_end|>' }}"
        "{%- endif %}{{- '<|im_end|>\\n' }}"
    ),
    "gemma4": (
        "{{- '<|turn>system\\n' }}{%- for tool_call in message.tool_calls -%}{{- '<|tool_call>call:' "
        "+ tool_call.function.name + '{' -}}{{- '}<tool_call|>' -}}{%- endfor -%}{{- '<turn|>\\n' }}"
    ),
    "kimi_k2": (
        "{%- if tools -%}<|im_system|>tool_declare<|im_middle|>{{ tools | tojson }}<|im_end|>"
        "{%- endif -%}<|tool_calls_section_begin|>{%- for tool_call in message.tool_calls -%}"
        "<|tool_call_begin|>{{ tool_call.id }}<|tool_call_argument_begin|>{{ args }}<|tool_call_end|>"
        "{%- endfor -%}<|tool_calls_section_end|>"
    ),
    "minimax_m2": (
        "{{- ']~!b[' ~ ']~b]system' ~ '\\n' }}{{- '<minimax:tool_call>\\n<invoke name=\"tool-name-1\">"
        '\\n<parameter name="param-key-1">param-value-1</parameter>\\n</invoke>\\n</minimax:tool_call>\' }}'
        "{{- '[e~[' ~ '\\n' }}"
    ),
    "seed_oss": (
        "{{- '<seed:bos>system\\n' }}{{- '工具调用请遵循如下格式:\\n<seed:tool_call>\\n<function=example_"
        "function_name>\\n<parameter=example_parameter_1>value_1</parameter>\\n</function>\\n"
        "</seed:tool_call>' }}{{- '<seed:eos>' }}"
    ),
    "cohere": (
        "{{- '<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>' }}{{- 'write <|START_ACTION|> followed by a list "
        "of JSON-formatted actions' }}{{- '<|END_THINKING|><|START_ACTION|>[' }}{{- ']<|END_ACTION|>' }}"
        "{{- '<|END_OF_TURN_TOKEN|>' }}"
    ),
    "nemotron": (
        "{{- '<SPECIAL_10>System\\n' }}{%- if tools %}{{- '<AVAILABLE_TOOLS>' + tools|tojson + "
        "'</AVAILABLE_TOOLS>' }}{%- endif %}{{- '<TOOLCALL>' + calls|tojson + '</TOOLCALL>' }}"
        "{{- '<SPECIAL_11>Assistant\\n' }}"
    ),
    "phi4_mini": (
        "{%- if message['role'] == 'system' and 'tools' in message and message['tools'] is not none %}"
        "{{- '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] + "
        "'<|/tool|>' + '<|end|>' }}{%- endif %}{%- if add_generation_prompt %}{{- '<|assistant|>' }}"
        "{%- endif %}"
    ),
    "ernie4_5": (
        "{{- '<|begin_of_sentence|>' }}{%- for message in messages %}{%- if message.role == 'user' %}"
        "{{- 'User: ' + message.content + '\\n' }}{%- elif message.role == 'assistant' %}{{- 'Assistant: ' + "
        "message.content + '<|end_of_sentence|>' }}{%- endif %}{%- endfor %}{%- if add_generation_prompt %}"
        "{{- 'Assistant: ' }}{%- endif %}"
    ),
    "hunyuan": (
        "{{- '<|startoftext|>' + system + '<|extra_4|>' }}{{- '<|startoftext|>' + content + '<|extra_0|>' }}"
        "{{- '<tool_calls>' + calls|tojson + '</tool_calls>' }}{{- '<|eos|>' }}"
    ),
    "inkling": (
        "{{- '<|message_model|>' }}{%- for call in message.tool_calls %}{{- '<|content_invoke_tool_json|>' "
        "+ call|tojson }}{%- endfor %}{{- '<|end_message|>' }}"
    ),
    "internlm2": (  # vLLM's tool_chat_template_internlm2_tool.jinja
        "{{- '<|im_start|>system name=<|plugin|>\\n' + tools|tojson + '<|im_end|>\\n' }}"
        "{{- '<|action_start|><|plugin|>\\n' + call|tojson + '<|action_end|>' }}"
    ),
    "jamba": (
        "{{- '<|startoftext|><|bom|><|system|> ' + system + '<|eom|>' }}{%- if tools %}{{- "
        "'<tool_definitions>' + tools|tojson + '</tool_definitions>' }}{%- endif %}"
        "{{- '<|bom|><|assistant|> ' }}"
    ),
    "longcat": (
        "{{- '[Round 0] USER:' + content + ' ASSISTANT:' }}{{- '<longcat_tool_call>' + call|tojson + "
        "'</longcat_tool_call>' }}{{- '</longcat_s>' }}"
    ),
    "step3": (
        "{{- '<|BOT|>system\\n' }}{{- '<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>"
        "<steptml:invoke name=\"' + tool_call.function.name + '\">' }}{{- '<|EOT|>' }}"
        "{%- if add_generation_prompt %}{{- '<|BOT|>assistant\\n<think>\\n' }}{%- endif %}"
    ),
}


def test_every_preset_has_a_chat_template_here() -> None:
    assert sorted(TEMPLATES) == respc.presets()


@pytest.mark.parametrize("preset", sorted(TEMPLATES))
def test_chat_templates_select_their_preset(preset: str) -> None:
    found = respc.detect(TEMPLATES[preset])
    assert (found.preset, found.by, found.where) == (preset, "chat template", "<chat template>")
    assert found.evidence and all(marker in TEMPLATES[preset] for marker in found.evidence)


def test_every_marker_group_alone_selects_its_preset() -> None:
    """The index's groups are consistent: no group of one preset is outranked by another's."""
    for name in respc.presets():
        for group in preset_info(name)["detect"]["any_of"]:
            text = "{{ x }}" + "\n".join(group)
            assert respc.detect(text).preset == name, (name, group)


def test_templates_without_any_marker_are_not_guessed() -> None:
    plain_chatml = "{%- for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>' }}"
    with pytest.raises(respc.PresetNotFound, match="no preset's markers found"):
        respc.detect(plain_chatml + "{% endfor %}")
    gemma3_stock = "{{ bos_token }}{{ '<start_of_turn>' + role + '\\n' }}{{ '<end_of_turn>\\n' }}"
    with pytest.raises(respc.PresetNotFound):
        respc.detect(gemma3_stock)


# Templates whose prose or role checks share a shipped preset's markers, but whose models write
# another format (excerpts of the published templates): a pick would parse their calls as text.
LOOK_ALIKES = {
    # Apriel 1.5 / 1.6: mentions <tool_call> in prose, emits <tool_calls>[...]</tool_calls>
    "apriel": (
        "{{- 'You are provided with function signatures within <available_tools></available_tools> XML "
        "tags. ... <tool_call> ... Return the calls as a list within <tool_calls></tool_calls> XML tags:"
        '\\n<tool_calls>[{"name": <function-name>, "arguments": <args-dict>}]</tool_calls>\' }}'
    ),
    # Firefunction v2: Llama 3 headers and ' functools[' calls, no ipython environment
    "firefunction": (
        "{{- '<|start_header_id|>system<|end_header_id|>\\n' + functions + '<|eot_id|>' }}"
        "{{- '<|start_header_id|>assistant<|end_header_id|>\\n' + ' functools[' + calls + ']' }}"
    ),
    # cogito (Llama 3.2 based): checks the 'ipython' role, asks for [{"name", "arguments"}]
    "cogito": (
        "{%- if message.role == 'ipython' %}{{- '<|start_header_id|>ipython<|end_header_id|>\\n\\n' }}"
        '{%- endif %}{{- \'Respond with a JSON list [{"name": ..., "arguments": ...}]\' }}'
    ),
}


@pytest.mark.parametrize("name", sorted(LOOK_ALIKES))
def test_look_alike_templates_are_not_given_a_preset(name: str) -> None:
    with pytest.raises(respc.PresetNotFound, match="no preset's markers found"):
        respc.detect(LOOK_ALIKES[name])


def test_two_presets_matching_equally_raise_and_name_both() -> None:
    both = TEMPLATES["gpt_oss"] + TEMPLATES["minimax_m2"]  # two rank-3 formats in one template
    with pytest.raises(AmbiguousPreset, match=r"gpt_oss \('<\|channel\|>'.*minimax_m2") as raised:
        respc.detect(both)
    assert set(raised.value.candidates) == {"gpt_oss", "minimax_m2"}


def test_formats_no_preset_expresses_are_refused_not_approximated() -> None:
    dsml = TEMPLATES["deepseek_v3_1"] + "{%- set dsml_token = '｜DSML｜' -%}"
    with pytest.raises(UnsupportedFormat, match="DSML"):
        respc.detect(dsml)  # without the refusal this would pass for deepseek_v3_1
    llama4_stock = (
        '{{- "<|header_start|>system<|header_end|>\\n\\n" }}{{- \'Respond in the format {"name": '
        'function name, "parameters": dictionary of argument name and its value}.\' }}'
    )
    with pytest.raises(UnsupportedFormat, match="Llama 4 with its official chat template"):
        respc.detect(llama4_stock)
    functionary = TEMPLATES["llama3_json"] + "{{- '<function=' + tool_call.name + '>' }}"
    with pytest.raises(respc.PresetNotFound):
        respc.detect(functionary)  # Llama headers, but <function=name>{...}</function> calls


# --- model directories --------------------------------------------------------------------------------


def _model_dir(root: Path, name: str = "model", **given: Any) -> Path:
    """A model directory with a `config.json` always (detection reads what it holds)."""
    return model_dir(root, name, config=True, **given)


@pytest.mark.parametrize(
    ("template", "model_type", "repo_id", "preset"),
    [
        # config.json misleads; the chat template names the real format
        ("qwen3_5", "qwen3_moe", "Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3_5"),
        ("qwen3", "mistral", "NousResearch/Hermes-2-Pro-Mistral-7B", "qwen3"),
        ("deepseek_r1", "qwen2", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "deepseek_r1"),
        ("deepseek_r1", "llama", "deepseek-ai/DeepSeek-R1-Distill-Llama-8B", "deepseek_r1"),
        ("granite4", "granite", "ibm-granite/granite-4.0-micro", "granite4"),
        ("glm4_7", "glm4_moe", "zai-org/GLM-4.7", "glm4_7"),
        ("qwen3_5", "nemotron_h", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8", "qwen3_5"),
        ("llama3_pythonic", "llama", "meta-llama/Llama-3.2-3B-Instruct", "llama3_pythonic"),
        ("gemma3_pythonic", "gemma3", "google/gemma-3-27b-it", "gemma3_pythonic"),
    ],
)
def test_for_model_trusts_the_chat_template_over_model_type_and_repo_id(
    tmp_path: Path, template: str, model_type: str, repo_id: str, preset: str
) -> None:
    directory = _model_dir(
        tmp_path, chat_template=TEMPLATES[template], model_type=model_type, name_or_path=repo_id
    )
    found = respc.detect(directory)
    assert (found.preset, found.by, found.where) == (preset, "chat template", "tokenizer_config.json")
    parser = respc.for_model(directory)
    assert parser.module is respc.load_preset(preset) and parser.origin == f"preset {preset}"


def test_the_order_is_response_template_chat_template_repo_id_model_type_directory(tmp_path: Path) -> None:
    own = respc.load_preset("smollm3").TEMPLATE
    full = _model_dir(
        tmp_path,
        "full",
        response_template=own,
        chat_template=TEMPLATES["qwen3"],
        model_type="gpt_oss",
        name_or_path="zai-org/GLM-4.6",
    )
    assert respc.detect(full).preset is None and respc.for_model(full).origin == "tokenizer_config.json"
    by_template = _model_dir(
        tmp_path, "t", chat_template=TEMPLATES["qwen3"], model_type="gpt_oss", name_or_path="zai-org/GLM-4.6"
    )
    assert respc.detect(by_template).preset == "qwen3"
    by_repo = _model_dir(tmp_path, "r", model_type="gpt_oss", name_or_path="unsloth/GLM-4.6-GGUF")
    found = respc.detect(by_repo)
    assert (found.preset, found.by, found.where) == ("glm4_5", "repo id", "config.json _name_or_path")
    assert found.evidence == ("unsloth/GLM-4.6-GGUF", r"glm-4\.6")
    assert found.passed_over == (
        "response_template (tokenizer_config.json): none",
        "chat template: none (no chat_template.jinja, tokenizer_config.json chat_template)",
    )
    by_type = _model_dir(tmp_path, "m", model_type="gpt_oss", name_or_path="/home/me/checkpoint-500")
    found = respc.detect(by_type)
    assert (found.preset, found.by, found.evidence) == ("gpt_oss", "model_type", ("gpt_oss",))
    assert "no family pattern matches '/home/me/checkpoint-500'" in found.passed_over[2]
    by_name = _model_dir(tmp_path, "Qwen3-8B-AWQ")
    assert (respc.detect(by_name).preset, respc.detect(by_name).by) == ("qwen3", "directory name")


@pytest.mark.parametrize(
    ("model_type", "repo_id", "preset"),
    [
        # one model type, several formats: the repository id names the model
        ("mistral3", "mistralai/Mistral-Small-3.1-24B-Instruct-2503", "mistral_v3"),
        ("mistral3", "mistralai/Mistral-Small-3.2-24B-Instruct-2506", "mistral_v11"),
        ("deepseek_v3", "deepseek-ai/DeepSeek-R1-0528", "deepseek_r1"),
        ("llama", "NousResearch/Hermes-3-Llama-3.1-8B", "qwen3"),
        ("glm4_moe", "zai-org/GLM-4.7", "glm4_7"),
    ],
)
def test_the_repository_id_settles_a_model_type_shared_by_formats(
    tmp_path: Path, model_type: str, repo_id: str, preset: str
) -> None:
    found = respc.detect(_model_dir(tmp_path, model_type=model_type, name_or_path=repo_id))
    assert (found.preset, found.by) == (preset, "repo id")


def test_the_hugging_face_cache_path_names_the_repository(tmp_path: Path) -> None:
    # transformers 5 saves config.json without _name_or_path; the hub cache keeps the id in the path
    snapshot = tmp_path / "hub" / "models--zai-org--GLM-4.7" / "snapshots"
    found = respc.detect(_model_dir(snapshot, "0123abcd", model_type="glm4_moe"))
    assert (found.preset, found.by, found.where) == ("glm4_7", "repo id", "the Hugging Face cache path")
    assert found.evidence == ("zai-org/GLM-4.7",)


def test_chat_template_files_and_named_templates_are_read_as_transformers_loads_them(
    tmp_path: Path,
) -> None:
    # A separate chat_template.jinja wins over tokenizer_config.json's chat_template.
    jinja = _model_dir(tmp_path, "j", chat_template=TEMPLATES["qwen3"], jinja=TEMPLATES["gpt_oss"])
    assert (respc.detect(jinja).preset, respc.detect(jinja).where) == ("gpt_oss", "chat_template.jinja")
    # A list of named templates: the tool-use one shows the format.
    named = [
        {"name": "default", "template": "{{ messages }}"},
        {"name": "tool_use", "template": TEMPLATES["qwen3_5"]},
    ]
    assert respc.detect(_model_dir(tmp_path, "n", chat_template=named)).preset == "qwen3_5"
    extra = _model_dir(tmp_path, "x")
    (extra / "additional_chat_templates").mkdir()
    (extra / "additional_chat_templates" / "tool_use.jinja").write_text(
        TEMPLATES["kimi_k2"], encoding="utf-8"
    )
    assert respc.detect(extra).where == "additional_chat_templates/"
    # A tokenizer_config.json and a .jinja file are sources too.
    config = _model_dir(tmp_path, "c", chat_template=TEMPLATES["lfm2"]) / "tokenizer_config.json"
    assert respc.detect(config).preset == "lfm2"
    assert respc.detect(jinja / "chat_template.jinja").preset == "gpt_oss"


def test_directories_that_cannot_be_decided_say_why(tmp_path: Path) -> None:
    ambiguous = _model_dir(tmp_path, "a", model_type="glm4_moe")
    with pytest.raises(AmbiguousPreset, match="glm4_5, glm4_7"):
        respc.for_model(ambiguous)
    assert respc.for_model(ambiguous, preset="glm4_7").module is respc.load_preset("glm4_7")
    own = _model_dir(tmp_path, "own", response_template=respc.load_preset("smollm3").TEMPLATE)
    chosen = respc.for_model(own, preset="qwen3")  # an explicit preset replaces detection entirely
    assert (chosen.module, chosen.origin) == (respc.load_preset("qwen3"), "preset qwen3")
    nothing = _model_dir(tmp_path, "n", chat_template="{{ messages }}", model_type="rwkv")
    with pytest.raises(respc.ResponseTemplateNotFound) as raised:
        respc.for_model(nothing)
    message = str(raised.value)
    assert "no preset's markers found" in message and "no preset lists 'rwkv'" in message
    assert "write_response_template" in message
    dsml = _model_dir(tmp_path, "d", chat_template="{% set t = '｜DSML｜' %}", model_type="deepseek_v3")
    with pytest.raises(respc.ResponseTemplateNotFound, match="DSML"):
        respc.for_model(dsml)  # refused, not handed to deepseek_v3 by model type
    bad = _model_dir(tmp_path, "b", chat_template=[{"name": "default"}])
    with pytest.raises(respc.InputError, match=r"tokenizer_config\.json: 'chat_template' must be"):
        respc.detect(bad)
    with pytest.raises(respc.InputError, match="no such file or directory"):
        respc.detect(tmp_path / "absent")


def test_a_preset_newer_than_the_target_is_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(TargetTooOld, match=r"needs transformers 5\.24 or newer, not 5\.23"):
        respc.load_preset("lfm2", target="5.23")
    directory = _model_dir(tmp_path, chat_template=TEMPLATES["lfm2"])
    with pytest.raises(TargetTooOld, match="lfm2"):
        respc.for_model(directory, target="5.23")
    done = respc_cli("parse", "--preset", "lfm2", "--target", "5.23", "--jsonl", "/dev/null")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "5.24 or newer" in done.stderr


def test_cli_presets_detect_prints_the_choice_and_why(tmp_path: Path) -> None:
    directory = _model_dir(
        tmp_path, chat_template=TEMPLATES["qwen3_5"], model_type="qwen3_moe", name_or_path="Qwen/Qwen3-Coder"
    )
    done = respc_cli("presets", "--detect", str(directory))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "preset qwen3_5",
        "  by chat template (tokenizer_config.json): '<tool_call>', '<function=', '<parameter='",
        "  passed over response_template (tokenizer_config.json): none",
    ]
    by_id = respc_cli("presets", "--detect", "unsloth/Qwen3-14B-GGUF")
    assert by_id.stdout.splitlines() == [
        "preset qwen3",
        "  by repo id: 'unsloth/Qwen3-14B-GGUF', 'qwen3(?!-(?:embedding|reranker))'",
    ]
    ambiguous = respc_cli("presets", "--detect", "glm4_moe")
    assert ambiguous.returncode == 2 and ambiguous.stderr.count("\n") == 1
    assert "glm4_5, glm4_7" in ambiguous.stderr
    missing = respc_cli("presets", "--detect", str(tmp_path / "absent" / "Qwen3-8B"))
    assert (missing.returncode, missing.stderr) == (
        2,
        f"respc: error: {tmp_path / 'absent' / 'Qwen3-8B'}: no such file or directory\n",
    )
    both = respc_cli("presets", "qwen3", "--detect", "glm4_moe")
    assert both.returncode == 2 and "not both" in both.stderr


def test_cli_presets_shows_families_patterns_and_one_preset_in_full() -> None:
    table = respc_cli("presets")
    assert table.returncode == 0
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["preset", "families", "repo-id", "patterns", "model", "types"]
    rows = lines[1 : lines.index("")]
    assert [row.split()[0] for row in rows if not row.startswith(" ")] == respc.presets()
    assert max(map(len, lines)) <= 140
    qwen3 = "\n".join(rows[rows.index(next(r for r in rows if r.startswith("qwen3 "))) :][:3])
    for shown in ("hermes-[2-9]", "qwq", "qwen2\\.5", "qwen2_moe"):  # patterns are wrapped, not cut
        assert shown in qwen3, shown
    full = respc_cli("presets", "LFM2").stdout  # names as preset_for takes them: any case
    assert "needs transformers: 5.24 or newer" in full and "'<|tool_call_start|>'" in full
    assert "end tokens:         <|im_end|>" in full


# --- end-of-generation tokens -------------------------------------------------------------------------


def _end_token_cases() -> list:
    cases = []
    for name in respc.presets():
        for index, case in enumerate(json.loads((CASES_DIR / f"{name}.json").read_text(encoding="utf-8"))):
            cases.append(pytest.param(name, index, case, id=f"{name}-{index}"))
    return cases


def _strip_end_tokens(text: str, tokens: list[str]) -> str:
    """`text` without its trailing end tokens, and the whitespace between two of them: Qwen2.5 may end
    `<|im_end|>\n<|endoftext|>`, and both are the end (what remains after stripping only the last is
    transformers' quirk Q1: a whitespace-only region after the close overwrites the content)."""
    stripped = True
    while stripped:
        stripped = False
        for token in tokens:
            if text.endswith(token):
                text, stripped = text[: -len(token)], True
                if any(text.rstrip().endswith(other) for other in tokens):
                    text = text.rstrip()
    return text


@pytest.mark.parametrize(("name", "index", "case"), _end_token_cases())
def test_end_tokens_do_not_change_the_message(name: str, index: int, case: dict) -> None:
    """Serving stacks differ on whether the end token stays in the text (transformers' generate keeps
    it, vLLM strips it): none, each of the family's end tokens, or all of them in a row give the same
    message (or, for a malformed output, the same error) as the realistic text."""
    module = respc.load_preset(name)
    tokens = preset_info(name)["end_tokens"]
    bare = _strip_end_tokens(case["text"], tokens)
    # The failure a malformed output gives must not depend on the end token: its type, not its message
    # (which quotes the text).
    want = outcome(module.parse_response, case["text"], prefix=case["prefix"])[:2]
    stacked = ["".join(tokens), "".join(reversed(tokens))] if len(tokens) > 1 else []
    for text in [bare, *(bare + token for token in tokens), *(bare + both for both in stacked)]:
        got = outcome(module.parse_response, text, prefix=case["prefix"])[:2]
        assert got == want, f"{name}[{index}] with {text[len(bare):]!r}"
        for chunks in chunkings(text, seed=index, random_splits=2):
            streamed = outcome(_stream, module, case["prefix"], chunks)[:2]
            assert streamed == want, f"{name}[{index}] streamed {chunks!r}"


def _stream(module: Any, prefix: str | None, chunks: list[str]) -> dict:
    parser = module.ResponseParser(prefix)
    for chunk in chunks:
        parser.feed(chunk)
    return parser.finalize()[0]

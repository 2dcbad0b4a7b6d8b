"""Property: for any chat template built from expressible parts (a role header, an end-of-turn token, a
reasoning block or none, and a tool-call format with its own delimiters), `respc infer` gives a template
that parses every probe back exactly. Also: what `respc check` decides is what transformers parses."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.authoring import INDEX, NOW, chat_template
from support.compare import assert_same, oracle_parse, respc_parse

import respc
from respc.authoring import ChatTemplate, infer
from respc.authoring.probes import Rendering, probes_for, render_probe

WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "kappa", "omega", "sigma", "zeta"])


def _token(style: str, word: str) -> str:
    return {"pipes": f"<|{word}|>", "angle": f"<{word}>", "square": f"[{word.upper()}]"}[style]


@st.composite
def chat_templates(draw: st.DrawFn) -> tuple[str, str, bool]:
    """(jinja source, call format, whether it writes reasoning) of a chat template from random, distinct delimiters."""
    style = draw(st.sampled_from(["pipes", "angle", "square"]))
    words = draw(st.lists(WORDS, min_size=8, max_size=8, unique=True))
    start, sep, end, r_open, c_open, c_close, name_sep, section = (_token(style, w) for w in words)
    if style == "angle":
        r_close, c_close = f"</{words[3]}>", f"</{words[4]}>"
    else:
        r_close = _token(style, "end_" + words[3])
    newline = draw(st.sampled_from(["", "\n"]))
    reasoning = draw(st.booleans())
    calls = draw(st.sampled_from(["json", "json-array", "named-json", "xml", "python"]))
    between = draw(st.sampled_from(["", "\n"]))
    value = "{{ v if v is string else v | tojson }}"
    if calls == "json":
        body = f"{{% for c in m.tool_calls %}}{c_open}{{{{ c.function | tojson }}}}{c_close}{{{{ '{between}' if not loop.last }}}}{{% endfor %}}"
    elif calls == "json-array":
        body = f"{c_open}[{{% for c in m.tool_calls %}}{{{{ c.function | tojson }}}}{{{{ ', ' if not loop.last }}}}{{% endfor %}}]{c_close}"
    elif calls == "named-json":
        body = f"{{% for c in m.tool_calls %}}{c_open}{{{{ c.function.name }}}}{name_sep}{{{{ c.function.arguments | tojson }}}}{c_close}{{% endfor %}}"
    elif calls == "xml":
        body = (
            f"{{% for c in m.tool_calls %}}{c_open}<function={{{{ c.function.name }}}}>{between}"
            f"{{% for k, v in c.function.arguments.items() %}}<parameter={{{{ k }}}}>{between}{value}{between}"
            f"</parameter>{between}{{% endfor %}}</function>{c_close}{{% endfor %}}"
        )
    else:
        body = (
            f"{c_open}[{{% for c in m.tool_calls %}}{{{{ c.function.name }}}}({{% for k, v in "
            "c.function.arguments.items() %}{{ k }}={{ v | tojson }}{{ ', ' if not loop.last }}{% endfor %})"
            f"{{{{ ', ' if not loop.last }}}}{{% endfor %}}]{c_close}"
        )
    if draw(st.booleans()) and calls not in ("json-array", "python"):  # a section around the calls
        body = f"{section}{body}{_token(style, 'end_' + words[7])}"
    think = (
        f"{{% if m.reasoning_content %}}{r_open}{newline}{{{{ m.reasoning_content }}}}{newline}{r_close}{{% endif %}}"
        if reasoning
        else ""
    )
    calls_block = f"{{% if m.tool_calls %}}{between}{body}{between}{{% endif %}}"
    turn = f"{calls_block}{{{{ m.content }}}}" if draw(st.booleans()) else f"{{{{ m.content }}}}{calls_block}"
    source = (
        f"{{% for m in messages %}}{start}{{{{ m.role }}}}{sep}{newline}"
        f"{{% if m.role == 'assistant' %}}{think}{turn}"
        f"{{% else %}}{{{{ m.content }}}}{{% endif %}}{end}{draw(st.sampled_from(['', chr(10)]))}{{% endfor %}}"
        f"{{% if add_generation_prompt %}}{start}assistant{sep}{newline}{{% endif %}}"
    )
    return source, calls, reasoning


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chat_templates())
def test_expressible_chat_templates_are_inferred(drawn: tuple[str, str, bool]) -> None:
    source, calls, reasoning = drawn
    chat = ChatTemplate(source)
    result = infer(chat, now=NOW)
    assert result.template is not None, f"{calls}: {result.refused}\n{source}"
    assert result.report.clean and result.warnings == ()
    assert len(result.report.checked) == (12 if reasoning else 10)  # without reasoning, two are skipped


@pytest.mark.parametrize("name", sorted(name for name, entry in INDEX.items() if entry["preset"]))
def test_check_parses_as_transformers(name: str) -> None:
    """The messages check compares are transformers' too: every probe output of every real chat template,
    parsed with the family's preset by respc and by transformers 5.24."""
    chat = chat_template(name)
    template = respc.load_preset(INDEX[name]["preset"]).TEMPLATE
    for probe in probes_for(chat):
        rendering = render_probe(chat, probe, NOW)
        if isinstance(rendering, Rendering):
            args = (template, rendering.output, rendering.prompt, probe.tool_list)
            assert_same(respc_parse(*args), oracle_parse(*args), template, f"{name}: {probe.name}")

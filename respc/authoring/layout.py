"""The layout of an assistant turn, read off a chat template's renderings: where the turn starts (the start
anchor), the reasoning block and its delimiters (and an opener the generation prompt prefills), where the
content sits, and the end-of-turn tokens. `respc.authoring.infer` builds a response template from it.

Each reading compares renderings of the probes, whose values are known: the text around a value is
delimiter. Delimiters are kept as their core (surrounding whitespace dropped): a text field strips its
value, so the whitespace a template writes next to a delimiter is parsed away.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from respc.authoring.probes import TOOL_RESULT_WORD, Rendering

__all__ = ["Layout", "Refusal", "common_prefix", "common_suffix", "markup_tail", "read_layout", "turn_text"]

# A control token or tag as chat templates write them: <|im_end|>, <think>, <｜Assistant｜>, [TOOL_CALLS].
MARKUP = re.compile(r"<[^<>\n]{1,64}>|\[/?[A-Z][A-Z_]{0,31}\]")


class Refusal(ValueError):
    """The chat template's turn cannot be read into a response template; the message says why."""


def common_prefix(texts: list[str]) -> str:
    if not texts:
        return ""
    first, last = min(texts), max(texts)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def common_suffix(texts: list[str]) -> str:
    return common_prefix([t[::-1] for t in texts])[::-1]


def _whole_tokens(prefix: str) -> str:
    """`prefix` cut back so that it does not end inside a markup token (`<|im_start|>assistant\\n<` -> the
    text before the last `<`)."""
    opened = max(prefix.rfind("<"), prefix.rfind("["))
    closed = max(prefix.rfind(">"), prefix.rfind("]"))
    return prefix[:opened] if opened > closed else prefix


def _whole_tokens_back(suffix: str) -> str:
    """`suffix` cut forward so that it does not start inside a markup token."""
    closed = [i for i in (suffix.find(">"), suffix.find("]")) if i >= 0]
    opened = [i for i in (suffix.find("<"), suffix.find("[")) if i >= 0]
    if closed and (not opened or min(closed) < min(opened)):
        return suffix[min(closed) + 1 :]
    return suffix


def markup_tail(text: str) -> str | None:
    """The markup token `text` ends with (trailing whitespace aside), or None."""
    stripped = text.rstrip()
    last = None
    for match in MARKUP.finditer(stripped):
        last = match
    if last is None or last.end() != len(stripped):
        return None
    return last.group()


@dataclass
class Layout:
    """What `read_layout` found, and the evidence for each piece (lines for people)."""

    anchors: list[str]
    turns: dict[str, str]  # probe name -> the turn text: the prompt after the last anchor, then the output
    end_tokens: list[str]
    reasoning: tuple[str, str] | None  # (open, close); open "" means the reasoning opens at the turn start
    content_open: str | None  # None: content is the implicit field
    swallowed: list[str]  # text the implicit content's close takes so that it lands nowhere
    evidence: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def turn_text(prompt: str, output: str, anchors: list[str]) -> str:
    """The text the parser sees: the prompt past the end of the last anchor match (transformers truncates
    the prefix so), then the output."""
    pattern = re.compile("|".join(re.escape(a) for a in sorted(anchors, key=len, reverse=True)), re.DOTALL)
    end = None
    for match in pattern.finditer(prompt):
        end = match.end()
    return (prompt if end is None else prompt[end:]) + output


def _value_of(rendering: Rendering, key: str) -> str | None:
    value = rendering.probe.turn.get(key)
    return value if isinstance(value, str) and value else None


def read_layout(renderings: list[Rendering], generation_prompts: dict[str, str], eos: str | None) -> Layout:
    """The turn layout of the renderings; `generation_prompts` maps a probe name to what the template
    appends for `add_generation_prompt` ("" when it appends nothing); `eos` is the tokenizer's eos token."""
    by_name = {r.probe.name: r for r in renderings}
    evidence: list[str] = []
    anchor = _anchor(renderings, generation_prompts, evidence)
    close = _reasoning_close(renderings, anchor)
    warnings: list[str] = []
    if close is None:
        close = _unrendered_close(renderings, anchor, warnings)
    anchor, opener = _prefilled_opener(anchor, close, evidence)
    anchors = [anchor]
    after_tool = [r for r in renderings if r.probe.name.startswith("after_tool_result")]
    for r in after_tool:
        extra = _after_tool_anchor(r, anchors)
        if extra is not None and extra not in anchors:
            anchors.append(extra)
            evidence.append(f"start anchor after a tool result: {extra!r} (the prompt ends with it)")
    turns = {name: turn_text(r.prompt, r.output, anchors) for name, r in by_name.items()}
    end_tokens = _end_tokens(renderings, turns, eos, evidence)
    reasoning, content_open, swallowed, more = _reasoning_and_content(
        renderings, turns, opener, close, end_tokens, evidence
    )
    return Layout(anchors, turns, end_tokens, reasoning, content_open, swallowed, evidence, warnings + more)


def _anchor(renderings: list[Rendering], generation_prompts: dict[str, str], evidence: list[str]) -> str:
    """The generation prompt's part common to every variant (switches on and off), cut at a token edge; or,
    where the template appends no generation prompt, the token the prompt ends with."""
    fresh = [r for r in renderings if not r.probe.name.startswith("after_tool_result")]
    prompts = [generation_prompts.get(r.probe.name, "") for r in fresh]
    header = _whole_tokens(common_prefix(prompts)) if prompts and all(prompts) else ""
    if header.strip():
        evidence.append(f"start anchor: {header!r} (the generation prompt, common to every probe)")
        return header
    tails = {markup_tail(r.prompt) for r in fresh}
    if len(tails) == 1 and None not in tails:
        tail = tails.pop()
        evidence.append(
            f"start anchor: {tail!r} (the chat template appends no generation prompt; every prompt ends with it)"
        )
        return tail
    raise Refusal(
        "no start anchor: the generation prompt is empty or differs between probes, and the prompts do not "
        "end with one marker"
    )


def _reasoning_close(renderings: list[Rendering], anchor: str) -> str | None:
    """The close of the reasoning block: the markup written right after a rendered reasoning value."""
    closes = set()
    for r in renderings:
        reasoning = _value_of(r, "reasoning_content")
        if reasoning is None:
            continue
        text = turn_text(r.prompt, r.output, [anchor])
        at = text.find(reasoning)
        if at < 0:
            continue
        after = text[at + len(reasoning) :]
        token = MARKUP.match(after.lstrip())
        if token is not None:
            closes.add(token.group())
    return closes.pop() if len(closes) == 1 else None


def _unrendered_close(renderings: list[Rendering], anchor: str, warnings: list[str]) -> str | None:
    """Where the chat template never writes reasoning but the generation prompt ends with an opener
    (`<think>`) whose close (`</think>`) starts some turn: that close."""
    tail = markup_tail(anchor)
    if tail is None:
        return None
    for r in renderings:
        token = MARKUP.match(turn_text(r.prompt, r.output, [anchor]).lstrip())
        if token is not None and "/" in token.group() and _pairs(tail, token.group()):
            warnings.append(
                f"the chat template never writes reasoning_content; the generation prompt ends with {tail!r} and "
                f"turns start with {token.group()!r}, so those delimit the reasoning field, not checked with "
                "reasoning in it"
            )
            return token.group()
    return None


def _pairs(opener: str, close: str) -> bool:
    """Whether `opener` and `close` look like one tag pair (<think> and </think>, [THINK] and [/THINK])."""
    letters = re.sub(r"[^a-z]", "", opener.lower())
    return bool(letters) and letters in re.sub(r"[^a-z]", "", close.lower())


def _prefilled_opener(anchor: str, close: str | None, evidence: list[str]) -> tuple[str, str | None]:
    """(anchor, opener): a reasoning opener that the generation prompt already writes (`<think>\\n`) moves
    out of the anchor, so that the parser reads it from the prefix and opens the reasoning."""
    tail = markup_tail(anchor)
    if close is None or tail is None or tail == close or not _pairs(tail, close):
        return anchor, None
    cut = anchor.rstrip()
    cut = cut[: len(cut) - len(tail)]
    if not cut.strip():
        return anchor, None
    evidence.append(
        f"reasoning opener {tail!r} is prefilled by the generation prompt: the start anchor stops before it"
    )
    return cut, tail


def _after_tool_anchor(rendering: Rendering, anchors: list[str]) -> str | None:
    """A second anchor where the prompt after a tool result does not end with a generation prompt (the
    turn goes on after the tool's output): the token that prompt ends with."""
    remainder = turn_text(rendering.prompt, "", anchors)
    if TOOL_RESULT_WORD not in remainder:  # the word, not the JSON: templates re-encode the result
        return None
    return markup_tail(rendering.prompt)


def _end_tokens(
    renderings: list[Rendering], turns: dict[str, str], eos: str | None, evidence: list[str]
) -> list[str]:
    """What the template writes after the last value of a turn (the markup the output ends with), and the
    tokenizer's eos token."""
    found: list[str] = []
    for r in renderings:
        values = [v for v in (_value_of(r, "content"), _value_of(r, "reasoning_content")) if v]
        if not values or r.probe.turn.get("tool_calls"):
            continue
        output = r.output
        last = max(output.rfind(v) + len(v) for v in values)
        tail = output[last:].strip()
        if tail and tail not in found:
            found.append(tail)
    tokens = list(found)
    if eos and eos not in tokens and not any(eos in t for t in tokens):
        tokens.append(eos)
    if tokens:
        evidence.append(f"end of turn: {', '.join(map(repr, tokens))}")
    else:
        evidence.append("end of turn: nothing after the content (the content runs to the end of the output)")
    return tokens


def _reasoning_and_content(
    renderings: list[Rendering],
    turns: dict[str, str],
    opener: str | None,
    close: str | None,
    end_tokens: list[str],
    evidence: list[str],
) -> tuple[tuple[str, str] | None, str | None, list[str], list[str]]:
    """The reasoning delimiters, the content opener (None: implicit content), and the lead texts the
    implicit content's close must swallow."""
    warnings: list[str] = []
    leads: dict[str, str] = {}  # probe -> the text before the content (content-only probes)
    reasoning_opens: set[str] = set()
    for r in renderings:
        turn = turns[r.probe.name]
        content = _value_of(r, "content")
        reasoning = _value_of(r, "reasoning_content")
        if reasoning is not None and reasoning in turn:
            reasoning_opens.add(turn[: turn.find(reasoning)].strip())
        if (
            content is not None
            and reasoning is None
            and not r.probe.turn.get("tool_calls")
            and content in turn
        ):
            leads[r.probe.name] = turn[: turn.find(content)]
    reasoning: tuple[str, str] | None = None
    if close is not None:
        opens = {_whole_tokens_back(o) if o else o for o in reasoning_opens}
        if opener is not None:
            opens = {o for o in opens if o} | {opener}
        if len(opens) == 1:
            reasoning = (opens.pop().strip(), close)
            shown = repr(reasoning[0]) if reasoning[0] else "the start of the turn"
            evidence.append(f"reasoning: from {shown} to {close!r}")
        else:
            raise Refusal(f"the reasoning is written after different openers: {sorted(opens)}")
    else:
        pair = _empty_pair(leads.values())
        if pair is not None:
            reasoning = pair
            evidence.append(f"reasoning: {pair[0]!r} ... {pair[1]!r}, seen only empty")
            warnings.append(
                f"the chat template never writes reasoning_content, only an empty {pair[0]}{pair[1]}: the "
                "reasoning field's delimiters are read from that block, not checked with reasoning in it"
            )
        elif any(_value_of(r, "reasoning_content") for r in renderings) or not any(
            r.probe.name.startswith("reasoning") for r in renderings
        ):
            evidence.append("reasoning: not written by the chat template (no reasoning field)")
    content_open, swallowed = _content(leads, reasoning, evidence)
    return reasoning, content_open, swallowed, warnings


def _empty_pair(leads: object) -> tuple[str, str] | None:
    """A tag pair with nothing but whitespace between (`<think></think>`) that a content-only turn starts
    with: the reasoning block, written empty."""
    for lead in leads:  # type: ignore[attr-defined]
        match = re.fullmatch(rf"\s*({MARKUP.pattern})\s*({MARKUP.pattern})\s*", lead)
        if match is not None and _pairs(match.group(1), match.group(2)):
            return match.group(1), match.group(2)
    return None


def _content(
    leads: dict[str, str], reasoning: tuple[str, str] | None, evidence: list[str]
) -> tuple[str | None, list[str]]:
    """(content opener or None for implicit content, lead texts to swallow)."""
    rests, closes_alone = [], []
    for lead in leads.values():
        rest = lead.strip()
        if reasoning is not None:
            # an empty reasoning block ahead of the content (<think>\n\n</think>), or its close alone
            # where the generation prompt wrote the opener
            opened, closed = reasoning
            for block in ([opened, closed], [closed]):
                match = re.match(r"\s*".join(re.escape(part) for part in block if part), rest)
                if match is not None:
                    rest = rest[match.end() :].strip()
                    if block == [closed] and opened:  # a close with no open ahead lands nowhere else
                        closes_alone.append(closed)
                    break
        rests.append(rest)
    distinct = set(rests)
    if closes_alone:
        evidence.append(
            f"the reasoning close {closes_alone[0]!r} starts some turns without its opener (the generation "
            "prompt wrote it): the content's close takes it"
        )
    if not distinct or distinct == {""}:
        evidence.append("content: the implicit field (nothing opens it)")
        return None, sorted(set(closes_alone))
    if len(distinct) == 1 and "" not in distinct:
        opener = distinct.pop()
        evidence.append(f"content: opens on {opener!r}")
        return opener, []
    swallowed = sorted({rest for rest in distinct if rest} | set(closes_alone))
    evidence.append(
        f"content: the implicit field; {', '.join(map(repr, swallowed))} written before it in some turns is "
        "dropped (the content's close takes it)"
    )
    return None, swallowed

"""`respc regen`: rebuild `respc/generated/` from the shipped template sources in `respc/presets/`.

Each `presets/<name>.json` becomes `generated/<name>.py`; `presets/index.json` (which models each
preset covers) becomes `generated/_registry.py`. `--check` regenerates in memory and reports stale,
missing and orphaned files without writing anything.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from respc._io import InputError, read_json, read_text, write_atomic
from respc._literal import py_literal
from respc.compiler import generate_source
from respc.compiler.format import format_source
from respc.runtime.targets import SUPPORTED_TARGETS
from respc.spec import TemplateError

__all__ = ["PACKAGE", "Drift", "expected_outputs", "preset_table", "regen", "update_readme"]

PACKAGE = Path(__file__).resolve().parent.parent
INDEX_KEYS = (
    "families",
    "model_types",
    "repo_ids",
    "repo_patterns",
    "derived_repo_patterns",
    "detect",
    "end_tokens",
    "min_target",
    "special_tokens",
    "prefill",
    "confirmed",
    "notes",
    "known_findings",
)
KEEP = {"__init__.py"}  # hand-written files in generated/


@dataclass(frozen=True)
class Drift:
    path: Path
    kind: str  # "stale", "missing" or "orphaned"


def _load_json(path: Path) -> Any:
    """A shipped JSON file, named in errors by its path inside the package."""
    try:
        return read_json(path)
    except InputError as error:
        raise InputError(str(error).replace(str(path), _shown(path), 1)) from None


def _shown(path: Path) -> str:
    return path.relative_to(PACKAGE.parent).as_posix() if path.is_relative_to(PACKAGE.parent) else str(path)


def _index(presets: Path, names: list[str]) -> dict[str, Any]:
    index = _load_json(presets / "index.json")
    entries = {name: entry for name, entry in index.items() if not name.startswith("_")}
    for name in names:
        if name not in entries:
            raise InputError(f"{_shown(presets / 'index.json')}: no entry for preset '{name}'")
        missing = [key for key in INDEX_KEYS if key not in entries[name]]
        if missing:
            raise InputError(f"{_shown(presets / 'index.json')}: preset '{name}' lacks {missing}")
        problem = _entry_problem(entries[name])
        if problem:
            raise InputError(f"{_shown(presets / 'index.json')}: preset '{name}': {problem}")
    unknown = sorted(set(entries) - set(names))
    if unknown:
        raise InputError(f"{_shown(presets / 'index.json')}: entries without a template: {unknown}")
    not_expressible = index.get("_not_expressible", {})
    unsupported = index.get("_unsupported", {})
    for family, evidence in unsupported.items():
        where = f"{_shown(presets / 'index.json')}: _unsupported {family!r}"
        if family not in not_expressible:
            raise InputError(f"{where}: not a key of _not_expressible (which gives the reason to refuse it)")
        if not isinstance(evidence, dict) or set(evidence) != {"chat_template", "repo_patterns"}:
            raise InputError(f"{where}: must be an object with 'chat_template' and 'repo_patterns'")
        detect = {"rank": 1, "any_of": evidence["chat_template"], "none_of": []}
        problem = (_detect_problem(detect) if evidence["chat_template"] else None) or _patterns_problem(
            evidence["repo_patterns"], "repo_patterns"
        )
        if problem:
            raise InputError(f"{where}: {problem}")
    return {name: {key: entries[name][key] for key in INDEX_KEYS} for name in sorted(names)} | {
        "_not_expressible": not_expressible,
        "_unsupported": unsupported,
    }


def _entry_problem(entry: dict[str, Any]) -> str | None:
    """What is wrong with the detection keys of an index entry (the registry trusts their shape)."""
    for key in ("model_types", "repo_ids", "repo_patterns", "derived_repo_patterns", "end_tokens"):
        if not isinstance(entry[key], list) or not all(isinstance(x, str) and x for x in entry[key]):
            return f"'{key}' must be a list of non-empty strings"
    if any(t != t.lower() for t in entry["model_types"]):
        return "'model_types' are lower-case, as config.json writes them"
    problem = _patterns_problem(entry["repo_patterns"], "repo_patterns") or _patterns_problem(
        entry["derived_repo_patterns"], "derived_repo_patterns"
    )
    problem = problem or _detect_problem(entry["detect"])
    if problem:
        return problem
    problem = _known_findings_problem(entry["known_findings"])
    if problem:
        return problem
    if entry["min_target"] not in SUPPORTED_TARGETS:
        return f"'min_target' must be one of {list(SUPPORTED_TARGETS)}, not {entry['min_target']!r}"
    return None


def _known_findings_problem(known: Any) -> str | None:
    """`known_findings`: what `respc check` finds against a model's chat template, explained (a list of
    {model, probes, field, cause, why}; probes and field are fnmatch patterns)."""
    keys = {"model", "probes", "field", "cause", "why"}
    if not isinstance(known, list) or not all(
        isinstance(k, dict) and set(k) == keys and all(isinstance(v, str) and v for v in k.values())
        for k in known
    ):
        return "'known_findings' must be a list of objects with non-empty strings at " + ", ".join(
            sorted(keys)
        )
    return None


def _patterns_problem(patterns: Any, key: str) -> str | None:
    if not isinstance(patterns, list) or not all(isinstance(p, str) and p for p in patterns):
        return f"'{key}' must be a list of non-empty strings"
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as error:
            return f"'{key}': {pattern!r} is not a regular expression ({error})"
    return None


def _detect_problem(detect: Any) -> str | None:
    if not isinstance(detect, dict) or set(detect) != {"rank", "any_of", "none_of"}:
        return "'detect' must be an object with exactly 'rank', 'any_of' and 'none_of'"
    if not isinstance(detect["rank"], int) or isinstance(detect["rank"], bool) or detect["rank"] < 1:
        return "'detect.rank' must be a positive integer"
    groups = detect["any_of"]
    if not isinstance(groups, list) or not all(isinstance(g, list) and g for g in groups):
        return "'detect.any_of' must be a list of non-empty lists of markers"
    markers = [m for g in groups for m in g] + (
        detect["none_of"] if isinstance(detect["none_of"], list) else [0]
    )
    if not all(isinstance(m, str) and m for m in markers):
        return "'detect' markers must be non-empty strings"
    return None


def _registry_source(index: dict[str, Any]) -> str:
    presets = {name: entry for name, entry in index.items() if not name.startswith("_")}
    text = (
        "# @generated by respc regen from respc/presets/index.json; do not edit.\n"
        '"""Which models each shipped preset covers (read by `respc.presets`)."""\n\n'
        f"PRESETS = {py_literal(presets)}\n\n"
        f"NOT_EXPRESSIBLE = {py_literal(index['_not_expressible'])}\n\n"
        "# How detection recognises formats in NOT_EXPRESSIBLE, to refuse them with the reason.\n"
        f"UNSUPPORTED = {py_literal(index['_unsupported'])}\n"
    )
    return format_source(text)


def preset_names(package: Path = PACKAGE) -> list[str]:
    """The shipped presets: every `presets/<name>.json` but the index."""
    return sorted(p.stem for p in (package / "presets").glob("*.json") if p.name != "index.json")


def expected_outputs(
    package: Path = PACKAGE, progress: Callable[[str], None] | None = None
) -> dict[Path, str]:
    """Every file `generated/` should hold, by path, rendered in memory."""
    presets = package / "presets"
    generated = package / "generated"
    names = preset_names(package)
    outputs: dict[Path, str] = {}
    for name in names:
        if progress:
            progress(name)
        template = _load_json(presets / f"{name}.json")
        try:
            outputs[generated / f"{name}.py"] = generate_source(
                template, name=f"respc/presets/{name}.json", regenerate="respc regen"
            )
        except TemplateError as error:
            raise TemplateError(f"{_shown(presets / f'{name}.json')}: {error}") from error
    outputs[generated / "_registry.py"] = _registry_source(_index(presets, names))
    return outputs


def regen(
    check: bool,
    package: Path = PACKAGE,
    progress: Callable[[str], None] | None = None,
    outputs: dict[Path, str] | None = None,
) -> list[Drift]:
    """Rebuild `generated/` (or, with `check`, only compare); returns what differed.

    `outputs` are the files `expected_outputs` rendered, when the caller has them already.
    """
    if outputs is None:
        outputs = expected_outputs(package, progress)
    generated = package / "generated"
    drift = []
    for path, text in outputs.items():
        try:
            current = read_text(path) if path.exists() else None
        except InputError:
            current = ""  # unreadable or not UTF-8: rewritten like any stale file
        if current != text:
            drift.append(Drift(path, "missing" if current is None else "stale"))
            if not check:
                write_atomic(path, text)
    for path in sorted(generated.glob("*.py")):
        if path not in outputs and path.name not in KEEP:
            drift.append(Drift(path, "orphaned"))
            if not check:
                path.unlink()
    return drift


PRESET_TABLE_START, PRESET_TABLE_END = "<!-- preset-table:start -->", "<!-- preset-table:end -->"


def preset_table(package: Path = PACKAGE) -> str:
    """The preset table of docs/presets.md, rendered from `presets/index.json`."""
    index = _load_json(package / "presets" / "index.json")
    index.setdefault("_not_expressible", {})
    lines = [
        "| preset | families | found by: chat-template markers; repo-id patterns; model types "
        "| end tokens | keep special tokens | prefill in the assistant turn | needs |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, info in sorted(index.items()):
        if name.startswith("_"):
            continue
        markers = " or ".join(" + ".join(_code(m) for m in group) for group in info["detect"]["any_of"])
        patterns = ", ".join(_code(p) for p in [*info["derived_repo_patterns"], *info["repo_patterns"]])
        types = ", ".join(_code(t) for t in info["model_types"])
        found_by = "; ".join(part or "—" for part in (markers, patterns, types))
        cells = [
            f"`{name}`",
            _cell(info["families"]),
            found_by,
            ", ".join(_code(t) for t in info["end_tokens"]),
            "yes" if info["special_tokens"] else "no",
            _cell(info["prefill"]) if info["prefill"] else "—",
            info["min_target"],
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Not expressible in the template language (not shipped, not approximated):", ""]
    lines += [
        f"- **{family}**: {reason}" for family, reason in sorted(index.get("_not_expressible", {}).items())
    ]
    return "\n".join(lines) + "\n"


def _code(text: str) -> str:
    """`text` as inline code in a table cell: a pipe is escaped, backticks get a longer fence."""
    text = text.replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    return f"{fence} {text} {fence}" if fence == "``" else f"`{text}`"


def _cell(text: str) -> str:
    """Prose for a markdown table cell: no pipes or line breaks, special tokens kept readable."""
    return text.replace("|", "\\|").replace("\n", "\\n").replace("<", "&lt;")


def update_readme(readme: Path, package: Path = PACKAGE, check: bool = False) -> bool:
    """Replace the preset table between its markers in the Markdown file `readme` (docs/presets.md),
    atomically; returns whether it changed."""
    text = read_text(readme)
    start, end = text.find(PRESET_TABLE_START), text.find(PRESET_TABLE_END)
    if start < 0 or end < start:
        raise InputError(f"{readme}: no {PRESET_TABLE_START} ... {PRESET_TABLE_END} section to update")
    fresh = text[: start + len(PRESET_TABLE_START)] + "\n" + preset_table(package) + text[end:]
    if fresh != text and not check:
        write_atomic(readme, fresh)
    return fresh != text

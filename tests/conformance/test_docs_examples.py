"""The worked examples of docs/*.md, run on transformers 5.24 and 5.23 and on respc for both targets.

A ```json block of a document is the `template` of the ```python blocks after it (one the text says is
"called `NAME`" is also bound to NAME). A statement followed by result comments is evaluated and compared:

    # → VALUE          every engine
    # 5.24 → VALUE     transformers 5.24 and respc's 5.24 target (and likewise 5.23)
    # respc → VALUE    respc, both targets, where it departs from transformers

VALUE is a Python literal (continued on the next `#` lines), `raises Type: message` or `hangs`. A block
starting with `import respc` runs on respc's 5.24 target only, one starting with `# 5.24 only` on 5.24.
Code in other fences (```py, ```bash) is shown, not run.
Each engine runs in a process of its own (transformers 5.23 from the oracle folder, first on sys.path).

    python tests/conformance/test_docs_examples.py fill docs/quirks.md   # rewrite results from transformers
"""

from __future__ import annotations

import ast
import copy
import functools
import json
import logging
import math
import os
import pprint
import re
import signal
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))
ENGINES = ("5.24", "5.23", "respc 5.24", "respc 5.23")
RESULT = re.compile(r"^# (?:(5\.2[34]|respc) )?→ ?(.*)$")
HANG_SECONDS, CALL_SECONDS = 3, 300  # a statement expected to hang gets a short alarm; a compile can be slow


@dataclass
class Example:
    """One statement of a python block and the result comments that follow it."""

    line: int  # 0-based index of the first result comment in the document
    end: int  # index after the last result comment
    setup: str  # the code before the statement, since the previous example of the block
    results: list[tuple[str, str]]  # (tag, text): tag is "", "5.24", "5.23" or "respc"

    def expected(self, engine: str) -> str | None:
        by_tag = dict(self.results)
        release = engine.split()[-1]
        if engine.startswith("respc") and "respc" in by_tag:
            return by_tag["respc"]
        return by_tag.get(release, by_tag.get(""))


@dataclass
class Block:
    """A python block: where it sits, the template it sees and its examples."""

    engines: tuple[str, ...]
    template: Any
    named: dict[str, Any]
    examples: list[Example]
    tail: str  # code after the last example


def parse(text: str) -> list[Block]:
    lines = text.split("\n")
    blocks: list[Block] = []
    template: Any = None
    named: dict[str, Any] = {}
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(json|python)$", lines[i])
        if not fence:
            i += 1
            continue
        start = i + 1
        i = start
        while not lines[i].startswith("```"):
            i += 1
        body = lines[start:i]
        if fence.group(1) == "json":
            template = json.loads("\n".join(body))
            for name in re.findall(r"called `(\w+)`", " ".join(lines[max(0, start - 5) : start - 1])):
                named[name] = template
            continue
        engines = ENGINES
        if body and body[0].startswith("import respc"):
            engines = ("respc 5.24",)
        elif body and body[0].startswith("# 5.24 only"):
            engines = ("5.24", "respc 5.24")
        examples, code, j = [], [], 0
        while j < len(body):
            if not RESULT.match(body[j]):
                code.append(body[j])
                j += 1
                continue
            first, results, width = j, [], 0
            while j < len(body) and (RESULT.match(body[j]) or body[j].startswith("#   ")):
                if match := RESULT.match(body[j]):
                    results.append([match.group(1) or "", match.group(2)])
                    width = len(body[j]) - len(match.group(2))
                else:  # a continuation line, indented under its result
                    rest = body[j][1:]
                    results[-1][1] += "\n" + rest[min(width - 1, len(rest) - len(rest.lstrip(" "))) :]
                j += 1
            examples.append(Example(start + first, start + j, "\n".join(code), [tuple(r) for r in results]))
            code = []
        blocks.append(Block(engines, template, dict(named), examples, "\n".join(code)))
    return blocks


# -- the worker: one engine, one document ------------------------------------------------------------


class Hang(BaseException):
    """The alarm: a BaseException, so that no `except Exception` in the code under test swallows it."""


def outcome(run: Any) -> list:
    try:
        value = run()
    except Hang:
        return ["hang"]
    except Exception as error:  # what the document shows as `raises Type: message`
        return ["raise", type(error).__name__, [k.__name__ for k in type(error).__mro__], str(error)]
    return ["ok", repr(value), pprint.pformat(value, width=96, sort_dicts=False)]


def evaluate(code: str, scope: dict, filename: str) -> Any:
    """Run `code` in `scope` and return the value of its last statement, an expression."""
    *setup, last = ast.parse(code).body
    exec(compile(ast.Module(setup, []), filename, "exec"), scope)
    return eval(compile(ast.Expression(last.value), filename, "eval"), scope)


def run_engine(engine: str, path: Path) -> dict[str, list]:
    logging.disable(logging.CRITICAL)
    warnings.filterwarnings("ignore")
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(Hang()))
    if engine.startswith("respc"):
        import respc

        target = engine.split()[-1]
        api = {
            "parse_response": functools.partial(respc.parse_response, target=target),
            "ResponseParser": functools.partial(respc.ResponseParser, target=target),
            "respc": respc,
        }
    else:
        from transformers.utils.chat_parsing import ResponseParser, parse_response

        api = {"parse_response": parse_response, "ResponseParser": ResponseParser}
    results: dict[str, list] = {}
    for block in parse(path.read_text(encoding="utf-8")):
        if engine not in block.engines:
            continue
        scope = {**api, **copy.deepcopy(block.named), "template": copy.deepcopy(block.template), "json": json}
        for example in block.examples:
            signal.alarm(HANG_SECONDS if example.expected(engine) == "hangs" else CALL_SECONDS)
            try:
                results[str(example.line)] = outcome(
                    functools.partial(evaluate, example.setup, scope, str(path))
                )
            finally:
                signal.alarm(0)
        if block.tail.strip():
            exec(block.tail, scope)
    return results


# -- comparing -----------------------------------------------------------------------------------------


def rendered(result: list | None) -> str:
    if result is None:
        return "<not run>"
    if result[0] == "ok":
        return result[2]
    return "hangs" if result[0] == "hang" else f"raises {result[1]}: {result[3]}"


def matches(text: str, result: list | None) -> bool:
    """Whether a result comment describes `result` (an exception matches its subclasses too)."""
    if result is None:
        return False
    text = text.strip()
    if text == "hangs" or result[0] == "hang":
        return text == "hangs" and result[0] == "hang"
    if text.startswith("raises "):
        kind, _, message = text[len("raises ") :].partition(": ")
        return result[0] == "raise" and kind in result[2] and message == result[3]
    try:
        return result[0] == "ok" and repr(eval(text, {"nan": math.nan, "inf": math.inf})) == result[1]
    except SyntaxError:
        return False


def run_all(path: Path) -> dict[str, dict[str, list]]:
    """Every engine's results for `path`, the engines running side by side."""
    sys.path.insert(0, str(ROOT / "tests"))  # (also run as a script: `fill`)
    from support.oracles import install

    pythonpath = os.environ.get("PYTHONPATH", "")
    paths = {"5.23": f"{install('5.23')}{os.pathsep}{pythonpath}"}
    procs = {
        engine: subprocess.Popen(
            [sys.executable, __file__, "run", engine, str(path)],
            env={**os.environ, "PYTHONPATH": paths.get(engine, pythonpath)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for engine in ENGINES
    }
    out = {}
    for engine, proc in procs.items():
        stdout, stderr = proc.communicate()
        assert proc.returncode == 0, f"{engine} on {path.name} failed:\n{stderr}"
        out[engine] = json.loads(stdout.splitlines()[-1])
    return out


def mismatches(path: Path) -> list[str]:
    blocks = parse(path.read_text(encoding="utf-8"))
    if not blocks:
        return []  # nothing to run (its code is shown in other fences: ```py, ```bash)
    results = run_all(path)
    found = []
    for block in blocks:
        for example in block.examples:
            for engine in block.engines:
                expected, got = example.expected(engine), results[engine].get(str(example.line))
                if expected is None or not matches(expected, got):
                    found.append(
                        f"{path.name}:{example.line + 1} ({engine}): {expected!r}, got {rendered(got)}"
                    )
    return found


def fill(path: Path) -> None:
    """Rewrite the result comments of `path` from transformers (keeping `# respc` lines)."""
    results = run_all(path)
    lines = path.read_text(encoding="utf-8").split("\n")
    edits = []
    for block in parse("\n".join(lines)):
        for example in block.examples:
            got = {engine: rendered(results[engine].get(str(example.line))) for engine in block.engines}
            releases = [engine for engine in block.engines if not engine.startswith("respc")]
            if len(releases) < 2 or got["5.24"] == got["5.23"]:
                new = [("", got[releases[0]] if releases else got["respc 5.24"])]
            else:
                new = [("5.24", got["5.24"]), ("5.23", got["5.23"])]
            new += [(tag, text) for tag, text in example.results if tag == "respc"]
            comment = []
            for tag, text in new:
                head = f"# {tag} → " if tag else "# → "
                first, *rest = text.split("\n")
                comment += [head + first] + ["#" + " " * (len(head) - 1) + line for line in rest]
            edits.append((example.line, example.end, comment))
    for start, end, comment in sorted(edits, reverse=True):
        lines[start:end] = comment
    path.write_text("\n".join(lines), encoding="utf-8")


def test_docs_examples() -> None:
    assert DOCS, "docs/*.md not found"
    found = [problem for path in DOCS for problem in mismatches(path)]
    assert not found, "\n".join(found)


if __name__ == "__main__":
    if sys.argv[1] == "run":
        print(json.dumps(run_engine(sys.argv[2], Path(sys.argv[3]))))
    elif sys.argv[1] == "fill":
        for name in sys.argv[2:]:
            fill(Path(name).resolve())
        sys.exit("\n".join(m for name in sys.argv[2:] for m in mismatches(Path(name).resolve())) or None)

"""The shape of the package: no import cycles (function-level imports included), dependencies that point
down (runtime <- compiler <- cli), and a runtime that works without the compiler extra installed."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "respc"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if "generated" in path.relative_to(PACKAGE).parts:
            continue  # generated modules import only the runtime: tests/compiler/test_generated_source.py
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts).removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every respc module `name` imports, at any depth of its code (function-level imports too).
    `from package import name` counts as importing the submodule when `name` is one, else the package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module
            for alias in node.names:
                found.add(f"{module}.{alias.name}" if f"{module}.{alias.name}" in MODULES else module)
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(GRAPH[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles() -> None:
    assert _cycles() == []


def test_the_cycle_check_finds_a_cycle() -> None:
    GRAPH["respc.runtime.scan"].add("respc.runtime.parser")
    try:
        assert ["respc.runtime.parser", "respc.runtime.scan"] in _cycles()
    finally:
        GRAPH["respc.runtime.scan"].discard("respc.runtime.parser")


def _within(prefixes: tuple[str, ...], module: str) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


SHARED = ("respc._hash", "respc._literal", "respc._io", "respc._version", "respc._extras")
# What each part may import of respc (besides itself). Everything but the compiler reaches the compiler
# through one door, respc._compile; nothing but the entry point imports the command line.
ALLOWED = {
    "respc.runtime": (),
    "respc.spec": ("respc.runtime", *SHARED),
    "respc.compiler": ("respc.runtime", "respc.spec", *SHARED),
    "respc.serving": ("respc.runtime", "respc.spec", *SHARED),
    "respc.registry": ("respc.runtime", "respc.generated", "respc._compile", *SHARED),
    "respc.authoring": ("respc.runtime", "respc.spec", "respc.registry", "respc._compile", *SHARED),
    # for_model(..., infer=True) infers through respc.authoring, imported only then
    "respc.model": (
        "respc.runtime",
        "respc.spec",
        "respc.registry",
        "respc._compile",
        "respc.authoring",
        *SHARED,
    ),
    "respc.batch": (
        "respc.runtime",
        "respc.spec",
        "respc.registry",
        "respc.model",
        "respc.serving",
        "respc._compile",
        *SHARED,
    ),
}


def test_dependencies_point_down() -> None:
    """Each part imports only the parts below it (ALLOWED); the shared helpers import only each other."""
    for module, imported in GRAPH.items():
        for other in imported:
            for part, allowed in ALLOWED.items():
                if _within((part,), module):
                    assert _within((part, *allowed), other), f"{module} imports {other}"
            if _within(("respc.compiler",), other):
                assert _within(("respc.compiler", "respc._compile"), module), f"{module} imports {other}"
            if _within(("respc.cli",), other):
                assert _within(("respc.cli", "respc.__main__"), module), f"{module} imports {other}"
            if module in SHARED:
                assert other in SHARED, f"{module} imports {other}"


def test_the_layering_check_finds_a_forbidden_import() -> None:
    GRAPH["respc.serving.deltas"].add("respc.compiler.plan")
    try:
        with pytest.raises(AssertionError, match=r"respc\.serving\.deltas imports respc\.compiler\.plan"):
            test_dependencies_point_down()
    finally:
        GRAPH["respc.serving.deltas"].discard("respc.compiler.plan")


def test_hashing_and_loading_a_parser_need_no_compiler() -> None:
    """A runtime-only install (no jinja2, no black): hashing any template, loading presets, parsing and
    validating templates (`respc.TemplateError`)."""
    script = textwrap.dedent("""
        import sys
        for blocked in ("jinja2", "black"):
            sys.modules[blocked] = None  # `import jinja2` now raises ImportError, as on such an install
        import respc, respc.model
        from respc._hash import template_hash
        print(template_hash({"fields": ("tuple",), "start_anchor": b"bytes"})[:8])
        print(respc.load_preset("qwen3").parse_response("<think>a</think>b", prefix="")["content"])
        from respc.spec import load_template
        try:
            load_template({"fields": {"x": {"open": 5}}, "start_anchor": "<a>"})
        except respc.TemplateError as error:  # validation needs no compiler extra
            print(error)
        print(sorted(m for m in sys.modules if m.startswith("respc.compiler")))
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines[0]) == 8
    assert lines[1:] == ["b", "Field 'x': 'open' must be a string or list of strings, got int", "[]"]

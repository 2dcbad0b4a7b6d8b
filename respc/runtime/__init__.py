"""Run-time half of respc: what generated parser modules import (standard library and `regex` only).

`ABI` lists every name a generated module may import, by module, and nothing else of respc may appear
in one (tests/package/test_abi.py checks every shipped and golden module, and modules compiled from the
test fixtures, against it). `CONTRACT` is the version of that interface and of the rows a generated
class declares (`respc.runtime.contract`): a generated class declares the contract it was written
against, and the runtime refuses, with one line, a module written for another (`respc regen` rebuilds
the presets, `respc compile` any other module).
"""

CONTRACT = 4

ABI = {
    # the processing pass, which a generated `ResponseParser` subclasses
    "respc.runtime.parser": ("CompiledParser",),
    # the rows of the class's two tables
    "respc.runtime.contract": ("Field", "State"),
    # scan helpers, compiled-on-first-use patterns, and the run classes of lead-run delimiters
    "respc.runtime.scan": (
        "RUN_NEWLINE",
        "RUN_SPACE",
        "RUN_SPACE_TAB",
        "RUN_WHITESPACE",
        "LazyRegex",
        "alternatives_match",
        "first_start",
        "lead_reaches",
        "literal_match",
        "literal_table",
        "scan_first",
        "scan_lead",
        "scan_literal",
        "scan_literals",
        "scan_pattern",
        "scan_tail",
    ),
    # each field's content parser, built for its arguments when the module is imported
    "respc.runtime.content": ("content_parser",),
    # transforms the compiler could not write out, and the lookups of those it did
    "respc.runtime.transform": (
        "each_scope",
        "resolve_in",
        "resolve_placeholder",
        "transform_each",
        "transform_value",
    ),
    # the release whose content parsers a module's fields call
    "respc.runtime.targets": ("get_target",),
}

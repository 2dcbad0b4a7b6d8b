"""The transformers releases respc parses as, and every way they differ: one named switch per change.

A generated module records the target it was compiled for (`TRANSFORMERS_TARGET`); the compiler reads
the switches below when it plans the module, and the runtime reads them where behaviour is decided at
run time (content parsers), so a module behaves as its release whatever respc runs it later. Adding the
next release means adding a `Target` here with its switches and an oracle to the tests
(docs/releases.md, "Adding the next release"), not editing scattered code.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_TARGET",
    "SUPPORTED_TARGETS",
    "TARGETS",
    "Target",
    "UnknownTarget",
    "get_target",
    "installed_target",
]

_CONTENT_PARSERS_5_23 = ("text", "int", "float", "bool", "json", "xml-inline", "kv-lines")


class UnknownTarget(ValueError):
    """A target respc does not support; the message lists the supported ones."""


class Target:
    """One transformers release's response-parsing behaviour, as named switches."""

    __slots__ = (
        "close_captures",
        "content_parsers",
        "docstring_arg_types",
        "json_keys_skip_strings",
        "name",
        "parser_names",
        "recheck_regex_matches",
        "release",
        "xml_merge_wraps_lists",
    )

    def __init__(
        self,
        name: str,
        *,
        release: str,
        content_parsers: tuple[str, ...],
        close_captures: bool,
        recheck_regex_matches: bool,
        json_keys_skip_strings: bool,
        xml_merge_wraps_lists: bool,
        docstring_arg_types: bool,
    ) -> None:
        self.name = name  # what `--target` takes: "5.24"
        self.release = release  # the transformers version it is checked against: "5.24.0"
        # The content parser names validation accepts (5.24 adds `python-call-list`).
        self.content_parsers = content_parsers
        self.parser_names = frozenset(content_parsers)  # for lookups (an unhashable name raises TypeError)
        # Named groups of a close match join the region's captures, over the open's (5.24).
        self.close_captures = close_captures
        # Before the end of the stream, a regex match ending before the buffer's edge is final only if
        # it survives the buffer being extended by "\x00" (5.24; quirks Q3 and Q18 fixed).
        self.recheck_regex_matches = recheck_regex_matches
        # json `unquoted_keys` leaves quoted strings alone and allows spaces around a bare key (5.24).
        self.json_keys_skip_strings = json_keys_skip_strings
        # xml-inline `merge_duplicates` wraps the first value in a new list even when it is a list (5.24).
        self.xml_merge_wraps_lists = xml_merge_wraps_lists
        # `tools=` functions: an Args entry may read `name (type): description` (5.24's get_json_schema;
        # not in the release notes, found by diffing the wheels).
        self.docstring_arg_types = docstring_arg_types

    def __repr__(self) -> str:
        return f"Target({self.name!r})"

    def __reduce__(self) -> tuple:
        return get_target, (self.name,)  # one object per release, also across pickling


TARGETS = {
    "5.23": Target(
        "5.23",
        release="5.23.0",
        content_parsers=_CONTENT_PARSERS_5_23,
        close_captures=False,
        recheck_regex_matches=False,
        json_keys_skip_strings=False,
        xml_merge_wraps_lists=False,
        docstring_arg_types=False,
    ),
    "5.24": Target(
        "5.24",
        release="5.24.0",
        content_parsers=(*_CONTENT_PARSERS_5_23, "python-call-list"),
        close_captures=True,
        recheck_regex_matches=True,
        json_keys_skip_strings=True,
        xml_merge_wraps_lists=True,
        docstring_arg_types=True,
    ),
}
SUPPORTED_TARGETS = tuple(TARGETS)  # oldest first
DEFAULT_TARGET = SUPPORTED_TARGETS[-1]  # the newest: what users of the current transformers run


def get_target(name: str | Target | None) -> Target:
    """The `Target` called `name` (None: the default, the newest supported release)."""
    if isinstance(name, Target):
        return name
    if name is None:
        return TARGETS[DEFAULT_TARGET]
    target = TARGETS.get(name) if isinstance(name, str) else None
    if target is None:
        raise UnknownTarget(
            f"unknown transformers target {name!r}; supported: {', '.join(SUPPORTED_TARGETS)}"
        )
    return target


def installed_target() -> str:
    """The target of the installed transformers (5.24.x: "5.24"), for code that holds its tokenizers; any
    other release raises `UnknownTarget`, one line naming the supported ones."""
    import sys

    version = getattr(sys.modules.get("transformers"), "__version__", None)
    if version is None:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as installed

        try:
            version = installed("transformers")
        except PackageNotFoundError:
            raise UnknownTarget("transformers is not installed") from None
    release = ".".join(version.split(".")[:2])
    if release in TARGETS:
        return release
    supported = ", ".join(f"{name}.x" for name in SUPPORTED_TARGETS)
    raise UnknownTarget(
        f"transformers {version} is installed, and respc parses as transformers {supported}: install one "
        f"of those, or pass target= ({', '.join(SUPPORTED_TARGETS)}) to parse as that release regardless"
    )

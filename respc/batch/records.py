"""One record in, one result out: stored generations parsed with a compiled parser, failures kept in place.

A record that fails to parse never stops a run and is never dropped: its `Result` keeps the id, the
error and the raw response, and becomes `{"id": ..., "error": {"type": ..., "message": ...},
"response": <raw text>}` in a JSONL output (or a row with a null message in an Arrow one). A response
that ends inside an explicit region (a tool call whose close never came: transformers closes it as if
it had) parses as upstream but is flagged `cut_off` (`"cut_off": true` in JSONL, a `cut_off` column in
Arrow), and with `strict_end` fails as a `CutOff` error. Every
engine (`parse_records` here, `respc.batch.arrow` for Parquet, Ray Data and datasets) goes through
`RecordParser.result`, so a record gets the same answer whichever engine runs it. Each
`parse_records` call owns its parser (and, with workers, its own pool), so two runs in one process
never share one.
"""

from __future__ import annotations

import json
import types
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from respc.batch.pool import WorkerDied, ordered_map

__all__ = [
    "CHUNK",
    "CUT_OFF_END",
    "LAYOUTS",
    "Columns",
    "ParserSource",
    "RecordParser",
    "Result",
    "WorkerDied",
    "error_line",
    "ordered_map",
    "parse_records",
]

LAYOUTS = ("json", "typed")  # of Arrow outputs (respc.batch.arrow): the message as JSON, or also typed
CHUNK = 256  # records per task sent to a worker: amortises the inter-process round trip


@dataclass(frozen=True)
class ParserSource:
    """The parser a run uses: a shipped preset's name, or a template (compiled on first use, cached).

    It pickles, so worker processes (and Ray actors) rebuild the same parser from it.
    """

    preset: str | None = None
    template: Any = None
    target: str | None = None  # the transformers release to parse as (default: the newest supported)

    def __post_init__(self) -> None:
        if (self.preset is None) == (self.template is None):
            raise ValueError("ParserSource takes a preset name or a template, not both or neither")

    @classmethod
    def of_module(cls, module: types.ModuleType) -> ParserSource:
        """The source of a generated module: its preset name when it is one, else its template."""
        package, _, name = module.__name__.rpartition(".")
        if package == "respc.generated":
            return cls(preset=name)
        return cls(template=module.TEMPLATE, target=module.TRANSFORMERS_TARGET)

    @classmethod
    def of(
        cls,
        *,
        preset: str | None = None,
        template: Any = None,
        model: Any = None,
        target: str | None = None,
    ) -> ParserSource:
        """The source for exactly one of a preset name, a template, or a model directory (its own
        `response_template`, else the preset `respc.detect` finds for it)."""
        if sum(x is not None for x in (preset, template, model)) != 1:
            raise ValueError("give exactly one of preset=, template= and model=")
        if model is not None:
            from respc.model import model_template

            template, module = model_template(model)
            if module is not None:
                return cls(preset=module.__name__.rpartition(".")[2], target=target)
        return cls(preset=preset, template=template, target=target)

    def load(self) -> types.ModuleType:
        """The generated parser module (`respc.PresetNotFound`, `respc.TemplateError` or, without the
        compiler extra, `ImportError` when it cannot be had)."""
        if self.preset is not None:
            from respc.registry import load_preset

            return load_preset(self.preset, self.target)
        from respc._compile import compile_template

        return compile_template(self.template, target=self.target)


@dataclass(frozen=True)
class Columns:
    """Where a record keeps its parts: the response (required), the prompt (the parser's prefix; a
    missing or null prompt is ""), the id (copied to the output) and the tools (a JSON list, or a JSON
    string of one, used for that record instead of the run's tools). None: not read. `required` names
    the ones a record must have (those a user named explicitly: a misspelt name then fails loudly)."""

    response: str = "response"
    prompt: str | None = "prompt"
    id: str | None = "id"
    tools: str | None = None
    required: frozenset[str] = frozenset()


class Result(NamedTuple):
    """One record's outcome: a message, or an error (type, message) with the raw response kept."""

    id: Any
    message: dict | None
    error: tuple[str, str] | None = None
    response: Any = None
    cut_off: Any = None  # the field of the region the response ended inside (None: it ended outside)

    @property
    def failed(self) -> bool:
        """The record failed to parse (with `errors="keep"`, also when the message lists parse_errors)."""
        return self.error is not None or (self.message is not None and "parse_errors" in self.message)


class RecordParser:
    """Parses records with one parser: the response as the text, the prompt as the prefix.

    `errors` is the parser's policy: "strict" (a region that fails to parse fails the record, as in
    transformers) or "keep" (the message keeps every other field and lists `parse_errors`).
    """

    def __init__(
        self,
        module: types.ModuleType,
        *,
        tools: list | None = None,
        columns: Columns = Columns(),
        errors: str = "strict",
        strict_end: bool = False,
    ) -> None:
        if errors not in ("strict", "keep"):
            raise ValueError(f"errors must be 'strict' or 'keep', not {errors!r}")
        self.parse = module.ResponseParser.parse_cut_off
        self.tools = tools
        self.columns = columns
        self.errors = errors
        self.strict_end = strict_end

    def line(self, line: str) -> tuple[str, bool]:
        """One JSONL input line -> (output line, failed)."""
        result = self.line_result(line)
        return result_line(result), result.failed

    def line_result(self, line: str) -> Result:
        """One JSONL input line -> its `Result` (invalid JSON or a non-object is a failed record)."""
        line = line.rstrip("\r\n")
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            return Result(None, None, ("JSONDecodeError", f"invalid JSON: {error}"), line)
        except RecursionError:
            return Result(None, None, ("JSONDecodeError", "invalid JSON: nested too deeply"), line)
        if not isinstance(record, dict):
            return Result(None, None, ("InvalidRecord", f"expected a JSON object, got {_kind(record)}"), line)
        return self.result(record)

    def record(self, record: Mapping) -> tuple[str, bool]:
        """One decoded record -> (output line, failed)."""
        result = self.result(record)
        return result_line(result), result.failed

    def result(self, record: Mapping) -> Result:
        """One decoded record (a mapping of column names to values) -> its `Result`."""
        columns = self.columns
        record_id = record.get(columns.id) if columns.id is not None else None
        response = record.get(columns.response)
        prompt = record.get(columns.prompt) if columns.prompt is not None else None
        for name in columns.required:
            if name not in record and name != columns.response:
                return Result(record_id, None, ("InvalidRecord", f"field {name!r} is missing"), response)
        if not isinstance(response, str):
            found = "missing" if columns.response not in record else _kind(response)
            message = f"field {columns.response!r} must be a string, got {found}"
            return Result(record_id, None, ("InvalidRecord", message), response)
        if prompt is not None and not isinstance(prompt, str):
            message = f"field {columns.prompt!r} must be a string or null, got {_kind(prompt)}"
            return Result(record_id, None, ("InvalidRecord", message), response)
        tools = self.tools
        if columns.tools is not None and record.get(columns.tools) is not None:
            tools, problem = _record_tools(record[columns.tools], columns.tools)
            if problem is not None:
                return Result(record_id, None, ("InvalidRecord", problem), response)
        try:
            message, cut_off = self.parse(response, prompt or "", tools, self.errors)
        except Exception as error:  # any failure of one record is reported in its place
            failure = (type(error).__name__, str(error))
            return Result(record_id, None, failure, response, self._cut_off(response, prompt, tools))
        if cut_off is not None and self.strict_end:
            problem = f"the response ended inside region {cut_off!r} (cut off; --strict-end)"
            return Result(record_id, None, ("CutOff", problem), response, cut_off)
        return Result(record_id, message, cut_off=cut_off)

    def _cut_off(self, response: str, prompt: str | None, tools: list | None) -> Any:
        """A failed record's cut-off region (a truncated JSON tool call fails where the end of the text
        closes it): asked again, keeping errors, on failed records only."""
        try:
            return self.parse(response, prompt or "", tools, "keep")[1]
        except Exception:
            return None


# What a record's value is, with its article, in the words of JSON (records come from JSON or Arrow).
_KINDS = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "a list",
    dict: "an object",
}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return _KINDS.get(type(value), f"a {type(value).__name__}")


def _record_tools(value: Any, column: str) -> tuple[list | None, str | None]:
    """A record's own tools: a list, or a JSON string holding one."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, RecursionError) as error:
            return None, f"field {column!r} is not valid JSON: {error}"
    if not isinstance(value, list):
        return None, f"field {column!r} must be a list of tools (or a JSON string of one), got {_kind(value)}"
    return value, None


def result_line(result: Result) -> str:
    """The JSONL output line of a result: `{"id", "message"}`, or `{"id", "error", "response"}`; either
    ends with `"cut_off": true` when the response ended inside a region (`CUT_OFF_END`)."""
    if result.error is None:
        line = {"id": result.id, "message": result.message}
        if result.cut_off is not None:
            line["cut_off"] = True
        return json.dumps(line, ensure_ascii=False, default=str)
    return error_line(result.id, *result.error, result.response, cut_off=result.cut_off is not None)


def error_line(record_id: Any, kind: str, message: str, response: Any, *, cut_off: bool = False) -> str:
    """The output line of a record that failed: its id, the error and the raw response."""
    error = {"id": record_id, "error": {"type": kind, "message": message}, "response": response}
    if cut_off:
        error["cut_off"] = True
    return json.dumps(error, ensure_ascii=False, default=str)


# How a JSONL output line flagged cut off ends: the flag is its last key, and within a string value its
# quotes would be escaped, so no other line ends so.
CUT_OFF_END = ', "cut_off": true}'


# A worker process's RecordParser: set by the pool's initializer, in that process only (each pool's
# workers are their own processes, so two runs never share it).
_WORKER: list[RecordParser] = []


def _start_worker(
    source: ParserSource, tools: list | None, columns: Columns, errors: str, strict_end: bool
) -> None:
    _WORKER[:] = [
        RecordParser(source.load(), tools=tools, columns=columns, errors=errors, strict_end=strict_end)
    ]


def _worker_lines(lines: list[str]) -> list[tuple[str, bool]]:
    return [_WORKER[0].line(line) for line in lines]


def _chunks(items: Iterable[Any], size: int) -> Iterator[list]:
    chunk: list = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def parse_records(
    lines: Iterable[str],
    source: ParserSource,
    *,
    tools: list | None = None,
    fields: tuple[str, str, str] = ("response", "prompt", "id"),
    workers: int = 1,
    columns: Columns | None = None,
    errors: str = "strict",
    strict_end: bool = False,
) -> Iterator[tuple[str, bool]]:
    """Output lines for JSONL input lines, in input order: (line, failed) for each non-blank line.

    `fields` names the response, prompt and id keys (or pass `columns`, which also names a per-record
    tools key). The parser is loaded before the first record is read, so a bad source fails on the
    first `next()` (with workers, before any worker starts; forked workers then find the template in
    respc's cache). Memory stays flat however long the input: at most a few chunks are in flight.
    """
    if columns is None:
        columns = Columns(*fields)
    module = source.load()
    lines = (line for line in lines if line.strip())
    if workers <= 1:
        parser = RecordParser(module, tools=tools, columns=columns, errors=errors, strict_end=strict_end)
        yield from map(parser.line, lines)
        return
    batches = ordered_map(
        _worker_lines,
        _chunks(lines, CHUNK),
        workers=workers,
        initializer=_start_worker,
        initargs=(source, tools, columns, errors, strict_end),
    )
    for batch in batches:
        yield from batch

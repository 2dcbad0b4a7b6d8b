"""Arrow in, Arrow out: the one output schema every engine writes (local, Ray Data, datasets).

Columns, in order:

- `id`: the input's id column, with its type (null when the input has none). From JSONL, where every
  record has its own, the first non-null id decides: integers, numbers or strings (`IdTyping`); an id
  of another kind stops the run (JSONL output keeps any id as written);
- `message`: the parsed message as a JSON string, null when the record failed;
- `error`: struct `{type, message}`, null on success;
- `raw_response`: the raw response of a failed record (null on success), so nothing is lost (named
  apart from the input's `response`, which a `Dataset.map` would otherwise overwrite);
- `cut_off`: true when the response ended inside a region (a tool call whose close never came), which
  transformers closes as if it had (see `respc.batch.records`);
- with `layout="typed"` also `reasoning_content`, `content` (strings; a non-string value as JSON),
  `tool_calls` (list of `{id, name, arguments}`, arguments as a JSON string), read from the message's
  OpenAI shape, and `parse_errors` (with `errors="keep"`: the regions that failed to parse, list of
  `{field, exception, error, text}`; null when none did); anything else stays in `message` only.

Every batch of a run has the same schema (a batch where all errors are null still types `error` as
the struct), so shards written by different workers read back as one table.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, ClassVar

import pyarrow as pa

from respc._io import InputError
from respc.batch.records import LAYOUTS, Columns, RecordParser, Result

__all__ = [
    "ERROR_TYPE",
    "LAYOUTS",
    "PARSE_ERROR_TYPE",
    "TOOL_CALL_TYPE",
    "IdTyping",
    "TableParser",
    "output_schema",
    "results_table",
    "table_lines",
]

ERROR_TYPE = pa.struct([("type", pa.string()), ("message", pa.string())])
TOOL_CALL_TYPE = pa.struct([("id", pa.string()), ("name", pa.string()), ("arguments", pa.string())])
PARSE_ERROR_TYPE = pa.struct(
    [("field", pa.string()), ("exception", pa.string()), ("error", pa.string()), ("text", pa.string())]
)
_TYPED = [
    ("reasoning_content", pa.string()),
    ("content", pa.string()),
    ("tool_calls", pa.list_(TOOL_CALL_TYPE)),
    ("parse_errors", pa.list_(PARSE_ERROR_TYPE)),
]


def output_schema(id_type: pa.DataType | None = None, layout: str = "json") -> pa.Schema:
    """The output schema for ids of `id_type` (None: no ids, the null type) in `layout`."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    fields = [
        ("id", id_type or pa.null()),
        ("message", pa.string()),
        ("error", ERROR_TYPE),
        ("raw_response", pa.string()),
        ("cut_off", pa.bool_()),
    ]
    return pa.schema(fields + (_TYPED if layout == "typed" else []))


class TableParser:
    """Parses Arrow tables of records into tables of the output schema; never raises for a bad record.

    `parse_table` reads the `Columns` of an Arrow table; `parse_lines` reads JSONL lines (each a record,
    as `respc parse` reads them). Both go through `RecordParser.result`, like every other engine.
    """

    def __init__(self, records: RecordParser, *, layout: str = "json") -> None:
        output_schema(layout=layout)  # checks the layout
        self.records = records
        self.columns: Columns = records.columns
        self.layout = layout

    def parse_table(self, table: pa.Table | pa.RecordBatch) -> pa.Table:
        """One Arrow batch of records -> the output table (ids keep their column's type)."""
        columns = self.columns
        names = set(table.schema.names)
        if columns.response not in names:
            raise KeyError(f"no column {columns.response!r} (the responses); columns: {sorted(names)}")
        read = [c for c in (columns.response, columns.prompt, columns.id, columns.tools) if c in names]
        values = {name: table.column(name).to_pylist() for name in dict.fromkeys(read)}
        results = [self.records.result(dict(zip(values, row))) for row in zip(*values.values())]
        ids = table.column(columns.id) if columns.id in names else pa.nulls(table.num_rows)
        return results_table(results, ids, self.layout)

    def parse_lines(self, lines: Iterable[str], numbers: Iterable[int] | None = None) -> pa.Table:
        """JSONL lines (blank ones skipped) -> the output table, with each id as its JSON text (a string
        column: batches of records cannot agree on a type; `IdTyping` decides it over a whole run).
        With `numbers` (each line's number in its file), a `_line` column says where each record was."""
        kept = [(line, number) for line, number in zip(lines, numbers or _counting()) if line.strip()]
        results = [self.records.line_result(line) for line, _ in kept]
        ids = pa.array(
            [None if r.id is None else json.dumps(r.id, ensure_ascii=False) for r in results], pa.string()
        )
        table = results_table(results, ids, self.layout)
        if numbers is not None:
            table = table.append_column("_line", pa.array([number for _, number in kept], pa.int64()))
        return table


def _counting() -> Iterable[int]:
    import itertools

    return itertools.count(1)


class IdTyping:
    """The Arrow type of ids read from JSONL, decided over a whole run in input order: the kind of the
    first non-null id (integer, number or string); every later id must be of that kind (an integer
    among numbers is one). Tables whose ids are all null so far are held back until the type is known,
    at most `HOLD` records, then written with null ids. Same chunks in, same tables out, whichever engine
    parsed them."""

    HOLD = 100_000
    KINDS: ClassVar[dict] = {"integer": pa.int64(), "number": pa.float64(), "string": pa.string()}

    def __init__(self) -> None:
        self.kind: str | None = None
        self.held: list[pa.Table] = []
        self.held_rows = 0

    def feed(self, table: pa.Table, file: str) -> list[pa.Table]:
        """Tables ready to write, in order, for one output table of `parse_lines` (from `file`)."""
        names = table.schema.names
        texts = table.column("id").to_pylist()
        lines = table.column("_line").to_pylist() if "_line" in names else [None] * len(texts)
        files = table.column("_file").to_pylist() if "_file" in names else [file] * len(texts)
        values = [None if text is None else json.loads(text) for text in texts]
        for value, text, line, name in zip(values, texts, lines, files):
            if value is None:
                continue
            kind = _kind(value)
            where = f"{name}: line {line}" if line is not None else name
            if kind is None:
                raise InputError(
                    f"{where}: id {text} is {type(value).__name__}: Parquet ids are integers, numbers or "
                    "strings (JSONL output keeps any id as written)"
                )
            if self.kind is None:
                self.kind = kind
            elif kind != self.kind and not (self.kind == "number" and kind == "integer"):
                raise InputError(
                    f"{where}: id {text} is a {kind}, the ids before it are {self.kind}s: a Parquet column "
                    "has one type (JSONL output keeps ids as written)"
                )
        table = table.drop_columns([name for name in ("_line", "_file") if name in names])
        if self.kind is None:
            self.held.append(table)
            self.held_rows += table.num_rows
            return self.flush() if self.held_rows >= self.HOLD else []
        kind = self.KINDS[self.kind]
        typed = table.set_column(0, pa.field("id", kind), pa.array(values, kind))
        return [*self.flush(), typed]

    def flush(self) -> list[pa.Table]:
        """The held tables (all their ids null), in the decided type or, if none yet, the null type."""
        held, self.held, self.held_rows = self.held, [], 0
        kind = self.KINDS.get(self.kind or "", pa.null())
        return [t.set_column(0, pa.field("id", kind), pa.nulls(t.num_rows, kind)) for t in held]


def _kind(value: object) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return "integer" if -(2**63) <= value < 2**63 else None
    if isinstance(value, float):
        return "number"
    return "string" if isinstance(value, str) else None


def results_table(results: list[Result], ids: pa.Array | pa.ChunkedArray, layout: str = "json") -> pa.Table:
    """The output table of `results` (ids given as an Arrow array, one per result)."""
    messages = [
        None if r.message is None else json.dumps(r.message, ensure_ascii=False, default=str) for r in results
    ]
    errors = [None if r.error is None else {"type": r.error[0], "message": r.error[1]} for r in results]
    responses = [None if r.error is None else _text(r.response) for r in results]
    schema = output_schema(ids.type, layout)
    arrays = [
        ids,
        pa.array(messages, pa.string()),
        pa.array(errors, ERROR_TYPE),
        pa.array(responses, pa.string()),
        pa.array([r.cut_off is not None for r in results], pa.bool_()),
    ]
    if layout == "typed":
        typed = [_typed(r.message) for r in results]
        arrays += [
            pa.array([t[i] for t in typed], schema.field(name).type) for i, (name, _) in enumerate(_TYPED)
        ]
    return pa.Table.from_arrays(arrays, schema=schema)


def _text(value: Any) -> str | None:
    """A failed record's raw response as text (a response of the wrong type, as JSON)."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _json_text(value: Any) -> str | None:
    return (
        value
        if value is None or isinstance(value, str)
        else json.dumps(value, ensure_ascii=False, default=str)
    )


def _typed(message: dict | None) -> tuple[str | None, str | None, list | None, list | None]:
    """The typed columns of a message: its reasoning, content, OpenAI-shaped tool calls, and the regions
    that failed to parse (errors="keep")."""
    if message is None:
        return None, None, None, None
    calls = message.get("tool_calls")
    typed_calls = None
    if isinstance(calls, list) and all(isinstance(c, dict) for c in calls):
        typed_calls = []
        for call in calls:
            function = call.get("function", call)
            if not isinstance(function, dict):
                typed_calls = None
                break
            typed_calls.append(
                {
                    "id": _json_text(call.get("id")),
                    "name": _json_text(function.get("name")),
                    "arguments": _json_text(function.get("arguments")),
                }
            )
    problems = message.get("parse_errors")
    parse_errors = None
    if isinstance(problems, list) and problems:
        parse_errors = [
            {key: _json_text(problem.get(key)) for key in ("field", "exception", "error", "text")}
            for problem in problems
        ]
    reasoning, content = _json_text(message.get("reasoning_content")), _json_text(message.get("content"))
    return reasoning, content, typed_calls, parse_errors


def table_lines(table: pa.Table) -> Iterable[str]:
    """The JSONL output lines of an output table, byte for byte what `respc parse` writes for the
    same records read from JSONL (the message JSON is spliced in, not re-encoded)."""
    ids = table.column("id").to_pylist()
    messages = table.column("message").to_pylist()
    errors = table.column("error").to_pylist()
    responses = table.column("raw_response").to_pylist()
    cut = table.column("cut_off").to_pylist()
    for record_id, message, error, response, cut_off in zip(ids, messages, errors, responses, cut):
        shown_id = json.dumps(record_id, ensure_ascii=False, default=str)
        flag = ', "cut_off": true' if cut_off else ""
        if error is None:
            yield f'{{"id": {shown_id}, "message": {message}{flag}}}'
        else:
            failure = {"id": record_id, "error": error, "response": response}
            if cut_off:
                failure["cut_off"] = True
            yield json.dumps(failure, ensure_ascii=False, default=str)

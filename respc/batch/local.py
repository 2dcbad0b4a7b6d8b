"""The local engine of `respc parse`: one process, or a pool of worker processes, on one machine.

Chunks of records flow reader -> parser (in order, at most a few chunks per worker in flight) ->
sink, so memory stays flat however large the input. JSONL to JSONL goes line by line through
`RecordParser` (the output keeps every id exactly as written); anything involving Parquet goes
through `TableParser` and the Arrow output schema.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from respc._io import InputError
from respc.batch.files import (
    Chunk,
    Input,
    Output,
    check_output,
    check_parquet,
    open_sink,
    read_chunks,
    require_pyarrow,
)
from respc.batch.records import CUT_OFF_END, Columns, ParserSource, RecordParser, ordered_map

__all__ = ["CHUNK_ROWS", "Job", "Summary", "count_failed", "failed_mask", "run_local", "write_outputs"]

CHUNK_ROWS = 2048  # records per chunk: large enough to amortise a task, small enough to stay flat


@dataclass(frozen=True)
class Job:
    """One run of `respc parse` over stored records, whatever the engine."""

    source: ParserSource
    input: Input
    output: Output
    columns: Columns = field(default_factory=Columns)
    tools: list | None = None
    layout: str = "json"
    errors: str = "strict"
    strict_end: bool = False  # a response that ends inside a region fails (`respc.batch.records`)

    @property
    def lines_only(self) -> bool:
        """JSONL in and out: records go line to line, never through Arrow."""
        return self.input.format == "jsonl" and self.output.format == "jsonl"

    def check(self) -> Any:
        """Everything that can be checked before reading a record: the parser loads, the output can be
        written, the Parquet schemas. Returns the schema of an output with no records (Arrow outputs)."""
        self.source.load()
        check_output(self.output)
        if self.input.format == "jsonl" and not self.input.stdin:
            self.check_fields(next(read_chunks(self.input, CHUNK_ROWS), None))
        if self.lines_only:
            return None
        require_pyarrow()
        from respc.batch.arrow import output_schema

        id_type = None
        if self.input.format == "parquet":
            id_type = check_parquet(
                self.input, self.columns, set(self.columns.required) | {self.columns.response}
            )
        return output_schema(id_type, self.layout)

    def check_fields(self, chunk: Chunk | None) -> None:
        """Stop before parsing when a field the records must have (the response, and any field named on
        the command line) is in none of the first chunk's records: a misspelt `--response-field` would
        otherwise fail every record of the run, one error row each."""
        if chunk is None or chunk.table is not None:
            return
        found: dict[str, None] = {}
        for line in chunk.lines:
            with contextlib.suppress(ValueError, RecursionError):  # a bad line is that record's error
                record = json.loads(line)
                if isinstance(record, dict):
                    found.update(dict.fromkeys(record))
        if not found:
            return
        for name in (self.columns.response, *sorted(self.columns.required)):
            if name not in found:
                raise InputError(
                    f"{chunk.where()}: no record has a field {name!r}; fields: {', '.join(map(str, found))}"
                )

    def read_columns(self) -> list[str]:
        c = self.columns
        return [name for name in (c.response, c.prompt, c.id, c.tools) if name is not None]


@dataclass(frozen=True)
class Summary:
    records: int
    failed: int
    cut_off: int = 0  # records whose response ended inside a region (failed too with `strict_end`)


def run_local(job: Job, *, workers: int = 1, progress: Callable[[int], None] | None = None) -> Summary:
    """Run `job` in this process (`workers` 1) or a pool; returns how many records, how many failed."""
    empty = job.check()
    chunks = read_chunks(job.input, CHUNK_ROWS, job.read_columns())
    if job.input.stdin:
        chunks = _checked_first(job, chunks)
    if workers <= 1:
        _init_worker(job)
        done: Iterator = map(_parse_chunk, chunks)
    else:
        done = ordered_map(_parse_chunk, chunks, workers=workers, initializer=_init_worker, initargs=(job,))
    return write_outputs(job, done, empty, progress)


def _checked_first(job: Job, chunks: Iterator[Chunk]) -> Iterator[Chunk]:
    """`chunks`, the first checked by `Job.check_fields` (standard input cannot be read twice)."""
    for number, chunk in enumerate(chunks):
        if number == 0:
            job.check_fields(chunk)
        yield chunk


def write_outputs(job: Job, done: Iterator, empty: Any, progress: Callable[[int], None] | None) -> Summary:
    """Write each engine's parsed chunks, `(where, file, "lines" or "table", output, records, failed)`, in
    order; ids read from JSONL get their Parquet type here, over the whole run (`IdTyping`)."""
    typing = None
    if job.input.format == "jsonl" and not job.lines_only:
        from respc.batch.arrow import IdTyping

        typing = IdTyping()
    records = failed = cut_off = 0
    with open_sink(job.output, empty) as sink:
        for where, file, kind, payload, count, bad in done:
            if kind == "lines":
                sink.write_lines(payload)
                cut_off += sum(line.endswith(CUT_OFF_END) for line in payload)
            else:
                cut_off += payload.column("cut_off").to_pylist().count(True)
                for table in typing.feed(payload, file) if typing is not None else (payload,):
                    try:
                        sink.write_table(table)
                    except InputError as error:
                        raise InputError(f"{where}: {error}") from None
            records += count
            failed += bad
            if progress:
                progress(count)
        for table in typing.flush() if typing is not None else ():
            sink.write_table(table)
    return Summary(records, failed, cut_off)


# The parser of this process (a pool worker's own): set by `_init_worker`.
_STATE: dict[str, Any] = {}


def _init_worker(job: Job) -> None:
    if multiprocessing.parent_process() is not None:  # a pool worker: signals are the parent's to handle
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the pool ends its workers with SIGTERM
    records = RecordParser(
        job.source.load(), tools=job.tools, columns=job.columns, errors=job.errors, strict_end=job.strict_end
    )
    _STATE.update(job=job, records=records)
    if not job.lines_only:
        from respc.batch.arrow import TableParser

        _STATE["tables"] = TableParser(records, layout=job.layout)


def _parse_chunk(chunk: Chunk) -> tuple[str, str, str, Any, int, int]:
    """(where, file, "lines" or "table", output, records, failed) for one chunk of input."""
    job: Job = _STATE["job"]
    where = chunk.where()
    if job.lines_only:
        lines, failed = [], 0
        for line in chunk.lines:
            text, bad = _STATE["records"].line(line)
            lines.append(text)
            failed += bad
        return where, chunk.file, "lines", lines, len(lines), failed
    try:
        if chunk.table is None:
            table = _STATE["tables"].parse_lines(chunk.lines, chunk.numbers)
        else:
            table = _STATE["tables"].parse_table(chunk.table)
    except (TypeError, KeyError) as error:
        raise InputError(f"{where}: {error}") from None
    return where, chunk.file, "table", table, table.num_rows, count_failed(table, job.errors)


def failed_mask(table: Any, errors: str = "strict") -> list[bool]:
    """Which records of an output table failed: an error, or (with `errors="keep"`) parse_errors listed."""
    failed = [error is not None for error in table.column("error").to_pylist()]
    if errors == "keep":
        for row, message in enumerate(table.column("message").to_pylist()):
            if message is not None and '"parse_errors"' in message and "parse_errors" in json.loads(message):
                failed[row] = True
    return failed


def count_failed(table: Any, errors: str = "strict") -> int:
    """How many records of an output table failed (see `failed_mask`)."""
    if errors == "strict":
        return table.num_rows - table.column("error").null_count
    return sum(failed_mask(table, errors))

"""Inputs and outputs of `respc parse`: JSONL and Parquet, single files or directories of shards.

Reading is streamed in chunks (JSONL lines, Parquet record batches), so memory follows the chunk size,
not the input. Outputs are atomic: a file is written under a temporary name and renamed when the run
succeeds; a directory of shards is built beside the target and renamed into place. A failure at any
point leaves the target as it was. Problems with the input (a missing column, a column of the wrong
type, a damaged file) are `InputError`s naming the file, the rows and the column, raised before any
output is committed.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from respc._io import AtomicOutput, InputError, OutputError, numbered_lines, open_binary

__all__ = [
    "FORMATS",
    "Chunk",
    "Input",
    "Output",
    "Sink",
    "check_output",
    "input_of",
    "open_sink",
    "output_of",
]

FORMATS = ("jsonl", "parquet")
SUFFIXES = {".jsonl": "jsonl", ".parquet": "parquet"}
STRING_TYPES = ("string", "large_string", "string_view", "null")


@dataclass(frozen=True)
class Input:
    """What a run reads: `files` in order (one for a file, the sorted shards of a directory), or
    standard input (`files` empty)."""

    name: str
    format: str
    files: tuple[Path, ...] = ()

    @property
    def stdin(self) -> bool:
        return not self.files


@dataclass
class Chunk:
    """Records read together: JSONL `lines` or a Parquet `table`, and where they came from."""

    file: str
    first: int  # the 1-based line (JSONL) or row (Parquet) of the first record in the file
    lines: list[str] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)  # each JSONL line's number in its file
    table: Any = None

    def where(self) -> str:
        unit = "line" if self.table is None else "row"
        if self.table is None:
            last = self.numbers[-1] if self.numbers else self.first
        else:
            last = self.first + max(self.table.num_rows, 1) - 1
        return (
            f"{self.file}: {unit}s {self.first}-{last}"
            if last > self.first
            else f"{self.file}: {unit} {self.first}"
        )


def input_of(name: str, format: str | None = None) -> Input:
    """The input `name` names: `-` (standard input, JSONL), a file, or a directory of shards. The format
    comes from `format`, else the file names (`.jsonl`, `.parquet`)."""
    if format is not None and format not in FORMATS:
        raise InputError(f"unknown input format {format!r}; use one of {', '.join(FORMATS)}")
    if name == "-":
        if format == "parquet":
            raise InputError("<stdin>: Parquet cannot be read from standard input; name a file")
        return Input("<stdin>", "jsonl")
    path = Path(name)
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith((".", "_")))
        kinds = {SUFFIXES[p.suffix] for p in found if p.suffix in SUFFIXES}
        named = format is not None
        if format is None:
            if len(kinds) != 1:
                what = "both .jsonl and .parquet" if kinds else "no .jsonl or .parquet files"
                raise InputError(
                    f"{path}: a directory of shards needs one format; it holds {what} (use --format)"
                )
            format = kinds.pop()
        # Shards are the files named for the format; a format named (`--format`) also takes files with no
        # suffix at all (a README beside the shards is then read as one).
        files = tuple(p for p in found if SUFFIXES.get(p.suffix) == format or (named and not p.suffix))
        if not files:
            raise InputError(f"{path}: no {format} files in the directory")
        return Input(str(path), format, files)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if format is None:
        format = SUFFIXES.get(path.suffix)
        if format is None:
            raise InputError(f"{path}: cannot tell the format from the name; use --format jsonl or parquet")
    return Input(str(path), format, (path,))


def count_records(source: Input) -> int | None:
    """How many records `source` holds (for progress), or None when it cannot be known cheaply."""
    if source.stdin:
        return None
    if source.format == "parquet":
        import pyarrow.parquet as pq

        with contextlib.suppress(Exception):  # a damaged file is reported when it is read
            return sum(pq.ParquetFile(f).metadata.num_rows for f in source.files)
        return None
    total = 0
    for path in source.files:
        with open(path, "rb") as stream:
            total += sum(1 for line in stream if line.strip())
    return total


def require_pyarrow() -> None:
    """Parquet and the Arrow output schema need pyarrow, an optional dependency."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        from respc._extras import install_hint

        raise InputError(f"Parquet and Arrow outputs need pyarrow: {install_hint('parquet')}") from None


def check_parquet(source: Input, columns: Any, required: set[str]) -> Any:
    """Check every file's schema before any row is read: the `respc.batch.Columns` it has hold strings
    (the tools column may also hold lists), the `required` ones exist, and the id column has one type
    across files. Returns that id type (None: no id column)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    wanted = {columns.response: "text", columns.prompt: "text", columns.tools: "tools", columns.id: "id"}
    wanted.pop(None, None)
    id_type = None
    for path in source.files:
        try:
            schema = pq.ParquetFile(path).schema_arrow
        except (OSError, pa.ArrowException) as error:
            raise InputError(f"{path}: not a readable Parquet file: {error}") from None
        for name, role in wanted.items():
            if name not in schema.names:
                if name in required:
                    raise InputError(f"{path}: no column {name!r}; columns: {', '.join(schema.names)}")
                continue
            kind = schema.field(name).type
            if role == "id":
                if id_type is not None and kind != id_type:
                    raise InputError(f"{path}: column {name!r} holds {kind}, the files before it {id_type}")
                id_type = kind
            elif not _is_text(kind) and not (role == "tools" and _is_list(kind)):
                raise InputError(f"{path}: column {name!r} holds {kind}, expected strings")
    return id_type


def _is_text(kind: Any) -> bool:
    """Strings, as Arrow may store them: plain, large, views, dictionary-encoded (pandas categoricals)."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return str(kind) in STRING_TYPES


def _is_list(kind: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_list(kind) or pa.types.is_large_list(kind)


def read_chunks(source: Input, size: int, columns: list[str] | None = None) -> Iterator[Chunk]:
    """The records of `source` in chunks of about `size`: JSONL lines (blank ones skipped, numbered as
    in the file) or Parquet record batches (only `columns`, when given)."""
    if source.format == "jsonl":
        yield from _jsonl_chunks(source, size)
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    for path in source.files:
        first = 1
        try:
            parquet = pq.ParquetFile(path)
            names = [c for c in columns if c in parquet.schema_arrow.names] if columns else None
            for batch in parquet.iter_batches(batch_size=size, columns=names, use_threads=False):
                yield Chunk(str(path), first, table=pa.Table.from_batches([batch]))
                first += batch.num_rows
        except (OSError, pa.ArrowException) as error:
            raise InputError(f"{path}: rows from {first}: cannot read: {error}") from None


def _jsonl_chunks(source: Input, size: int) -> Iterator[Chunk]:
    for name, opened in _jsonl_streams(source):
        with opened as stream:
            chunk = Chunk(name, 0)
            for number, line in numbered_lines(stream, name):
                if not line.strip():
                    continue
                if not chunk.lines:
                    chunk.first = number
                chunk.lines.append(line)
                chunk.numbers.append(number)
                if len(chunk.lines) == size:
                    yield chunk
                    chunk = Chunk(name, 0)
            if chunk.lines:
                yield chunk


def _jsonl_streams(source: Input) -> Iterator[tuple[str, Any]]:
    """(name, context manager opening it in binary) for each JSONL file, in order; stdin is not closed."""
    if source.stdin:
        yield "<stdin>", contextlib.nullcontext(sys.stdin.buffer)
        return
    for path in source.files:
        yield str(path), open_binary(path)


# --- outputs --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Output:
    """Where a run writes: standard output (`path` None, JSONL), a file, or a directory of shards."""

    path: Path | None
    format: str
    shards: bool = False
    shard_rows: int = 1_000_000

    @property
    def name(self) -> str:
        return "<stdout>" if self.path is None else str(self.path)


def output_of(name: str | None, format: str | None = None, shard_rows: int = 1_000_000) -> Output:
    """The output `name` names: None (standard output, JSONL), a file (format from `format`, else the
    name: `.parquet`, else JSONL), or a directory of shards (a name ending in `/`, or an existing
    directory) of `format` (default JSONL), `shard_rows` records per shard."""
    if format is not None and format not in FORMATS:
        raise OutputError(f"unknown output format {format!r}; use one of {', '.join(FORMATS)}")
    if shard_rows < 1:
        raise OutputError(f"shards need at least 1 record each, got {shard_rows}")
    if name is None or name == "-":
        if format == "parquet":
            raise OutputError("<stdout>: Parquet cannot be written to standard output; use -o FILE")
        return Output(None, "jsonl")
    path = Path(name)
    if name.endswith(("/", os.sep)) or path.is_dir():
        return Output(path, format or "jsonl", shards=True, shard_rows=shard_rows)
    return Output(path, format or SUFFIXES.get(path.suffix, "jsonl"))


def check_output(output: Output) -> None:
    """What can be checked about the output before any record is read (a run on a cluster should not
    start for an output it cannot write): the directory it goes in, and what is already there."""
    if output.path is None:
        return
    path = output.path
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        problem = "is not a directory" if parent.exists() else "does not exist"
        raise OutputError(f"{path}: cannot write: {parent} {problem}")
    if not os.access(parent, os.W_OK):
        raise OutputError(f"{path}: cannot write: permission denied")
    if output.shards:
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise OutputError(f"{path}: cannot write shards: exists and is not an empty directory")
    elif path.is_dir():
        raise OutputError(f"{path}: cannot write: is a directory (end it with / to write shards into it)")


class Sink:
    """Receives a run's output in order (`write_lines` for JSONL lines, `write_table` for output
    tables) and makes it the output only when the run succeeds (`open_sink`)."""

    def __init__(self, output: Output, directory: Path | None, stream: IO | None, empty: Any = None) -> None:
        self.output = output
        self.directory = directory  # the temporary directory of shards
        self.stream = stream  # the single output file or stdout
        self.empty = empty  # the schema of an output with no records (None: the default one)
        self.schema: Any = None
        self._writer: Any = None
        self._shard = -1
        self._rows_in_shard = 0

    def write_lines(self, lines: list[str]) -> None:
        """JSONL output lines (JSONL outputs only)."""
        if self.output.format != "jsonl":
            raise AssertionError("write_lines needs a JSONL output")
        while lines:
            room = self._room(len(lines))
            self._target().write("".join(line + "\n" for line in lines[:room]))
            self._rows_in_shard += room
            lines = lines[room:]

    def write_table(self, table: Any) -> None:
        """An output table (the schema of `respc.batch.arrow`); a JSONL output gets its lines."""
        if self.output.format == "jsonl":
            from respc.batch.arrow import table_lines

            self.write_lines(list(table_lines(table)))
            return
        if self.schema is None:
            self.schema = table.schema
        elif table.schema != self.schema:
            table = self._cast(table)
        while table.num_rows:
            room = self._room(table.num_rows)
            self._parquet_writer().write_table(table.slice(0, room))
            self._rows_in_shard += room
            table = table.slice(room)

    def _cast(self, table: Any) -> Any:
        """A table whose ids are all null, in the type of the ids before; any other difference is an
        error (a cast would turn "002048" into 2048)."""
        import pyarrow as pa

        ours, theirs = self.schema.field("id").type, table.schema.field("id").type
        if pa.types.is_null(theirs) and table.schema.remove(0).equals(self.schema.remove(0)):
            return table.set_column(0, self.schema.field("id"), pa.nulls(table.num_rows, ours))
        raise InputError(
            f"column 'id' holds {theirs} here but {ours} in the records before: a Parquet column has one type"
        )

    def _room(self, wanted: int) -> int:
        if self.directory is None:
            return wanted
        if self._shard < 0 or self._rows_in_shard >= self.output.shard_rows:
            self._next_shard()
        return min(wanted, self.output.shard_rows - self._rows_in_shard)

    def _next_shard(self) -> None:
        self.close()
        self._shard += 1
        self._rows_in_shard = 0
        assert self.directory is not None
        path = self.directory / f"part-{self._shard:05d}.{self.output.format}"
        if self.output.format == "jsonl":
            self.stream = open(path, "w", encoding="utf-8", newline="\n")
        else:
            self.stream = open(path, "wb")

    def _target(self) -> IO:
        assert self.stream is not None
        return self.stream

    def _parquet_writer(self) -> Any:
        if self._writer is None:
            import pyarrow.parquet as pq

            self._writer = pq.ParquetWriter(self._target(), self.schema)
        return self._writer

    def close(self) -> None:
        """Finish the current file (a shard, or the single output when the run succeeded)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self.directory is not None and self.stream is not None:
            self.stream.close()
            self.stream = None

    def finish(self) -> None:
        """A run with no records still writes a valid (empty) output."""
        if self.output.format == "parquet" and self._writer is None:
            if self.directory is not None and self._shard < 0:
                self._next_shard()
            if self.schema is None:
                from respc.batch.arrow import output_schema

                self.schema = self.empty if self.empty is not None else output_schema()
            self._parquet_writer()
        self.close()


@contextlib.contextmanager
def open_sink(output: Output, empty: Any = None) -> Iterator[Sink]:
    """A `Sink` for `output`, committed (renamed into place) only when the block completes; `empty` is
    the Arrow schema a Parquet output gets when no record comes (the input's id type, the layout)."""
    if output.path is None:
        sink = Sink(output, None, sys.stdout, empty)
        try:
            yield sink
            sink.finish()
        finally:
            sink.close()
            sys.stdout.flush()
        return
    if output.shards:
        with _atomic_directory(output.path) as directory:
            sink = Sink(output, directory, None, empty)
            try:
                yield sink
                sink.finish()
            finally:
                sink.close()
        return
    with AtomicOutput(output.path, binary=output.format == "parquet") as stream:
        sink = Sink(output, None, stream, empty)
        try:
            yield sink
            sink.finish()
        finally:
            sink.close()  # a failed run's Parquet writer too, before its file is deleted


@contextlib.contextmanager
def _atomic_directory(path: Path) -> Iterator[Path]:
    """A new directory that becomes `path` when the block completes; `path` may not exist or must be
    an empty directory (a run never mixes its shards with other files, nor deletes any)."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise OutputError(f"{path}: cannot write shards: exists and is not an empty directory")
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        temporary.mkdir(parents=False)
    except OSError as error:
        raise OutputError(f"{path}: cannot write: {error.strerror or error}") from None
    try:
        yield temporary
        if path.exists():
            path.rmdir()  # empty, checked above
        os.replace(temporary, path)
    except OSError as error:
        raise OutputError(f"{path}: cannot write: {error.strerror or error}") from None
    finally:
        shutil.rmtree(temporary, ignore_errors=True)

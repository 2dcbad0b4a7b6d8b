"""Ray Data: `ParseResponses`, a callable class for `Dataset.map_batches`, and `run_ray`, the engine of
`respc parse --engine ray`.

```python
import ray
from ray.data import ActorPoolStrategy
from respc.batch.ray import ParseResponses

ds = ray.data.read_parquet("generations/")
ds = ds.map_batches(ParseResponses, fn_constructor_kwargs={"preset": "qwen3"},
                    batch_format="pyarrow", compute=ActorPoolStrategy(size=4))
ds.write_parquet("messages/")
```

Each actor loads its parser once (and again if Ray restarts it); batches stay Arrow tables, never
pandas. The output has the schema of `respc.batch.arrow` (message JSON, error, raw response of failed
rows, optional typed columns), the same for every batch, so shards written by different actors read
back as one table. A record that fails to parse is a row with an error, never dropped. Ray retries a
batch whose actor died, so a killed worker loses and duplicates nothing.
"""

from __future__ import annotations

import io
import os
import socket
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from respc._io import InputError
from respc.batch.arrow import TableParser
from respc.batch.local import CHUNK_ROWS, Job, Summary, count_failed, failed_mask, write_outputs
from respc.batch.records import Columns, ParserSource, RecordParser

__all__ = ["ParseResponses", "ray_environment", "run_ray"]


class ParseResponses:
    """Parses batches of records (`Dataset.map_batches(ParseResponses, batch_format="pyarrow",
    fn_constructor_kwargs={...})`); Arrow tables in and out (other batch formats are converted).

    The parser: exactly one of `preset` (a name), `template` (a response template) or `model` (a model
    directory, read where the actor runs); `target` the transformers release. The records: the
    `response_column` (required), `prompt_column` (the prefix; absent or null is ""), `id_column`
    (copied), `tools_column` (a record's own tools) and `tools` (for every record). `layout` "typed"
    adds typed columns, and `errors="keep"` keeps what parsed of a failing record. The output replaces
    the batch, unless `keep_columns` puts the batch's other columns first (the output's names win).
    `jsonl_column` reads each row of that column as a JSONL record instead (ids then come out as their
    JSON text, since batches cannot agree on a type); `output="lines"` returns the JSONL lines
    `respc parse` writes (`line`, `failed`) instead of the Arrow schema.
    """

    def __init__(
        self,
        *,
        preset: str | None = None,
        template: Any = None,
        model: str | None = None,
        target: str | None = None,
        response_column: str = "response",
        prompt_column: str | None = "prompt",
        id_column: str | None = "id",
        tools_column: str | None = None,
        tools: list | None = None,
        layout: str = "json",
        errors: str = "strict",
        strict_end: bool = False,
        keep_columns: bool = False,
        jsonl_column: str | None = None,
        output: str = "arrow",
        required: tuple[str, ...] = (),
        report_input_errors: bool = False,
    ) -> None:
        if output not in ("arrow", "lines"):
            raise ValueError(f"output must be 'arrow' or 'lines', not {output!r}")
        source = ParserSource.of(preset=preset, template=template, model=model, target=target)
        columns = Columns(response_column, prompt_column, id_column, tools_column, frozenset(required))
        self.records = RecordParser(
            source.load(), tools=tools, columns=columns, errors=errors, strict_end=strict_end
        )
        self.tables = TableParser(self.records, layout=layout)
        self.keep_columns = keep_columns
        self.jsonl_column = jsonl_column
        self.output = output
        # For `respc parse`: an input error comes back as a row of `_fatal` for the driver to report
        # (Ray would otherwise bury it in its own exception text).
        self.report_input_errors = report_input_errors

    def __call__(self, batch: Any) -> pa.Table:
        if isinstance(batch, pa.RecordBatch):
            batch = pa.Table.from_batches([batch])
        elif not isinstance(batch, pa.Table):
            batch = pa.table({name: pa.array(list(values)) for name, values in batch.items()})
        if FATAL in batch.schema.names:
            return batch.select([FATAL])
        try:
            return self._parse(batch)
        except (InputError, KeyError, TypeError) as error:
            if not self.report_input_errors:
                raise
            return pa.table({FATAL: [str(error).strip("'\"")]})

    def _parse(self, batch: pa.Table) -> pa.Table:
        if self.jsonl_column is not None:
            lines = batch.column(self.jsonl_column).to_pylist()
            if self.output == "lines":
                done = [self.records.line(line) for line in lines if line and line.strip()]
                return _lines_table(done)
            numbers = batch.column("line").to_pylist() if "line" in batch.schema.names else None
            table = self.tables.parse_lines(lines, numbers)
            if "path" in batch.schema.names and numbers is not None:
                kept = [
                    p for p, line in zip(batch.column("path").to_pylist(), lines) if line and line.strip()
                ]
                table = table.append_column("_file", pa.array(kept, pa.string()))
            return table
        table = self.tables.parse_table(batch)
        if self.output == "lines":
            from respc.batch.arrow import table_lines

            return _lines_table(list(zip(table_lines(table), failed_mask(table, self.records.errors))))
        if self.keep_columns:
            kept = [name for name in batch.schema.names if name not in table.schema.names]
            return pa.Table.from_arrays(
                [*(batch.column(n) for n in kept), *table.columns],
                schema=pa.schema([*(batch.schema.field(n) for n in kept), *table.schema]),
            )
        return table


FATAL = "_fatal"  # the column of an input error `respc parse` reports (see `report_input_errors`)


def _lines_table(done: list[tuple[str, bool]]) -> pa.Table:
    return pa.table(
        {"line": [text for text, _ in done], "failed": [bad for _, bad in done]},
        schema=pa.schema([("line", pa.string()), ("failed", pa.bool_())]),
    )


def ray_environment() -> None:
    """Environment variables a local Ray cluster needs before `import ray`: listen on loopback only
    (Ray otherwise binds every interface and advertises the machine's address), no usage statistics,
    no token file in the home directory. Values already set are kept."""
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_DATA_LOG_LEVEL", "ERROR")


def run_ray(
    job: Job,
    *,
    address: str | None = None,
    concurrency: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> Summary:
    """Run `job` on Ray Data: on the cluster at `address` (HOST:PORT of its GCS, checked before
    connecting: an unreachable one would be retried for minutes), or on a local cluster started for
    the run (and stopped after it); `concurrency` parser actors (default: one per CPU of the cluster).
    Reads are spread over the cluster; the output comes back to this process in order and is written
    like the local engine's, so both write the same bytes. When Ray is already initialised here, its
    cluster is used and left running."""
    empty = job.check()
    ray_environment()
    import ray

    started = False
    if not ray.is_initialized():
        import logging

        if address is not None:
            _check_reachable(address)
            ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
        else:
            ray.init(include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
        started = True
    try:
        return _run(job, concurrency, progress, empty)
    finally:
        if started:
            ray.shutdown()


HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast unless `address` answers like a Ray GCS (a gRPC server: an HTTP/2 SETTINGS frame to the
    client preface). `ray.init` would retry a dead address for minutes, and hang on a port held by
    anything else."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"--address {address!r}: expected HOST:PORT of the Ray cluster's GCS")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as connection:
            connection.settimeout(timeout)
            connection.sendall(HTTP2_PREFACE)
            answer = b""
            while len(answer) < 9:
                data = connection.recv(9 - len(answer))
                if not data:
                    break
                answer += data
    except TimeoutError:
        answer = b""
    except OSError as error:
        raise InputError(f"--address {address}: cannot connect: {error.strerror or error}") from None
    if len(answer) < 9 or answer[3] != 0x04:
        raise InputError(f"--address {address}: not a Ray cluster (no gRPC answer from its GCS port)")


def _run(job: Job, concurrency: int | None, progress: Callable[[int], None] | None, empty: Any) -> Summary:
    import ray
    from ray.data import ActorPoolStrategy, DataContext

    context = DataContext.get_current()
    context.execution_options.preserve_order = True  # the output keeps the input's order
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    context.target_max_block_size = 4 * 1024 * 1024  # several blocks per file, so every actor works
    cpus = int(ray.cluster_resources().get("CPU", 1))
    actors = concurrency or max(cpus, 1)
    # Leave one CPU for the read tasks: actors holding every CPU would starve them and hang the job.
    per_actor = min(1.0, max(cpus - 1, 1) / actors) if cpus > 1 else 0.5 / actors
    dataset = _read(job)
    kwargs = _constructor_kwargs(job)
    dataset = dataset.map_batches(
        ParseResponses,
        fn_constructor_kwargs=kwargs,
        batch_format="pyarrow",
        batch_size=CHUNK_ROWS,
        compute=ActorPoolStrategy(size=actors),
        num_cpus=per_actor,
    )
    done = (_parsed(table, kwargs["output"], job.errors) for table in _batches(dataset))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module=r"ray\.")  # Ray's advice on block counts, not the user's
        return write_outputs(job, done, empty, progress)


def _parsed(table: pa.Table, output: str, errors: str) -> tuple:
    """One output batch as `write_outputs` takes it; an input error an actor reported is raised."""
    if FATAL in table.schema.names:
        raise InputError(table.column(FATAL)[0].as_py())
    if output == "lines":
        lines = table.column("line").to_pylist()
        return "", "", "lines", lines, len(lines), sum(table.column("failed").to_pylist())
    return "", "", "table", table, table.num_rows, count_failed(table, errors)


def _batches(dataset: Any) -> Iterator[pa.Table]:
    """The output tables in order. A failure Ray reports (a damaged file in a read task...) becomes an
    `InputError` with the original exception's line, which Ray keeps only in its message text."""
    try:
        for table in dataset.iter_batches(batch_format="pyarrow", batch_size=None):
            if table.num_rows:
                yield table
    except InputError:
        raise
    except Exception as error:
        raise InputError(f"the Ray job failed: {_original(error)}") from error


def _original(error: BaseException) -> str:
    """The first `SomeError: message` line of a Ray exception's text: the exception that started it."""
    import re

    for line in str(error).splitlines():
        found = re.match(r"(?:\x1b\[\d+m)?([A-Za-z_][\w.]*(?:Error|Exception)): (.+)", line.strip())
        if found and not found.group(1).startswith("ray."):
            return f"{found.group(1).rpartition('.')[2]}: {found.group(2)}"
    return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"


def _constructor_kwargs(job: Job) -> dict[str, Any]:
    source = job.source
    columns = job.columns
    kwargs: dict[str, Any] = {
        "preset": source.preset,
        "template": source.template,
        "target": source.target,
        "response_column": columns.response,
        "prompt_column": columns.prompt,
        "id_column": columns.id,
        "tools_column": columns.tools,
        "tools": job.tools,
        "layout": job.layout,
        "errors": job.errors,
        "strict_end": job.strict_end,
        "output": "lines" if job.output.format == "jsonl" else "arrow",
        "required": tuple(sorted(columns.required)),
        "report_input_errors": True,
    }
    if job.input.format == "jsonl":
        kwargs["jsonl_column"] = "text"
    return kwargs


def _read(job: Job) -> Any:
    import ray

    paths = [str(path.resolve()) for path in job.input.files]
    if not paths:
        raise InputError("--engine ray reads files, not standard input")
    if job.input.format == "parquet":
        # Every column: shards may differ in which optional ones they have (a prompt in some only),
        # and each batch is parsed with the columns it has, as the local engine reads each file.
        return ray.data.read_parquet(paths)
    return ray.data.read_datasource(_jsonl_datasource(paths))


def _jsonl_datasource(paths: list[str]) -> Any:
    """JSONL lines exactly as the local engine reads them (`numbered_lines`: newlines only, where Ray's
    `read_text` also splits on U+2028 and other separators a JSON string may hold), with their file
    and line number, in blocks of at most `CHUNK_ROWS`, a file never read whole into memory. A line
    that is not UTF-8 becomes a `_fatal` row naming it."""
    from ray.data.datasource import FileBasedDatasource

    from respc._io import numbered_lines

    class JsonlLines(FileBasedDatasource):
        def _read_stream(self, f: Any, path: str) -> Iterator[Any]:
            schema = pa.schema([("text", pa.string()), ("line", pa.int64()), ("path", pa.string())])
            rows: tuple[list, list] = ([], [])
            try:
                for number, line in numbered_lines(io.BufferedReader(_Readable(f)), path):
                    if line.strip():
                        rows[0].append(line)
                        rows[1].append(number)
                    if len(rows[0]) == CHUNK_ROWS:
                        yield pa.table([*rows, [path] * len(rows[0])], schema=schema)
                        rows = ([], [])
            except InputError as error:
                yield pa.table({FATAL: [str(error)]})
                return
            if rows[0]:
                yield pa.table([*rows, [path] * len(rows[0])], schema=schema)

    return JsonlLines(paths)


class _Readable(io.RawIOBase):
    """A pyarrow input stream as a raw Python stream, for `io.BufferedReader`."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.stream.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

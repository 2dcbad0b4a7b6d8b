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
from respc.batch.local import CHUNK_ROWS, Job, Summary, count_failed, failed_mask
from respc.batch.records import Columns, ParserSource, RecordParser

__all__ = ["ParseResponses", "ray_environment", "run_ray"]

LINE_COLUMNS = ("text", "line")  # what the JSONL reader of `run_ray` gives an actor


class ParseResponses:
    """Parses Arrow batches of records (`Dataset.map_batches(ParseResponses, batch_format="pyarrow",
    fn_constructor_kwargs={...})`).

    The parser: exactly one of `preset` (a name), `template` (a response template) or `model` (a model
    directory, read where the actor runs); `target` the transformers release. The records: the
    `response_column` (required), `prompt_column` (the prefix; absent or null is ""), `id_column`
    (copied), `tools_column` (a record's own tools) and `tools` (for every record). `layout` "typed"
    adds typed columns, and `errors="keep"` keeps what parsed of a failing record. The output replaces
    the batch (its `response` column holds only failed records' text). `jsonl_column` reads each row of that column
    as a JSONL record instead (as `respc parse` reads JSONL); `output="lines"` returns the JSONL lines
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
        jsonl_column: str | None = None,
        output: str = "arrow",
    ) -> None:
        if output not in ("arrow", "lines"):
            raise ValueError(f"output must be 'arrow' or 'lines', not {output!r}")
        source = ParserSource.of(preset=preset, template=template, model=model, target=target)
        columns = Columns(response_column, prompt_column, id_column, tools_column)
        self.records = RecordParser(source.load(), tools=tools, columns=columns, errors=errors)
        self.tables = TableParser(self.records, layout=layout)
        self.jsonl_column = jsonl_column
        self.output = output

    def __call__(self, batch: pa.Table) -> pa.Table:
        if isinstance(batch, pa.RecordBatch):
            batch = pa.Table.from_batches([batch])
        if self.jsonl_column is not None:
            lines = [line for line in batch.column(self.jsonl_column).to_pylist() if line and line.strip()]
            if self.output == "lines":
                done = [self.records.line(line) for line in lines]
                return pa.table(
                    {"line": [text for text, _ in done], "failed": [bad for _, bad in done]},
                    schema=pa.schema([("line", pa.string()), ("failed", pa.bool_())]),
                )
            return self.tables.parse_lines(lines)
        table = self.tables.parse_table(batch)
        if self.output == "lines":
            from respc.batch.arrow import table_lines

            failed = failed_mask(table, self.records.errors)
            return pa.table(
                {"line": list(table_lines(table)), "failed": failed},
                schema=pa.schema([("line", pa.string()), ("failed", pa.bool_())]),
            )
        return table


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
    job.check()
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
        return _run(job, concurrency, progress)
    finally:
        if started:
            ray.shutdown()


def _check_reachable(address: str) -> None:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"--address {address!r}: expected HOST:PORT of the Ray cluster's GCS")
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except OSError as error:
        raise InputError(f"--address {address}: cannot connect: {error.strerror or error}") from None


def _run(job: Job, concurrency: int | None, progress: Callable[[int], None] | None) -> Summary:
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
    records = failed = 0
    from respc.batch.files import open_sink

    with open_sink(job.output) as sink, warnings.catch_warnings():
        warnings.filterwarnings("ignore", module=r"ray\.")  # Ray's advice on block counts, not the user's
        for table in _batches(dataset):
            if kwargs["output"] == "lines":
                lines = table.column("line").to_pylist()
                sink.write_lines(lines)
                bad = sum(table.column("failed").to_pylist())
            else:
                sink.write_table(table)
                bad = count_failed(table, job.errors)
            records += table.num_rows
            failed += bad
            if progress:
                progress(table.num_rows)
    return Summary(records, failed)


def _batches(dataset: Any) -> Iterator[pa.Table]:
    """The output tables in order; a failure inside Ray becomes the failure it wraps."""
    try:
        for table in dataset.iter_batches(batch_format="pyarrow", batch_size=None):
            if table.num_rows:
                yield table
    except Exception as error:
        cause = _cause(error)
        if isinstance(cause, (InputError, KeyError, TypeError)):
            raise InputError(str(cause).strip("'\"")) from None
        raise


def _cause(error: BaseException) -> BaseException:
    """The user-level exception inside Ray's task-error wrappers."""
    seen = set()
    while id(error) not in seen:
        seen.add(id(error))
        inner = getattr(error, "cause", None) or error.__cause__
        if inner is None or inner is error:
            break
        error = inner
    return error


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
        "output": "lines" if job.output.format == "jsonl" else "arrow",
    }
    if job.input.format == "jsonl":
        kwargs["jsonl_column"] = LINE_COLUMNS[0]
    return kwargs


def _read(job: Job) -> Any:
    import ray

    paths = [str(path.resolve()) for path in job.input.files]
    if not paths:
        raise InputError("--engine ray reads files, not standard input")
    if job.input.format == "parquet":
        import pyarrow.parquet as pq

        present = set.intersection(*(set(pq.ParquetFile(p).schema_arrow.names) for p in paths))
        dataset = ray.data.read_parquet(paths)
        return dataset.select_columns([c for c in job.read_columns() if c in present])
    return ray.data.read_datasource(_jsonl_datasource(paths))


def _jsonl_datasource(paths: list[str]) -> Any:
    """JSONL lines exactly as the local engine reads them: split on newlines only (Ray's `read_text`
    also splits on U+2028 and other separators a JSON string may hold), numbered, in blocks of at
    most `CHUNK_ROWS`, a file never read whole into memory."""
    from ray.data.datasource import FileBasedDatasource

    class JsonlLines(FileBasedDatasource):
        def _read_stream(self, f: Any, path: str) -> Iterator[Any]:
            schema = pa.schema([(LINE_COLUMNS[0], pa.string()), (LINE_COLUMNS[1], pa.int64())])
            stream = io.TextIOWrapper(io.BufferedReader(_Readable(f)), encoding="utf-8", newline=None)
            lines: list[str] = []
            numbers: list[int] = []
            try:
                for number, line in enumerate(stream, 1):
                    if line.strip():
                        lines.append(line.rstrip("\n"))
                        numbers.append(number)
                    if len(lines) == CHUNK_ROWS:
                        yield pa.table([lines, numbers], schema=schema)
                        lines, numbers = [], []
            except UnicodeDecodeError as error:
                raise InputError(f"{path}: line {number + 1}: not UTF-8 text ({error.reason})") from None
            if lines:
                yield pa.table([lines, numbers], schema=schema)

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
